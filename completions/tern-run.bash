# bash completion for tern-run; generated from its option table.
_tern_run()
{
	local cur prev
	cur="${COMP_WORDS[COMP_CWORD]}"
	prev="${COMP_WORDS[COMP_CWORD-1]}"
	case "$prev" in
	-m|--model)
		COMPREPLY=($(compgen -f -X '!*.@(gguf)' -- "$cur") $(compgen -d -- "$cur"))
		return ;;
	-n|--n-predict)
		COMPREPLY=()
		return ;;
	-c|--ctx-size)
		COMPREPLY=()
		return ;;
	-t|--threads)
		COMPREPLY=()
		return ;;
	-b|--batch-size)
		COMPREPLY=()
		return ;;
	-ub|--ubatch-size)
		COMPREPLY=()
		return ;;
	-p|--prompt)
		COMPREPLY=()
		return ;;
	-f|--file)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	-sys|--system-prompt)
		COMPREPLY=()
		return ;;
	--messages)
		COMPREPLY=($(compgen -f -X '!*.@(json)' -- "$cur") $(compgen -d -- "$cur"))
		return ;;
	--tools)
		COMPREPLY=($(compgen -f -X '!*.@(json)' -- "$cur") $(compgen -d -- "$cur"))
		return ;;
	-s|--seed)
		COMPREPLY=()
		return ;;
	--temp)
		COMPREPLY=()
		return ;;
	--top-k)
		COMPREPLY=()
		return ;;
	--top-p)
		COMPREPLY=()
		return ;;
	--min-p)
		COMPREPLY=()
		return ;;
	--repeat-penalty)
		COMPREPLY=()
		return ;;
	--repeat-last-n)
		COMPREPLY=()
		return ;;
	--presence-penalty)
		COMPREPLY=()
		return ;;
	--frequency-penalty)
		COMPREPLY=()
		return ;;
	--stop)
		COMPREPLY=()
		return ;;
	--logprobs)
		COMPREPLY=()
		return ;;
	--chat-template)
		COMPREPLY=()
		return ;;
	--chat-template-file)
		COMPREPLY=($(compgen -f -X '!*.@(jinja)' -- "$cur") $(compgen -d -- "$cur"))
		return ;;
	--chat-template-name)
		COMPREPLY=()
		return ;;
	-ctk|--cache-type-k)
		COMPREPLY=($(compgen -W "f32 f16 q8_0" -- "$cur"))
		return ;;
	-ctv|--cache-type-v)
		COMPREPLY=($(compgen -W "f32 f16 q8_0" -- "$cur"))
		return ;;
	-dev|--device)
		COMPREPLY=()
		return ;;
	--gpu-mem-limit)
		COMPREPLY=()
		return ;;
	-ngl|--gpu-layers)
		COMPREPLY=()
		return ;;
	--pooling)
		COMPREPLY=($(compgen -W "none mean cls last rank" -- "$cur"))
		return ;;
	--embd-normalize)
		COMPREPLY=()
		return ;;
	--embd-output-format)
		COMPREPLY=($(compgen -W "jsonl array json raw f32" -- "$cur"))
		return ;;
	--embd-separator)
		COMPREPLY=()
		return ;;
	--color)
		COMPREPLY=($(compgen -W "auto always never" -- "$cur"))
		return ;;
	--completion)
		COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur"))
		return ;;
	esac
	if [[ "$cur" == -* ]]; then
		COMPREPLY=($(compgen -W "-m --model -n --n-predict -c --ctx-size -t --threads -b --batch-size -ub --ubatch-size -p --prompt -f --file -sys --system-prompt --messages --tools --print-prompt -s --seed --temp --top-k --top-p --min-p --repeat-penalty --repeat-last-n --presence-penalty --frequency-penalty --ignore-eos --stop --json --logprobs --raw --no-parse-special --chat-template --chat-template-file --chat-template-name --jinja --no-jinja -sp --special -ctk --cache-type-k -ctv --cache-type-v -dev --device --list-devices --gpu-mem-limit -ngl --gpu-layers --no-stdin --embedding --pooling --embd-normalize --embd-output-format --embd-separator -h --help --version -v --verbose -q --quiet --color --completion " -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -f -- "$cur"))
}
shopt -s extglob 2>/dev/null
complete -o filenames -F _tern_run tern-run

# bash completion for tern-chat; generated from its option table.
_tern_chat()
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
	-sys|--system-prompt)
		COMPREPLY=()
		return ;;
	--tools)
		COMPREPLY=($(compgen -f -X '!*.@(json)' -- "$cur") $(compgen -d -- "$cur"))
		return ;;
	--turns-separator)
		COMPREPLY=()
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
	--color)
		COMPREPLY=($(compgen -W "auto always never" -- "$cur"))
		return ;;
	--completion)
		COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur"))
		return ;;
	esac
	if [[ "$cur" == -* ]]; then
		COMPREPLY=($(compgen -W "-m --model -n --n-predict -c --ctx-size -t --threads -b --batch-size -ub --ubatch-size -p --prompt -sys --system-prompt --tools --turns-separator -s --seed --temp --top-k --top-p --min-p --repeat-penalty --repeat-last-n --presence-penalty --frequency-penalty --ignore-eos --stop --chat-template --chat-template-file --chat-template-name --jinja --no-jinja -sp --special -ctk --cache-type-k -ctv --cache-type-v -dev --device --list-devices --gpu-mem-limit -ngl --gpu-layers -h --help --version -v --verbose -q --quiet --color --completion " -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -f -- "$cur"))
}
shopt -s extglob 2>/dev/null
complete -o filenames -F _tern_chat tern-chat

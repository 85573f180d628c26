# bash completion for tern-bench; generated from its option table.
_tern_bench()
{
	local cur prev
	cur="${COMP_WORDS[COMP_CWORD]}"
	prev="${COMP_WORDS[COMP_CWORD-1]}"
	case "$prev" in
	-m|--model)
		COMPREPLY=()
		return ;;
	-p|--n-prompt)
		COMPREPLY=()
		return ;;
	-n|--n-gen)
		COMPREPLY=()
		return ;;
	-pg|--n-prompt-gen)
		COMPREPLY=()
		return ;;
	-d|--n-depth)
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
	-ctk|--cache-type-k)
		COMPREPLY=()
		return ;;
	-ctv|--cache-type-v)
		COMPREPLY=()
		return ;;
	-ngl|--gpu-layers)
		COMPREPLY=()
		return ;;
	--backend)
		COMPREPLY=()
		return ;;
	-dev|--device)
		COMPREPLY=()
		return ;;
	--gpu-mem-limit)
		COMPREPLY=()
		return ;;
	-r|--repetitions)
		COMPREPLY=()
		return ;;
	--warmup)
		COMPREPLY=()
		return ;;
	--prompt)
		COMPREPLY=()
		return ;;
	-o|--output)
		COMPREPLY=($(compgen -W "table md json jsonl csv" -- "$cur"))
		return ;;
	--vs)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	--ppl)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	-c|--ctx-size)
		COMPREPLY=()
		return ;;
	--chunks)
		COMPREPLY=()
		return ;;
	--types)
		COMPREPLY=()
		return ;;
	--ops)
		COMPREPLY=()
		return ;;
	--min-ms)
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
		COMPREPLY=($(compgen -W "-m --model -p --n-prompt -n --n-gen -pg --n-prompt-gen -d --n-depth -t --threads -b --batch-size -ub --ubatch-size -ctk --cache-type-k -ctv --cache-type-v -ngl --gpu-layers --backend -dev --device --list-devices --gpu-mem-limit -r --repetitions --warmup --no-warmup --prompt -o --output --json --no-probe --hash --vs --ppl -c --ctx-size --chunks --kernels --quick --types --ops --min-ms -h --help --version -v --verbose -q --quiet --color --completion " -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -f -- "$cur"))
}
shopt -s extglob 2>/dev/null
complete -o filenames -F _tern_bench tern-bench

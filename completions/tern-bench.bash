# bash completion for tern-bench; generated from its option table.
_tern_bench()
{
	local cur prev
	cur="${COMP_WORDS[COMP_CWORD]}"
	prev="${COMP_WORDS[COMP_CWORD-1]}"
	case "$prev" in
	-t|--threads)
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
	-r|--repetitions)
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
		COMPREPLY=($(compgen -W "--kernels --quick --json -t --threads --types --ops --min-ms -r --repetitions -h --help --version -v --verbose -q --quiet --color --completion " -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -f -- "$cur"))
}
shopt -s extglob 2>/dev/null
complete -o filenames -F _tern_bench tern-bench

# bash completion for tern-inspect; generated from its option table.
_tern_inspect()
{
	local cur prev
	cur="${COMP_WORDS[COMP_CWORD]}"
	prev="${COMP_WORDS[COMP_CWORD-1]}"
	case "$prev" in
	--key)
		COMPREPLY=()
		return ;;
	--tensor)
		COMPREPLY=()
		return ;;
	--values)
		COMPREPLY=()
		return ;;
	--tokenize)
		COMPREPLY=()
		return ;;
	--tokenize-file)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	--detokenize)
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
		COMPREPLY=($(compgen -W "--json --full --no-tensors --key --tensor --values --raw --check --tokenize --tokenize-file --add-special --parse-special --ids --detokenize -h --help --version -v --verbose -q --quiet --color --completion " -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -f -X '!*.@(gguf|bin)' -- "$cur") $(compgen -d -- "$cur"))
}
shopt -s extglob 2>/dev/null
complete -o filenames -F _tern_inspect tern-inspect

# bash completion for tern-vad; generated from its option table.
_tern_vad()
{
	local cur prev
	cur="${COMP_WORDS[COMP_CWORD]}"
	prev="${COMP_WORDS[COMP_CWORD-1]}"
	case "$prev" in
	-m|-vm|--model)
		COMPREPLY=($(compgen -f -X '!*.@(bin)' -- "$cur") $(compgen -d -- "$cur"))
		return ;;
	-f|--file)
		COMPREPLY=()
		return ;;
	-of|--output-file)
		COMPREPLY=()
		return ;;
	-vt|--vad-threshold)
		COMPREPLY=()
		return ;;
	-vspd|--vad-min-speech-duration-ms)
		COMPREPLY=()
		return ;;
	-vsd|--vad-min-silence-duration-ms)
		COMPREPLY=()
		return ;;
	-vmsd|--vad-max-speech-duration-s)
		COMPREPLY=()
		return ;;
	-vp|--vad-speech-pad-ms)
		COMPREPLY=()
		return ;;
	-vo|--vad-samples-overlap)
		COMPREPLY=()
		return ;;
	-t|--threads)
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
		COMPREPLY=($(compgen -W "-m -vm --model -f --file --json --csv --probs -of --output-file -oj --output-json -ocsv --output-csv -osrt --output-srt -vt --vad-threshold -vspd --vad-min-speech-duration-ms -vsd --vad-min-silence-duration-ms -vmsd --vad-max-speech-duration-s -vp --vad-speech-pad-ms -vo --vad-samples-overlap -t --threads -h --help --version -v --verbose -q --quiet --color --completion " -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -f -X '!*.@(wav|flac|ogg|opus|mp3|aiff|au)' -- "$cur") $(compgen -d -- "$cur"))
}
shopt -s extglob 2>/dev/null
complete -o filenames -F _tern_vad tern-vad

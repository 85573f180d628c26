# bash completion for tern-transcribe; generated from its option table.
_tern_transcribe()
{
	local cur prev
	cur="${COMP_WORDS[COMP_CWORD]}"
	prev="${COMP_WORDS[COMP_CWORD-1]}"
	case "$prev" in
	-m|--model)
		COMPREPLY=($(compgen -f -X '!*.@(bin)' -- "$cur") $(compgen -d -- "$cur"))
		return ;;
	-f|--file)
		COMPREPLY=()
		return ;;
	-t|--threads)
		COMPREPLY=()
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
	-l|--language)
		COMPREPLY=()
		return ;;
	-bs|--beam-size)
		COMPREPLY=()
		return ;;
	-bo|--best-of)
		COMPREPLY=()
		return ;;
	-tp|--temperature)
		COMPREPLY=()
		return ;;
	-tpi|--temperature-inc)
		COMPREPLY=()
		return ;;
	-et|--entropy-thold)
		COMPREPLY=()
		return ;;
	-lpt|--logprob-thold)
		COMPREPLY=()
		return ;;
	-crt|--compression-ratio-thold)
		COMPREPLY=()
		return ;;
	-nth|--no-speech-thold)
		COMPREPLY=()
		return ;;
	--prompt)
		COMPREPLY=()
		return ;;
	-mc|--max-context)
		COMPREPLY=()
		return ;;
	-ot|--offset-t)
		COMPREPLY=()
		return ;;
	-d|--duration)
		COMPREPLY=()
		return ;;
	-ml|--max-len)
		COMPREPLY=()
		return ;;
	-wt|--word-thold)
		COMPREPLY=()
		return ;;
	-vm|--vad-model)
		COMPREPLY=($(compgen -f -X '!*.@(bin)' -- "$cur") $(compgen -d -- "$cur"))
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
	-of|--output-file)
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
		COMPREPLY=($(compgen -W "-m --model -f --file -t --threads -dev --device --list-devices --gpu-mem-limit -ngl --gpu-layers -l --language -dl --detect-language -tr --translate -nt --no-timestamps -bs --beam-size -bo --best-of -tp --temperature -tpi --temperature-inc -nf --no-fallback -et --entropy-thold -lpt --logprob-thold -crt --compression-ratio-thold -nth --no-speech-thold --prompt -mc --max-context -ot --offset-t -d --duration -ml --max-len -sow --split-on-word -wt --word-thold --vad -vm --vad-model -vt --vad-threshold -vspd --vad-min-speech-duration-ms -vsd --vad-min-silence-duration-ms -vmsd --vad-max-speech-duration-s -vp --vad-speech-pad-ms -vo --vad-samples-overlap -otxt --output-txt -ovtt --output-vtt -osrt --output-srt -ocsv --output-csv -olrc --output-lrc -oj --output-json -ojf --output-json-full -of --output-file --json -h --help --version -v --verbose -q --quiet --color --completion " -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -f -X '!*.@(wav|flac|ogg|opus|mp3|aiff|au)' -- "$cur") $(compgen -d -- "$cur"))
}
shopt -s extglob 2>/dev/null
complete -o filenames -F _tern_transcribe tern-transcribe

#!/usr/bin/env bash
# bench_llm.sh - tern-run against llama-bench on the same GGUF files, same
# machine, same run: prefill of a 512-token prompt (pp512) and 128 generated
# tokens (tg128), 2 threads, the median of RUNS runs each, A/B interleaved
# so that a change in the machine's load hits both. The load average is
# printed before and after every model.
#
#   scripts/bench_llm.sh [-r RUNS] [-t THREADS] [-l LLAMA_BENCH] MODEL.gguf...
#
# LLAMA_BENCH: a llama-bench binary built elsewhere (never from this
# repository); without it only tern is measured. tern's numbers come from
# `bin/run --json` (its prompt and generation timings); the prompt is the
# first 512 tokens of tests/data/llm_ref/prompts/long.txt, repeated as
# needed, as the model's tokenizer cuts it (the JSON's prompt count says how
# many it really was).
set -u
cd "$(dirname "$0")/.."
RUNS=3 THREADS=2 LB=""
while getopts "r:t:l:" o; do
	case $o in
	r) RUNS=$OPTARG ;;
	t) THREADS=$OPTARG ;;
	l) LB=$OPTARG ;;
	*) echo "usage: $0 [-r RUNS] [-t THREADS] [-l LLAMA_BENCH] MODEL..." >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-r RUNS] [-t THREADS] [-l LLAMA_BENCH] MODEL..." >&2; exit 2; }
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "nan"}'; }

for m in "$@"; do
	# a 512-token prompt in this model's vocabulary
	for i in 1 2 3; do cat tests/data/llm_ref/prompts/long.txt; done >"$T/long.txt"
	ids=$(bin/inspect "$m" --tokenize-file "$T/long.txt" --json 2>/dev/null |
		"$PY" -c 'import json,sys; print(" ".join(map(str, json.load(sys.stdin)["ids"][:512])))')
	bin/inspect "$m" --detokenize "$ids" >"$T/p512.txt"
	echo "## $(basename "$m")   load before: $(cut -d' ' -f1-3 /proc/loadavg)"
	: >"$T/pp" && : >"$T/tg" && : >"$T/lpp" && : >"$T/ltg"
	for r in $(seq "$RUNS"); do
		bin/run -m "$m" -f "$T/p512.txt" --raw -n 128 --ignore-eos --temp 0 -t "$THREADS" -c 1024 --json \
			>"$T/out.json" 2>/dev/null &&
			"$PY" - "$T/out.json" "$T/pp" "$T/tg" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
t = d["timings"]
open(sys.argv[2], "a").write("%s\n" % t["prompt_tokens_per_s"])
open(sys.argv[3], "a").write("%s\n" % t["gen_tokens_per_s"])
EOF
		if [ -n "$LB" ]; then
			"$LB" -m "$m" -p 512 -n 128 -t "$THREADS" -r 1 -o json 2>/dev/null >"$T/lb.json" &&
				"$PY" - "$T/lb.json" "$T/lpp" "$T/ltg" <<'EOF'
import json, sys
for r in json.load(open(sys.argv[1])):
    f = sys.argv[2] if r["n_prompt"] else sys.argv[3]
    open(f, "a").write("%s\n" % r["avg_ts"])
EOF
		fi
	done
	printf '   tern      pp512 %8.1f tok/s   tg128 %7.1f tok/s   (median of %d)\n' \
		"$(median <"$T/pp")" "$(median <"$T/tg")" "$RUNS"
	[ -n "$LB" ] && printf '   llama.cpp pp512 %8.1f tok/s   tg128 %7.1f tok/s   (median of %d)\n' \
		"$(median <"$T/lpp")" "$(median <"$T/ltg")" "$RUNS"
	echo "   load after: $(cut -d' ' -f1-3 /proc/loadavg)"
done

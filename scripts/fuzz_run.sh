#!/usr/bin/env bash
# fuzz_run.sh SECONDS JOBS TARGET... - run each libFuzzer target for SECONDS
# from its corpus (build/fuzz-corpus/NAME, grown here, and the seeds in
# tests/fuzz/corpus/NAME), JOBS of them at a time (libFuzzer is one thread
# each: on 2 cores two at a time halve the wall time). Prints each target's
# executions and peak memory as it ends, the tail of the log of any that
# failed, and exits 1 if one did. Called by `make fuzz-run`.
set -u
secs=$1 jobs=$2
shift 2
[ "$#" -gt 0 ] || exit 0
one() {
	local f=$1 n=${1##*/fuzz_} st
	mkdir -p "build/fuzz-corpus/$n"
	"$f" -max_total_time="$FUZZ_SECS" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
		-artifact_prefix="build/fuzz/$n-" "build/fuzz-corpus/$n" "tests/fuzz/corpus/$n" >"build/fuzz/$n.log" 2>&1
	st=$?
	{
		echo "== $f for ${FUZZ_SECS}s"
		grep -E '^stat::(number_of_executed_units|peak_rss_mb)|ERROR|SUMMARY' "build/fuzz/$n.log"
		if [ "$st" -ne 0 ]; then
			tail -n 40 "build/fuzz/$n.log"
			echo "fuzz_$n FAILED (exit $st)"
		fi
	} | cat # one write per target's report, whole, as it ends
	return $((st != 0))
}
export -f one
export FUZZ_SECS=$secs
printf '%s\n' "$@" | xargs -P "$jobs" -I{} bash -c 'one "$1"' _ {}
st=$?
[ "$st" -eq 0 ] || { echo "fuzz-run: a target failed"; exit 1; }

#!/usr/bin/env bash
# fuzz_inspect_corpus.sh - replay fuzz corpora through the tern-inspect
# executable (not just the readers): every file must give exit 0 or 65 in
# every mode, one stderr line on 65, and strict UTF-8 JSON with --json.
# Run after `make fuzz-run` (which grows build/fuzz-corpus/), ideally with the
# sanitizer build:  scripts/fuzz_inspect_corpus.sh build/san/bin [DIR...]
set -u
bin=${1:-bin}; shift || true
dirs=("$@"); [ ${#dirs[@]} -eq 0 ] && dirs=(build/fuzz-corpus/gguf build/fuzz-corpus/ggml_legacy tests/fuzz/corpus/gguf tests/fuzz/corpus/ggml_legacy)
PYTHON=${PYTHON:-python3}; [ -x .venv/bin/python ] && PYTHON=.venv/bin/python
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0 n=0
for d in "${dirs[@]}"; do
	[ -d "$d" ] || continue
	for f in "$d"/*; do
		[ -f "$f" ] || continue
		for mode in "" --check --json "--json --full"; do
			n=$((n + 1))
			timeout 20 "$bin/inspect" $mode "$f" >"$tmp/out" 2>"$tmp/err"
			rc=$?
			if [ $rc -ne 0 ] && [ $rc -ne 65 ]; then
				echo "FAIL: inspect $mode $f: exit $rc: $(head -c 300 "$tmp/err")"; fail=$((fail + 1))
			elif [ $rc -eq 65 ] && [ -z "$mode" ] && [ "$(wc -l <"$tmp/err")" -ne 1 ]; then
				echo "FAIL: inspect $f: more than one stderr line"; fail=$((fail + 1))
			elif [ $rc -eq 0 ] && [ "${mode#--json}" != "$mode" ] && ! "$PYTHON" -c '
import json, sys
def no_const(c): raise ValueError(c)
json.loads(open(sys.argv[1], "rb").read().decode("utf-8"), parse_constant=no_const)' "$tmp/out" 2>/dev/null; then
				echo "FAIL: inspect $mode $f: invalid JSON"; fail=$((fail + 1))
			fi
		done
	done
done
echo "$n inspect runs, $fail failures"
[ $fail -eq 0 ]

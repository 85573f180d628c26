#!/usr/bin/env bash
# cli_malformed.sh - tern-inspect on the malformed / odd-but-valid GGUF corpus
# written by test_gguf_malformed --write.
#   malformed: `inspect FILE` exits 65 with exactly one line
#              `tern-inspect: FILE: ...` on stderr, no signal; `inspect --check
#              FILE` exits 65 with at least one such line, or (a problem its
#              report lists) a `FILE: ...` line on stdout;
#   valid:     `inspect FILE`, `inspect --check FILE` exit 0 and
#              `inspect --json [--full] FILE` prints one strict JSON document
#              (UTF-8, no NaN/Infinity).
# Each run is bounded in time (timeout) and, outside sanitizer builds, in
# address space (ulimit -v). Environment: BIN, OUT, PYTHON, SANITIZE.
set -u
BIN=${BIN:-bin} OUT=${OUT:-build/release} PYTHON=${PYTHON:-python3}
if [ ! -e cmd/inspect.c ]; then
	echo "SKIP: no cmd/inspect.c yet"
	exit 0
fi
gen=$OUT/tests/test_gguf_malformed
dir=$OUT/malformed-corpus
for x in "$BIN/inspect" "$gen"; do
	[ -x "$x" ] || { echo "FAIL: $x not built"; exit 1; }
done
rm -rf "$dir"
"$gen" --write "$dir" >/dev/null || { echo "FAIL: cannot write the corpus"; exit 1; }

limit() {
	if [ "${SANITIZE:-}" != 1 ]; then ulimit -v 4194304; fi
	timeout 60 "$@"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 n=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

for f in "$dir"/bad/*.gguf; do
	for mode in "" --check; do
		n=$((n + 1))
		(limit "$BIN/inspect" $mode "$f" >"$tmp/out" 2>"$tmp/err")
		rc=$?
		lines=$(wc -l <"$tmp/err")
		if [ $rc -ne 65 ]; then
			bad "inspect $mode $f: exit $rc, want 65: $(head -c 300 "$tmp/err")"
		elif [ "$lines" -ne 1 ] && [ -z "$mode" ]; then
			bad "inspect $f: $lines lines on stderr, want 1"
		elif [ -z "$mode" ] && [[ $(head -n 1 "$tmp/err") != "tern-inspect: $f: "?* ]]; then
			bad "inspect $f: stderr is not 'tern-inspect: $f: ...': $(head -c 300 "$tmp/err")"
		elif [ -n "$mode" ] && ! grep -qF "tern-inspect: $f: " "$tmp/err" && ! grep -q "^$f: .* found$" "$tmp/out"; then
			bad "inspect $mode $f: no 'tern-inspect: $f: ...' on stderr nor report on stdout: $(head -c 300 "$tmp/err")"
		fi
	done
done

for f in "$dir"/good/*.gguf; do
	for mode in "" --check; do
		n=$((n + 1))
		(limit "$BIN/inspect" $mode "$f" >"$tmp/out" 2>"$tmp/err")
		rc=$?
		[ $rc -eq 0 ] || bad "inspect $mode $f: exit $rc: $(head -c 300 "$tmp/err")"
	done
	for mode in --json "--json --full"; do
		n=$((n + 1))
		(limit "$BIN/inspect" $mode "$f" >"$tmp/out" 2>"$tmp/err")
		rc=$?
		if [ $rc -ne 0 ]; then
			bad "inspect $mode $f: exit $rc: $(head -c 300 "$tmp/err")"
		elif ! "$PYTHON" -m json.tool <"$tmp/out" >/dev/null 2>"$tmp/jerr"; then
			bad "inspect $mode $f: not JSON: $(head -c 300 "$tmp/jerr")"
		elif ! "$PYTHON" -c '
import json, sys
def no_const(c): raise ValueError("non-standard JSON constant " + c)
doc = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"), parse_constant=no_const)
assert isinstance(doc, dict) and "metadata" in doc and "tensors" in doc, "missing metadata/tensors"
' "$tmp/out" 2>"$tmp/jerr"; then
			bad "inspect $mode $f: not strict UTF-8 JSON: $(tail -n 1 "$tmp/jerr")"
		fi
	done
done

if [ $fail -eq 0 ]; then
	echo "PASS: $n inspect runs on $(ls "$dir"/bad | wc -l) malformed and $(ls "$dir"/good | wc -l) valid files"
else
	echo "FAIL: $fail of $n inspect runs"
fi
[ $fail -eq 0 ]

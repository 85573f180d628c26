#!/usr/bin/env bash
# cli_inspect.sh - tern-inspect as users run it: exit codes, one-line errors,
# listings and JSON for the shared files, and a comparison with an
# independent reader (the gguf Python package) when it is installed.
. "$(dirname "$0")/lib.sh"
I=$BIN/inspect
V=$DATA/vocab/ggml-vocab-llama-spm.gguf

expect 0 $I --help && check "help shows usage" grep -q '^usage: tern-inspect' "$T/out"
expect 0 $I --version && check "version lists backends and cpu" grep -q '^backends: cpu' "$T/out"
expect 2 $I && check "missing FILE is one line" one_line_err "tern-inspect: missing FILE"
expect 2 $I --bogus $V && check "unknown option is one line" one_line_err "tern-inspect: unknown option '--bogus'"
expect 2 $I --key && check "missing argument" one_line_err "tern-inspect: option '--key' needs an argument"
expect 2 $I --values x --tensor a $V && check "bad integer" one_line_err "tern-inspect: option '--values': 'x' is not an integer"
expect 2 $I --values 3 $V
expect 2 $I --color=sometimes $V
expect 2 $I a b
expect 1 $I /nonexistent.gguf && check "cannot open" one_line_err "tern-inspect: /nonexistent.gguf: cannot open"
expect 1 $I --tensor nope $V && check "no such tensor" one_line_err "tern-inspect: $V: no tensor named 'nope'"
expect 1 $I --key 'no.such.*' $V
expect 65 $I $DATA/audio/jfk.wav && check "not gguf" one_line_err "tern-inspect: $DATA/audio/jfk.wav: not a GGUF file"
expect 65 $I --check $DATA/audio/jfk.wav
head -c 100 $V >"$T/trunc.gguf"
expect 65 $I "$T/trunc.gguf" && check "truncated" one_line_err "tern-inspect: $T/trunc.gguf: truncated"

expect 0 $I $V
check "listing has header" grep -q '^format:      GGUF v3, little-endian' "$T/out"
check "listing cuts long arrays" grep -q 'tokenizer.ggml.tokens .*arr\[str,32000\] .*\.\.\. 31992 more\]' "$T/out"
check "summary vocab size" grep -q '^  vocab size: *32000' "$T/out"
expect 0 $I --key 'tokenizer.ggml.*_id' $V
check "key glob selects" test "$(wc -l <"$T/out")" -eq 3
expect 0 $I --check $V && check "check ok" grep -q ': ok' "$T/out"

for f in $DATA/vocab/*.gguf; do
	expect 0 $I --json $f || continue
	check "$f: JSON parses" $PYTHON -m json.tool "$T/out" /dev/null
	expect 0 $I --json --full --no-tensors $f && check "$f: full JSON parses" $PYTHON -m json.tool "$T/out" /dev/null
	expect 0 $I --check $f
done

if $PYTHON -c 'import gguf, numpy' 2>/dev/null; then
	expect 0 $PYTHON scripts/gguf_compare.py $BIN "$T/cmp" $DATA/vocab/*.gguf && cat "$T/out"
else
	echo "FAIL: the gguf Python package is missing (run 'make deps'); cannot compare with an independent reader"
	nfail=$((nfail + 1))
fi
finish

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

# legacy ggml files (whisper.cpp): same listing and JSON shape
S=$DATA/models/silero-v6.2.0-ggml.bin
W=$DATA/models/whisper-vocab-only-tiny.bin
expect 0 $I --json $S
check "silero: 15 tensors, 309,633 values" $PYTHON -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "ggml" and d["variant"] == "silero", d["format"]
assert len(d["tensors"]) == 15, len(d["tensors"])
assert d["summary"]["parameters"] == 309633, d["summary"]["parameters"]
assert d["metadata"]["silero.model_type"]["value"] == "silero-16k"' "$T/out"
expect 0 $I --json --full $W
check "whisper: 80x201 filter bank, 50,257 tokens" $PYTHON -c '
import json, sys
m = json.load(open(sys.argv[1]))["metadata"]
assert m["whisper.n_mels"]["value"] == 80
assert m["whisper.mel_filters"]["count"] == 80 * 201
assert m["tokenizer.tokens"]["count"] == 50257 == len(m["tokenizer.tokens"]["value"])
assert m["tokenizer.tokens"]["value"][0] == "!"' "$T/out"
# values checked against the independent numpy reader's reference (tests/data/legacy)
expect 0 $I --tensor _model.decoder.rnn.bias_ih --values 4 $S
same_f32() { # same_f32 FILE REF...: the last line of FILE holds the float32 values REF
	$PYTHON -c 'import sys, numpy as np
got = np.array(open(sys.argv[1]).read().split("\n")[-2].split(), dtype=np.float32)
ref = np.array(sys.argv[2:], dtype=np.float32)
assert np.array_equal(got, ref), (got, ref)' "$@"
}
check "silero tensor values" same_f32 "$T/out" -0.268610269 0.277710199 -0.124609351 -0.409024119
expect 0 $I --tensor _model.decoder.decoder.2.bias --values 1 $S && check "scalar tensor value" same_f32 "$T/out" -0.624597728
expect 0 $I --check $S
expect 0 $I --check $W
# "-" reads the file from stdin
expect 0 $I --check - <$S && check "stdin legacy" grep -q '^-: ok (ggml silero' "$T/out"
expect 0 $I --json - <$V && check "stdin gguf" $PYTHON -m json.tool "$T/out" /dev/null
expect 65 $I - </dev/null && check "empty stdin" one_line_err "tern-inspect: -: empty input"

if $PYTHON -c 'import gguf, numpy' 2>/dev/null; then
	expect 0 $PYTHON scripts/gguf_compare.py $BIN "$T/cmp" $DATA/vocab/*.gguf && cat "$T/out"
else
	echo "FAIL: the gguf Python package is missing (run 'make deps'); cannot compare with an independent reader"
	nfail=$((nfail + 1))
fi
finish

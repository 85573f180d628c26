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
expect 2 $I --bogus $V && check "unknown option is one line" one_line_err "tern-inspect: unknown option '--bogus' (try"
expect 2 $I --chek $V && check "unknown option suggests the nearest" \
	one_line_err "tern-inspect: unknown option '--chek' (did you mean '--check'?)"
expect 2 $I --tokenise x $V && check "suggests across a letter swap" grep -q "did you mean '--tokenize'" "$T/err"
expect 2 $I --tens x $V && check "suggests the option a prefix names" grep -q "did you mean '--tensor'" "$T/err"
expect 2 $I --key && check "missing argument" one_line_err "tern-inspect: option '--key' needs an argument"
expect 2 $I --values x --tensor a $V && check "bad integer" one_line_err "tern-inspect: option '--values': 'x' is not an integer"
expect 2 $I --values 3 $V && check "--values needs --tensor" one_line_err "tern-inspect: --values needs --tensor"
expect 2 $I --raw $V && check "--raw needs --tensor" one_line_err "tern-inspect: --raw needs --tensor"
expect 2 $I --tensor a --raw --json $V && check "--json excludes --raw" one_line_err "tern-inspect: --json cannot be combined with --raw"
expect 2 $I --check --json $V && check "--check excludes --json" one_line_err "tern-inspect: --json cannot be combined with --check"
expect 2 $I --ids $V && check "--ids needs a tokenize option" one_line_err "tern-inspect: --ids needs --tokenize or --tokenize-file"
expect 2 $I --tokenize a --detokenize 1 $V && check "tokenizer modes exclude each other" grep -q "cannot be combined" "$T/err"
expect 2 $I --tensor a --raw $V $V && check "--raw takes one FILE" one_line_err "tern-inspect: --raw writes one tensor"
expect 2 $I - - && check "stdin once" one_line_err "tern-inspect: FILE - (standard input) can be given once"
expect 2 $I --color=sometimes $V
expect 1 $I a b && check "two missing files: one line each" test "$(grep -c 'cannot open' "$T/err")" -eq 2
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

# ---- --help layout: wrapped to the width, hanging indent, never mid-word
for w in 80 50; do
	COLUMNS=$w expect 0 $I --help
	check "help at $w columns: no line is wider" test "$(awk -v w=$w 'length($0) > w' "$T/out" | wc -l)" -eq 0
	check "help at $w columns: sentences survive whole" \
		grep -q "validate placement, alignment, sizes and names; report every problem on stdout; exit 65 if any" \
		<<<"$(tr -s ' \n' ' ' <"$T/out")"
done
env -u COLUMNS $I --help >"$T/out" 2>&1
check "help piped: 80 columns" test "$(awk 'length($0) > 80' "$T/out" | wc -l)" -eq 0
check "help: every line is an option, a continuation at column 31 or unindented" \
	test "$(grep -Ev '^(  -|                              [^ ]|[^ ]|$)' "$T/out" | wc -l)" -eq 0
check "help: continuation lines exist" grep -q '^                              float32 to stdout' "$T/out"
check "help states the rules" grep -q -- '--values N .*(needs --tensor)' <<<"$(tr -s ' \n' ' ' <"$T/out" | sed 's/  */ /g')"

# ---- --check: the report is on stdout, for every file; the worst status wins
C=$T/corpus
"$OUT/tests/test_gguf_malformed" --write "$C" >/dev/null
S=$DATA/models/silero-v6.2.0-ggml.bin
W=$DATA/models/whisper-vocab-only-tiny.bin
WE=$DATA/models/ggml-tiny.en.bin
expect 0 $I --check $V $S $W && check "check of 3 files: 3 ok lines on stdout" test "$(grep -c ': ok (' "$T/out")" -eq 3
check "check ok: nothing on stderr" test ! -s "$T/err"
expect 65 $I --check $V $C/bad/tensor_overlap.gguf $S
check "check report on stdout" grep -q "^$C/bad/tensor_overlap.gguf: tensors 'a' and 'b' overlap" "$T/out"
check "check count on stdout" grep -q "^$C/bad/tensor_overlap.gguf: 1 problem found$" "$T/out"
check "check: the other files are still checked" test "$(grep -c ': ok (' "$T/out")" -eq 2
check "check problems: nothing on stderr" test ! -s "$T/err"
expect 1 $I --check $V /nonexistent.gguf && check "check: a missing file is an error on stderr" one_line_err "tern-inspect: /nonexistent.gguf: cannot open"
expect 65 $I --check /nonexistent.gguf $C/bad/tensor_overlap.gguf
$I -q --check $V >"$T/out"; check "-q: no ok line" test ! -s "$T/out"

# ---- several files: headed sections; JSON: one array, one document per file
expect 0 $I --no-tensors $V $S && check "listing of two files: two headers" test "$(grep -c '^==> .* <==$' "$T/out")" -eq 2
check "first header names the first file" test "$(head -1 "$T/out")" = "==> $V <=="
expect 1 $I --json --no-tensors $V /nonexistent.gguf $S
check "JSON of three files: one array, errors in place" $PYTHON -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert isinstance(d, list) and len(d) == 3, d
assert d[0]["file"] == sys.argv[2] and "summary" in d[0] and d[0]["tensors"] == []
assert d[1] == {"file": "/nonexistent.gguf", "error": d[1]["error"]} and "cannot open" in d[1]["error"], d[1]
assert d[2]["file"] == sys.argv[3] and d[2]["variant"] == "silero"' "$T/out" $V $S
expect 0 $I --json $V && check "one file: one JSON object, as before" $PYTHON -c '
import json, sys; d = json.load(open(sys.argv[1])); assert isinstance(d, dict) and d["file"] == sys.argv[2]' "$T/out" $V

expect 1 $I --json --tensor _model.decoder.decoder.2.bias --values 1 $S $V
check "JSON --tensor of two files: the tensor, then the error in place" $PYTHON -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d[0]["file"] == sys.argv[2] and d[0]["name"] == "_model.decoder.decoder.2.bias" and d[0]["shape"] == []
assert abs(d[0]["values"][0] - -0.624597728) < 1e-7
assert d[1]["file"] == sys.argv[3] and "no tensor named" in d[1]["error"], d[1]' "$T/out" $S $V

# ---- --json --key keeps the schema: metadata filtered, tensors empty, summary whole
expect 0 $I --json --key 'silero.n_*' $S
check "JSON --key: stable members" $PYTHON -c '
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("file", "format", "version", "alignment", "data_offset", "file_size", "metadata", "tensors", "summary"):
    assert k in d, k
assert sorted(d["metadata"]) == ["silero.n_context", "silero.n_encoder_layers", "silero.n_window"], d["metadata"]
assert d["tensors"] == [] and d["summary"]["parameters"] == 309633' "$T/out"
expect 1 $I --json --key 'no.such.*' $S && check "JSON --key without a match: still the whole schema" $PYTHON -c '
import json, sys
d = json.load(open(sys.argv[1])); assert d["metadata"] == {} and d["tensors"] == [] and "summary" in d' "$T/out"
expect 0 $I --json --key 'tokenizer.ggml.*_id' $V
check "JSON --key selects" $PYTHON -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert sorted(d["metadata"]) == ["tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id"], sorted(d["metadata"])
assert d["summary"]["vocab_size"] == 32000' "$T/out"

# ---- offsets: one convention for GGUF and legacy files; no data section without tensors
expect 0 $I --json $S
check "legacy offsets count from the data section" $PYTHON -c '
import json, struct, sys
d = json.load(open(sys.argv[1]))
assert d["data_offset"] == 106, d["data_offset"]          # the first tensor record
raw = open(sys.argv[2], "rb").read()
for t in d["tensors"]:
    assert t["file_offset"] == d["data_offset"] + t["offset"], t
b = [t for t in d["tensors"] if t["name"] == "_model.decoder.decoder.2.bias"][0]
# the bytes at file_offset are the value the numpy reference gives
assert abs(struct.unpack_from("<f", raw, b["file_offset"])[0] - -0.624597728) < 1e-7' "$T/out" $S
expect 0 $I --tensor _model.decoder.decoder.2.bias $S && check "tensor: offset in the data section and file offset" \
	grep -q '^offset:      752836 in the data section (file offset 752942, aligned to 2)' "$T/out"
expect 0 $I $W && check "tensor-less legacy file: no data offset" grep -q '^data:        none (no tensors)$' "$T/out"
expect 0 $I $V && check "tensor-less GGUF file: no data offset past the end" grep -q '^data:        none (no tensors)$' "$T/out"
expect 0 $I --json $V && check "tensor-less: data_offset null" $PYTHON -c '
import json, sys; assert json.load(open(sys.argv[1]))["data_offset"] is None' "$T/out"

# ---- Whisper: the model's vocabulary (token embedding rows), not only the stored tokens
expect 0 $I --no-tensors $WE && check "tiny.en: 51864 = 50257 stored + 1607 special" \
	grep -q '^  vocab size: *51864 (50257 stored in the file, 1607 special tokens)$' "$T/out"
check "tiny.en: English only" grep -q '^  languages: *English only$' "$T/out"
expect 0 $I --tensor decoder.token_embedding.weight $WE && check "tiny.en: the embedding has 51864 rows" grep -q '^shape: *\[384, 51864\]' "$T/out"
expect 0 $I --json --no-tensors $W && check "multilingual tiny: 51865, 99 languages" $PYTHON -c '
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
assert (s["vocab_size"], s["vocab_stored"], s["multilingual"], s["languages"]) == (51865, 50257, True, 99), s' "$T/out"

# ---- colour and -v
expect 0 $I --color=always --check $V && check "colour: ok is green on stdout" grep -q $'\e\[32mok\e\[0m' "$T/out"
expect 1 $I --color=always /nonexistent.gguf && check "colour: red error prefix" grep -q $'^\e\[1;31mtern-inspect:\e\[0m /nonexistent.gguf' "$T/err"
expect 0 $I --color=always --no-tensors $S && check "colour: dim types" grep -q $'\e\[2mi32' "$T/out"
expect 0 $I --color=never --check $V && check "--color=never: no escapes" test "$(grep -c $'\e' "$T/out")" -eq 0
NO_COLOR=1 expect 0 $I --check $V && check "NO_COLOR: no escapes" test "$(grep -c $'\e' "$T/out")" -eq 0
expect 0 $I -v $S && check "-v: file offsets and alignment per tensor" \
	grep -q '^  _model.decoder.decoder.2.bias .* @ 752836  (file 752942, aligned to 2)$' "$T/out"
check "-v: timing on stderr" grep -q "^tern-inspect: $S: opened and validated in [0-9.]* ms" "$T/err"
expect 0 $I $S && check "without -v: no file offsets" test "$(grep -c '(file ' "$T/out")" -eq 0

# ---- listing columns sized from the data; shortened only on a terminal
expect 0 $I --no-tensors $S
check "metadata columns line up" test "$(grep ' i32 ' "$T/out" | awk '{print index($0, " i32 ")}' | sort -u | wc -l)" -eq 1
check "key column as wide as the longest key" grep -q '^  silero.encoder.0.out_channels i32 ' "$T/out"
pty_run() { # pty_run COLUMNS ARGS...: run inspect with stdin and stdout on a terminal, output in $T/out
	$PYTHON - "$@" >"$T/out" 2>"$T/err" <<'PY'
import os, pty, subprocess, sys, select
cols = sys.argv[1]
m, s = pty.openpty()
env = dict(os.environ, COLUMNS=cols, TERM="xterm")
env.pop("NO_COLOR", None)
p = subprocess.Popen(sys.argv[2:], stdin=s, stdout=s, stderr=subprocess.PIPE, env=env)
os.close(s)
out = b""
while True:
    r, _, _ = select.select([m], [], [], 20)
    if not r:
        break
    try:
        chunk = os.read(m, 65536)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
p.wait(timeout=20)
sys.stdout.write(out.decode("utf-8", "replace").replace("\r\n", "\n"))
sys.stderr.write(p.stderr.read().decode())
sys.exit(p.returncode)
PY
}
if pty_run 60 $I --color=never --no-tensors $V; then
	check "terminal: long keys shortened in the middle" grep -q '^  llama.atte...rms_epsilon f32 ' "$T/out"
	check "terminal: nothing shortened when piped" bash -c "$I --no-tensors $V | grep -q '^  llama.attention.layer_norm_rms_epsilon f32 '"
else
	echo "FAIL: inspect on a terminal: $(head -3 "$T/err")"; nfail=$((nfail + 1))
fi
P3=$DATA/vocab/ggml-vocab-phi-3.gguf
if pty_run 80 $I --color=never --no-tensors $P3; then
	check "terminal: a long string is cut to the line" grep -q '^  tokenizer.chat_template .* = "{{ bos_to.*\.\.\." (269 bytes)$' "$T/out"
	check "terminal: no metadata line is wider than the terminal" test "$(sed -n '/^metadata:/,/^$/p' "$T/out" | grep -v 'tokenizer.ggml.\(tokens\|scores\|token_type\)' | awk 'length($0) > 80' | wc -l)" -eq 0
	check "piped: the string is whole" bash -c "$I --no-tensors $P3 | grep -q 'message\\[.content.\\] + .<|end|>. + .\\\\n.}}{% endif %}{% endfor %}\"$'"
else
	echo "FAIL: inspect on a terminal: $(head -3 "$T/err")"; nfail=$((nfail + 1))
fi
pty_run 80 $I -; st=$?
check "FILE - on a terminal: refused with exit 2" test $st -eq 2
check "FILE - on a terminal: says why" grep -q "standard input is a terminal" "$T/err"

# the summary says whether lib/llm can build the model (tiny files of the fuzz corpus)
C=tests/fuzz/corpus/llm_model
expect 0 $I --no-tensors $C/qwen3.gguf && check "summary: a supported model loads" grep -q '^  tern loads it: *yes$' "$T/out"
expect 0 $I --no-tensors $C/mamba.gguf && check "summary: an unsupported architecture says why" \
	grep -q "^  tern loads it: *no: architecture 'mamba' is not supported (supported: llama, qwen2, qwen3, gemma3, gemma, gemma2, phi2, phi3, qwen2moe, qwen3moe, gpt-oss, deepseek2)$" "$T/out"
expect 0 $I --json --no-tensors $C/mamba.gguf && check "json summary: loadable false with the reason" \
	$PYTHON -c 'import json, sys; s = json.load(open(sys.argv[1]))["summary"]
assert s["loadable"] is False and "mamba" in s["loadable_error"], s' "$T/out"
# general.file_type named as llama-quantize spells it (llama.h's llama_ftype)
M=${TERN_MODELS:-models}
for f in "gemma-3-270m-q4_k_m.gguf 15 Q4_K_M" "SmolLM2-135M-Instruct.Q4_1.gguf 3 Q4_1"; do
	set -- $f
	[ -f "$M/$1" ] || { echo "note: $M/$1 absent: its file type not checked"; continue; }
	expect 0 $I --key general.file_type "$M/$1" && check "general.file_type $2 is $3" \
		grep -q "^  general.file_type  *u32  *= $2 ($3)$" "$T/out"
done
# a tensor name near one of the file's: suggested
expect 1 $I --tensor zzz "$C/qwen3.gguf" && check "no such tensor: one line" one_line_err "tern-inspect: $C/qwen3.gguf: no tensor named 'zzz'$"
expect 1 $I --tensor token_embd.weigth "$C/qwen3.gguf" && check "a near tensor name suggested" \
	one_line_err "tern-inspect: $C/qwen3.gguf: no tensor named 'token_embd.weigth' (did you mean 'token_embd.weight'?)"
expect 1 $I --tensor output_norm "$C/qwen3.gguf" && check "the name without .weight: suggested" \
	one_line_err "tern-inspect: $C/qwen3.gguf: no tensor named 'output_norm' (did you mean 'output_norm.weight'?)"

# the named chat templates (tokenizer.chat_template.NAME) that tern-run's
# --chat-template-name picks: listed in the summary, in JSON too
P3=$DATA/vocab/ggml-vocab-phi-3.gguf
if named_templates_gguf "$P3" "$T/named.gguf"; then
	expect 0 $I "$T/named.gguf"
	check "the named templates listed with their sizes" grep -q '^  named templates: *tool_use (70 bytes), rag (66 bytes)$' "$T/out"
	expect 0 $I --json "$T/named.gguf"
	check "... and in JSON" $PYTHON -c 'import json, sys
d = json.load(open(sys.argv[1]))
s = d["summary"] if "summary" in d else d[0]["summary"]
assert s["chat_template"] is True and s["chat_template_names"] == ["tool_use", "rag"], s' "$T/out"
	expect 0 $I "$P3"
	check "a file without named templates: no such line" sh -c "! grep -q 'named templates' '$T/out'"
else
	echo "skip: named templates ($PYTHON has no gguf-py)"
fi

if $PYTHON -c 'import gguf, numpy' 2>/dev/null; then
	expect 0 $PYTHON scripts/gguf_compare.py $BIN "$T/cmp" $DATA/vocab/*.gguf && cat "$T/out"
else
	echo "FAIL: the gguf Python package is missing (run 'make deps'); cannot compare with an independent reader"
	nfail=$((nfail + 1))
fi
finish

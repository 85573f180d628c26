#!/usr/bin/env bash
# cli_embed.sh - tern-run --embedding as scripts use it: the synthetic
# embedding models of scripts/gen_synth_llm.c (bert, nomic-bert, decoders
# with a pooling_type, a llama without one), the inputs of
# tests/data/llm_ref/embed/inputs.txt from -f, standard input and -p; every
# output format read back (jsonl, array, json through a JSON parser, raw
# text, f32 binary) and compared with llama.cpp's embeddings of the same
# files (cosine >= 0.999999: they are F32 files and tern rounds as
# llama.cpp does; unit L2 length by default, llama.cpp's raw length with
# --embd-normalize -1); F16 and BF16 copies of the encoders against
# llama.cpp's embeddings of the same bytes; --pooling; the errors and their
# statuses: usage (2), an empty input or a file without pooling (65), an
# input longer than the context (1), a closed pipe (0).
. "$(dirname "$0")/lib.sh"
R=$BIN/run
REFD=tests/data/llm_ref/embed
IN=$REFD/inputs.txt
unset TERN_MODEL TERN_MEM_AVAILABLE
TO="timeout 120"

# ---- usage errors (no model needed) ----------------------------------------------
expect 2 $R -m x.gguf --pooling mean hi && check "--pooling needs --embedding" grep -q "needs --embedding" "$T/err"
expect 2 $R -m x.gguf --embedding --pooling none hi && check "--pooling none: per-token output refused" \
	one_line_err "tern-run: --pooling none: per-token embeddings are not supported"
expect 2 $R -m x.gguf --embedding --pooling rank hi
expect 2 $R -m x.gguf --embedding --pooling max hi
expect 2 $R -m x.gguf --embedding --chat-template chatml hi && check "--embedding excludes chat templates" \
	grep -q "cannot be combined" "$T/err"
expect 2 $R -m x.gguf --embedding --embd-separator "" hi
expect 2 $R -m x.gguf --embedding --embd-normalize -2 hi
expect 2 $R -m x.gguf --embedding --json --embd-output-format raw hi

# ---- the models ---------------------------------------------------------------------
synth_gen || finish
for m in bert-f32 nomic-bert-f32 llama-mean-f32 qwen3-last-f32 llama-f32; do
	expect 0 "$T/gen" "${m%-f32}" f32 "$T/$m.gguf" || finish
done

# compare.py REF.json POOLING FORMAT FILE [NORM]: tern's output against llama.cpp's
# (the least cosine: $MIN_COS, else 0.999999; the median: $MED_COS, else 0)
cat >"$T/compare.py" <<'EOF'
import json, math, os, struct, sys
min_cos = float(os.environ.get("MIN_COS", "0.999999"))
med_cos = float(os.environ.get("MED_COS", "0"))
ref = json.load(open(sys.argv[1]))
want = ref["embeddings"][sys.argv[2]]
fmt, path = sys.argv[3], sys.argv[4]
norm = int(sys.argv[5]) if len(sys.argv) > 5 else 2
d = ref["n_embd"]
raw = open(path, "rb").read()
if fmt == "jsonl":
    lines = raw.decode().split("\n")
    assert lines[-1] == "", "output does not end with a newline"
    got = [json.loads(l) for l in lines[:-1]]
elif fmt == "array":
    got = json.loads(raw)
elif fmt == "json":
    o = json.loads(raw)
    assert o["object"] == "list" and o["n_embd"] == d and o["normalize"] == norm, o.keys()
    assert [x["index"] for x in o["data"]] == list(range(len(o["data"])))
    assert [x["tokens"] for x in o["data"]] == [len(i["ids"]) for i in ref["inputs"]], "token counts"
    assert o["usage"]["prompt_tokens"] == sum(len(i["ids"]) for i in ref["inputs"])
    got = [x["embedding"] for x in o["data"]]
elif fmt == "raw":
    got = [[float(v) for v in l.split(" ")] for l in raw.decode().rstrip("\n").split("\n")]
elif fmt == "f32":
    assert len(raw) % (4 * d) == 0, "f32 output is not whole vectors"
    got = [list(struct.unpack("<%df" % d, raw[i:i + 4 * d])) for i in range(0, len(raw), 4 * d)]
assert len(got) == len(want), "%d vectors, llama.cpp has %d" % (len(got), len(want))
for i, (g, w) in enumerate(zip(got, want)):
    assert len(g) == d, "vector %d has %d values" % (i, len(g))
    ng = math.sqrt(sum(x * x for x in g)); nw = math.sqrt(sum(x * x for x in w))
    cos = sum(a * b for a, b in zip(g, w)) / (ng * nw)
    assert cos >= min_cos, "input %d: cosine %.8f < %g" % (i, cos, min_cos)
    if norm == 2:
        assert abs(ng - 1) < 1e-5, "input %d: length %g, not 1" % (i, ng)
    if norm == -1:
        assert abs(ng / nw - 1) < 1e-3, "input %d: length %g, llama.cpp's %g" % (i, ng, nw)
cs = sorted(sum(a * b for a, b in zip(g, w)) / math.sqrt(sum(a * a for a in g) * sum(b * b for b in w))
            for g, w in zip(got, want))
assert cs[len(cs) // 2] >= med_cos, "median cosine %.8f < %g" % (cs[len(cs) // 2], med_cos)
print("ok", len(got))
EOF
cmp_ref() { "$PYTHON" "$T/compare.py" "$@" >"$T/cmp" 2>&1 || { cat "$T/cmp"; return 1; }; }
cmp_ref_min() { local m=$1; shift; MIN_COS=$m "$PYTHON" "$T/compare.py" "$@" >"$T/cmp" 2>&1 || { cat "$T/cmp"; return 1; }; }
cmp_ref_med() { local m=$1 md=$2; shift 2; MIN_COS=$m MED_COS=$md "$PYTHON" "$T/compare.py" "$@" >"$T/cmp" 2>&1 ||
	{ cat "$T/cmp"; return 1; }; }

B=$T/bert-f32.gguf
for fmt in jsonl array json raw f32; do
	expect 0 $TO $R -m "$B" --embedding --embd-output-format $fmt -f "$IN" </dev/null &&
		cp "$T/out" "$T/bert.$fmt" && check "bert, -f, $fmt: llama.cpp's embeddings (the file's CLS pooling)" \
		cmp_ref "$REFD/bert-f32.json" file $fmt "$T/bert.$fmt"
done
check "stderr is empty without -v" [ ! -s "$T/err" ]
check "jsonl is the default" bash -c "$R -m '$B' --embedding -f '$IN' </dev/null | cmp -s - '$T/bert.jsonl'"
check "--json is the json format" bash -c "$R -m '$B' --embedding --json -f '$IN' </dev/null | cmp -s - '$T/bert.json'"
expect 0 $TO $R -m "$B" --embedding <"$IN" && check "inputs from standard input" cmp -s "$T/out" "$T/bert.jsonl"
expect 0 $TO $R -m "$B" --embedding - <"$IN" && check "'-' reads them too" cmp -s "$T/out" "$T/bert.jsonl"
head -c -1 "$IN" >"$T/nonl.txt"
expect 0 $TO $R -m "$B" --embedding -f "$T/nonl.txt" </dev/null && check "no final newline: the same inputs" \
	cmp -s "$T/out" "$T/bert.jsonl"
tr '\n' '|' <"$IN" >"$T/bar.txt"
expect 0 $TO $R -m "$B" --embedding --embd-separator "|" -f "$T/bar.txt" </dev/null &&
	check "--embd-separator" cmp -s "$T/out" "$T/bert.jsonl"
expect 0 $TO $R -m "$B" --embedding -p "$(head -n1 "$IN")" </dev/null && check "-p: one input" \
	cmp -s "$T/out" <(head -n1 "$T/bert.jsonl")
expect 0 $TO $R -m "$B" --embedding --embd-normalize -1 -f "$IN" </dev/null && cp "$T/out" "$T/o" &&
	check "--embd-normalize -1: llama.cpp's raw vectors" cmp_ref "$REFD/bert-f32.json" file jsonl "$T/o" -1
expect 0 $TO $R -m "$B" --embedding --pooling mean -f "$IN" </dev/null && cp "$T/out" "$T/o" &&
	check "--pooling mean" cmp_ref "$REFD/bert-f32.json" mean jsonl "$T/o"
expect 0 $TO $R -m "$B" --embedding --pooling last -f "$IN" </dev/null && cp "$T/out" "$T/o" &&
	check "--pooling last" cmp_ref "$REFD/bert-f32.json" last jsonl "$T/o"
expect 0 $TO $R -m "$B" --embedding --embd-normalize 0 -p "hello world" </dev/null &&
	check "--embd-normalize 0: the largest value is 32760" "$PYTHON" -c \
	'import json,sys; v=json.load(open(sys.argv[1])); assert abs(max(abs(x) for x in v) - 32760) < 0.01' "$T/out"
expect 0 $TO $R -m "$B" --embedding -v -p "hello" </dev/null && check "-v: the model and pooling on stderr" \
	grep -q "bert, 2 layers, embeddings of 256; pooling cls (the file's)" "$T/err"
check "-v: a timing line" grep -q "embedded 1 inputs (3 tokens)" "$T/err"
check "-v: stdout unchanged" [ "$(wc -l <"$T/out")" -eq 1 ]

for m in nomic-bert-f32:file llama-mean-f32:file qwen3-last-f32:file; do
	name=${m%%:*}
	expect 0 $TO $R -m "$T/$name.gguf" --embedding -f "$IN" </dev/null && cp "$T/out" "$T/o" &&
		check "$name: llama.cpp's embeddings" cmp_ref "$REFD/$name.json" file jsonl "$T/o"
done
# (llama.cpp summed the 189-token input's attention in f32, these micro-batches in f16: 0.999997)
# F16 and BF16 copies of the encoders (scripts/embed_ref_f16.sh, the bytes llama.cpp embedded):
# a product with such weights reads its input rounded to their type, as ggml's does. Least
# and median cosine over avx512 / avx2 / scalar: f16 0.99999976 / 0.99999987, bf16
# 0.9999968 / 0.9999991 (without that rounding the bf16 medians are 0.9999968 and 0.9999961)
for m in bert nomic-bert; do
	for k in f16 bf16; do
		J=$REFD/conv/$m-$k.json
		expect 0 scripts/embed_ref_f16.sh "$T/$m-f32.gguf" "$T/$m-$k.gguf" $k || continue
		sha=$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["model_sha256"])' "$J")
		check "$m-$k: the bytes llama.cpp embedded ($J)" [ "$(sha256sum "$T/$m-$k.gguf" | cut -d' ' -f1)" = "$sha" ]
		[ $k = f16 ] && bounds="0.9999995 0" || bounds="0.99999 0.999998"
		expect 0 $TO $R -m "$T/$m-$k.gguf" --embedding -f "$IN" </dev/null && cp "$T/out" "$T/o" &&
			check "$m-$k: llama.cpp's embeddings" cmp_ref_med $bounds "$J" file jsonl "$T/o"
	done
done
expect 0 $TO $R -m "$T/llama-mean-f32.gguf" --embedding --pooling last -ub 4 -f "$IN" </dev/null &&
	cp "$T/out" "$T/o" && check "a decoder in micro-batches of 4, --pooling last" \
	cmp_ref_min 0.99999 "$REFD/llama-mean-f32.json" last jsonl "$T/o"

# ---- bad input ---------------------------------------------------------------------------
expect 65 $TO $R -m "$T/llama-f32.gguf" --embedding -p hello </dev/null && check "no pooling in the file: status 65, --pooling named" \
	one_line_err "tern-run: $T/llama-f32.gguf: the file's pooling is 'none'.*--pooling mean|cls|last"
expect 0 $TO $R -m "$T/llama-f32.gguf" --embedding --pooling mean -p hello </dev/null
TERN_MEM_AVAILABLE=1000000 expect 1 $TO $R -m "$T/llama-f32.gguf" --embedding --pooling mean -p hello </dev/null &&
	check "a decoder that does not fit: status 1, the numbers" grep -q "does not fit in memory: it needs" "$T/err"
printf 'one\n\ntwo\n' >"$T/gap.txt"
expect 65 $TO $R -m "$B" --embedding -f "$T/gap.txt" </dev/null && check "an empty line: status 65, named" \
	one_line_err "tern-run: input 2 of 3 is empty"
check "nothing on stdout for bad input" [ ! -s "$T/out" ]
printf '\n' >"$T/nl.txt"
expect 65 $TO $R -m "$B" --embedding -f "$T/nl.txt" </dev/null
long=$(yes the | head -n 200 | tr '\n' ' ')
printf 'hello\n%s\n' "$long" >"$T/long.txt"
expect 1 $TO $R -m "$B" --embedding -f "$T/long.txt" </dev/null && check "an input longer than the context: status 1, sizes named" \
	one_line_err "tern-run: input 2 is 202 tokens, more than the context of 128"
check "... before anything is written" [ ! -s "$T/out" ]
expect 1 $TO $R -m "$T/nomic-bert-f32.gguf" --embedding -c 64 -f "$T/long.txt" </dev/null && check "-c bounds the input" \
	grep -q "more than the context of 64: raise it with -c N" "$T/err"
expect 0 $TO $R -m "$T/nomic-bert-f32.gguf" --embedding -c 256 -f "$T/long.txt" </dev/null
expect 1 $TO $R -m "$B" --embedding -c 200 -p hello </dev/null && check "bert: no context beyond its positions" \
	grep -q "this bert model has 128 positions" "$T/err"
expect 2 $TO $R -m "$B" hello </dev/null && check "an embedding model without --embedding: how to run it" \
	one_line_err "tern-run: $B: bert is an embedding model, it does not generate text: run it with --embedding"
expect 65 $TO $R -m "$DATA/audio/jfk.wav" --embedding hi </dev/null && check "not a GGUF file: one line" \
	one_line_err "tern-run: $DATA/audio/jfk.wav: not a GGUF file"
yes "the cat sat on the mat." | head -n 3000 >"$T/many.txt"
bash -c "$R -m '$B' --embedding -f '$T/many.txt' </dev/null | head -c 100 >/dev/null; exit \${PIPESTATUS[0]}" 2>"$T/err"
check "a closed pipe: status 0, no message" [ $? -eq 0 ] && [ ! -s "$T/err" ]
finish

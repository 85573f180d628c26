#!/usr/bin/env bash
# cli_ppl.sh - tern-bench --ppl against llama-perplexity: the perplexity of
# both real models over a held-out text (tests/data/ppl/heldout.txt) at
# several settings, against the values llama-perplexity printed for the same
# file and settings (tests/data/ppl/ref.json, how they were made in
# tests/data/ppl/README.md): the final value within 0.5%, each running
# estimate within 1/sqrt(n) relative after n scored tokens (a few chunks
# move more between evaluation paths than the total: llama.cpp's own paths
# differ by up to 0.62/sqrt(n) on these texts). Also the JSON document's
# fields, stdout carrying only the result and stderr the running estimates,
# --chunks, the thread count (bit-identical), usage and data errors, Ctrl-C.
# The model runs are skipped when models/ is absent; under SANITIZE=1 (ASan,
# several times slower) fewer chunks run.
. "$(dirname "$0")/lib.sh"
B=$BIN/bench
M=${TERN_MODELS:-models}
S=$M/SmolLM2-135M-Instruct.Q4_1.gguf
G=$M/gemma-3-270m-q4_k_m.gguf
TXT=tests/data/ppl/gpl-3.txt
HELD=tests/data/ppl/heldout.txt
REF=tests/data/ppl/ref.json
TO="timeout 300"
unset TERN_MEM_AVAILABLE

# ---- without a model ------------------------------------------------------------------
expect 2 $B --ppl $TXT && check "--ppl needs -m" grep -q "needs" "$T/err"
expect 2 $B -m x.gguf -c 128 && check "-c needs --ppl" grep -q "needs" "$T/err"
expect 2 $B --ppl $TXT -m a.gguf -m b.gguf && check "one model" one_line_err "tern-bench: --ppl takes one model"
expect 2 $B --ppl $TXT -m x.gguf -t 1,2 && check "one thread count" one_line_err "tern-bench: --ppl takes one value of -t"
expect 2 $B --ppl $TXT -m x.gguf -b 64 -b 32 && check "one batch size" one_line_err "tern-bench: --ppl takes one value of -b"
expect 2 $B --ppl $TXT -m x.gguf -c 2 && check "-c 2 scores nothing" one_line_err "tern-bench: -c 2: a chunk of fewer than 3"
expect 2 $B --ppl $TXT -m x.gguf -p 128 && check "no prefill tests with --ppl" one_line_err "tern-bench: --n-prompt cannot be combined with --ppl"
expect 2 $B --ppl $TXT -m x.gguf -r 3 && check "no repetitions with --ppl" one_line_err "tern-bench: --repetitions cannot be combined with --ppl"
expect 2 $B --ppl $TXT -m x.gguf -ctk q4_0 && check "cache types" one_line_err "tern-bench: -ctk 'q4_0': the cache types are"
expect 2 $B --ppl $TXT -m x.gguf --backend gpu && check "backends" one_line_err "tern-bench: --backend 'gpu': cpu or ref"
expect 2 $B --ppl $TXT -m x.gguf --kernels
expect 1 $B --ppl /nonexistent.txt -m x.gguf && check "missing text: one line" \
	one_line_err "tern-bench: /nonexistent.txt: cannot open: No such file or directory"
expect 1 $B --ppl "$T" -m x.gguf && check "a directory: one line" one_line_err "tern-bench: $T: cannot read"
printf 'some text\0more text' >"$T/nul.txt"
expect 65 $B --ppl "$T/nul.txt" -m x.gguf && check "a NUL byte: one line, exit 65" \
	one_line_err "tern-bench: $T/nul.txt: a NUL byte at offset 9: not a text file"
expect 1 $B --ppl $TXT -m /nonexistent.gguf && check "missing model: one line" \
	one_line_err "tern-bench: /nonexistent.gguf: cannot open"

if [ ! -f "$S" ] || [ ! -f "$G" ]; then
	echo "SKIP: the model runs (no $S or $G; make models fetches them)"
	finish
fi

# compare JSON_FILE TEXT MODEL "LLAMA ARGS": tern's document against
# llama-perplexity's run of TEXT with these arguments and -fa auto (its
# default): the final value within 0.5% and its +/- within 2%, or, for a run
# cut short by --chunks N, llama's running estimate after N chunks; every
# running estimate within 1/sqrt(tokens scored so far)
compare() {
	$PYTHON - "$REF" "$@" <<'EOF'
import json, sys
ref, out, text, model, args = sys.argv[1:]
runs = [r for r in json.load(open(ref))["runs"]
        if (r["text"], r["model"], r["args"], r["fa"]) == (text, model, args, "auto")]
assert len(runs) == 1, f"no reference run {text} {model} {args}"
r, d = runs[0], json.load(open(out))
n, partial = d["n_chunks"], d["n_chunks"] < len(r["running"])
assert d["n_chunks_available"] == len(r["running"]), (d["n_chunks_available"], len(r["running"]))
want = r["running"][n - 1] if partial else r["ppl"]
rel = d["ppl"] / want - 1
print(f"{text} {model} {args}: {n} chunks, tern {d['ppl']:.4f} +/- {d['ppl_err']:.5f}, "
      f"llama-perplexity {want:.4f} ({100 * rel:+.3f}%)")
if not partial:
    assert abs(rel) < 0.005, rel
    assert abs(d["ppl_err"] / r["ppl_err"] - 1) < 0.02, (d["ppl_err"], r["ppl_err"])
for i, c in enumerate(d["chunks"]):
    tol = ((i + 1) * d["scored_per_chunk"]) ** -0.5
    assert abs(c["running_ppl"] / r["running"][i] - 1) < tol, (i, c["running_ppl"], r["running"][i], tol)
EOF
}
# ppl NAME MODEL ARGS...: tern-bench -m MODEL ARGS -o json -q into $T/NAME.json
ppl() {
	local name=$1 model=$2; shift 2
	expect 0 $TO $B -m "$model" -t 2 -o json -q "$@" && cp "$T/out" "$T/$name.json"
}
# under ASan the long runs stop after a few chunks
few() { if ! full; then echo "--chunks $1"; fi; }

# ---- SmolLM2 (no BOS) -------------------------------------------------------------------
expect 0 $TO $B --ppl $TXT -m $S -c 128 -t 2 --chunks 4 && cp "$T/out" "$T/table.out" && cp "$T/err" "$T/table.err"
check "stdout: only the final line" grep -qxE 'Final estimate: PPL = [0-9]+\.[0-9]{4} \+/- [0-9]+\.[0-9]{5}' "$T/table.out"
check "stdout: one line" test "$(wc -l <"$T/table.out")" -eq 1
check "stderr: what runs" grep -q "^perplexity of $S over $TXT: 7638 tokens, 4 of 59 chunks of 128, 63 scored in each" "$T/table.err"
check "stderr: a running estimate with its +/- per chunk" \
	test "$(grep -cE '^\[[0-9]+/4\] PPL [0-9.]+ \+/- [0-9.]+ \(chunk [0-9.]+, [0-9.]+ s\)$' "$T/table.err")" -eq 4
check "stderr: the last estimate is the final one" \
	grep -qF "[4/4] PPL $(sed 's/.*PPL = \([0-9.]*\) +\/- \([0-9.]*\)/\1 +\/- \2/' "$T/table.out")" "$T/table.err"

ppl s128 $S --ppl $TXT -c 128 $(few 8)
check "-q: nothing on stderr" test ! -s "$T/err"
check "SmolLM2 -c 128: within 0.5% of llama-perplexity" compare "$T/s128.json" gpl-3.txt smollm2 "-c 128"
check "the JSON document follows docs/bench-ppl.schema.json" "$PYTHON" -c '
import json, sys, jsonschema
s = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(s)
jsonschema.validate(json.load(open(sys.argv[2])), s, cls=jsonschema.Draft202012Validator)
' docs/bench-ppl.schema.json "$T/s128.json"
check "the JSON document" $PYTHON -c 'import json, math, sys
d = json.load(open(sys.argv[1]))
n = d["n_chunks"]
assert d["mode"] == "perplexity" and d["interrupted"] is False
assert d["file"] == sys.argv[2] and d["file_bytes"] == 35149
m = d["model"]
assert m["path"] == sys.argv[3] and m["arch"] == "llama" and m["add_bos"] is False and m["n_vocab"] == 49152
assert m["n_ctx_train"] == 8192
s = d["settings"]
assert (s["n_ctx"], s["batch"], s["ubatch"], s["threads"], s["backend"], s["type_k"], s["type_v"]) == \
    (128, 128, 128, 2, "cpu", "f16", "f16"), s
assert (d["n_tokens"], d["n_chunks_available"], d["scored_per_chunk"], d["n_scored"]) == (7638, 59, 63, n * 63)
assert len(d["chunks"]) == n and [c["chunk"] for c in d["chunks"]] == list(range(1, n + 1))
assert abs(math.exp(d["nll_mean"]) / d["ppl"] - 1) < 1e-12
assert abs(math.exp(sum(c["nll"] for c in d["chunks"]) / d["n_scored"]) / d["ppl"] - 1) < 1e-12
assert d["chunks"][-1]["running_ppl"] == d["ppl"] and d["chunks"][-1]["running_err"] == d["ppl_err"]
for c in d["chunks"]:
    assert abs(math.exp(c["nll"] / 63) / c["ppl"] - 1) < 1e-12 and c["seconds"] > 0
assert d["seconds"] > 0 and d["tokens_per_second"] > 0 and d["peak_rss"] > 0
assert isinstance(d["version"], str) and isinstance(d["cpu"]["model"], str)' "$T/s128.json" $TXT $S

# the forward pass is bit-identical across thread counts: so is the value
expect 0 $TO $B -m $S --ppl $TXT -c 128 --chunks 4 -t 1 -o json -q && cp "$T/out" "$T/t1.json"
expect 0 $TO $B -m $S --ppl $TXT -c 128 --chunks 4 -t 3 -o json -q && cp "$T/out" "$T/t3.json"
check "--chunks 4, -t 1 and -t 3: the same figures as the first 4 chunks of -t 2" $PYTHON -c 'import json, sys
a, b, c = (json.load(open(p)) for p in sys.argv[1:])
assert b["n_chunks"] == 4 and b["n_chunks_available"] == 59 and b["n_scored"] == 4 * 63
assert b["settings"]["threads"] == 1 and c["settings"]["threads"] == 3
for k in ("nll", "ppl", "running_ppl", "running_err"):
    assert [x[k] for x in b["chunks"]] == [x[k] for x in c["chunks"]] == [x[k] for x in a["chunks"][:4]], k
assert b["ppl"] == c["ppl"] == a["chunks"][3]["running_ppl"]' "$T/s128.json" "$T/t1.json" "$T/t3.json"
check "the table line is the JSON value" $PYTHON -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert open(sys.argv[2]).read() == "Final estimate: PPL = %.4f +/- %.5f\n" % (d["ppl"], d["ppl_err"])' \
	"$T/t1.json" "$T/table.out"

ppl sq8 $S --ppl $TXT -c 128 -ctk q8_0 -ctv q8_0 $(few 8)
check "SmolLM2 -c 128, q8_0 cache: within 0.5%" compare "$T/sq8.json" gpl-3.txt smollm2 "-c 128 -ctk q8_0 -ctv q8_0"
if full; then
	# the default -c (512) with a batch smaller than a chunk
	ppl s512 $S --ppl $TXT -b 128
	check "-b 128: -c 512, batch 128" $PYTHON -c 'import json, sys
s = json.load(open(sys.argv[1]))["settings"]
assert (s["n_ctx"], s["batch"], s["ubatch"]) == (512, 128, 128), s' "$T/s512.json"
	check "SmolLM2 -c 512 -b 128: within 0.5%" compare "$T/s512.json" gpl-3.txt smollm2 "-c 512 -b 128"
	check "SmolLM2 -c 512: within 0.5%" compare "$T/s512.json" gpl-3.txt smollm2 "-c 512"
	ppl h128 $S --ppl $HELD -c 128
	check "SmolLM2 -c 128 on the held-out text: within 0.5%" compare "$T/h128.json" heldout.txt smollm2 "-c 128"
fi

# ---- Gemma 3 (BOS first, and in place of each chunk's first token) ------------------------
ppl g128 $G --ppl $TXT -c 128 $(few 3)
check "Gemma 3 -c 128: within 0.5% of llama-perplexity" compare "$T/g128.json" gpl-3.txt gemma3 "-c 128"
check "Gemma 3: BOS added" $PYTHON -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["model"]["add_bos"] is True and d["n_tokens"] == 7562, (d["model"], d["n_tokens"])' "$T/g128.json"
if full; then
	ppl g512 $G --ppl $TXT -c 512
	check "Gemma 3 -c 512: within 0.5%" compare "$T/g512.json" gpl-3.txt gemma3 "-c 512"
	# on the short held-out text llama-perplexity's default batch (16 chunks
	# of 128 side by side) moves its value by 0.6% from -b 128 (another
	# flash-attention path): tern, one chunk per batch, is held to -b 128
	ppl hg128 $G --ppl $HELD -c 128
	check "Gemma 3 -c 128 on the held-out text: within 0.5% of llama-perplexity -b 128" \
		compare "$T/hg128.json" heldout.txt gemma3 "-c 128 -b 128"
fi

# ---- the text and -c against the model -------------------------------------------------------
printf '' >"$T/empty.txt"
expect 65 $B --ppl "$T/empty.txt" -m $S && check "an empty text: one line, exit 65" \
	one_line_err "tern-bench: $T/empty.txt: 0 tokens with this model's vocabulary; -c 512 needs at least 1024 (two chunks)"
head -c 600 $TXT >"$T/short.txt"
expect 65 $B --ppl "$T/short.txt" -m $G -c 128 && check "a text shorter than two chunks" \
	one_line_err "tern-bench: $T/short.txt: [0-9]* tokens with this model's vocabulary; -c 128 needs at least 256 (two chunks)"
expect 2 $B --ppl $TXT -m $S -c 10000 && check "-c past the trained context" \
	one_line_err "tern-bench: -c 10000: larger than the context the model was trained on (8192)"

# ---- the other output formats --------------------------------------------------------------
expect 0 $TO $B --ppl $TXT -m $S -c 64 --chunks 2 -t 2 -o csv -q
check "csv: a header and one line" $PYTHON -c 'import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 1 and rows[0]["n_ctx"] == "64" and rows[0]["chunks"] == "2" and rows[0]["n_scored"] == "62", rows
assert float(rows[0]["ppl"]) > 1' "$T/out"
expect 0 $TO $B --ppl $TXT -m $S -c 64 --chunks 2 -t 2 -o md -q
check "md: a table" test "$(grep -c '^|' "$T/out")" -eq 3
expect 0 $TO $B --ppl $TXT -m $S -c 64 --chunks 2 -t 2 -o jsonl -q
check "jsonl: the document on one line" test "$(wc -l <"$T/out")" -eq 1

if [ -w /dev/full ]; then
	$B --ppl $TXT -m $S -c 64 --chunks 2 -t 2 -q >/dev/full 2>"$T/err"
	st=$?
	check "stdout on a full disk: exit 1 (got $st)" test "$st" -eq 1
	check "stdout on a full disk: one line" one_line_err "tern-bench: standard output: No space left on device"
fi

# ---- Ctrl-C: the estimate over the chunks done, exit 130 ----------------------------------------
for _ in 1 2 3 4 5 6 7 8; do cat $TXT; done >"$T/long.txt"
$B --ppl "$T/long.txt" -m $S -c 64 -t 2 -o json >"$T/out" 2>"$T/err" &
pid=$!
for _ in $(seq 600); do grep -q '^\[2/' "$T/err" && break; sleep 0.1; done
kill -INT $pid
wait $pid
st=$?
check "SIGINT: exit 130 (got $st)" test "$st" -eq 130
check "SIGINT: a complete document, interrupted, over the chunks done" $PYTHON -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["interrupted"] is True and 2 <= d["n_chunks"] < d["n_chunks_available"], (d["n_chunks"], d["n_chunks_available"])
assert len(d["chunks"]) == d["n_chunks"] and d["chunks"][-1]["running_ppl"] == d["ppl"]' "$T/out"
check "SIGINT: said on stderr" grep -q "^interrupted: the estimate is over the [0-9]* chunks done" "$T/err"
finish

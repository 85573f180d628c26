#!/usr/bin/env bash
# cli_bench_model.sh - tern-bench -m MODEL as a person publishing results
# uses it: the JSON document validated against docs/bench.schema.json and
# read back by a script; its figures checked against the raw runs they come
# from (median, min, max, CV, percentiles, tokens over time) and against
# independent facts about the model read with gguf-py (parameter count,
# tensor bytes, sha256, the bytes a decode step reads); the test matrix and
# its order; csv and jsonl; tests that do not fit (context, memory) skipped
# with the others still run; a model that cannot be loaded; --prompt;
# Ctrl-C; usage errors. No timing is asserted (that is the benchmarks' job).
# The parts that need the real models are skipped when models/ is absent.
. "$(dirname "$0")/lib.sh"
B=$BIN/bench
M=${TERN_MODELS:-models}
S=$M/SmolLM2-135M-Instruct.Q4_1.gguf
G=$M/gemma-3-270m-q4_k_m.gguf
SCHEMA=docs/bench.schema.json
unset TERN_MEM_AVAILABLE
TO="timeout 300"

# ---- usage errors: nothing is loaded ----------------------------------------------
expect 2 $B -p 8 && check "no model" one_line_err "tern-bench: no model: give -m MODEL"
expect 2 $B -m x.gguf -p 8,abc && check "bad -p list" one_line_err "tern-bench: -p: '8,abc' is not a list of integers"
expect 2 $B -m x.gguf -pg 5 && check "-pg needs P,N" one_line_err "tern-bench: -pg: '5' is not P,N"
expect 2 $B -m x.gguf -ctk q4_0 && check "cache type named" one_line_err "tern-bench: -ctk: unknown cache type 'q4_0'"
expect 2 $B -m x.gguf --backend tpu && check "backend named" one_line_err "tern-bench: --backend: unknown backend 'tpu'"
expect 2 $B -m x.gguf -p 0 -n 0 && check "no test" one_line_err "tern-bench: no test"
expect 2 $B -m x.gguf -r 0
expect 2 $B -m x.gguf --prompt "" && check "empty --prompt" one_line_err "tern-bench: --prompt: the text is empty"
expect 2 $B -m x.gguf -t 0
expect 2 $B -m x.gguf -o xml
expect 2 $B -m x.gguf --kernels
expect 2 $B -m x.gguf -c 128 && check "-c needs --ppl" grep -q "needs" "$T/err"
expect 1 $TO $B -m "$T/nonexistent.gguf" -p 8 --no-probe
check "a missing model: one line naming it" one_line_err "tern-bench: $T/nonexistent.gguf: cannot open: .* (model skipped)$"
check "nothing on stdout" [ ! -s "$T/out" ]
printf 'GGUF\003\000\000\000garbage' >"$T/bad.gguf"
expect 65 $TO $B -m "$T/bad.gguf" -p 8 --no-probe -o json
check "a malformed model: exit 65, a JSON document naming the error" "$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["models"][0]["error"] and d["tests"] == [], d["models"]
' "$T/out"
# what this build has (make deps installs both; a build without them says so)
built() { "$PYTHON" -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["tern"]["options"][sys.argv[2]] else 1)' "$T/out" "$1"; }
HASH=--hash; built libmd || { HASH=; echo "note: built without libmd: --hash not tested"; }
VS=1; built jansson || { VS=; echo "note: built without jansson: --vs not tested"; }

if [ ! -f "$S" ] || [ ! -f "$G" ]; then
	echo "SKIP: real models absent ($M); run make models"
	finish
fi

# ---- the JSON document --------------------------------------------------------------
expect 0 $TO $B -m "$S" -p 16 -n 4 -pg 8,2 -d 0,8 -r 2 --warmup 1 -t 1 -o json $HASH
cp "$T/out" "$T/doc.json"
check "no warning needed on stdout" "$PYTHON" -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/doc.json"
check "the document follows docs/bench.schema.json" "$PYTHON" -c '
import json, sys, jsonschema
s = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(s)
jsonschema.validate(json.load(open(sys.argv[2])), s, cls=jsonschema.Draft202012Validator)
' "$SCHEMA" "$T/doc.json"
check "figures agree with the runs they come from" "$PYTHON" -c '
import json, math, statistics, sys
d = json.load(open(sys.argv[1]))
assert d["interrupted"] is False and d["params"]["repetitions"] == 2 and d["params"]["warmup"] == 1
names = [t["name"] for t in d["tests"]]
assert names == ["pp16", "tg4", "pp8+tg2", "pp16 @ d8", "tg4 @ d8", "pp8+tg2 @ d8"], names
for t in d["tests"]:
    assert t["status"] == "ok" and t["warmup_runs"] == 1 and len(t["runs"]) == 2, t
    assert t["n_threads"] == 1 and t["n_batch"] == 2048 and t["n_ubatch"] == 512, t
    ts = [r["tokens_per_s"] for r in t["runs"]]
    st = t["tokens_per_s"]
    assert math.isclose(st["median"], statistics.median(ts), rel_tol=1e-12), (st, ts)
    assert st["min"] == min(ts) and st["max"] == max(ts), st
    assert math.isclose(st["stddev"], statistics.stdev(ts), rel_tol=1e-9), st
    assert math.isclose(st["cv"], statistics.stdev(ts) / statistics.mean(ts), rel_tol=1e-9), st
    for r in t["runs"]:
        n = {"pp": t["n_prompt"], "tg": t["n_gen"], "pg": t["n_prompt"] + t["n_gen"]}[t["kind"]]
        s = {"pp": r["prefill_s"], "tg": r["decode_s"], "pg": r["prefill_s"] + r["decode_s"]}[t["kind"]]
        assert math.isclose(r["tokens_per_s"], n / s, rel_tol=1e-9), (t["name"], r)
        assert math.isclose(r["total_s"], r["prefill_s"] + r["decode_s"], rel_tol=1e-9), r
        assert (r["decode_s"] > 0) == (t["kind"] != "pp"), r
    lat = t["latency_ms"]
    if t["kind"] == "pp":
        assert lat is None and t["ttft_ms"] is not None and t["bytes_per_token"] is None, t
    else:
        assert lat["n"] == 2 * t["n_gen"], lat
        assert lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"], lat
        # the decode steps of a run sum to its decode time
        total = sum(r["decode_s"] for r in t["runs"]) * 1e3
        assert math.isclose(lat["mean"] * lat["n"], total, rel_tol=1e-6), (lat, total)
    assert (t["ttft_ms"] is None) == (t["kind"] == "tg"), t
    # a probe right before each measured run of a decode test, none before
    # the others; each run against its own probe, the figures the medians
    p = [x for x in d["probe"] if d["tests"][x["test"]] is t]
    assert all(x["threads"] == 1 for x in d["probe"]), d["probe"]
    if t["kind"] != "tg":
        assert not p and t["probe_gbs"] is None and t["roofline_pct"] is None, t
        assert all(r["probe_gbs"] is None and r["roofline_pct"] is None for r in t["runs"]), t
    else:
        assert [x["run"] for x in p] == list(range(len(t["runs"]))), p
        pcts = []
        for x, r in zip(p, t["runs"]):
            assert r["probe_gbs"] == x["gbs"] > 0, (r, x)
            pct = 100 * t["bytes_per_token"] * r["tokens_per_s"] / (x["gbs"] * 1e9)
            assert math.isclose(r["roofline_pct"], pct, rel_tol=1e-9), r
            pcts.append(pct)
        assert math.isclose(t["roofline_pct"], statistics.median(pcts), rel_tol=1e-9), t
        assert math.isclose(t["probe_gbs"], statistics.median(x["gbs"] for x in p), rel_tol=1e-9), t
assert d["peak_rss_bytes"] >= max(t["peak_rss_bytes"] for t in d["tests"]) > 0
' "$T/doc.json"
check "the model as gguf-py reads it; bytes per decode token" "$PYTHON" -c '
import hashlib, json, sys
import numpy as np
from gguf import GGUFReader
d = json.load(open(sys.argv[1]))
m = d["models"][0]
r = GGUFReader(sys.argv[2])
assert m["n_params"] == sum(int(t.n_elements) for t in r.tensors), m["n_params"]
assert m["weights_size"] == sum(int(t.n_bytes) for t in r.tensors), m["weights_size"]
h = hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest()
assert m["sha256"] == (h if sys.argv[3] else None), (m["sha256"], h)
assert m["file_size"] == len(open(sys.argv[2], "rb").read())
def kv(key):
    f = r.fields[key]
    return f.parts[f.data[0]][0].item()
assert m["architecture"] == "llama" and m["n_layer"] == kv("llama.block_count")
types = {}
for t in r.tensors:
    n = t.tensor_type.name.lower()
    types.setdefault(n, [0, 0]); types[n][0] += 1; types[n][1] += int(t.n_bytes)
assert {k: [v["tensors"], v["bytes"]] for k, v in m["weight_types"].items()} == types, (m["weight_types"], types)
# SmolLM2 ties its output to the token embedding: a decode step reads every tensor
assert not any(t.name == "output.weight" for t in r.tensors)
assert m["decode_weight_bytes"] == m["weights_size"]
n_layer, n_kv = kv("llama.block_count"), kv("llama.attention.head_count_kv")
head = kv("llama.embedding_length") // kv("llama.attention.head_count")
per_pos = n_layer * 2 * n_kv * head * 2            # K and V rows in f16
for t in d["tests"]:
    if t["kind"] != "tg":
        continue
    # positions in the cache, averaged over the steps: depth + the start
    # token at the first step, one more at each next one
    ctx = t["n_depth"] + 1 + (t["n_gen"] - 1) / 2 + 1
    want = m["decode_weight_bytes"] + per_pos * ctx
    assert abs(t["bytes_per_token"] - want) < 1, (t["name"], t["bytes_per_token"], want)
' "$T/doc.json" "$S" "$HASH"
check "stdout is only the document" "$PYTHON" -c '
import json, sys
s = open(sys.argv[1]).read()
json.loads(s)
assert s.endswith("}\n") and s.startswith("{")
' "$T/doc.json"

# ---- the matrix and its order (llama-bench's): parameters outside, pp, tg, pg inside
expect 0 $TO $B -m "$S" -p 8,4 -n 2 -t 1,2 -r 1 --warmup 0 --no-probe -o jsonl
check "jsonl: one test per line, each valid alone" "$PYTHON" -c '
import json, sys, jsonschema
s = json.load(open(sys.argv[1]))
test = dict(s["$defs"]["test"]); test["$defs"] = s["$defs"]
rows = [json.loads(l) for l in open(sys.argv[2])]
for r in rows:
    jsonschema.validate(r, test, cls=jsonschema.Draft202012Validator)
    assert r["model_path"].endswith("SmolLM2-135M-Instruct.Q4_1.gguf") and r["commit"], r
got = [(r["n_threads"], r["name"]) for r in rows]
assert got == [(1, "pp8"), (1, "pp4"), (1, "tg2"), (2, "pp8"), (2, "pp4"), (2, "tg2")], got
assert all(r["probe_gbs"] is None and r["roofline_pct"] is None for r in rows)
' "$SCHEMA" "$T/out"
expect 0 $TO $B -m "$S" -n 3 -ctk f16,q8_0 -ub 4 -b 8 -r 1 --warmup 0 --no-probe -o csv
check "csv: a header and a row per test, as a csv reader sees them" "$PYTHON" -c '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [(r["test"], r["type_k"], r["n_batch"], r["n_ubatch"], r["status"]) for r in rows] == [
    ("tg3", "f16", "8", "4", "ok"), ("tg3", "q8_0", "8", "4", "ok")], rows
for r in rows:
    assert float(r["ts_median"]) > 0 and len(r["samples_ts"].split(";")) == int(r["repetitions"]) == 1, r
    assert r["roofline_pct"] == "" and r["ratio"] == "", r
' "$T/out"

# ---- the table ----------------------------------------------------------------------
expect 0 $TO $B -m "$S" -m "$G" -p 8 -n 2 -r 1 --warmup 0 --no-probe
check "table: header, one row per test" [ "$(grep -c '^| ' "$T/out")" -eq 5 ]
check "table: the t/s column as median ± spread" grep -qE '^\| llama 134.52M Q4_1 +\| +92.10 MiB \| +134.52 M \| cpu .*\| pp8 +\| +[0-9.]+ ± [0-9.]+ \|' "$T/out"
check "table: gemma named by its file type" grep -q '^| gemma3 268.10M Q4_K_M ' "$T/out"
check "table: the method under it" grep -q '^t/s: median of 1 run ± ' "$T/out"
# each model's peak RSS is its own: Gemma (253 MB) freed before SmolLM2 (98 MB)
# loads (the sizes not under ASan, whose shadow memory and quarantine count)
expect 0 $TO $B -m "$G" -m "$S" -n 2 -r 1 --warmup 0 --no-probe -o json
check "peak RSS per model, the run's the largest" "$PYTHON" -c '
import json, os, sys
d = json.load(open(sys.argv[1]))
g, s = d["tests"]
gs, ss = (os.path.getsize(p) for p in sys.argv[2:4])
if sys.argv[4] != "1":
    assert g["peak_rss_bytes"] > gs, (g["peak_rss_bytes"], gs)
    assert ss < s["peak_rss_bytes"] < gs, (s["peak_rss_bytes"], ss, gs)
assert d["peak_rss_bytes"] >= max(g["peak_rss_bytes"], s["peak_rss_bytes"]), d["peak_rss_bytes"]
assert [m["architecture"] for m in d["models"]] == ["gemma3", "llama"], d["models"]
assert d["models"][1]["n_layer"] == 30 and d["models"][0]["n_vocab"] == 262144, d["models"]
' "$T/out" "$G" "$S" "${SANITIZE:-0}"
expect 0 $TO $B -m "$S" -n 2 -r 1 --warmup 0 --no-probe -o md
check "md: only the table" [ "$(grep -vc '^|' "$T/out")" -eq 0 ]

# ---- what does not fit is skipped, the rest runs --------------------------------------
expect 0 $TO $B -m "$S" -n 2 -d 0,9000 -r 1 --warmup 0 --no-probe -o json
check "a depth past the model's context is skipped, the rest runs" "$PYTHON" -c '
import json, sys
t = json.load(open(sys.argv[1]))["tests"]
assert [(x["name"], x["status"]) for x in t] == [("tg2", "ok"), ("tg2 @ d9000", "skipped")], t
assert "8192" in t[1]["skipped"] and t[1]["runs"] == [] and t[1]["tokens_per_s"] is None, t[1]
' "$T/out"
check "the skip is said on stderr" grep -q "tg2 @ d9000, .*skipped: it needs 9003 positions and the model's context is 8192" "$T/err"
# (a 2-token test asks for a context of 3 positions: its micro-batch, clamped to that,
# and its cache need well under 1 MB)
TERN_MEM_AVAILABLE=100000 expect 1 $TO $B -m "$S" -n 2 -r 1 --no-probe
check "nothing fits in memory: every test skipped, exit 1" grep -q "skipped: its KV cache and buffers need" "$T/err"
expect 1 $TO $B -m "$T/nonexistent.gguf" -m "$S" -n 2 -r 1 --warmup 0 --no-probe -o jsonl
check "a model that cannot be loaded: the next one still runs" [ "$(wc -l <"$T/out")" -eq 1 ]
check "and the failure is named on stderr" grep -q "nonexistent.gguf: cannot open: .* (model skipped)" "$T/err"

# ---- --prompt: the prompt's tokens, a decode after it ---------------------------------
expect 0 $TO $B -m "$S" -p 8 -n 2 -r 1 --warmup 0 --no-probe -o json --prompt "The capital of France is"
check "--prompt: its tokens, TTFT for the decode test" "$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["params"]["prompt"] == "The capital of France is" and d["params"]["prompt_tokens"] == 5, d["params"]
tg = d["tests"][1]
assert tg["name"] == "tg2" and tg["ttft_ms"] is not None, tg
' "$T/out"

if [ -n "$VS" ]; then
# ---- --vs: llama-bench (a stand-in that speaks its options and JSON) after each test
FAKE=$PWD/tests/data/bench/fake-llama-bench
cat >"$T/lb" <<EOF
#!/bin/sh
# records each call and how many tests tern had written when it came
[ "\$1" = --help ] || echo "\$(wc -l <"$T/vs.out") \$*" >>"$T/vs.log"
exec "$FAKE" "\$@"
EOF
chmod +x "$T/lb"
: >"$T/vs.log"
FAKE_LLAMA_BENCH_TS=50,60,70 $TO $B -m "$S" -p 8 -n 2 -pg 4,2 -d 0,4 -r 3 -t 1 \
	-ctk q8_0 --no-probe -o jsonl --vs "$T/lb" >"$T/vs.out" 2>"$T/vs.err"
check "--vs: exit 0" [ $? -eq 0 ]
check "--vs: llama-bench ran after each test, with the equivalent options" diff -u - "$T/vs.log" <<EOF
0 -m $S -p 8 -n 0 -t 1 -b 2048 -ub 512 -ctk q8_0 -ctv f16 -ngl 0 -r 3 -o json
1 -m $S -p 0 -n 2 -t 1 -b 2048 -ub 512 -ctk q8_0 -ctv f16 -ngl 0 -r 3 -o json
2 -m $S -p 0 -n 0 -pg 4,2 -t 1 -b 2048 -ub 512 -ctk q8_0 -ctv f16 -ngl 0 -r 3 -o json
3 -m $S -p 8 -n 0 -d 4 -t 1 -b 2048 -ub 512 -ctk q8_0 -ctv f16 -ngl 0 -r 3 -o json
4 -m $S -p 0 -n 2 -d 4 -t 1 -b 2048 -ub 512 -ctk q8_0 -ctv f16 -ngl 0 -r 3 -o json
5 -m $S -p 0 -n 0 -pg 4,2 -d 4 -t 1 -b 2048 -ub 512 -ctk q8_0 -ctv f16 -ngl 0 -r 3 -o json
EOF
check "--vs: both figures and the ratio of the medians" "$PYTHON" -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 6
for r in rows:
    lb = r["llama_bench"]
    assert lb["samples_ts"] == [50, 60, 70] and lb["tokens_per_s"]["median"] == 60, lb
    assert abs(r["ratio"] - r["tokens_per_s"]["median"] / 60) < 1e-12, r
    assert lb["command"].endswith("-r 3 -o json") and r["llama_bench_error"] is None, lb
' "$T/vs.out"
$TO $B -m "$S" -p 8 -n 2 -r 2 -t 1 --warmup 0 --no-probe --vs "$T/lb" >"$T/out" 2>"$T/err"
check "--vs table: llama.cpp's column and the ratio" grep -qE '^\| llama 134.52M Q4_1 .* pp8 .*\| +[0-9.]+ ± [0-9.]+ \| +[0-9.]+ \|$' "$T/out"
check "--vs: --warmup 0 is --no-warmup" grep -q -- "--no-warmup -o json" "$T/vs.log"
FAKE_LLAMA_BENCH_MODE=fail $TO $B -m "$S" -p 8 -r 1 -t 1 --no-probe -o json --vs "$T/lb" >"$T/out" 2>"$T/err"
check "--vs: a failing llama-bench is reported, tern's figure kept" "$PYTHON" -c '
import json, sys
t = json.load(open(sys.argv[1]))["tests"][0]
assert t["status"] == "ok" and t["llama_bench"] is None and t["ratio"] is None, t
assert t["llama_bench_error"].startswith("--vs: llama-bench exited 1"), t
' "$T/out"
check "--vs: and said on stderr" grep -q "warning: llama 134.52M Q4_1 pp8: --vs: llama-bench exited 1" "$T/err"
expect 1 $TO $B -m "$S" -p 8 --vs "$T/nonexistent-llama-bench"
check "--vs: a binary that does not run: one line, nothing measured" one_line_err "tern-bench: --vs: "
check "--vs: nothing on stdout" [ ! -s "$T/out" ]
fi

# ---- progress on a terminal (through script(1)): which test, which run -------------------
if script -qec true /dev/null >/dev/null 2>&1 </dev/null; then
	script -qec "$B -m $S -p 8 -n 2 -r 2 -t 1 --no-probe >$T/tty.out" "$T/tty" >/dev/null 2>&1 </dev/null
	check "progress: model, test, run" grep -q '\[1/2\] llama 134.52M Q4_1 pp8, 1t: run 2/2' "$T/tty"
	check "progress: the warm-up named" grep -q '\[2/2\] llama 134.52M Q4_1 tg2, 1t: warm-up 1/1' "$T/tty"
	check "progress: the table still on stdout" grep -q '^| llama 134.52M Q4_1 .* tg2 ' "$T/tty.out"
	script -qec "$B -m $S -p 8 -r 1 -t 1 --no-probe -q >$T/tty.out" "$T/tty" >/dev/null 2>&1 </dev/null
	check "no progress with -q" [ "$(grep -c '\[1/1\]' "$T/tty")" -eq 0 ]
	# the table on a terminal: no wider than it, what was left out said
	for w in 80 120; do
		COLUMNS=$w script -qec "$B -m $S -p 8 -n 2 -r 1 -t 1 --no-probe" "$T/tty" >/dev/null 2>&1 </dev/null
		check "a $w-column terminal: no table line wider" $PYTHON -c '
import re, sys
text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", open(sys.argv[1], errors="replace").read())
rows = [l for l in text.replace("\r", "\n").split("\n") if l.startswith("|")]
assert len(rows) == 4 and all(len(l) <= int(sys.argv[2]) for l in rows), rows
assert "| test " in rows[0] and "t/s" in rows[0], rows[0]' "$T/tty" $w
		check "a $w-column terminal: the columns left out named" grep -q "left out for the terminal's $w columns: .*params" "$T/tty"
	done
fi
COLUMNS=80 expect 0 $B -m "$S" -p 8 -r 1 -t 1 --no-probe
check "a file gets every column, whatever COLUMNS says" grep -q ' params | backend | threads | test .* % roof |$' "$T/out"
check "no progress when stderr is not a terminal" [ "$(grep -c 'run 1/' "$T/err")" -eq 0 ]

# ---- Ctrl-C: what was measured, a whole document, exit 130 -----------------------------
$B -m "$S" -p 8 -n 8000 -r 1 --warmup 0 --no-probe -o jsonl >"$T/int.out" 2>"$T/int.err" &
pid=$!
for _ in $(seq 600); do [ -s "$T/int.out" ] && break; sleep 0.1; done
sleep 0.5
kill -INT $pid
wait $pid
st=$?
check "Ctrl-C: exit 130" [ "$st" -eq 130 ]
check "Ctrl-C: the finished test and the interrupted one" "$PYTHON" -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [(r["name"], r["status"]) for r in rows] == [("pp8", "ok"), ("tg8000", "interrupted")], rows
' "$T/int.out"
$B -m "$S" -p 8 -n 8000,16 -r 1 --warmup 0 --no-probe -o json >"$T/int.out" 2>"$T/int.err" &
pid=$!
sleep 3
kill -INT $pid
wait $pid
st=$?
check "Ctrl-C with -o json: exit 130" [ "$st" -eq 130 ]
check "Ctrl-C with -o json: a whole document saying so" "$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["interrupted"] is True, d
# as in the CSV: the tests run, not tg16, which never started
assert [(t["name"], t["status"]) for t in d["tests"]] == [("pp8", "ok"), ("tg8000", "interrupted")], d["tests"]
' "$T/int.out"
finish

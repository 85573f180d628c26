#!/usr/bin/env bash
# cli_device.sh - device choice in the model tools (-dev, --list-devices,
# -ngl, --gpu-mem-limit; cmd/common/device.h) without a GPU: the test device
# of gpu/device.h (TERN_TEST_DEVICE=SIZE[,LIMIT]: a second CPU backend
# instance posing as a GPU of SIZE bytes that refuses allocations past
# LIMIT) takes the offloaded layers, so that the planner's paths run end to
# end: auto fits all or part of a model, an explicit -ngl too large is one
# line with the bytes needed and available (exit 1), an injected
# allocation failure is retried with fewer layers and said on stderr. The
# text generated greedily is the CPU's, byte for byte, whatever the split
# (the two backends run the same kernels: test_offload checks the logits
# bit for bit). Synthetic models from scripts/gen_synth_llm.c; Whisper's
# tiny.en from the shared data.
. "$(dirname "$0")/lib.sh"
R=$BIN/run
C=$BIN/chat
B=$BIN/bench
W=$BIN/transcribe
unset TERN_MODEL TERN_MEM_AVAILABLE TERN_TEST_DEVICE
TO="timeout 120"

# ---- without a model ------------------------------------------------------------------
for p in run chat bench transcribe; do
	expect 0 $BIN/$p --list-devices && check "$p --list-devices: the CPU first" grep -q '^cpu ' "$T/out"
	check "$p --list-devices: memory and features" grep -q 'fp16 .*integer dot .*cooperative matrix .*subgroup' "$T/out"
	expect 0 $BIN/$p --version && check "$p --version: the backends built in" grep -q '^backends: cpu' "$T/out"
	expect 0 $BIN/$p --help && check "$p --help: -dev, -ngl, --gpu-mem-limit" \
		grep -q -- '-dev, --device NAME' "$T/out"
	check "$p --help: -ngl" grep -q -- '-ngl, --gpu-layers N|auto|all' "$T/out"
	check "$p --help: --gpu-mem-limit" grep -q -- '--gpu-mem-limit SIZE' "$T/out"
done
TERN_TEST_DEVICE=64M expect 0 $R --list-devices
check "the test device listed with its memory" grep -q '^test0 ' "$T/out"
check "its memory" grep -q 'memory 64.0 MiB free of 64.0 MiB' "$T/out"
expect 2 $R -m x.gguf -ngl many hi && check "-ngl many: usage error" \
	one_line_err "tern-run: option '-ngl': 'many' is not a layer count, auto or all"
expect 2 $R -m x.gguf -ngl -1 hi && check "-ngl -1: usage error" one_line_err "tern-run: option '-ngl'"
expect 2 $R -m x.gguf --gpu-mem-limit 12Q hi && check "--gpu-mem-limit 12Q: usage error" \
	one_line_err "tern-run: option '--gpu-mem-limit': '12Q' is not a size"
expect 2 $R -m x.gguf --gpu-mem-limit 0 hi && check "--gpu-mem-limit 0: usage error" one_line_err "tern-run: option '--gpu-mem-limit'"
expect 2 $C -m x.gguf -ngl x && check "chat: -ngl x" one_line_err "tern-chat: option '-ngl'"
expect 2 $W -m x.bin -ngl x a.wav && check "transcribe: -ngl x" one_line_err "tern-transcribe: option '-ngl'"
expect 2 $B -m x.gguf -ngl 1,x && check "bench: -ngl 1,x" one_line_err "tern-bench: -ngl: 'x' is not a layer count"
expect 2 $B -m x.gguf --gpu-mem-limit 1Z && check "bench: --gpu-mem-limit" one_line_err "tern-bench: option '--gpu-mem-limit'"

# ---- the models -----------------------------------------------------------------------
synth_gen || finish
expect 0 "$T/gen" gemma3 q8_0 "$T/g.gguf" || finish     # 6 layers, untied
expect 0 "$T/gen" qwen2 f32 "$T/q.gguf" || finish       # 2 layers, tied output
expect 0 "$T/gen" llama-mean f32 "$T/e.gguf" || finish  # an embedding model
G=$T/g.gguf

# the CPU's text, the reference of every split
gen() { $TO $R -m "$1" --raw -n 12 --temp 0 -c 64 "${@:2}" "the quick brown fox"; }
expect 0 gen "$G" -dev cpu -v && cp "$T/out" "$T/cpu.txt"
check "-dev cpu: the -v line" grep -q "^tern-run: device cpu (.*): every layer on the CPU$" "$T/err"
check "some text" [ -s "$T/cpu.txt" ]
expect 0 gen "$G" -v && check "auto without a GPU: the CPU" grep -q "^tern-run: device cpu " "$T/err"
expect 1 gen "$G" -dev vulkan9 && check "an absent device: one line naming it and what is there" \
	one_line_err "tern-run: $G: no device 'vulkan9' (present: cpu[;,]"
check "the backends built in follow" grep -q "backends built in: cpu" "$T/err"
expect 1 gen "$G" -dev test0 && check "test0 only when TERN_TEST_DEVICE says so" one_line_err "tern-run: $G: no device 'test0'"

export TERN_TEST_DEVICE=1G
expect 0 gen "$G" -v && check "auto: the device, everything on it" \
	grep -q "^tern-run: device test0 (.*): -ngl auto: 6 of 6 layers and the output head on it, " "$T/err"
check "auto, everything on the device: the CPU's text" cmp -s "$T/out" "$T/cpu.txt"
expect 0 gen "$G" -v -dev cpu && check "-dev cpu beside a device: the CPU" grep -q "^tern-run: device cpu " "$T/err"
check "the same text" cmp -s "$T/out" "$T/cpu.txt"
for n in 0 1 3 6 7 all 99; do
	expect 0 gen "$G" -v -ngl $n || continue
	case $n in 0) want="0 of 6 layers on it" ;; 6) want="6 of 6 layers on it" ;; 7 | all | 99) want="6 of 6 layers and the output head" ;;
		*) want="$n of 6 layers on it" ;; esac
	check "-ngl $n: the plan" grep -q "^tern-run: device test0 (.*): -ngl $n: $want" "$T/err"
	check "-ngl $n: the CPU's text" cmp -s "$T/out" "$T/cpu.txt"
done
expect 0 gen "$T/q.gguf" -dev cpu && cp "$T/out" "$T/q-cpu.txt"
expect 0 gen "$T/q.gguf" -ngl all -v && check "a tied output head on the device: the CPU's text" cmp -s "$T/out" "$T/q-cpu.txt"

# a small budget: part of the model; what the plan says is what fits
expect 0 gen "$G" -v --gpu-mem-limit 5M
check "--gpu-mem-limit 5M: auto places part of the model" \
	grep -Eq "^tern-run: device test0 (.*): -ngl auto: [1-5] of 6 layers on it, .* of 4.4 MiB usable" "$T/err"
check "part of the model on the device: the CPU's text" cmp -s "$T/out" "$T/cpu.txt"
"$PYTHON" - "$T/err" <<'EOF' || { echo "FAIL: the plan's bytes"; nfail=$((nfail + 1)); }
import re, sys
m = re.search(r"-ngl auto: (\d) of 6 layers on it, ([\d.]+) (KiB|MiB) of ([\d.]+) MiB usable", open(sys.argv[1]).read())
k, used, unit, usable = int(m[1]), float(m[2]), m[3], float(m[4])
used /= 1024 if unit == "KiB" else 1
assert used <= usable, (used, usable)
# 5 MiB less the margin (1/8): 4.375
assert abs(usable - 4.375) < 0.06, usable
EOF
expect 0 gen "$G" -v --gpu-mem-limit 100K && check "--gpu-mem-limit 100K: nothing fits, all on the CPU" \
	grep -q "^tern-run: device test0 (.*): -ngl auto: 0 of 6 layers on it" "$T/err"
expect 1 gen "$G" --gpu-mem-limit 5M -ngl all
check "an explicit -ngl that does not fit: one line, bytes needed and available" \
	one_line_err "tern-run: $G: device test0: -ngl 7 needs [0-9]* bytes (.*) and [0-9]* are available (4.4 MiB: a budget of 5.0 less a margin of 0.6); try -ngl auto"
check "nothing on stdout" [ ! -s "$T/out" ]

# the device refuses what its budget promised: fewer layers each time (1,
# then 2, 4 fewer: its budget, asked again, still promises them all)
TERN_TEST_DEVICE=1G,3M expect 0 gen "$G" -v -ngl all
check "the retries said on stderr" grep -q "^tern-run: warning: test0: loading with -ngl 7 failed (.*injected limit.*): loading again with -ngl 6$" "$T/err"
check "after the retries: fewer layers" grep -Eq "^tern-run: device test0 (.*): -ngl all: [0-5] of 6 layers on it after retries" "$T/err"
check "after the retries: the CPU's text" cmp -s "$T/out" "$T/cpu.txt"
check "the retries: 1, 2, 4 fewer" grep -Eq "loading again with -ngl 4$" "$T/err"
TERN_TEST_DEVICE=1G,1K expect 0 gen "$G" -v -ngl 2
check "down to the CPU" grep -q "loading again with -ngl 0$" "$T/err"
check "down to the CPU: the CPU's text" cmp -s "$T/out" "$T/cpu.txt"

# host memory: what the plan moves to the device is not counted on the host
# (a memory as large as the file holds the model with every layer on the
# device, not with none)
sz=$(stat -c %s "$G")
TERN_MEM_AVAILABLE=$sz expect 1 gen "$G" -ngl 0 && check "-ngl 0, memory = the file: does not fit, one line" \
	one_line_err "tern-run: $G: does not fit in memory: it needs .* (-ngl)$"
TERN_MEM_AVAILABLE=$sz expect 1 gen "$G" -ngl 1 && check "-ngl 1: what is on the device said" \
	one_line_err "tern-run: $G: does not fit in memory: .* less [0-9.]* MiB of weights and [0-9.]* MiB of cache on test0"
TERN_MEM_AVAILABLE=$sz expect 0 gen "$G" -ngl all && check "-ngl all, memory = the file: fits, the CPU's text" \
	cmp -s "$T/out" "$T/cpu.txt"
TERN_MEM_AVAILABLE=$sz expect 1 gen "$G" -dev cpu && check "-dev cpu, memory = the file: does not fit, no -ngl advice" \
	one_line_err "tern-run: $G: does not fit in memory: .* -ctv q8_0$"

# chat: the same choice and line
printf 'the quick brown fox\n' | TERN_TEST_DEVICE=1G expect 0 $TO $C -m "$G" --chat-template chatml -n 4 --temp 0 -c 256 -v -ngl 3
check "chat: the plan on -v" grep -q "^tern-chat: device test0 (.*): -ngl 3: 3 of 6 layers on it" "$T/err"

# the embeddings: the whole model on one device, the same vectors
expect 0 $TO $R -m "$T/e.gguf" --embedding -dev cpu "a b c" && cp "$T/out" "$T/e-cpu.txt"
expect 0 $TO $R -m "$T/e.gguf" --embedding -v "a b c"
check "embeddings: the whole model on the device" grep -q "^tern-run: device test0 (.*): the whole model" "$T/err"
check "embeddings: the CPU's vectors" cmp -s "$T/out" "$T/e-cpu.txt"
expect 0 $TO $R -m "$T/e.gguf" --embedding -v --gpu-mem-limit 1M "a b c"
check "embeddings that do not fit: the CPU" grep -q "^tern-run: device test0 (.*): the model needs .* it runs on the CPU" "$T/err"
expect 1 $TO $R -m "$T/e.gguf" --embedding --gpu-mem-limit 1M -ngl all "a b c"
check "embeddings, -ngl all that does not fit: one line" one_line_err "tern-run: $T/e.gguf: device test0: the model needs"
TERN_TEST_DEVICE=1G,1K expect 0 $TO $R -m "$T/e.gguf" --embedding -v "a b c"
check "embeddings, the device refuses: again on the CPU, said" \
	grep -q "^tern-run: warning: test0: loading the model failed (.*injected limit.*): loading it again on the CPU$" "$T/err"
check "embeddings, the device refuses: the CPU's vectors" cmp -s "$T/out" "$T/e-cpu.txt"

# Whisper: the whole model on one device, the same transcript
WM=$DATA/models/ggml-tiny.en.bin
J=$DATA/audio/jfk.wav
if [ -f "$WM" ] && [ -f "$J" ]; then
	expect 0 $TO $W -m "$WM" -t 2 -dev cpu "$J" && cp "$T/out" "$T/w-cpu.txt"
	expect 0 $TO $W -m "$WM" -t 2 -v "$J"
	check "transcribe: the whole model on the device" grep -q "^tern-transcribe: device test0 (.*): the whole model" "$T/err"
	check "transcribe: the CPU's transcript" cmp -s "$T/out" "$T/w-cpu.txt"
	TERN_TEST_DEVICE=1G,1K expect 0 $TO $W -m "$WM" -t 2 "$J"
	check "transcribe, the device refuses: again on the CPU, said" \
		grep -q "^tern-transcribe: warning: test0: loading the model failed (.*injected limit.*): loading it again on the CPU$" "$T/err"
	check "transcribe, the device refuses: the CPU's transcript" cmp -s "$T/out" "$T/w-cpu.txt"
else
	echo "note: $WM or $J absent: Whisper's device not tested"
fi

# tern-bench: the device and the plan in the JSON, per -ngl
expect 0 $TO $B -m "$G" -p 8 -n 2 -r 1 --warmup 0 -t 1 --no-probe -ngl 2,all,auto -o json
cp "$T/out" "$T/bench.json"
check "bench: the document follows docs/bench.schema.json" "$PYTHON" -c '
import json, sys, jsonschema
s = json.load(open(sys.argv[1]))
jsonschema.validate(json.load(open(sys.argv[2])), s, cls=jsonschema.Draft202012Validator)
' docs/bench.schema.json "$T/bench.json"
check "bench: the plans" "$PYTHON" - "$T/bench.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["params"]["n_gpu_layers"] == [2, "all", "auto"], d["params"]["n_gpu_layers"]
ts = d["tests"]
assert len(ts) == 6 and all(t["status"] == "ok" and t["device"] == "test0" for t in ts), ts
want = {0: (2, 2, False), 1: (7, 6, True), 2: (7, 6, True)}
for i, t in enumerate(ts):
    p = t["plan"]
    ngl, layers, out = want[i // 2]
    assert (t["n_gpu_layers"], p["n_gpu_layers"], p["layers"], p["output"]) == (ngl, ngl, layers, out), (i, t)
    assert p["total_bytes"] == p["weights_bytes"] + p["kv_bytes"] + p["output_bytes"] + p["buffers_bytes"], p
    assert p["total_bytes"] <= p["usable_bytes"] < p["budget_bytes"] == 1 << 30, p
    assert (p["output_bytes"] > 0) == out, p
# the last two layers hold a third of the six layers' weights (they are alike)
assert abs(ts[0]["plan"]["weights_bytes"] * 3 - ts[2]["plan"]["weights_bytes"]) < 1024, ts
EOF
expect 0 $TO $B -m "$G" -p 8 -n 0 -r 1 --warmup 0 -t 1 --no-probe -dev cpu -o json
check "bench -dev cpu: no plan, every layer on the CPU" "$PYTHON" -c '
import json, sys
t = json.load(open(sys.argv[1]))["tests"][0]
assert (t["device"], t["plan"], t["n_gpu_layers"]) == ("cpu", None, 0), t
' "$T/out"
# -dev as a list: each device a parameter set (llama-bench's order: devices
# outside -ngl); a device not present: one line, exit 1, nothing run
expect 0 $TO $B -m "$G" -p 0 -n 2 -r 1 --warmup 0 -t 1 --no-probe -dev cpu,test0 -ngl 2,all -o json
check "bench -dev cpu,test0 -ngl 2,all: four tests, the devices in order" "$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["params"]["devices"] == ["cpu", "test0"], d["params"]
got = [(t["device"], t["n_gpu_layers"], t["status"]) for t in d["tests"]]
assert got == [("cpu", 0, "ok"), ("cpu", 0, "ok"), ("test0", 2, "ok"), ("test0", 7, "ok")], got
' "$T/out"
expect 0 $TO $B -m "$G" -p 0 -n 2 -r 1 --warmup 0 -t 1 --no-probe -dev test0 -ngl all
check "bench -dev test0: the table's backend column names the device" grep -q "| test0 *|" "$T/out"
expect 1 $TO $B -m "$G" -p 0 -n 2 -r 1 --warmup 0 -t 1 -dev cpu,nosuch
check "bench -dev cpu,nosuch: one line naming it, nothing run" one_line_err "tern-bench: no device 'nosuch' (present: cpu"
check "bench -dev cpu,nosuch: no table" test ! -s "$T/out"
expect 1 $TO $B -m "$G" -p 8 -n 0 -r 1 --warmup 0 -t 1 --no-probe -ngl all --gpu-mem-limit 1M -o json
check "bench: -ngl all that does not fit: skipped, as a test the memory does not hold, saying why" "$PYTHON" -c '
import json, sys
t = json.load(open(sys.argv[1]))["tests"][0]
assert t["status"] == "skipped" and "-ngl 7 needs" in t["skipped"] and "available" in t["skipped"], t
' "$T/out"
unset TERN_TEST_DEVICE
finish

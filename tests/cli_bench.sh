#!/usr/bin/env bash
# cli_bench.sh - tern-bench --kernels: the JSON document has the documented
# fields (commit, CPU, date, settings, min/median/max per measurement,
# probes), rows are written as they finish (to a file, not only to a
# terminal), progress goes to stderr only when it is a terminal, --quick
# selects its subset, %bw is given for mat-vec only, and bad options and
# types that never hold weights are usage errors (exit 2).
# Timings are not checked here (they belong in benchmarks, not tests).
. "$(dirname "$0")/lib.sh"

# (q8_0 and q4_0: their quantizers are quick under the sanitizers, unlike q4_K)
expect 0 "$BIN/bench" --kernels --json --types q4_0,q8_0 --ops matvec --min-ms 1 -r 2 -q -t 2
check "JSON fields" "$PYTHON" -c '
import json, re, sys
d = json.load(open(sys.argv[1]))
assert d["bandwidth_gbs"] > 0 and d["bandwidth_1t_gbs"] > 0
assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", d["date"]), d["date"]
assert re.fullmatch(r"[0-9a-f]{7,40}(-dirty)?|unknown(-dirty)?", d["commit"]), d["commit"]
assert d["version"] and d["threads"] == 2
cpu = d["cpu"]
assert cpu["model"] and isinstance(cpu["features"], str) and cpu["kernels"] == d["isa"], cpu
assert cpu["forced"] is None, cpu
s = d["settings"]
assert s == {"types": ["q4_0", "q8_0"], "ops": ["matvec"], "shapes": [[4096, 4096], [5632, 2048], [2048, 5632]],
             "tokens": [1], "min_ms": 1, "repetitions": 2, "quick": False}, s
ks = d["kernels"]
assert len(ks) == 2 * 3 * 2, len(ks)
assert {k["type"] for k in ks} == {"q4_0", "q8_0"}, ks
assert {(k["rows"], k["cols"]) for k in ks} == {(4096, 4096), (5632, 2048), (2048, 5632)}
assert {k["threads"] for k in ks} == {1, 2}
for k in ks:
    assert k["op"] == "matvec" and k["tokens"] == 1
    assert 0 < k["ms_min"] <= k["ms"] <= k["ms_max"], k
    assert 0 < k["gbs_min"] <= k["gbs"] <= k["gbs_max"], k
    assert 0 < k["gflops_min"] <= k["gflops"] <= k["gflops_max"], k
    assert k["calls"] >= 2 and k["probe_gbs"] > 0
    # the figures are printed rounded (pct to 0.1, GB/s to 0.01): allow for it
    g, p, pct = k["gbs"], k["probe_gbs"], k["bandwidth_pct"]
    assert abs(pct - 100) <= 0.05 or k["over_bandwidth"] == (pct > 100), k
    assert abs(pct - 100 * g / p) <= 0.05 + 100 * 0.005 * (1 / p + g / p ** 2) + 1e-9, k
# one probe before each type, the 1-thread figures against the 1-thread probe
pr = d["probes"]
assert [p["before"] for p in pr] == ["q4_0", "q8_0"], pr
for k in ks:
    p = pr[0 if k["type"] == "q4_0" else 1]
    assert k["probe_gbs"] == (p["gbs_1t"] if k["threads"] == 1 else p["gbs"]), (k, p)
assert d["over_bandwidth"] == sum(k["over_bandwidth"] for k in ks)
dr = d["probe_drift_pct"]
assert dr >= 0 and (abs(dr - 10) <= 0.05 or d["probe_drifted"] == (dr > 10)), dr
assert d["duration_s"] > 0
' "$T/out"
check "JSON: one kernel per line" "$PYTHON" -c '
import json, sys
rows = [l for l in open(sys.argv[1]) if "\"op\":" in l]
assert len(rows) == 12, len(rows)
for i, l in enumerate(rows):
    assert l.startswith("  {" if i == 0 else ", {"), l
    json.loads(l[2:])
' "$T/out"
check "no stderr with -q" [ ! -s "$T/err" ]

# mat-mat: one row per batch and shape, no %bw; mat-vec has one
expect 0 "$BIN/bench" --kernels --types q8_0 --min-ms 1 -r 1 -q -t 2
check "table header" grep -q "^type .*GB/s .*%bw .*GFLOPS .*spread" "$T/out"
check "matmul rows for 32/128/512 tokens" [ "$(grep -c '^q8_0 .*matmul' "$T/out")" -eq 9 ]
check "no %bw for matmul" [ "$(awk '$2 == "matmul" && $7 == "-"' "$T/out" | wc -l)" -eq 9 ]
check "matvec %bw" [ "$(grep -cE '^q8_0 +matvec .* [12] +[0-9.]+ +[0-9]+%!? +[0-9.]+  -$' "$T/out")" -eq 6 ]
check "one repetition: no spread" [ "$(awk '$9 == "-"' "$T/out" | wc -l)" -eq 15 ]
check "probe summary" grep -q "^read bandwidth, 1 probe: .* GB/s (2 threads), .* GB/s (1 thread)$" "$T/out"

# --quick: its types, one shape, 1 and 128 tokens, 50 ms unless told
expect 0 "$BIN/bench" --kernels --quick --json -r 1 -q -t 2
check "--quick subset" "$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
s = d["settings"]
assert s["quick"] and s["types"] == ["q4_0", "q4_K", "q8_0"] and s["shapes"] == [[4096, 4096]], s
assert s["tokens"] == [1, 128] and s["min_ms"] == 50 and s["repetitions"] == 1, s
assert [(k["type"], k["op"], k["tokens"], k["threads"]) for k in d["kernels"]] == [
    (t, op, n, th) for t in s["types"] for op, n, th in (("matvec", 1, 1), ("matvec", 1, 2), ("matmul", 128, 2))]
' "$T/out"
expect 0 "$BIN/bench" --kernels --quick --json --types f16 --min-ms 2 -r 1 -q -t 1
check "--quick with --types and --min-ms" "$PYTHON" -c '
import json, sys
s = json.load(open(sys.argv[1]))["settings"]
assert s["types"] == ["f16"] and s["min_ms"] == 2 and s["shapes"] == [[4096, 4096]], s
' "$T/out"

# Streaming: the first row is in the file before the run's last line is.
# (Not "while the process runs": kill -0 also succeeds on a zombie.) The
# run lasts seconds after its first row (five more cells of 2 x 150 ms).
first_row_early() {
	local pattern=$1 last=$2; shift 2
	"$@" >"$T/stream" 2>"$T/err" &
	local pid=$! early=0
	while kill -0 "$pid" 2>/dev/null; do
		if grep -q "$pattern" "$T/stream"; then
			grep -q "$last" "$T/stream" || early=1
			break
		fi
		sleep 0.05
	done
	wait "$pid" || early=0
	[ "$early" -eq 1 ]
}
check "table rows stream" first_row_early '^q4_0 *matvec' 'measurements in' \
	"$BIN/bench" --kernels --types q4_0,q8_0 --ops matvec --min-ms 150 -r 2 -t 1
check "spread of 2 repetitions" [ "$(grep -cE '^q(4|8)_0 +matvec .*  -[0-9.]+/\+[0-9.]+%$' "$T/stream")" -eq 6 ]
check "probe summary, 1 thread" grep -q "^read bandwidth, 2 probes: .* GB/s (1 thread)$" "$T/stream"
no_progress() { ! grep -q -e '\[1/' -e $'\r' "$T/err"; }
check "no progress when stderr is not a terminal" no_progress
check "JSON rows stream" first_row_early '"op": "matvec"' '"duration_s"' \
	"$BIN/bench" --kernels --json --types q4_0,q8_0 --ops matvec --min-ms 150 -r 2 -t 1 -q

# Progress on a terminal (through script(1), where it exists): i/N, type,
# op, shape; nothing with -q.
if script -qec true /dev/null >/dev/null 2>&1 </dev/null; then
	script -qec "$BIN/bench --kernels --quick --types q4_0 --ops matvec --min-ms 1 -r 1 -t 1 >$T/tty.out" \
		"$T/tty" >/dev/null 2>&1 </dev/null
	check "progress on a terminal" grep -q '\[1/1\] q4_0 matvec 4096x4096, 1 token, 1 thread' "$T/tty"
	check "rows still on stdout" grep -q '^q4_0 *matvec' "$T/tty.out"
	script -qec "$BIN/bench --kernels --quick --types q4_0 --ops matvec --min-ms 1 -r 1 -t 1 -q >$T/tty.out" \
		"$T/tty" >/dev/null 2>&1 </dev/null
	check "no progress with -q" [ "$(grep -c '\[1/1\]' "$T/tty")" -eq 0 ]
fi

# Usage errors: nothing is timed.
expect 2 "$BIN/bench"
for t in i32 q8_K q8_1 f64 i8; do
	expect 2 "$BIN/bench" --kernels --types "q4_0,$t"
	check "refuses $t by name" one_line_err "tern-bench: --types: $t never holds a weight matrix"
	check "nothing timed for $t" [ ! -s "$T/out" ]
done
expect 2 "$BIN/bench" --kernels --types nosuchtype
check "unknown type named" one_line_err "tern-bench: --types: unknown type 'nosuchtype'"
expect 2 "$BIN/bench" --kernels --types q4_0,q4_2
check "removed type is unknown" one_line_err "tern-bench: --types: unknown type 'q4_2'"
expect 2 "$BIN/bench" --kernels --ops sideways
expect 2 "$BIN/bench" --kernels --ops matvec,sideways
check "unknown op named" one_line_err "tern-bench: --ops: unknown operation 'sideways'"
expect 2 "$BIN/bench" --kernels -r 0
expect 2 "$BIN/bench" --kernels --min-ms 0

expect 0 "$BIN/bench" --help
tr -s ' \n' ' ' <"$T/out" >"$T/help"
check "help gives the duration and --quick" grep -q "about 2.5 minutes on 2 cores; --quick: about 5 s" "$T/help"
check "help names refused types" grep -q "i32" "$T/out"
finish

#!/usr/bin/env bash
# cli_bench.sh - tern-bench --kernels: a short run gives one valid JSON
# document with the documented fields, the table form has its header and a
# percentage of the bandwidth, and bad options are usage errors (exit 2).
# Timings are not checked here (they belong in benchmarks, not tests).
. "$(dirname "$0")/lib.sh"

expect 0 "$BIN/bench" --kernels --json --types q4_0,q4_K --ops matvec --min-ms 1 -q
check "JSON fields" "$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["bandwidth_gbs"] > 0 and d["bandwidth_1t_gbs"] > 0
ks = d["kernels"]
assert {k["type"] for k in ks} == {"q4_0", "q4_K"}, ks
shapes = {(k["rows"], k["cols"]) for k in ks}
assert shapes == {(4096, 4096), (5632, 2048), (2048, 5632)}, shapes
for k in ks:
    assert k["op"] == "matvec" and k["tokens"] == 1 and k["threads"] >= 1
    assert k["gbs"] > 0 and k["gflops"] > 0
' "$T/out"

expect 0 "$BIN/bench" --kernels --types q8_0 --ops matmul --min-ms 1 -q -t 2
check "table header" grep -q "^type .*GB/s .*%bw .*GFLOPS" "$T/out"
check "matmul rows for 32/128/512 tokens" [ "$(grep -c '^q8_0 .*matmul' "$T/out")" -eq 9 ]

expect 2 "$BIN/bench"
expect 2 "$BIN/bench" --kernels --types nosuchtype
expect 2 "$BIN/bench" --kernels --ops sideways
finish

#!/usr/bin/env bash
# bench_inspect.sh - time and peak RSS of listing a 2 GB model with
# tern-inspect. The file has a real 32,000-token vocabulary, Llama-shaped
# Q4_K tensors and a sparse data section (listing must not touch it).
# usage: scripts/bench_inspect.sh [BIN_DIR]   (needs python3 with numpy+gguf: make deps)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-bin}
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
$PY - "$W/big.gguf" <<'PY'
import os, sys
import numpy as np
from gguf import GGUFReader, GGUFWriter, GGMLQuantizationType as Q
src = GGUFReader("../shared/data/vocab/ggml-vocab-llama-spm.gguf")
w = GGUFWriter(sys.argv[1], "llama")
w.add_context_length(4096); w.add_embedding_length(4096); w.add_block_count(16)
w.add_head_count(32); w.add_head_count_kv(8); w.add_rope_freq_base(500000.0)
w.add_tokenizer_model("llama")
w.add_token_list([bytes(src.fields["tokenizer.ggml.tokens"].parts[i]) for i in src.fields["tokenizer.ggml.tokens"].data])
w.add_token_scores([float(src.fields["tokenizer.ggml.scores"].parts[i][0]) for i in src.fields["tokenizer.ggml.scores"].data])
def t(name, cols, rows):
    nbytes = rows * cols // 256 * 144
    w.add_tensor_info(name, (rows, cols // 256 * 144), np.dtype(np.uint8), nbytes, raw_dtype=Q.Q4_K)
    return nbytes
total = t("token_embd.weight", 4096, 32000)
for l in range(16):
    for n, c, r in (("attn_q", 4096, 4096), ("attn_k", 4096, 1024), ("attn_v", 4096, 1024), ("attn_output", 4096, 4096),
                    ("ffn_gate", 4096, 14336), ("ffn_up", 4096, 14336), ("ffn_down", 14336, 4096)):
        total += t(f"blk.{l}.{n}.weight", c, r)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_ti_data_to_file()
w.close()
# sparse data section: extend the file to its full size without writing it
r_end = os.path.getsize(sys.argv[1])
pad = (-r_end) % 32
os.truncate(sys.argv[1], r_end + pad + total + 32 * 200)
PY
ls -l "$W/big.gguf" | awk '{printf "file: %.2f GB\n", $5/1e9}'
"$BIN/inspect" --check "$W/big.gguf"
sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
/usr/bin/time -f "listing, cold page cache: %e s wall, %M KiB peak RSS" "$BIN/inspect" "$W/big.gguf" >/dev/null
for i in $(seq 21); do
	t0=$EPOCHREALTIME; "$BIN/inspect" "$W/big.gguf" >/dev/null; t1=$EPOCHREALTIME
	awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f\n", (b-a)*1000}'
done | sort -n | awk '{t[NR]=$1} END {printf "listing, warm: median %.1f ms wall over %d runs (min %.1f, max %.1f)\n", t[int((NR+1)/2)], NR, t[1], t[NR]}'
/usr/bin/time -f "listing, warm: %M KiB peak RSS" "$BIN/inspect" "$W/big.gguf" >/dev/null
/usr/bin/time -f "--json --no-tensors: %e s wall, %M KiB peak RSS" "$BIN/inspect" --json --no-tensors "$W/big.gguf" >/dev/null

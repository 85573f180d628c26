#!/usr/bin/env bash
# cli_quantize_ref.sh - the committed quantizer references
# (tests/quant_ref/quantize_*.bin, checked bit for bit by test_quant) are
# what gguf-py's quantizers produce today: regenerate them with
# scripts/gen_quantize_ref.py into a temporary folder and compare. SKIP when
# $PYTHON has no gguf package (the suite sets it to .venv/bin/python).
set -u
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import gguf.quants, numpy' 2>/dev/null; then
	echo "SKIP: $PYTHON has no gguf package"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$PYTHON" scripts/gen_quantize_ref.py "$tmp" >/dev/null; then
	echo "FAIL: scripts/gen_quantize_ref.py failed"
	exit 1
fi
n=0 bad=0
for f in "$tmp"/quantize_*.bin; do
	n=$((n + 1))
	ref=tests/quant_ref/${f##*/}
	if ! cmp -s "$f" "$ref"; then
		echo "FAIL: $ref differs from what gguf-py makes now (rerun scripts/gen_quantize_ref.py)"
		bad=$((bad + 1))
	fi
done
[ "$n" -gt 0 ] || { echo "FAIL: no files generated"; exit 1; }
[ "$bad" -eq 0 ] || exit 1
echo "PASS: $n quantizer references match gguf-py $("$PYTHON" -c 'import importlib.metadata as m; print(m.version("gguf"))')"

#!/usr/bin/env bash
# tok_bench.sh - tokenizer speed, tern vs llama.cpp, on the same 1 MiB of
# mixed-language text (scripts/tok_corpus.py) and the same vocab files.
# Each side loads the vocabulary once and tokenizes the whole text R times
# (no BOS, no special parsing); the median and best throughput are printed.
#   scripts/tok_bench.sh [LLAMA_DIR] [R] [vocab ...]
# LLAMA_DIR: a llama.cpp checkout built with cmake (default /work/ref/llama.cpp).
# Build tern first (make). Not part of `make test`: timings are not tests.
set -eu
cd "$(dirname "$0")/.."
LLAMA=${1:-/work/ref/llama.cpp}
R=${2:-7}
shift 2 2>/dev/null || shift $#
VOCABS=${*:-gpt-2 llama-spm deepseek-llm bert-bge}
DATA=${TERN_DATA:-../shared/data}
OUT=build/tok_bench
mkdir -p "$OUT"
python3 scripts/tok_corpus.py $((1 << 20)) >"$OUT/corpus.txt"
PKG=$(pkg-config --libs libpcre2-8 libutf8proc 2>/dev/null || true)
cc -O2 -std=c11 -I. scripts/tok_bench_tern.c build/release/libtern.a $PKG -lpthread -lm -o "$OUT/tern"
cc -O2 -std=c11 -I"$LLAMA/include" -I"$LLAMA/ggml/include" scripts/tok_bench_llama.c \
	-L"$LLAMA/build/bin" -lllama -Wl,-rpath,"$LLAMA/build/bin" -o "$OUT/llama"
echo "corpus: $(wc -c <"$OUT/corpus.txt") bytes of mixed-language text; $R runs each; $(nproc) cores"
for v in $VOCABS; do
	f=$DATA/vocab/ggml-vocab-$v.gguf
	echo "== $v"
	"$OUT/tern" "$f" "$OUT/corpus.txt" "$R"
	"$OUT/llama" "$f" "$OUT/corpus.txt" "$R"
done

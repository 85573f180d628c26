#!/bin/sh
# embed_ref_synth.sh - regenerate tests/data/llm_ref/embed/: write the tiny
# synthetic embedding models with scripts/gen_synth_llm.c (tern's GGUF
# writer, fixed seeds) and record llama.cpp's pooled embeddings of the
# fixed inputs (inputs.txt, one per line) through our harness
# scripts/embed_ref_llama.c, for the file's pooling and the overrides.
#   make -j2 && scripts/embed_ref_synth.sh LLAMA_SRC LLAMA_LIBDIR "VERSION TEXT"
# LLAMA_SRC: llama.cpp source tree (include/, ggml/include/); LLAMA_LIBDIR:
# its built libllama.so / libggml*.so.  It does not build llama.cpp.
# The models are not committed: each JSON records the sha256 of the file
# it was made from (tests/check_llm_ref.sh regenerates and checks it).
# Then embed/conv/: the F16 and BF16 copies of bert-f32 and nomic-bert-f32
# that scripts/embed_ref_f16.sh writes (gguf-py: $PYTHON, else .venv's,
# else python3), checked by tests/cli_embed.sh.
set -eu
SRC=$1 LIB=$2 VERSION=$3
DATA=tests/data/llm_ref/embed
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
PKG=$(pkg-config --libs libpcre2-8 libutf8proc 2>/dev/null || true)
cc -O2 -std=c11 -ffp-contract=off -I. scripts/gen_synth_llm.c build/release/libtern.a $PKG \
	-lpthread -lm -o "$OUT/gen"
cc -O2 -std=c11 -I"$SRC/include" -I"$SRC/ggml/include" scripts/embed_ref_llama.c \
	-L"$LIB" -lllama -lggml -lggml-base -lm -Wl,-rpath,"$LIB" -o "$OUT/harness"
# model type poolings (the file's first: it names the file's choice)
while read -r arch type poolings; do
	m="$OUT/$arch-$type.gguf"
	"$OUT/gen" "$arch" "$type" "$m"
	sha=$(sha256sum "$m" | cut -d' ' -f1)
	# shellcheck disable=SC2086
	EMBREF_META="\"model\": \"gen_synth_llm $arch $type\", \"model_sha256\": \"$sha\", \"llama_cpp\": \"$VERSION\"" \
		"$OUT/harness" "$m" "$DATA/inputs.txt" "$DATA/$arch-$type.json" $poolings
	echo "$DATA/$arch-$type.json"
done <<'LIST'
bert f32 file mean cls last
bert q8_0 file mean last
bert q4_0 file
bert q4_k file mean
nomic-bert f32 file cls last
nomic-bert q8_0 file
nomic-bert q4_0 file
nomic-bert q4_k file
llama-mean f32 file cls last
llama-mean q8_0 file
llama-mean q4_0 file
llama-mean q4_k file
qwen3-last f32 file mean
qwen3-last q8_0 file
qwen3-last q4_0 file
qwen3-last q4_k file
LIST
[ -n "${PYTHON:-}" ] || { [ -x .venv/bin/python ] && PYTHON=.venv/bin/python || PYTHON=python3; }
mkdir -p "$DATA/conv"
for arch in bert nomic-bert; do
	for type in f16 bf16; do
		m="$OUT/$arch-$type.gguf"
		PYTHON=$PYTHON scripts/embed_ref_f16.sh "$OUT/$arch-f32.gguf" "$m" "$type"
		sha=$(sha256sum "$m" | cut -d' ' -f1)
		EMBREF_META="\"model\": \"embed_ref_f16.sh $type of gen_synth_llm $arch f32\", \"model_sha256\": \"$sha\", \"llama_cpp\": \"$VERSION\"" \
			"$OUT/harness" "$m" "$DATA/inputs.txt" "$DATA/conv/$arch-$type.json" file
		echo "$DATA/conv/$arch-$type.json"
	done
done

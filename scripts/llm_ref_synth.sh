#!/bin/sh
# llm_ref_synth.sh - regenerate tests/data/llm_ref/synth/: write the tiny
# synthetic models with scripts/gen_synth_llm.c (tern's GGUF writer, fixed
# seeds) and record llama.cpp's logits at every position of a fixed token
# sequence, through our harness scripts/llm_ref_llama.c.
#   make -j2 && scripts/llm_ref_synth.sh LLAMA_SRC LLAMA_LIBDIR "VERSION TEXT"
# LLAMA_SRC: llama.cpp source tree (include/, ggml/include/); LLAMA_LIBDIR:
# its built libllama.so / libggml*.so.  It does not build llama.cpp.
# ARCHS (environment) limits the run to some architectures, e.g.
# ARCHS="gemma gemma2 phi2 phi3 phi3-long" for the gemma / phi families.
# The models themselves are not committed: each JSON records the sha256 of
# the file it was made from, so a test can regenerate and check it.
set -eu
SRC=$1 LIB=$2 VERSION=$3
DATA=tests/data/llm_ref/synth
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
mkdir -p "$DATA"
PKG=$(pkg-config --libs libpcre2-8 libutf8proc 2>/dev/null || true)
cc -O2 -std=c11 -ffp-contract=off -I. scripts/gen_synth_llm.c build/release/libtern.a $PKG \
	-lpthread -lm -o "$OUT/gen"
cc -O2 -std=c11 -I"$SRC/include" -I"$SRC/ggml/include" scripts/llm_ref_llama.c \
	-L"$LIB" -lllama -lggml -lggml-base -lm -Wl,-rpath,"$LIB" -o "$OUT/harness"
# BOS, then 23 ids over the whole vocabulary (bytes, word pieces, specials
# excluded); 24 positions reach well past gemma3's sliding window of 4.
IDS=1,263,104,300,72,265,119,281,259,45,318,200,262,87,301,150,270,33,312,266,99,288,260,205
ALL="llama qwen2 qwen3 gemma3 llama-linear llama-freqs gemma gemma2 phi2 phi3 phi3-long"
ALL="$ALL qwen3-yarn gemma3-yarn"
ALL="$ALL mixtral qwen2moe qwen3moe gpt-oss gpt-oss-yarn"
ALL="$ALL deepseek2 deepseek2-yarn deepseek2-kvb deepseek2-moe deepseek2-gate-up deepseek2-v3"
for arch in ${ARCHS:-$ALL}; do
	types="f32 q8_0 q4_0 q4_k"
	case $arch in
	llama-* | phi3-long | qwen3-yarn | gemma3-yarn) types="f32 q8_0" ;;
	mixtral | qwen2moe | qwen3moe) types="f32 q8_0 q4_k" ;;
	gpt-oss | gpt-oss-yarn) types="f32 q8_0 mxfp4" ;; # mxfp4: the experts, as gpt-oss is published
	deepseek2*) types="f32 q8_0 q4_0" ;; # the per-head matrices have rows of 32
	esac
	for type in $types; do
		m="$OUT/$arch-$type.gguf"
		"$OUT/gen" "$arch" "$type" "$m"
		sha=$(sha256sum "$m" | cut -d' ' -f1)
		LLMREF_META="\"model\": \"gen_synth_llm $arch $type\", \"model_sha256\": \"$sha\", \"llama_cpp\": \"$VERSION\", \"logits_bin\": \"$arch-$type.logits.bin\"" \
			"$OUT/harness" synth "$m" "$IDS" "$DATA/$arch-$type.json" "$DATA/$arch-$type.logits.bin"
		echo "$DATA/$arch-$type.json"
	done
done

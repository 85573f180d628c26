#!/bin/sh
# llm_ref.sh - regenerate tests/data/llm_ref/*.json (and the logits .bin files)
# with an already-built llama.cpp: compiles our harness scripts/llm_ref_llama.c
# against its libllama and runs it over every model x prompt.
#   scripts/llm_ref.sh LLAMA_SRC LLAMA_LIBDIR MODELDIR "VERSION TEXT"
# LLAMA_SRC: the llama.cpp source tree (for include/ and ggml/include/);
# LLAMA_LIBDIR: where libllama.so and libggml*.so were built (build/bin);
# MODELDIR: holds SmolLM2-135M-Instruct.Q4_1.gguf and gemma-3-270m-q4_k_m.gguf.
# It does not build llama.cpp; README.md in tests/data/llm_ref says how we did.
set -eu
SRC=$1 LIB=$2 MODELS=$3 VERSION=$4
DATA=tests/data/llm_ref
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
cc -O2 -std=c11 -I"$SRC/include" -I"$SRC/ggml/include" scripts/llm_ref_llama.c \
	-L"$LIB" -lllama -lggml -lggml-base -lm -Wl,-rpath,"$LIB" -o "$OUT/harness"
for pair in smollm2:SmolLM2-135M-Instruct.Q4_1.gguf gemma3:gemma-3-270m-q4_k_m.gguf; do
	tag=${pair%%:*} file=${pair#*:}
	sha=$(sha256sum "$MODELS/$file" | cut -d' ' -f1)
	for p in short long multilingual code; do
		meta="\"model\": \"$file\", \"model_sha256\": \"$sha\", \"llama_cpp\": \"$VERSION\", \"prompt_file\": \"prompts/$p.txt\""
		if [ "$p" = short ]; then
			LLMREF_META="$meta, \"logits_bin\": \"${tag}_short.logits.bin\"" "$OUT/harness" gen \
				"$MODELS/$file" "$DATA/prompts/$p.txt" "$DATA/${tag}_$p.json" \
				"$DATA/${tag}_short.logits.bin" f16
		else
			LLMREF_META="$meta" "$OUT/harness" gen "$MODELS/$file" "$DATA/prompts/$p.txt" \
				"$DATA/${tag}_$p.json"
		fi
		echo "$DATA/${tag}_$p.json"
	done
done

#!/usr/bin/env bash
# cli_models.sh - the real models `make deps` fetches into models/
# (scripts/models.txt): each is present under its pinned size, passes
# tern-inspect --check, and tern-inspect's summary agrees with gguf-py
# (architecture, tensor count, block count, heads, context, vocabulary and
# parameter count), which in turn agrees with facts pinned here from the
# models' published configurations. Without models/ (no `make deps` yet):
# SKIP. CI runs `make deps` first, so there the files are present.
. "$(dirname "$0")/lib.sh"
M=${TERN_MODELS:-models}
if [ ! -d "$M" ]; then
	echo "SKIP: no $M/ (make models fetches it)"
	exit 0
fi
if ! "$PYTHON" -c 'import gguf' 2>/dev/null; then
	echo "SKIP: no gguf-py for $PYTHON (make deps)"
	exit 0
fi

# model FILE ARCH TENSORS BLOCKS HEADS KV_HEADS CONTEXT VOCAB
# (pinned: SmolLM2-135M has 30 layers of 9 heads over 3 KV heads and a 49,152
# token vocabulary; Gemma 3 270M 18 layers, 4 heads over 1, 262,144 tokens)
model() {
	local f=$M/$1; shift
	local want="$*"
	if [ ! -f "$f" ]; then
		echo "FAIL: $f missing (make models)"
		nfail=$((nfail + 1))
		return
	fi
	check "$f: size as pinned in scripts/models.txt" \
		[ "$(stat -c %s "$f")" = "$(awk -v n="$(basename "$f")" '$1 == n { print $3 }' scripts/models.txt)" ]
	expect 0 "$BIN/inspect" --check "$f" && check "$f: --check ok" grep -q ": ok (gguf v3" "$T/out"

	# gguf-py: the facts, read independently of tern
	"$PYTHON" - "$f" >"$T/py" 2>"$T/pyerr" <<'EOF'
import sys, gguf
r = gguf.GGUFReader(sys.argv[1])
def get(key):
    f = r.fields[key]
    v = f.parts[f.data[0]]
    return bytes(v).decode() if f.types[0] == gguf.GGUFValueType.STRING else int(v[0])
a = get("general.architecture")
print(a, len(r.tensors), get(a + ".block_count"), get(a + ".attention.head_count"),
      get(a + ".attention.head_count_kv"), get(a + ".context_length"),
      len(r.fields["tokenizer.ggml.tokens"].data), sum(int(t.n_elements) for t in r.tensors))
EOF
	local py
	py=$(cat "$T/py")
	check "$f: gguf-py reads it ($(head -c 200 "$T/pyerr"))" [ -n "$py" ]
	check "$f: gguf-py facts match the pinned ones ($py)" [ "${py% *}" = "$want" ]

	# tern-inspect --json: the same facts
	expect 0 "$BIN/inspect" --json "$f" || return
	local tern
	tern=$("$PYTHON" -c 'import json, sys
d = json.load(sys.stdin); s = d["summary"]
print(s["architecture"], len(d["tensors"]), s["block_count"], s["head_count"], s["head_count_kv"],
      s["context_length"], s["vocab_size"], s["parameters"])' <"$T/out")
	check "$f: tern-inspect agrees with gguf-py (tern: $tern; gguf-py: $py)" [ "$tern" = "$py" ]
}

model SmolLM2-135M-Instruct.Q4_1.gguf llama 272 30 9 3 8192 49152
model gemma-3-270m-q4_k_m.gguf gemma3 236 18 4 1 32768 262144
finish

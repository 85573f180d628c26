#!/usr/bin/env bash
# cli_tok.sh - tern-inspect's tokenizer mode: --tokenize, --tokenize-file
# (also stdin), --ids, --json, --add-special, --parse-special, --detokenize,
# the warnings (unknown pre-tokenizer, bytes dropped) and the usage errors.
. "$(dirname "$0")/lib.sh"
V=$DATA/vocab
GPT2=$V/ggml-vocab-gpt-2.gguf
SPM=$V/ggml-vocab-llama-spm.gguf
if [ ! -e "$GPT2" ] || [ ! -e "$SPM" ]; then
	echo "SKIP: no vocab files in $V"
	exit 0
fi

# one 'id<TAB>piece' line per token
expect 0 "$BIN/inspect" --tokenize "Hello world" "$GPT2"
check "id/piece lines" [ "$(cat "$T/out")" = "$(printf '15496\tHello\n995\t world')" ]

# --ids: one JSON array; the .out cases of the vocab files
expect 0 "$BIN/inspect" --tokenize " Hello World!" --ids "$GPT2"
check "JSON ids" [ "$(cat "$T/out")" = "[18435, 2159, 0]" ]
expect 0 "$BIN/inspect" --tokenize "" --ids "$GPT2"
check "empty text" [ "$(cat "$T/out")" = "[]" ]

# file and stdin give the same as the argument; the newline is a token
printf 'Hello world\n' >"$T/in.txt"
expect 0 "$BIN/inspect" --tokenize-file "$T/in.txt" --ids "$GPT2"
check "file" [ "$(cat "$T/out")" = "[15496, 995, 198]" ]
expect 0 sh -c "printf 'Hello world\n' | '$BIN/inspect' --tokenize-file - --ids '$GPT2'"
check "stdin" [ "$(cat "$T/out")" = "[15496, 995, 198]" ]
expect 1 "$BIN/inspect" --tokenize-file "$T/missing.txt" "$GPT2"
check "missing file: one line" one_line_err "tern-inspect: "

# specials: BOS only with --add-special; control text only with --parse-special
expect 0 "$BIN/inspect" --tokenize "Hello" --ids "$SPM"
check "no BOS by default" [ "$(cat "$T/out")" = "[15043]" ]
expect 0 "$BIN/inspect" --tokenize "Hello" --ids --add-special "$SPM"
check "BOS with --add-special" [ "$(cat "$T/out")" = "[1, 15043]" ]
expect 0 "$BIN/inspect" --tokenize "a</s>" --ids --parse-special "$SPM"
check "--parse-special" [ "$(cat "$T/out")" = "[263, 2]" ]
expect 0 "$BIN/inspect" --tokenize "a</s>" --ids "$SPM"
check "control text as text" [ "$(cat "$T/out")" != "[263, 2]" ]

# detokenize: exact bytes, no newline added; round trip
expect 0 "$BIN/inspect" --detokenize "15496 995 198" "$GPT2"
check "detokenize" [ "$(od -An -c "$T/out" | tr -d ' ')" = 'Helloworld\n' ]
if command -v script >/dev/null; then # on a terminal a line of its own; a pipe the bytes exactly
	expect 0 script -qec "$BIN/inspect --detokenize '15496 995' $GPT2" /dev/null </dev/null
	check "detokenize on a terminal: the line ended" [ "$(od -An -c "$T/out" | tr -d ' ')" = 'Helloworld\r\n' ]
	expect 0 "$BIN/inspect" --detokenize "15496 995" "$GPT2"
	check "detokenize into a pipe: no newline added" [ "$(od -An -c "$T/out" | tr -d ' ')" = 'Helloworld' ]
fi
expect 0 "$BIN/inspect" --detokenize "[1, 15043, 3186]" "$SPM"
check "detokenize JSON list" [ "$(cat "$T/out")" = "<s> Hello world" ]
expect 1 "$BIN/inspect" --detokenize "99999999" "$SPM"
check "id out of range: one line" one_line_err "tern-inspect: "
expect 2 "$BIN/inspect" --detokenize "1 x 2" "$SPM"

# --json: ids, the bytes of each piece, and the dropped count
expect 0 "$BIN/inspect" --tokenize "Hello world" --json "$GPT2"
check "--json document" [ "$(cat "$T/out")" = '{"ids": [15496, 995], "pieces": ["Hello", " world"], "dropped_bytes": 0}' ]
check "nothing dropped: no warning" [ ! -s "$T/err" ]

# Whisper's legacy vocabulary
W=$DATA/models/whisper-vocab-only-tiny.bin
if [ -e "$W" ]; then
	expect 0 "$BIN/inspect" --tokenize " And so my fellow Americans" --ids "$W"
	ids=$(tr -d '[],' <"$T/out")
	expect 0 "$BIN/inspect" --detokenize "$ids" "$W"
	check "whisper round trip" [ "$(cat "$T/out")" = " And so my fellow Americans" ]
	# its multilingual vocabulary has no piece for the bytes of this
	# emoji: they are dropped, with a warning and the count in the JSON
	expect 0 "$BIN/inspect" --tokenize "$(printf 'a\360\237\230\200')" --ids "$W"
	check "dropped bytes: the other ids stay" [ "$(cat "$T/out")" = "[64]" ]
	check "dropped bytes: one warning line with the count" \
		one_line_err "tern-inspect: warning: .*: 4 bytes could not be encoded and were dropped$"
	expect 0 "$BIN/inspect" --tokenize "$(printf '\360\237\230\200')" --json "$W"
	check "dropped bytes in the JSON" grep -q '"ids": \[\], .*"dropped_bytes": 4}$' "$T/out"
fi

# a file that names no pre-tokenizer: warning on stderr, ids on stdout
if [ -e "$V/ggml-vocab-gpt-neox.gguf" ]; then
	expect 0 "$BIN/inspect" --tokenize "x" --ids "$V/ggml-vocab-gpt-neox.gguf"
	check "warning names the fallback" grep -q "using 'gpt-neox'" "$T/err"
	check "ids still on stdout" [ "$(cat "$T/out")" = "[89]" ]
fi

# usage errors
expect 2 "$BIN/inspect" --ids "$GPT2"
expect 2 "$BIN/inspect" --tokenize a --detokenize 1 "$GPT2"
expect 2 "$BIN/inspect" --detokenize 1 --json "$GPT2"
finish

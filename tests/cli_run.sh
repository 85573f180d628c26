#!/usr/bin/env bash
# cli_run.sh - tern-run as scripts use it: usage errors and exit codes,
# the prompt from arguments / -p / -f / stdin, greedy text against
# llama.cpp's reference continuation (tests/data/llm_ref/smollm2_short.json),
# --json and --logprobs through a JSON parser, stop strings, -n, a context
# too small, a closed pipe, Ctrl-C, TERN_MODEL, a model without a chat
# template, seeds and thread counts. The parts that need the real models
# are skipped when models/ is absent (CI runs `make deps` first).
. "$(dirname "$0")/lib.sh"
R=$BIN/run
M=${TERN_MODELS:-models}
S=$M/SmolLM2-135M-Instruct.Q4_1.gguf
G=$M/gemma-3-270m-q4_k_m.gguf
REF=tests/data/llm_ref/smollm2_short.json
unset TERN_MODEL TERN_MEM_AVAILABLE
# every run here is bounded: a hang is a failure, not a stuck suite
TO="timeout 120"

# ---- without a model ------------------------------------------------------------
expect 0 $R --help && check "help shows usage" grep -q '^usage: tern-run \[OPTIONS\] \[PROMPT...\]' "$T/out"
check "help lists the llama.cpp spellings" grep -q -- '-ub, --ubatch-size N' "$T/out"
check "help says --stop repeats" grep -q -- '--stop TEXT .*(repeatable)' <<<"$(tr -s ' \n' ' ' <"$T/out")"
expect 2 $TO $R hello </dev/null && check "no model: one line naming -m and TERN_MODEL" \
	one_line_err "tern-run: no model: give -m FILE or set TERN_MODEL"
expect 2 $TO $R -m x.gguf </dev/null && check "no prompt, stdin /dev/null: usage error" one_line_err "tern-run: no prompt"
expect 2 $TO $R -m x.gguf <&- && check "no prompt, stdin closed: usage error" one_line_err "tern-run: no prompt"
expect 2 $TO $R -m x.gguf -p "" </dev/null && check "empty -p: usage error" one_line_err "tern-run: no prompt"
printf '' >"$T/empty"
expect 2 $TO $R -m x.gguf <"$T/empty" && check "empty stdin and no prompt: usage error" one_line_err "tern-run: no prompt"
expect 2 $TO $R -m x.gguf - </dev/null && check "'-' with empty stdin: usage error" one_line_err "tern-run: no prompt"
if command -v script >/dev/null; then # stdin a terminal: refused at once, never read
	expect 2 timeout 20 script -qec "$R -m x.gguf" /dev/null </dev/null && check "no prompt on a terminal: usage error" grep -q "no prompt" "$T/out"
	expect 2 timeout 20 script -qec "$R -m x.gguf -" /dev/null </dev/null && check "'-' on a terminal: refused" grep -q "which is a terminal" "$T/out"
fi
expect 2 $R -m x.gguf --bogus hi && check "unknown option" one_line_err "tern-run: unknown option '--bogus'"
expect 65 $R -m "$DATA/models/ggml-tiny.en.bin" hi && check "a Whisper model: named, and where it runs" \
	one_line_err "tern-run: $DATA/models/ggml-tiny.en.bin: not a language model: whisper (tern-transcribe runs it)"
# llama.cpp's multi-letter options: known, named as llama.cpp's, or
# unknown with a suggestion; never a letter and a value (-cnv as -c nv)
expect 2 $R -m x.gguf -cnv hi && check "-cnv: llama.cpp's, use tern-chat" \
	one_line_err "tern-run: option '-cnv' is llama.cpp's conversation mode: use tern-chat"
expect 2 $R -m x.gguf -fa hi && check "-fa: not read as -f a" one_line_err "tern-run: option '-fa' is llama.cpp's flash attention"
expect 2 $R -m x.gguf -md d.gguf hi && check "-md: not read as -m d" one_line_err "tern-run: option '-md' is llama.cpp's draft model"
expect 2 $R -m x.gguf -nkvo hi && check "-nkvo: not -n kvo" one_line_err "tern-run: option '-nkvo' is llama.cpp's KV offload"
expect 2 $R -m x.gguf -nlg 3 hi && check "a near alias suggested" one_line_err "tern-run: unknown option '-nlg' (did you mean '-ngl'?)"
expect 2 $R -m x.gguf -tmp 3 hi && check "a near long option suggested" \
	one_line_err "tern-run: unknown option '-tmp' (did you mean '--temp'?)"
expect 2 $R -m x.gguf -nx hi && check "unknown multi-letter option" one_line_err "tern-run: unknown option '-nx'"
expect 2 $R -m x.gguf -ngl x hi && check "-ngl is one option" one_line_err "tern-run: option '-ngl'"
expect 2 $R -m x.gguf -n5x hi && check "-n with a non-number attached: unknown" one_line_err "tern-run: unknown option '-n5x'"
expect 2 $R -m x.gguf --temp hot hi && check "bad number" one_line_err "tern-run: option '--temp': 'hot' is not a number"
expect 2 $R -m x.gguf --temp inf hi && check "infinite temperature" one_line_err "tern-run: option '--temp'"
expect 2 $R -m x.gguf --logprobs 3 hi && check "--logprobs needs --json" one_line_err "tern-run: --logprobs needs --json"
expect 2 $R -m x.gguf --logprobs 101 --json hi
expect 2 $R -m x.gguf --raw --chat-template chatml hi && check "--raw excludes --chat-template" grep -q "cannot be combined" "$T/err"
expect 2 $R -m x.gguf --chat-template nosuch hi && check "unknown chat template lists the formats" \
	one_line_err "tern-run: unknown chat template 'nosuch' (built-in: chatml, llama2,"
expect 2 $R -m x.gguf -p a b </dev/null && check "prompt given twice" one_line_err "tern-run: give the prompt once"
expect 2 $R -m x.gguf -f - a </dev/null && check "-f - with PROMPT words" one_line_err "tern-run: give the prompt once"
expect 2 $R -m x.gguf a - </dev/null && check "'-' with other words" one_line_err "tern-run: '-' (the prompt from standard input)"
expect 2 $R -m x.gguf -n -2 hi
expect 2 $R -m x.gguf -ctk q4_0 hi && check "cache types as llama.cpp names them" grep -q "f32|f16|q8_0" "$T/err"
stops=(); for i in $(seq 17); do stops+=(--stop "s$i"); done
expect 2 $R -m x.gguf "${stops[@]}" hi && check "at most 16 stop strings" one_line_err "tern-run: at most 16 --stop strings"
expect 1 $R -m /nonexistent.gguf hi </dev/null && check "missing model: one line" \
	one_line_err "tern-run: /nonexistent.gguf: cannot open"
expect 1 $R -m x.gguf -f /nonexistent.txt </dev/null && check "missing prompt file" one_line_err "tern-run: /nonexistent.txt: cannot open"
expect 65 $R -m "$DATA/audio/jfk.wav" hi </dev/null && check "not a GGUF file: one line" \
	one_line_err "tern-run: $DATA/audio/jfk.wav: not a GGUF file"
expect 65 $R -m "$DATA/vocab/ggml-vocab-llama-spm.gguf" hi </dev/null && check "a vocabulary-only file: one line naming the tensor" \
	one_line_err "tern-run: $DATA/vocab/ggml-vocab-llama-spm.gguf: tensor 'token_embd.weight' is missing"
expect 65 $R -m "$DATA/vocab/ggml-vocab-falcon.gguf" hi </dev/null && check "an unsupported architecture: one line naming it" \
	one_line_err "tern-run: $DATA/vocab/ggml-vocab-falcon.gguf: architecture 'falcon' is not supported"
expect 1 $R -m x.gguf -f "$T" </dev/null && check "a prompt file that cannot be read" one_line_err "tern-run: $T: cannot read"
printf 'a\0b' >"$T/nul.txt"
expect 65 $R -m x.gguf -f "$T/nul.txt" </dev/null && check "a prompt with a NUL byte" one_line_err "tern-run: the prompt has a NUL byte at offset 1"
head -c $((16 * 1024 * 1024 + 1)) /dev/zero | tr '\0' a >"$T/huge.txt"
expect 1 $R -m x.gguf -f "$T/huge.txt" </dev/null && check "a prompt file over 16 MiB is refused" \
	one_line_err "tern-run: $T/huge.txt: larger than the 16 MiB"

expect 1 $R -m x.gguf hi <"$T/huge.txt" && check "stdin over 16 MiB is refused" \
	one_line_err "tern-run: standard input: larger than the 16 MiB"

if [ ! -f "$S" ] || [ ! -f "$G" ]; then
	echo "SKIP: the model runs (no $S or $G; make models fetches them)"
	finish
fi

head -c 2000000 $S >"$T/trunc.gguf"
expect 65 $TO $R -m "$T/trunc.gguf" hi </dev/null && check "a truncated model: one line naming the tensor" \
	one_line_err "tern-run: $T/trunc.gguf: tensor 'token_embd.weight'"

# ---- greedy text against llama.cpp ----------------------------------------------------
# The reference's first step whose top-2 log-probabilities are within 0.1: the
# tokens must agree up to there (tests/data/llm_ref/README.md).
NREF=$($PYTHON -c 'import json, sys
g = json.load(open(sys.argv[1]))["generated"]
print(next((s["step"] for s in g if s["top5"][0][1] - s["top5"][1][1] < 0.1), len(g)))' $REF)
# The README's quick start: its question, through the file's chat template,
# gives the answer the README prints (llama.cpp's greedy answer to the same
# rendered prompt too, with top-1 margins of 0.98 nats or more).
QS=$(sed -n 's/.*bin\/run -m models\/SmolLM2-135M-Instruct.Q4_1.gguf --temp 0 "\([^"]*\)".*/\1/p' README.md | head -1)
QA=$($PYTHON -c 'import sys
s = open("README.md", encoding="utf-8").read().split("## Quick start", 1)[1].split("\n## ", 1)[0]
blocks = s.split("\n```")[1::2]  # fenced blocks: the command, then the answer
print(blocks[1].split("\n", 1)[1])')
check "the README's quick start has a question and an answer" test -n "$QS" -a -n "$QA"
expect 0 $TO $R -m $S --temp 0 "$QS" </dev/null
check "the README's quick start answer: $QA" test "$(cat "$T/out")" = "$QA"
PROMPT=tests/data/llm_ref/prompts/short.txt
expect 0 $TO $R -m $S --raw --temp 0 -n "$NREF" -f $PROMPT </dev/null
check "greedy text = llama.cpp's first $NREF tokens, then one newline" $PYTHON -c 'import json, sys
g = json.load(open(sys.argv[1]))["generated"][:int(sys.argv[3])]
want = "".join(s["piece"] for s in g).rstrip("\n") + "\n"
got = open(sys.argv[2], encoding="utf-8").read()
assert got == want, (got, want)' $REF "$T/out" "$NREF"
check "nothing on stderr without -v" test ! -s "$T/err"
expect 0 $TO $R -m $S --raw --temp 0 -n "$NREF" --json --logprobs 3 -f $PROMPT </dev/null
cp "$T/out" "$T/greedy.json"
check "--json --logprobs: ids and log-probabilities (within 0.15) as llama.cpp's, sorted alternatives" $PYTHON -c '
import json, sys
ref = json.load(open(sys.argv[1]))
d = json.load(open(sys.argv[2]))
n = int(sys.argv[3])
g = ref["generated"][:n]
assert d["finish_reason"] == "length", d["finish_reason"]
assert d["prompt_tokens"] == len(ref["prompt_ids"]), d["prompt_tokens"]
assert d["generated_tokens"] == n and len(d["logprobs"]) == n
assert d["text"] == "".join(s["piece"] for s in g), d["text"]
assert d["chat_template"] is None
for r, t in zip(g, d["logprobs"]):
    assert t["id"] == r["id"] and t["text"] == r["piece"], (t, r)
    assert abs(t["logprob"] - r["logprob"]) < 0.15, (t["logprob"], r["logprob"])
    top = t["top"]
    assert len(top) == 3 and top[0]["id"] == t["id"] and top[0]["logprob"] == t["logprob"], top
    assert all(a["logprob"] >= b["logprob"] for a, b in zip(top, top[1:])), top
' $REF "$T/out" "$NREF"
check "--json: every field, of the right type" $PYTHON -c '
import json, sys
d = json.load(open(sys.argv[1]))
for k, t in [("model", str), ("text", str), ("finish_reason", str), ("prompt_tokens", int),
             ("generated_tokens", int), ("seed", int), ("n_ctx", int), ("timings", dict)]:
    assert isinstance(d[k], t), (k, d.get(k))
for k in ["load_ms", "prompt_ms", "prompt_tokens_per_s", "gen_ms", "gen_tokens_per_s"]:
    assert isinstance(d["timings"][k], (int, float)) and d["timings"][k] >= 0, (k, d["timings"])
assert d["model"] == sys.argv[2] and d["n_ctx"] == 4096
' "$T/out" $S

# the trailing-newline rule: " Paris.\n\n" prints " Paris.\n"; --json keeps the text
expect 0 $TO $R -m $S --raw --temp 0 -n 4 -f $PROMPT </dev/null
check "stdout ends with exactly one newline" $PYTHON -c 'import sys
assert open(sys.argv[1]).read() == " Paris.\n"' "$T/out"
cp "$T/out" "$T/n4.txt"
expect 0 $TO $R -m $S --raw --temp 0 -n4 -f $PROMPT </dev/null && check "-n4: a number attached to -n" cmp -s "$T/out" "$T/n4.txt"
check "no warning when -n ends the text" [ ! -s "$T/err" ]
# a base model given chatml (Gemma 3 270M does not know <|im_end|> as a
# token): the end of turn it writes as text ends the answer
G=${TERN_MODELS:-models}/gemma-3-270m-q4_k_m.gguf
if [ -f "$G" ]; then
	expect 0 $TO $R -m "$G" --chat-template chatml --temp 0 -n 64 --json "What is 2+2?" </dev/null
	check "chatml on a base model: stopped at its end of turn" $PYTHON -c 'import json, sys
d = json.load(open(sys.argv[1])); assert d["finish_reason"] == "stop" and "im_end" not in d["text"], d' "$T/out"
fi
# a context that fills before -n: said on stderr (the text may end mid-sentence)
expect 0 $TO $R -m $S --raw --temp 0 -c 24 "Once upon a time" </dev/null && check "a full context: one warning" \
	one_line_err "tern-run: warning: the context of 24 tokens is full: the text stops there (-c sets a larger one)"
# standard input left open: after a second of silence, one line says what is awaited
expect 0 $TO $R -m $S --raw --temp 0 -n 2 < <(sleep 2; echo "The capital of France is")
check "stdin silent for a second: said once" one_line_err "tern-run: warning: reading standard input (not a terminal"
expect 0 $TO $R -m $S --raw --temp 0 -n 2 < <(echo "The capital of France is")
check "stdin with text at once: nothing said" [ ! -s "$T/err" ]
expect 0 $TO $R -m $S --raw --temp 0 -n 4 --json -f $PROMPT </dev/null
check "--json keeps the trailing newlines" $PYTHON -c 'import json, sys
assert json.load(open(sys.argv[1]))["text"] == " Paris.\n\n"' "$T/out"

# -n, --stop, -n 0
expect 0 $TO $R -m $S --raw --temp 0 -n 5 --json --logprobs 0 -f $PROMPT </dev/null
check "-n 5: finish length, 5 tokens, empty alternatives" $PYTHON -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["finish_reason"] == "length" and d["generated_tokens"] == 5 and len(d["logprobs"]) == 5, d
assert all(t["top"] == [] for t in d["logprobs"])' "$T/out"
expect 0 $TO $R -m $S --raw --temp 0 -n 40 --stop "." --stop "zz" -f $PROMPT </dev/null
check "--stop: ends before the stop text, which is not printed" test "$(cat "$T/out")" = " Paris"
expect 0 $TO $R -m $S --raw --temp 0 -n 40 --stop "ris." --json -f $PROMPT </dev/null
check "--stop across tokens: finish stop" $PYTHON -c 'import json, sys
d = json.load(open(sys.argv[1])); assert d["finish_reason"] == "stop" and d["text"] == " Pa", d' "$T/out"
expect 0 $TO $R -m $S --raw -n 0 --json -f $PROMPT </dev/null
check "-n 0: the prompt only" $PYTHON -c 'import json, sys
d = json.load(open(sys.argv[1])); assert d["generated_tokens"] == 0 and d["text"] == "" and d["prompt_tokens"] == 5, d' "$T/out"

# the prompt: stdin appended after a blank line, '-', -p, -f, TERN_MODEL
ptok() { $PYTHON -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["prompt_tokens"], repr(d["text"]))' "$T/out"; }
expect 0 $TO $R -m $S --raw --temp 0 -n 3 --json "$(printf 'Notes:\n\nThe capital of France is')" </dev/null
inline=$(ptok)
printf 'The capital of France is' >"$T/in"
expect 0 $TO $R -m $S --raw --temp 0 -n 3 --json "Notes:" <"$T/in"
check "stdin is appended after a blank line ($(ptok) vs $inline)" test "$(ptok)" = "$inline"
expect 0 $TO $R -m $S --raw --temp 0 -n 3 --json --no-stdin "Notes:" <"$T/in"
check "--no-stdin leaves stdin alone" test "$(ptok)" != "$inline"
cat "$T/in" | $TO $R -m $S --raw --temp 0 -n 3 --json - >"$T/out"
check "'-' reads the prompt from stdin" test "$(ptok)" = "5 ' Paris.\\n'"
expect 0 $TO $R -m $S --raw --temp 0 -n 3 --json -f - <"$T/in"
check "-f - reads the prompt from stdin" test "$(ptok)" = "5 ' Paris.\\n'"
expect 0 $TO $R -m $S --raw --temp 0 -n 3 --json -p "The capital of France is" </dev/null
check "-p gives the prompt" test "$(ptok)" = "5 ' Paris.\\n'"
expect 0 $TO $R -m $S --raw --temp 0 -n 3 --json The capital of France is </dev/null
check "PROMPT words are joined by spaces" test "$(ptok)" = "5 ' Paris.\\n'"
TERN_MODEL=$S expect 0 $TO $R --raw --temp 0 -n 3 --json The capital of France is </dev/null
check "TERN_MODEL supplies -m" test "$(ptok)" = "5 ' Paris.\\n'"
TERN_MODEL=/nonexistent.gguf expect 0 $TO $R -m $S --raw --temp 0 -n 1 hi </dev/null

# special-token text: parsed in a raw prompt unless --no-parse-special
expect 0 $TO $R -m $S --raw -n 0 --json "<|im_start|>" </dev/null
check "--raw parses special-token text into one token" test "$(ptok)" = "1 ''"
expect 0 $TO $R -m $S --raw -n 0 --json --no-parse-special "<|im_start|>" </dev/null
check "--no-parse-special keeps it as text" test "$(ptok | cut -d' ' -f1)" -gt 1

# the chat template: SmolLM2 has one (rendered by the Jinja engine; chatml
# with --no-jinja), Gemma 3 270M has none
expect 0 $TO $R -m $S -v --no-jinja --temp 0 -n 8 "What is the capital of France?" </dev/null
check "-v names the chat template" grep -q "chat template: chatml (built-in, detected in the file's template)" "$T/err"
check "-v prints the timing summary" grep -q "^tern-run: prompt eval .* tokens per second" "$T/err"
check "the answer names Paris" grep -q "Paris" "$T/out"
expect 0 $TO $R -m $S --no-jinja -n 0 --json "What is the capital of France?" </dev/null
check "a chat turn: the template's tokens around the question" test "$(ptok)" = "16 ''"
expect 0 $TO $R -m $S --no-jinja -n 0 --json -sys "Be brief." "What is the capital of France?" </dev/null
check "-sys adds a system turn: <|im_start|>system\\nBe brief.<|im_end|>\\n" test "$(ptok)" = "24 ''"
expect 0 $TO $R -m $S -v -n 0 --json "What is the capital of France?" </dev/null
check "-v names the Jinja template" grep -q "chat template: jinja (the file's template)" "$T/err"
check "the file's template adds its default system turn (21 tokens)" test "$(ptok)" = "37 ''"
expect 0 $TO $R -m $S -n 0 --json -sys "Be brief." "What is the capital of France?" </dev/null
check "-sys replaces the default system turn of the file's template" test "$(ptok)" = "24 ''"
expect 0 $TO $R -m $G -v --temp 0 -n 4 --json "The capital of France is" </dev/null
check "Gemma 3 (no template): -v says plain text" grep -q "chat template: none .*plain text" "$T/err"
check "Gemma 3: plain text, BOS added" $PYTHON -c 'import json, sys
d = json.load(open(sys.argv[1])); assert d["chat_template"] is None and d["prompt_tokens"] == 6, d' "$T/out"
expect 0 $TO $R -m $G --raw -n 0 --json "<bos>Hi" </dev/null
check "a BOS written by hand before the model's: warned about" grep -q "starts with two" "$T/err"
expect 0 $TO $R -m $G -q --raw -n 0 "<bos>Hi" </dev/null && check "-q silences warnings" test ! -s "$T/err"
expect 0 $TO $R -m $G --chat-template gemma -n 0 --json "Hi" </dev/null
check "--chat-template picks a built-in format" $PYTHON -c 'import json, sys
d = json.load(open(sys.argv[1])); assert d["chat_template"] == "gemma" and d["prompt_tokens"] == 10, d' "$T/out"

# the context: too small for the prompt; the memory check
expect 1 $TO $R -m $S -c 8 "a b c d e f g h i j k l" </dev/null
check "-c 8 with a longer prompt: the numbers and -c" one_line_err "tern-run: the prompt is 42 tokens, more than the context of 8: raise it with -c"
expect 0 $TO $R -m $S --raw -n 0 -c 9000 --json hi </dev/null
check "a context beyond the trained one: a warning" one_line_err "tern-run: warning: a context of 9000 is larger than the 8192"
check "--json gives n_ctx" $PYTHON -c 'import json, sys; assert json.load(open(sys.argv[1]))["n_ctx"] == 9000' "$T/out"
TERN_MEM_AVAILABLE=50000000 expect 1 $TO $R -m $S hi </dev/null
check "a model that does not fit in memory: one line" one_line_err "tern-run: $S: does not fit in memory"
expect 0 $TO $R -m $S --raw -n 1 -c 16 -b 4 -ub 8 -ctk q8_0 -ctv f32 "The capital of France is" </dev/null
check "-ub above -b is clamped, cache types accepted" test -s "$T/out"

# determinism: same seed, same text; thread counts do not change the text
expect 0 $TO $R -m $S --raw -s 42 --temp 0.8 -n 24 --json -f $PROMPT </dev/null && cp "$T/out" "$T/a"
expect 0 $TO $R -m $S --raw -s 42 --temp 0.8 -n 24 --json -f $PROMPT </dev/null
check "same seed twice: the same text" $PYTHON -c 'import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert a["text"] == b["text"] and a["seed"] == b["seed"] == 42, (a["text"], b["text"])' "$T/a" "$T/out"
expect 0 $TO $R -m $S --raw --temp 0 -n 24 -t 1 -f $PROMPT </dev/null && cp "$T/out" "$T/t1"
expect 0 $TO $R -m $S --raw --temp 0 -n 24 -t 2 -f $PROMPT </dev/null
check "-t 1 and -t 2: the same greedy text" cmp -s "$T/t1" "$T/out"

# a closed pipe: quiet, status 0
$TO $R -m $S --raw --ignore-eos --temp 0 -n 300 -f $PROMPT </dev/null 2>"$T/err" | head -c 20 >"$T/out"
st=${PIPESTATUS[0]}
check "| head -c 20: exit 0 (got $st)" test "$st" -eq 0
check "| head -c 20: nothing on stderr" test ! -s "$T/err"
check "| head -c 20: 20 bytes" test "$(wc -c <"$T/out")" -eq 20

# a write error other than a closed pipe is one line and status 1
if [ -w /dev/full ]; then
	$TO $R -m $S --raw -n 3 -f $PROMPT </dev/null >/dev/full 2>"$T/err"
	st=$?
	check "stdout on a full disk: exit 1 (got $st)" test "$st" -eq 1
	check "stdout on a full disk: one line" one_line_err "tern-run: standard output: No space left on device"
fi

# Ctrl-C: stops, keeps the text, exit 130. The text run is interrupted once
# text flows; the --json run (nothing flows) as late after its start.
sigint() { # sigint DELAY ARGS...: interrupt a long run; its status in $st
	local delay=$1; shift
	$R -m $S --raw --ignore-eos -n 100000 "$@" -f $PROMPT </dev/null >"$T/out" 2>"$T/err" &
	local pid=$! t0=$SECONDS
	if [ "$delay" = flow ]; then
		for _ in $(seq 600); do [ -s "$T/out" ] && break; sleep 0.1; done
		flow=$((SECONDS - t0 + 1))
	else
		sleep "$delay"
	fi
	sleep 0.5
	kill -INT $pid
	wait $pid
	st=$?
}
sigint flow --temp 0
check "SIGINT: exit 130 (got $st)" test "$st" -eq 130
check "SIGINT: the partial text, ending with a newline" \
	test "$(wc -c <"$T/out")" -gt 2 -a "$(tail -c 1 "$T/out" | od -An -c | tr -d ' ')" = '\n'
check "SIGINT: nothing on stderr" test ! -s "$T/err"
sigint "$flow" --temp 0 --json
check "SIGINT with --json: exit 130 (got $st)" test "$st" -eq 130
check "SIGINT with --json: the object, finish_reason cancel" $PYTHON -c 'import json, sys
d = json.load(open(sys.argv[1])); assert d["finish_reason"] == "cancel" and d["generated_tokens"] < 100000, d' "$T/out"
finish

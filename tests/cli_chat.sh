#!/usr/bin/env bash
# cli_chat.sh - tern-chat: usage errors and exit codes; through a pipe (one
# turn per line or per --turns-separator, only the answers on stdout, the
# answers equal to tern-run's for the same conversation via --messages, the
# context filling up); on a terminal through tests/chat_pty.py (editing
# keys, slash commands, KV reuse, Ctrl-C, Ctrl-D, history). The parts that
# need the real model are skipped when models/ is absent.
. "$(dirname "$0")/lib.sh"
C=$BIN/chat
R=$BIN/run
M=${TERN_MODELS:-models}
S=$M/SmolLM2-135M-Instruct.Q4_1.gguf
unset TERN_MODEL TERN_MEM_AVAILABLE
TO="timeout 300"

# ---- without a model ------------------------------------------------------------
expect 0 $C --help && check "help shows usage" grep -q '^usage: tern-chat \[OPTIONS\]' "$T/out"
check "help lists the shared sampling options" grep -q -- '--top-k N' "$T/out"
check "help lists the template options" grep -q -- '--chat-template-file FILE' "$T/out"
expect 2 $TO $C </dev/null && check "no model: one line naming -m and TERN_MODEL" \
	one_line_err "tern-chat: no model: give -m FILE or set TERN_MODEL"
expect 2 $C -m x.gguf --bogus </dev/null && check "unknown option" one_line_err "tern-chat: unknown option '--bogus'"
expect 2 $C -m x.gguf --temp hot </dev/null && check "bad number" one_line_err "tern-chat: option '--temp': 'hot' is not a number"
expect 2 $C -m x.gguf extra </dev/null
expect 2 $C -m x.gguf --turns-separator "" </dev/null && check "an empty separator" one_line_err "tern-chat: option '--turns-separator'"
expect 2 $C -m x.gguf --chat-template nosuch </dev/null && check "unknown chat template lists the formats" \
	one_line_err "tern-chat: unknown chat template 'nosuch' (built-in: chatml,"
expect 2 $C -m x.gguf --chat-template chatml --no-jinja </dev/null && check "--chat-template excludes --no-jinja" grep -q "cannot be combined" "$T/err"
expect 1 $C -m /nonexistent.gguf </dev/null && check "missing model: one line" one_line_err "tern-chat: /nonexistent.gguf: cannot open"
expect 65 $C -m "$DATA/audio/jfk.wav" </dev/null && check "not a GGUF file: exit 65, one line" \
	one_line_err "tern-chat: $DATA/audio/jfk.wav: not a GGUF file"
expect 65 $C -m "$DATA/vocab/ggml-vocab-llama-spm.gguf" </dev/null && check "a vocabulary-only file: exit 65" \
	one_line_err "tern-chat: $DATA/vocab/ggml-vocab-llama-spm.gguf: tensor"

if [ ! -f "$S" ]; then
	echo "skip: $S absent (make models)"
	finish
fi

TERN_MEM_AVAILABLE=50000000 expect 1 $TO $C -m $S </dev/null && check "a model that does not fit in memory: one line" \
	one_line_err "tern-chat: $S: does not fit in memory"

# ---- through a pipe -----------------------------------------------------------------
# the default template (the file's, through the Jinja engine) unless the
# caller asks for another (CHAT_EXTRA=--no-jinja)
X=(${CHAT_EXTRA:-})
printf 'hi\nbye\n/save %s\n' "$T/conv.json" | $TO $C -m $S "${X[@]}" --temp 0 -n 48 >"$T/out" 2>"$T/err"
st=$?
check "two turns through a pipe: exit 0 (got $st)" test "$st" -eq 0
check "through a pipe: nothing on stderr but the note of /save" test "$(grep -cv '^(saved 4 messages' "$T/err")" -eq 0
check "through a pipe: no escape sequences on stdout" sh -c "! grep -q \$(printf '\\033') '$T/out'"
check "/save: the conversation, the answers on stdout" $PYTHON -c 'import json, sys
c = json.load(open(sys.argv[1])); out = open(sys.argv[2], encoding="utf-8").read()
assert [m["role"] for m in c] == ["user", "assistant", "user", "assistant"], c
assert c[0]["content"] == "hi" and c[2]["content"] == "bye", c
assert out == c[1]["content"].strip("\n") + "\n" + c[3]["content"].strip("\n") + "\n", (out, c)' "$T/conv.json" "$T/out"
# /stats counts the conversation as the next turn renders it (after /clear:
# nothing), /save and /load read ~/ as the shell does
mkdir -p "$T/home"
printf 'hi\n/stats\n/clear\n/stats\n/save ~/c.json\n/load ~/c.json\n' | HOME="$T/home" $TO $C -m $S "${X[@]}" --temp 0 -n 4 \
	>"$T/out" 2>"$T/err"
check "/stats after a turn: tokens used" grep -q "^context: [1-9][0-9]* of [0-9]* tokens used (.*), 2 messages$" "$T/err"
check "/stats after /clear: none" grep -q "^context: 0 of [0-9]* tokens used (0%), 0 messages$" "$T/err"
check "/save ~/c.json: in \$HOME" grep -q "^(saved 0 messages to $T/home/c.json)$" "$T/err"
check "/load ~/c.json: from \$HOME" grep -q "^(loaded 0 messages from $T/home/c.json)$" "$T/err"
# a model without a template gets chatml; where it writes <|im_end|> as text
# (Gemma 3 270M does not know the token) the answer ends there
G=${TERN_MODELS:-models}/gemma-3-270m-q4_k_m.gguf
if [ -f "$G" ]; then
	printf 'Write a haiku about the sea.\nWhat is 2+2?\n' | $TO $C -m "$G" --temp 0 -n 64 >"$T/out" 2>"$T/err"
	check "chatml fallback: the end of turn is never printed" sh -c "! grep -q 'im_end\\|im_start' '$T/out'"
	check "chatml fallback: two answers" test "$(wc -l <"$T/out")" -ge 2
fi
# tern-run, a second implementation, gives the same answers for the same
# conversations. The first turn is the same computation in both; for the
# second, tern-chat feeds only the new tokens on top of the cache while
# tern-run feeds the whole conversation at once, and a forward pass of
# many tokens (the GEMM path) may round differently from one token at a
# time: with -b 1 -ub 1 every token goes through the same path in both
# programs, and the answers must be equal byte for byte.
mk_msgs() { $PYTHON -c 'import json, sys
c = json.load(open(sys.argv[1]))
json.dump(c[:1], open(sys.argv[2], "w")); json.dump(c[:3], open(sys.argv[3], "w"))' "$1" "$T/m1.json" "$T/m2.json"; }
mk_msgs "$T/conv.json"
expect 0 $TO $R -m $S "${X[@]}" --temp 0 -n 48 --json --messages "$T/m1.json" </dev/null
check "tern-run --messages gives tern-chat's first answer" $PYTHON -c 'import json, sys
c = json.load(open(sys.argv[1])); a = json.load(open(sys.argv[2]))["text"]
assert a == c[1]["content"], (a, c)' "$T/conv.json" "$T/out"
printf 'hi\nbye\n/save %s\n' "$T/conv1.json" | $TO $C -m $S "${X[@]}" --temp 0 -n 48 -b 1 -ub 1 >"$T/out" 2>"$T/err"
mk_msgs "$T/conv1.json"
expect 0 $TO $R -m $S "${X[@]}" --temp 0 -n 48 -b 1 -ub 1 --json --messages "$T/m1.json" </dev/null && cp "$T/out" "$T/r1.json"
expect 0 $TO $R -m $S "${X[@]}" --temp 0 -n 48 -b 1 -ub 1 --json --messages "$T/m2.json" </dev/null && cp "$T/out" "$T/r2.json"
check "-ub 1: tern-run --messages gives tern-chat's answers, turn by turn" $PYTHON -c 'import json, sys
c = json.load(open(sys.argv[1])); a, b = (json.load(open(f))["text"] for f in sys.argv[2:4])
assert (a, b) == (c[1]["content"], c[3]["content"]), ((a, b), c)' "$T/conv1.json" "$T/r1.json" "$T/r2.json"

# -v: the second turn feeds only its own tokens
printf 'What is the capital of France?\nAnd of Italy?\n' | $TO $C -m $S "${X[@]}" --temp 0 -n 32 -v >"$T/out" 2>"$T/err"
check "-v: the first turn processes its whole prompt" grep -qE "turn: ([0-9]+) prompt tokens, 0 reused from the cache, \1 processed" "$T/err"
check "-v: the second turn reuses the first's tokens" $PYTHON -c 'import re, sys
t = re.findall(r"turn: (\d+) prompt tokens, (\d+) reused from the cache, (\d+) processed", open(sys.argv[1]).read())
assert len(t) == 2, t
n, k, f = map(int, t[1]); assert n == k + f and 2 * f < n and f < 30, t' "$T/err"

# -p: a first turn; a separator other than the newline
printf 'one\ntwo\n---\n\nthree\n---\n/save %s\n' "$T/sep.json" | $TO $C -m $S "${X[@]}" --temp 0 -n 4 -p "zero" \
	--turns-separator --- >"$T/out" 2>"$T/err"
check "--turns-separator and -p: the turns as given" $PYTHON -c 'import json, sys
c = json.load(open(sys.argv[1]))
assert [m["content"] for m in c if m["role"] == "user"] == ["zero", "one\ntwo", "three"], c' "$T/sep.json"
check "--turns-separator: the answers on stdout cut by it too" $PYTHON -c 'import json, sys
c = json.load(open(sys.argv[1])); out = open(sys.argv[2], encoding="utf-8").read()
answers = [m["content"].strip("\n") for m in c if m["role"] == "assistant"]
assert out == "".join(a + "\n---\n" for a in answers), (out, answers)' "$T/sep.json" "$T/out"
# "//" sends a line that starts with "/"; an unknown command is an error on stderr
printf '//usr is a folder\n/nosuch\n/save %s\n' "$T/sl.json" | $TO $C -m $S "${X[@]}" --temp 0 -n 4 >"$T/out" 2>"$T/err"
check "'//' sends a message that starts with '/'" $PYTHON -c 'import json, sys
c = json.load(open(sys.argv[1])); assert [m["content"] for m in c if m["role"] == "user"] == ["/usr is a folder"], c' "$T/sl.json"
check "an unknown command: a line on stderr" grep -q "unknown command '/nosuch'" "$T/err"
# TERN_MODEL supplies -m; NO_COLOR and --color=never are honoured even with --color on stderr
printf 'hi\n' | TERN_MODEL=$S $TO $C "${X[@]}" --temp 0 -n 4 >"$T/out" 2>"$T/err"
check "TERN_MODEL supplies -m" test -s "$T/out"

# a reader that goes away ends the chat quietly, whatever input is left
{ for i in $(seq 50); do echo "Tell me a long story number $i."; done; } >"$T/turns"
$TO $C -m $S "${X[@]}" --temp 0 --ignore-eos -n 200 <"$T/turns" 2>"$T/err" | head -c 20 >"$T/out"
st=${PIPESTATUS[0]}
check "| head -c 20: exit 0 (got $st), nothing on stderr, 20 bytes" test "$st" -eq 0 -a ! -s "$T/err" -a "$(wc -c <"$T/out")" -eq 20
$TO $C -m $S "${X[@]}" --temp 0 --ignore-eos -n 200 -v <"$T/turns" 2>"$T/err" | head -c 20 >"$T/out"
check "| head -c 20: no turn after the reader went away ($(grep -c 'turn:' "$T/err") turns)" test "$(grep -c 'turn:' "$T/err")" -eq 1

# the context fills up: the oldest exchanges go, the system prompt stays
for i in 1 2 3 4 5 6 7 8; do echo "Tell me fact number $i about the sea."; done >"$T/turns"
echo "/save $T/full.json" >>"$T/turns"
$TO $C -m $S "${X[@]}" --temp 0 -n 24 -c 200 -sys "You are a sailor." <"$T/turns" >"$T/out" 2>"$T/err"
st=$?
check "a full context: exit 0 (got $st)" test "$st" -eq 0
check "a full context: the user is told on stderr" grep -q "is full: the oldest .* dropped; the system prompt stays" "$T/err"
check "a full context: system prompt first, the last question kept, older ones gone" $PYTHON -c 'import json, sys
c = json.load(open(sys.argv[1]))
assert c[0] == {"role": "system", "content": "You are a sailor."}, c
u = [m["content"] for m in c if m["role"] == "user"]
assert u[-1].endswith("number 8 about the sea.") and "Tell me fact number 1 about the sea." not in u, u' "$T/full.json"
# a message larger than the context is not sent; the chat goes on
{ head -c 3000 /dev/zero | tr '\0' 'a'; echo; echo "hi"; echo "/save $T/big.json"; } >"$T/turns"
$TO $C -m $S "${X[@]}" --temp 0 -n 4 -c 128 <"$T/turns" >"$T/out" 2>"$T/err"
st=$?
check "a message larger than the context: exit 1 at the end (got $st)" test "$st" -eq 1
check "a message larger than the context: not sent, said so" grep -q "does not fit the context" "$T/err"
check "a message larger than the context: the next one is answered" $PYTHON -c 'import json, sys
c = json.load(open(sys.argv[1])); assert [m["role"] for m in c] == ["user", "assistant"] and c[0]["content"] == "hi", c' "$T/big.json"

# a template that fails on a turn: an error naming its line, the turn not kept, the next ones go on, exit 65
printf '{%% if messages|length > 1 %%}{{ raise_exception("only one message") }}{%% endif %%}{%% for m in messages %%}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%% endfor %%}<|im_start|>assistant\n' >"$T/one.jinja"
printf 'hi\nbye\n/save %s\n' "$T/one.json" | $TO $C -m $S --chat-template-file "$T/one.jinja" --temp 0 -n 4 >"$T/out" 2>"$T/err"
st=$?
check "a template error on turn 2: exit 65 at the end (got $st)" test "$st" -eq 65
check "a template error: one line with its line and column, suggesting --chat-template" \
	grep -q "^tern-chat: $S: chat template ($T/one.jinja): line 1, column [0-9]*: raise_exception: only one message (--chat-template NAME" "$T/err"
check "a template error: the failing turn is not kept" $PYTHON -c 'import json, sys
c = json.load(open(sys.argv[1])); assert [m["role"] for m in c] == ["user", "assistant"] and c[0]["content"] == "hi", c' "$T/one.json"

# ---- on a terminal ------------------------------------------------------------------
mkdir -p "$T/pty"
CHAT_EXTRA="${X[*]}" $TO $PYTHON tests/chat_pty.py $C $S "$T/pty" >"$T/pty.log" 2>&1
st=$?
sed -n 's/^FAIL/FAIL: pty/p' "$T/pty.log"
nok=$((nok + $(grep -c '^ok:' "$T/pty.log")))
check "tests/chat_pty.py (status $st)" test "$st" -eq 0

finish

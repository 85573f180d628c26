#!/usr/bin/env bash
# cli_prompt.sh - tern-run's chat-template flags: --print-prompt against
# jinja2's rendering of the same conversations (tests/data/prompt_ref, made
# by its make_ref.py with transformers' settings) on a vocabulary-only GGUF
# and on SmolLM2, --messages (a file or standard input), --tools,
# --chat-template NAME / TEXT, --chat-template-file, --chat-template-name
# and the file's tool_use template (a copy of the vocabulary-only file with
# named templates), --no-jinja, the chatml fallback, and the errors (bad JSON, a template that fails, missing files).
. "$(dirname "$0")/lib.sh"
R=$BIN/run
M=${TERN_MODELS:-models}
S=$M/SmolLM2-135M-Instruct.Q4_1.gguf
G=$M/gemma-3-270m-q4_k_m.gguf
P3=$DATA/vocab/ggml-vocab-phi-3.gguf
REF=tests/data/prompt_ref
unset TERN_MODEL TERN_MEM_AVAILABLE
TO="timeout 120"

# every conversation of the reference, on each model present
$PYTHON - "$R" "$REF" "$T" "$S" "$P3" >"$T/cmp" 2>&1 <<'EOF'
import json, os, subprocess, sys
run, ref, tmp, smol, phi3 = sys.argv[1:6]
paths = {"smollm2": smol, "phi3": phi3}
convs = json.load(open(os.path.join(ref, "convs.json")))
for e in json.load(open(os.path.join(ref, "ref.json"))):
    path = paths[e["model"]]
    what = f"--print-prompt {e['model']} {e['conv']} ({e['template']})"
    if not os.path.exists(path):
        print(f"skip: {what}: {path} absent")
        continue
    c = convs[e["conv"]]
    with open(os.path.join(tmp, "m.json"), "w") as f:
        json.dump(c["messages"], f)
    args = [run, "-m", path, "--print-prompt", "--messages", os.path.join(tmp, "m.json")]
    if "tools" in c:
        with open(os.path.join(tmp, "t.json"), "w") as f:
            json.dump(c["tools"], f)
        args += ["--tools", os.path.join(tmp, "t.json")]
    if e["template"] != "file":
        args += ["--chat-template-file", os.path.join(ref, e["template"])]
    p = subprocess.run(args, capture_output=True, timeout=60)
    ok = p.returncode == 0 and p.stdout.decode("utf-8") == e["expected"] and not p.stderr
    print(("ok: " if ok else "FAIL: ") + what + ("" if ok else f" rc={p.returncode} {p.stderr[:200]!r} {p.stdout[:300]!r}"))
EOF
grep '^FAIL' "$T/cmp"
grep '^skip' "$T/cmp"
nok=$((nok + $(grep -c '^ok:' "$T/cmp")))
check "--print-prompt = jinja2's rendering for every reference conversation" sh -c "! grep -q '^FAIL\|Traceback' '$T/cmp'"
check "the reference covers the vocabulary-only file" grep -q '^ok: --print-prompt phi3 simple' "$T/cmp"

# --print-prompt loads no weights: a vocabulary-only file is enough, -p works too
expect 0 $TO $R -m $P3 --print-prompt -p "Hi" </dev/null
check "--print-prompt -p on a vocabulary-only file" test "$(cat "$T/out")" = "$(printf '<s><|user|>\nHi<|end|>\n<|assistant|>')"
expect 0 $TO $R -m $P3 --print-prompt --no-jinja "Hi" </dev/null
check "--no-jinja: the built-in format phi3 gives the same text here" test "$(cat "$T/out")" = "$(printf '<s><|user|>\nHi<|end|>\n<|assistant|>')"
expect 0 $TO $R -m $P3 --print-prompt --chat-template chatml -sys "Be brief." "Hi" </dev/null
check "--chat-template NAME with -sys" test "$(cat "$T/out")" = "$(printf '<s><|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant')"
expect 0 $TO $R -m $P3 --print-prompt --chat-template '{{ bos_token }}[{% for m in messages %}{{ m.role }}:{{ m.content }}{% endfor %}]' "Hi" </dev/null
check "--chat-template TEXT: a Jinja template's text; its BOS not doubled" test "$(cat "$T/out")" = "<s>[user:Hi]"
echo '[{"role": "user", "content": "from stdin"}]' >"$T/m.json"
expect 0 $TO $R -m $P3 --print-prompt --messages - <"$T/m.json"
check "--messages - reads standard input" grep -q "^from stdin<|end|>" "$T/out"
expect 0 $TO $R -m $P3 --print-prompt --raw "Hi <|end|>" </dev/null
check "--print-prompt --raw: the plain text after the BOS" test "$(cat "$T/out")" = "<s>Hi <|end|>"

# the errors
expect 2 $R -m $P3 --print-prompt --json hi </dev/null && check "--print-prompt excludes --json" grep -q "cannot be combined" "$T/err"
expect 2 $R -m $P3 --messages "$T/m.json" -p hi </dev/null && check "--messages excludes -p" grep -q "cannot be combined" "$T/err"
expect 2 $R -m $P3 --messages "$T/m.json" hi </dev/null && check "--messages and PROMPT words" one_line_err "tern-run: --messages gives the conversation"
expect 2 $R -m $P3 --chat-template-file x --no-jinja hi </dev/null && check "--chat-template-file excludes --no-jinja" grep -q "cannot be combined" "$T/err"
echo '[{"role": "user", "content": "x"' >"$T/bad.json"
expect 65 $R -m $P3 --print-prompt --messages "$T/bad.json" </dev/null && check "bad JSON: one line with its place, exit 65" \
	one_line_err "tern-run: $T/bad.json: messages: line 2, column 0"
echo '[{"content": "x"}]' >"$T/bad.json"
expect 65 $R -m $P3 --print-prompt --messages "$T/bad.json" </dev/null && check "a message without a role: named" \
	one_line_err "tern-run: $T/bad.json: messages: message 1 'role' is not a string"
echo '{"role": "user"}' >"$T/bad.json"
expect 65 $R -m $P3 --print-prompt --messages "$T/bad.json" </dev/null && check "not an array" grep -q "not a JSON array" "$T/err"
expect 1 $R -m $P3 --print-prompt --messages /nonexistent.json </dev/null && check "a missing messages file" one_line_err "tern-run: /nonexistent.json: cannot open"
expect 1 $R -m $P3 --print-prompt --tools /nonexistent.json hi </dev/null && check "a missing tools file" one_line_err "tern-run: /nonexistent.json: cannot open"
echo '{"type": "function"}' >"$T/tools.json"
expect 65 $R -m $P3 --print-prompt --tools "$T/tools.json" hi </dev/null && check "tools that are not an array" \
	one_line_err "tern-run: $T/tools.json: tools: not a JSON array"
expect 1 $R -m $P3 --print-prompt --chat-template-file /nonexistent.jinja hi </dev/null && check "a missing template file" \
	one_line_err "tern-run: /nonexistent.jinja: cannot read"
printf 'line one\n{%% for m in messages %%}{{ m.content | nosuchfilter }}{%% endfor %%}\n' >"$T/t.jinja"
expect 65 $R -m $P3 --print-prompt --chat-template-file "$T/t.jinja" hi </dev/null && check "a template that fails: one line with its line, suggesting --chat-template" \
	one_line_err "tern-run: $P3: chat template ($T/t.jinja): line 2, .*--chat-template NAME"
printf '{%% if %%}' >"$T/t.jinja"
expect 65 $R -m $P3 --print-prompt --chat-template-file "$T/t.jinja" hi </dev/null && check "a template that does not parse: one line" \
	one_line_err "tern-run: $P3: chat template ($T/t.jinja): line 1, column"
printf '{{ raise_exception("only user and assistant") }}' >"$T/t.jinja"
expect 65 $R -m $P3 --print-prompt --chat-template-file "$T/t.jinja" hi </dev/null && check "raise_exception: its message" \
	grep -q "only user and assistant" "$T/err"
expect 2 $R -m $P3 --print-prompt --chat-template nosuch hi </dev/null && check "an unknown NAME (no Jinja markup) is a usage error" \
	one_line_err "tern-run: unknown chat template 'nosuch'"

# a file's named templates: tool_use with --tools, --chat-template-name NAME
NG=$T/named.gguf
if named_templates_gguf "$P3" "$NG"; then
	echo '[{"role": "user", "content": "hi"}]' >"$T/m.json"
	echo '[{"type": "function", "function": {"name": "f"}}, {"type": "function", "function": {"name": "g"}}]' >"$T/tools.json"
	expect 0 $TO $R -m "$NG" --print-prompt --messages "$T/m.json" </dev/null
	check "no --tools: the default template, and no tools in its context" test "$(cat "$T/out")" = "<s>D:hi"
	expect 0 $TO $R -m "$NG" --print-prompt --messages "$T/m.json" --tools "$T/tools.json" </dev/null
	check "--tools: the file's tool_use template" test "$(cat "$T/out")" = "<s>T2:hi"
	expect 0 $TO $R -m "$NG" --print-prompt --chat-template-name rag -sys S hi </dev/null
	check "--chat-template-name rag" test "$(cat "$T/out")" = "<s>R:[system]S[user]hi"
	expect 0 $TO $R -m "$NG" --print-prompt --messages "$T/m.json" --tools "$T/tools.json" --chat-template-name default </dev/null
	check "--chat-template-name default rather than tool_use, tools given" test "$(cat "$T/out")" = "<s>D:hi+tools"
	expect 0 $TO $R -m "$NG" --print-prompt -v --chat-template-name rag hi </dev/null
	check "-v names the template" grep -q "chat template: jinja (the file's template rag)" "$T/err"
	expect 1 $R -m "$NG" --print-prompt --chat-template-name nosuch hi </dev/null && check "a name the file lacks: the names it has" \
		one_line_err "tern-run: $NG: the file has no chat template named 'nosuch' (it has: default, tool_use, rag)"
	expect 1 $R -m "$P3" --print-prompt --chat-template-name rag hi </dev/null && check "a file without named templates" \
		grep -q "no chat template named 'rag' (it has: default)" "$T/err"
	expect 2 $R -m "$NG" --chat-template-name rag --chat-template chatml hi </dev/null && check "--chat-template-name excludes --chat-template" \
		grep -q "cannot be combined" "$T/err"
	expect 2 $R -m "$NG" --chat-template-name rag --raw hi </dev/null && check "--chat-template-name excludes --raw" \
		grep -q "cannot be combined" "$T/err"
else
	echo "skip: named templates ($PYTHON has no gguf-py)"
fi

if [ ! -f "$S" ]; then
	echo "skip: $S absent (make models)"
	finish
fi

# the real models: --messages generates; --tools reaches a template that uses them
echo '[{"role": "system", "content": "Answer in one word."}, {"role": "user", "content": "What is the capital of France?"}]' >"$T/m.json"
expect 0 $TO $R -m $S --temp 0 -n 8 --json --messages "$T/m.json" </dev/null
check "--messages: the answer, the template named jinja" $PYTHON -c 'import json, sys
d = json.load(open(sys.argv[1])); assert d["chat_template"] == "jinja" and "Paris" in d["text"], d' "$T/out"
expect 0 $TO $R -m $G --print-prompt "Hi" </dev/null
check "a file without a template and a plain prompt: plain text (a base model)" test "$(cat "$T/out")" = "<bos>Hi"
expect 0 $TO $R -m $G --print-prompt --messages "$T/m.json" </dev/null
check "a file without a template and --messages: chatml" grep -q "^<bos><|im_start|>system" "$T/out"
check "... after a warning naming the fallback" one_line_err "tern-run: warning: $G: the file has no chat template: using chatml"
finish

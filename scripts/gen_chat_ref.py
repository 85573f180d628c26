#!/usr/bin/env python3
"""gen_chat_ref.py - regenerate tests/data/chat_ref: the expectations of
tests/test_chatfmt.c for the built-in chat formats (lib/llm/chatfmt.h).

  .venv/bin/python scripts/gen_chat_ref.py [--llama SRC LIBDIR] [--models DIR]

Writes, from the conversations defined below:
  convs.txt    the conversations, as records (format in README.md)
  jinja.txt    each real template (../shared/data/templates/*.jinja and the
               ones embedded in the real models' GGUF files, copied to
               models/) rendered with jinja2 for every conversation and
               add_generation_prompt 0/1, prepared as llama.cpp prepares a
               Jinja rendering (a leading BOS text dropped when the tokenizer
               adds BOS); `same=1` where llama.cpp's built-in formatter for the
               detected format gives the same bytes
  models/*.jinja  the templates read from the model files (gguf-py)
and, with --llama (an already-built llama.cpp: SRC for include/, LIBDIR for
libllama.so; this compiles scripts/chat_ref_llama.cpp against it, it never
builds llama.cpp):
  builtin.txt  llama_chat_apply_template for every built-in format
  detect.txt   llm_chat_detect_template for every template and a set of
               snippets that reach each of its branches
Without --llama the existing builtin.txt and detect.txt are used (for the
`same` flags and the detected formats).
"""
import argparse
import datetime
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data", "chat_ref")
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared", "data"))
if not os.path.isdir(SHARED):
    SHARED = "/work/shared/data"

# The conversations. Names are [a-z_]; roles are those chatfmt.h accepts.
CONVS = [
    ("sys_user", [("system", "You are a helpful assistant."),
                  ("user", "Hello! Who are you?")]),
    ("user", [("user", "What is the capital of France?")]),
    ("multi", [("system", "You are terse."), ("user", "Hi"),
               ("assistant", "Hello."), ("user", "Name a colour.")]),
    ("multi_nosys", [("user", "Hi there"), ("assistant", "Hello! How can I help?"),
                     ("user", "Tell me a joke."),
                     ("assistant", "Why did the chicken cross the road?")]),
    ("tricky", [("system", "  Spaces around the system text.\n"),
                ("user", "Grüße, 世界 🌍 — {{ x }} {% if true %}no{% endif %} "
                         "<|im_end|> [INST] <start_of_turn>\n"),
                ("assistant", "\f  padded answer\t\n\v"),
                ("user", "\u00a0non-breaking\u00a0")]),
    ("two_sys", [("system", "First system."), ("system", "Second system."),
                 ("user", "Question?"), ("assistant", "Answer."),
                 ("system", "Late system."), ("user", "Again?")]),
    ("blank_sys", [("system", " \t\n"), ("user", "Hi"), ("assistant", "Hey")]),
    ("sys_after_model", [("user", "A"), ("assistant", "B"), ("system", "S"),
                         ("assistant", "C"), ("user", "D")]),
    ("empty_content", [("user", ""), ("assistant", "")]),
    ("tool", [("user", "Weather?"), ("assistant", "Calling the tool."),
              ("tool", "{\"temp\": 21}"), ("user", "Thanks")]),
    ("assistant_first", [("assistant", "I start."), ("user", "Ok.")]),
    ("none", []),
]

# Special-token text of each shared template's model family (bos, eos,
# whether the tokenizer adds BOS), from the models' tokenizer configs.
L3 = ("<|begin_of_text|>", "<|eot_id|>", True)
DS = ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", True)
TOKENS = {
    "CohereForAI-c4ai-command-r-plus-tool_use.jinja": ("<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>", True),
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": ("<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>", True),
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": ("<|begin_of_text|>", "<|im_end|>", True),
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja": ("<|begin_of_text|>", "<|im_end|>", True),
    "Qwen-Qwen2.5-7B-Instruct.jinja": ("", "<|im_end|>", False),
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": DS,
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": DS,
    "fireworks-ai-llama-3-firefunction-v2.jinja": L3,
    "google-gemma-2-2b-it.jinja": ("<bos>", "<eos>", True),
    "llama-cpp-deepseek-r1.jinja": DS,
    "meetkai-functionary-medium-v3.1.jinja": L3,
    "meetkai-functionary-medium-v3.2.jinja": L3,
    "meta-llama-Llama-3.1-8B-Instruct.jinja": L3,
    "meta-llama-Llama-3.2-3B-Instruct.jinja": L3,
    "meta-llama-Llama-3.3-70B-Instruct.jinja": L3,
    "microsoft-Phi-3.5-mini-instruct.jinja": ("<s>", "<|endoftext|>", True),
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": ("<s>", "</s>", True),
}

MODELS = ["SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"]

# strftime_now() is the render time in transformers and llama.cpp; fixed
# here so that the data does not change from day to day.
FIXED_NOW = datetime.datetime(2026, 1, 15, 12, 0, 0)

# Template snippets that reach every branch of llm_chat_detect_template,
# plus near misses and order conflicts.
SNIPPETS = [
    "<|im_start|>", "<|im_start|><|im_sep|>", "<|im_start|><end_of_utterance>",
    "mistral-anything", "xmistral", "[INST] [SYSTEM_PROMPT]",
    "' [INST] ' + system_message", "[AVAILABLE_TOOLS]\"[INST]\"", "[AVAILABLE_TOOLS][INST]",
    "[INST] content.strip()", "bos_token + '[INST]", "[INST]<<SYS>>", "[INST]",
    "<|assistant|><|end|>", "[gMASK]<sop>", "<|assistant|><|user|><|tool_declare|>",
    "<|assistant|><|user|></s>", "<|assistant|><|user|>", "<|assistant|>",
    "<|{{ item['role'] }}|><|begin_of_image|>", "<|user|><|endoftext|>",
    "bos_token + message['role']", "<start_of_turn>", "'\\n\\nAssistant: ' + eos_token",
    "GPT4 Correct ", "USER: ASSISTANT: ", "USER: ASSISTANT: SYSTEM: ",
    "### Instruction:<|EOT|>", "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>",
    "<|start_header_id|><|end_header_id|>", "<|start_header_id|>", "[gMASK]sop", "<用户>",
    "'Assistant: ' + message['content'] + eos_token",
    "<｜Assistant｜><｜User｜><｜end▁of▁sentence｜>", "<｜Assistant｜><｜User｜>",
    "[|system|][|assistant|][|endofturn|]", "[|system|][|assistant|][|endofturn|][|tool|]",
    "rwkv-world", "{{- 'User: ' + message['content']|trim + '\\n\\n' -}}",
    "<|start_of_role|>", "<|start_of_role|><tools>g4_default_system_message",
    "<|start_of_role|><tool_call>",
    "message['role'] + additional_special_tokens[0] + message['content'] + additional_special_tokens[1]",
    "<|role_start|>", " Ассистент:", "<role>ASSISTANT</role>'HUMAN'",
    "<role>ASSISTANT</role>\"HUMAN\"<think>", "<role>ASSISTANT</role><role>HUMAN</role><|role_end|>",
    "<|header_start|><|header_end|>", "<|endofuserprompt|>", "<|extra_0|><|extra_4|>",
    "<|start|><|channel|>", "<｜hy_Assistant｜><｜hy_begin▁of▁sentence｜>",
    "<｜hy_Assistant｜><｜hy_place▁holder▁no▁3｜>", "<|im_assistant|>assistant<|im_middle|>",
    "<seed:bos>", "'Assistant: '  + message['content'] + '<|separator|>",
    "[unused9]系统：[unused10]", "<|begin|><|end|><|content|>",
    "", "hello", "chatml ", "CHATML", "<|im_start|>[INST]", "[INST]<|start_header_id|><|end_header_id|>",
    "<start_of_turn><|start_header_id|><|end_header_id|>"
]
NAMES = ["chatml", "llama2", "llama2-sys", "llama2-sys-bos", "llama2-sys-strip", "mistral-v1",
         "mistral-v3", "mistral-v3-tekken", "mistral-v7", "mistral-v7-tekken", "phi3", "phi4",
         "falcon3", "zephyr", "monarch", "gemma", "orion", "openchat", "vicuna", "vicuna-orca",
         "deepseek", "deepseek2", "deepseek3", "deepseek-ocr", "command-r", "llama3", "chatglm3",
         "chatglm4", "glmedge", "minicpm", "exaone3", "exaone4", "exaone-moe", "rwkv-world",
         "granite", "granite-4.0", "granite-4.1", "gigachat", "megrez", "yandex", "bailing",
         "bailing-think", "bailing2", "llama4", "smolvlm", "dots1", "hunyuan-moe", "gpt-oss",
         "hunyuan-dense", "hunyuan-vl", "kimi-k2", "seed_oss", "grok-2", "pangu-embedded",
         "solar-open"]


def record(f, head, body):
    b = body.encode("utf-8") if isinstance(body, str) else body
    f.write(b"@" + head.encode() + b" len=%d\n" % len(b) + b + b"\n")


def fnv1a64(b):
    h = 0xcbf29ce484222325
    for c in b:
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def read_records(path):
    out = []
    data = open(path, "rb").read()
    pos = 0
    while pos < len(data):
        nl = data.index(b"\n", pos)
        head = data[pos + 1:nl].decode().split(" ")
        kv = dict(t.split("=", 1) for t in head[1:])
        n = int(kv["len"])
        out.append((head[0], kv, data[nl + 1:nl + 1 + n]))
        pos = nl + 1 + n + 1
    return out


def jinja_env():
    # As transformers' apply_chat_template builds it (and llama.cpp's own
    # engine follows): trim_blocks, lstrip_blocks, loop controls, tojson,
    # raise_exception, strftime_now.
    def raise_exception(msg):
        raise jinja2.exceptions.TemplateError(msg)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: FIXED_NOW.strftime(fmt)
    return env


def model_templates(models_dir):
    """(file name, template text, bos, eos, add_bos) of each model that has one."""
    import gguf
    out = []
    for m in MODELS:
        path = os.path.join(models_dir, m)
        if not os.path.exists(path):
            sys.exit(f"{path}: missing (use --models)")
        r = gguf.GGUFReader(path)

        def field(k):
            f = r.fields.get(k)
            return None if f is None else f.parts[f.data[0]]
        t = field("tokenizer.chat_template")
        if t is None:
            print(f"{m}: no tokenizer.chat_template", file=sys.stderr)
            continue
        toks = r.fields["tokenizer.ggml.tokens"]

        def tok(i):
            return bytes(toks.parts[toks.data[i]]).decode("utf-8")
        bos = tok(int(field("tokenizer.ggml.bos_token_id")[0]))
        eos = tok(int(field("tokenizer.ggml.eos_token_id")[0]))
        ab = field("tokenizer.ggml.add_bos_token")
        add_bos = bool(ab[0]) if ab is not None else True
        name = m.split(".")[0] + ".jinja"
        out.append((name, bytes(t).decode("utf-8"), bos, eos, add_bos, m))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama", nargs=2, metavar=("SRC", "LIBDIR"))
    ap.add_argument("--models", default=os.path.join(ROOT, "models"))
    a = ap.parse_args()
    os.makedirs(os.path.join(DATA, "models"), exist_ok=True)

    with open(os.path.join(DATA, "convs.txt"), "wb") as f:
        for name, msgs in CONVS:
            record(f, f"conv name={name} n={len(msgs)}", "")
            for role, content in msgs:
                record(f, f"msg role={role}", content)

    # every template: (src tag for the test, text, bos, eos, add_bos)
    temps = []
    for fn in sorted(os.listdir(os.path.join(SHARED, "templates"))):
        if not fn.endswith(".jinja"):
            continue
        text = open(os.path.join(SHARED, "templates", fn), encoding="utf-8").read()
        bos, eos, add_bos = TOKENS[fn]
        temps.append(("shared:templates/" + fn, text, bos, eos, add_bos))
    model_src = {}
    for name, text, bos, eos, add_bos, gguf_name in model_templates(a.models):
        with open(os.path.join(DATA, "models", name), "w", encoding="utf-8", newline="") as f:
            f.write(text)
        temps.append(("local:models/" + name, text, bos, eos, add_bos))
        model_src[name] = gguf_name

    if a.llama:
        src, libdir = a.llama
        with tempfile.TemporaryDirectory() as tmp:
            din = os.path.join(tmp, "detect_in.txt")
            with open(din, "wb") as f:
                for tag, text, *_ in temps:
                    record(f, f"tmpl src={tag} embed=0", text)
                for i, s in enumerate(SNIPPETS):
                    record(f, f"tmpl src=snippet:{i} embed=1", s)
                for nm in NAMES:
                    record(f, f"tmpl src=name:{nm} embed=1", nm)
            exe = os.path.join(tmp, "chat_ref_llama")
            subprocess.run(["c++", "-O1", "-std=c++17", "-I" + os.path.join(src, "include"),
                            "-I" + os.path.join(src, "ggml", "include"),
                            os.path.join(ROOT, "scripts", "chat_ref_llama.cpp"), "-L" + libdir,
                            "-lllama", "-Wl,-rpath," + libdir, "-o", exe], check=True)
            subprocess.run([exe, os.path.join(DATA, "convs.txt"), din,
                            os.path.join(DATA, "builtin.txt"), os.path.join(DATA, "detect.txt")],
                           check=True)

    builtin = {}
    for kind, kv, body in read_records(os.path.join(DATA, "builtin.txt")):
        builtin[(kv["fmt"], kv["conv"], kv["ag"])] = body
    detected = {}
    for kind, kv, body in read_records(os.path.join(DATA, "detect.txt")):
        detected[kv["src"]] = kv["expect"]

    env = jinja_env()
    n_same = 0
    summary = []
    with open(os.path.join(DATA, "jinja.txt"), "wb") as f:
        for tag, text, bos, eos, add_bos in temps:
            tmpl = env.from_string(text)
            fmt = detected.get(tag, "unknown")
            same_here = []
            for name, msgs in CONVS:
                for ag in (0, 1):
                    try:
                        out = tmpl.render(messages=[{"role": r, "content": c} for r, c in msgs],
                                          add_generation_prompt=bool(ag), bos_token=bos,
                                          eos_token=eos)
                        status = "ok"
                    except Exception as ex:  # raise_exception and the like
                        out, status = "", "error"
                    # llama.cpp drops the template's own BOS text when the
                    # tokenizer adds BOS (common/chat.cpp)
                    if status == "ok" and add_bos and bos and out.startswith(bos):
                        out = out[len(bos):]
                    ref = builtin.get((fmt, name, str(ag)))
                    same = int(status == "ok" and ref is not None and ref == out.encode("utf-8"))
                    n_same += same
                    if same:
                        same_here.append(f"{name}/{ag}")
                    # the text itself only where the test compares it byte for
                    # byte; elsewhere its size and FNV-1a 64 hash, enough for the
                    # test to see that tern's output differs too
                    ob = out.encode("utf-8")
                    record(f, f"jinja src={tag} conv={name} ag={ag} status={status} same={same} "
                              f"size={len(ob)} fnv={fnv1a64(ob):016x}", ob if same else b"")
            summary.append(f"{tag}: {fmt}, same as the built-in for {len(same_here)}: "
                           + " ".join(same_here))
    print("\n".join(summary))
    print(f"jinja2 {jinja2.__version__}; {n_same} renderings equal the built-in formatter")
    for name, g in model_src.items():
        p = os.path.join(a.models, g)
        h = hashlib.sha256(open(p, "rb").read()).hexdigest()
        print(f"models/{name}: from {g} sha256 {h}")


if __name__ == "__main__":
    main()

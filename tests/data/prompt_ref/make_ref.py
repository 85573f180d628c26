#!/usr/bin/env python3
"""make_ref.py - what `tern-run --print-prompt` must print for the
conversations of convs.json, rendered by jinja2 set up as transformers'
apply_chat_template sets it up (ImmutableSandboxedEnvironment with
trim_blocks, lstrip_blocks and loop controls; tojson as json.dumps with
ensure_ascii=False; raise_exception; variables messages, tools (absent
when not given, as llama.cpp leaves it: transformers passes None, which
the Hermes tool-use templates cannot iterate), add_generation_prompt=True,
bos_token, eos_token from the file's vocabulary). Then llama.cpp's BOS rule: a leading BOS text is
dropped when the tokenizer adds BOS, and --print-prompt writes the BOS the
tokenizer adds as its text.

usage (from the repository root):
  .venv/bin/python tests/data/prompt_ref/make_ref.py > tests/data/prompt_ref/ref.json
Templates: the file's own (SmolLM2-135M-Instruct.Q4_1.gguf from models/,
ggml-vocab-phi-3.gguf from ../shared/data/vocab), qwen2.5.jinja (a
copy of ../shared/data/templates/Qwen-Qwen2.5-7B-Instruct.jinja, with
tools) and hermes2pro_tool_use.jinja (a copy of
NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja there, with and
without tools) given with --chat-template-file."""
import json
import os
import sys

import gguf
import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = {
    "smollm2": "models/SmolLM2-135M-Instruct.Q4_1.gguf",
    "phi3": "../shared/data/vocab/ggml-vocab-phi-3.gguf",
}


def field(r, key):
    f = r.fields.get(key)
    if f is None:
        return None
    v = f.parts[f.data[0]]
    return bytes(v).decode("utf-8") if f.types[0] == gguf.GGUFValueType.STRING else v[0]


def vocab(path):
    r = gguf.GGUFReader(path)
    toks = r.fields["tokenizer.ggml.tokens"]
    text = lambda i: bytes(toks.parts[toks.data[int(i)]]).decode("utf-8")
    bos, eos = field(r, "tokenizer.ggml.bos_token_id"), field(r, "tokenizer.ggml.eos_token_id")
    add_bos = field(r, "tokenizer.ggml.add_bos_token")
    return (field(r, "tokenizer.chat_template"), text(bos) if bos is not None else "",
            text(eos) if eos is not None else "", bool(add_bos))


def render(src, conv, bos, eos):
    def raise_exception(msg):
        raise jinja2.exceptions.TemplateError(msg)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = lambda x, indent=None, separators=None, sort_keys=False: json.dumps(
        x, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys)
    env.globals["raise_exception"] = raise_exception
    tools = {"tools": conv["tools"]} if "tools" in conv else {}
    return env.from_string(src).render(messages=conv["messages"], add_generation_prompt=True, bos_token=bos,
                                       eos_token=eos, **tools)


convs = json.load(open(os.path.join(HERE, "convs.json")))
qwen = open(os.path.join(HERE, "qwen2.5.jinja")).read()
hermes = open(os.path.join(HERE, "hermes2pro_tool_use.jinja")).read()
out = []
for model, path in MODELS.items():
    tmpl, bos, eos, add_bos = vocab(path)
    for name, conv in convs.items():
        for tname, src in (("file", tmpl), ("qwen2.5.jinja", qwen), ("hermes2pro_tool_use.jinja", hermes)):
            if tname != "hermes2pro_tool_use.jinja" and (name == "tools") != (tname == "qwen2.5.jinja"):
                continue
            text = render(src, conv, bos, eos)
            if add_bos and bos and text.startswith(bos):
                text = text[len(bos):]
            out.append({"model": model, "conv": name, "template": tname,
                        "expected": (bos if add_bos else "") + text})
json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
print()

#!/usr/bin/env python3
"""tok_hf_ref.py - Hugging Face `tokenizers` pipelines rebuilt from a GGUF
vocabulary, to compare tern with the reference on any text (no hub access
needed). Covers the vocabularies whose tokenizer.json is known:
bert-bge (BertNormalizer + BertPreTokenizer + WordPiece), gpt-2, mpt/gpt-neox
(NFC + ByteLevel). Prints the ids of each text in TEXTS (tok_diff.py) and
compares with `tern-inspect --ids`.

  .venv/bin/python scripts/tok_hf_ref.py [--bin bin] NAME...
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import gguf
from tokenizers import Tokenizer, AddedToken, normalizers, pre_tokenizers, Regex
from tokenizers.models import BPE, WordPiece

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tok_diff import TEXTS  # noqa: E402


def arr(r, key):
    f = r.fields.get(key)
    if f is None:
        return None
    if f.types[-1] == gguf.GGUFValueType.STRING:
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]
    return [f.parts[i][0] for i in f.data]


def build(name, path):
    r = gguf.GGUFReader(path)
    toks = arr(r, "tokenizer.ggml.tokens")
    types = arr(r, "tokenizer.ggml.token_type")
    if name == "bert-bge":
        vocab = {}
        for i, t in enumerate(toks):
            if types[i] == 3 or t.startswith("[unused"):
                vocab[t] = i
            elif t.startswith("\u2581"):
                vocab[t[1:]] = i
            else:
                vocab["##" + t] = i
        tk = Tokenizer(WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
        tk.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True)
        tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        return tk
    merges = [tuple(m.split(" ", 1)) for m in arr(r, "tokenizer.ggml.merges")]
    vocab = {t: i for i, t in enumerate(toks)}
    tk = Tokenizer(BPE(vocab, merges))
    if name in ("mpt", "gpt-neox"):
        tk.normalizer = normalizers.NFC()
    if name in ("starcoder", "refact"):
        tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                    pre_tokenizers.ByteLevel(add_prefix_space=False)])
    else:
        tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    added = [AddedToken(t, special=(types[i] == 3), normalized=False) for i, t in enumerate(toks) if types[i] in (3, 4)]
    tk.add_tokens(added)
    return tk


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="bin")
    ap.add_argument("--data", default=os.environ.get("TERN_DATA", "../shared/data"))
    ap.add_argument("names", nargs="+")
    a = ap.parse_args()
    bad = 0
    with tempfile.TemporaryDirectory() as td:
        for name in a.names:
            path = os.path.join(a.data, "vocab", f"ggml-vocab-{name}.gguf")
            tk = build(name, path)
            texts = list(TEXTS)
            if os.path.exists(path + ".inp"):
                texts += open(path + ".inp", encoding="utf-8").read().split("\n__ggml_vocab_test__\n")[:-1]
            ok = 0
            for t in texts:
                ref = tk.encode(t, add_special_tokens=False).ids
                f = os.path.join(td, "t")
                open(f, "wb").write(t.encode("utf-8"))
                out = subprocess.run([os.path.join(a.bin, "inspect"), "--tokenize-file", f, "--ids", path],
                                     capture_output=True).stdout.decode()
                ours = json.loads(out.strip().splitlines()[-1])
                if ours == ref:
                    ok += 1
                else:
                    bad += 1
                    print(f"{name}: {t!r}\n  tern: {ours}\n  hf  : {ref}")
            print(f"{name:12s} {ok}/{len(texts)} agree with tokenizers")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

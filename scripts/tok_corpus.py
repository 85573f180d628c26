#!/usr/bin/env python3
"""tok_corpus.py - write N bytes of mixed-language benchmark text to stdout.

Words are drawn with a Zipf-like distribution (as in natural text) from a
pool that mixes real sentences (the texts of scripts/tok_diff.py and the
vocab test cases) with generated words in Latin, Cyrillic, Greek, Arabic,
Devanagari, CJK, kana and Hangul, plus numbers, code fragments, emoji and
whitespace runs. Fixed seed: the same bytes every run.

  scripts/tok_corpus.py [BYTES] > corpus.txt      (default 1 MiB)
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tok_diff import TEXTS  # noqa: E402

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 20
rng = random.Random(1234)
data = os.environ.get("TERN_DATA", "../shared/data")
pool = []
for t in TEXTS:
    pool += t.split(" ")
inp = os.path.join(data, "vocab", "ggml-vocab-gpt-2.gguf.inp")
if os.path.exists(inp):
    for t in open(inp, encoding="utf-8").read().split("\n__ggml_vocab_test__\n"):
        pool += t.split(" ")
scripts = [
    "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    "абвгдежзийклмнопрстуфхцчшщыэюя", "αβγδεζηθικλμνξοπρστυφχψω", "ابتثجحخدذرزسشصضطظعغفقكلمنهوي",
    "कखगघचछजझटठडढणतथदधनपफबभमयरलवशसह", "的一是不了人我在有他这为之大来以个中上们到说国和地也子时道出而要于就下得可你年生",
    "あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをん",
    "가나다라마바사아자차카타파하거너더러머버서어저처커터퍼허", "äöüßéèêàçñøå",
]
for _ in range(6000):
    s = rng.choice(scripts)
    pool.append("".join(rng.choice(s) for _ in range(rng.randint(1, 9))))
for _ in range(500):
    pool.append(str(rng.randint(0, 10 ** rng.randint(1, 9))))
pool += ["\n", "\n\n", "\t", "    ", "  ", "{", "}", "();", "==", "->", "//", "🦙", "😀", "👍🏽", "—", "…"]
pool = [w for w in pool if w]
rng.shuffle(pool)
weights = [1.0 / (i + 1) ** 1.07 for i in range(len(pool))]
out = []
size = 0
while size < n:
    words = rng.choices(pool, weights, k=1000)
    chunk = " ".join(words) + " "
    out.append(chunk)
    size += len(chunk.encode("utf-8"))
b = "".join(out).encode("utf-8")[:n]
while b and (b[-1] & 0xC0) == 0x80:  # do not end inside a character
    b = b[:-1]
if b and b[-1] >= 0xC0:
    b = b[:-1]
sys.stdout.buffer.write(b)

#!/usr/bin/env python3
"""tok_diff.py - compare tern's tokenizer with llama.cpp's on extra texts.

For every vocab file in ../shared/data/vocab and every text below (and the
.inp cases when --cases is given), tokenize with `tern-inspect
--tokenize-file F --ids` and with `llama-tokenize -f F --ids --no-bos
--no-escape`, and print the texts where the ids differ.

  scripts/tok_diff.py [--llama PATH/llama-tokenize] [--bin bin] [--cases] [vocab ...]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

TEXTS = [
    # multilingual
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "Γαζέες καὶ μυρτιὲς δὲν θὰ βρῶ πιὰ στὸ χρυσαφὶ ξέφωτο",
    "我能吞下玻璃而不伤身体。你好，世界！",
    "私はガラスを食べられます。それは私を傷つけません。カタカナ ひらがな",
    "나는 유리를 먹을 수 있어요. 그래도 아프지 않아요",
    "أنا قادر على أكل الزجاج و هذا لا يؤلمني.",
    "मैं काँच खा सकता हूँ और मुझे उससे कोई चोट नहीं पहुंचती.",
    "ฉันกินกระจกได้ แต่มันไม่ทำให้ฉันเจ็บ",
    "אני יכול לאכול זכוכית וזה לא מזיק לי.",
    "Tôi có thể ăn thủy tinh mà không hại gì.",
    "İstanbul'da ılık bir gün; Straße, Maß, façade, naïve, coöperate",
    "e\u0301 cafe\u0301 Cafe\u0301 n\u0303 A\u030a \u212b \u2126",
    "ﬁ ﬂ ① ² ½ Ⅻ ＡＢＣ ｈｅｌｌｏ",
    # emoji
    "🦙🦙🦙 👨‍👩‍👧‍👦 🏳️‍🌈 🇩🇪🇫🇷 👍🏽 1️⃣ #️⃣ 😶‍🌫️",
    "I ❤️ emoji 😀😃😄😁😆 and 🤖!",
    # code
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "int main(void) {\n\tprintf(\"%d\\n\", 42);\n\treturn 0;\n}\n",
    '{"key": [1, 2.5, -3e10, null, true], "s": "a\\"b"}',
    "<html><body class=\"x\"><p>Hi &amp; bye</p></body></html>",
    "for (let i = 0; i < arr.length; ++i) { sum += arr[i] ** 2; } // comment",
    "SELECT id, name FROM users WHERE age >= 21 AND name LIKE '%bob%';",
    "x = [a**2 for a in range(10) if a % 3 == 0]  # list comp\r\n",
    # numbers
    "1 12 123 1234 12345 123456 1234567 12345678 123456789 1234567890",
    "3.14159 2,718 1,000,000 -42 +7 0x1F 1e-9 10^6 50% $19.99 €5",
    "٠١٢٣٤٥٦٧٨٩ ०१२३ 一二三 ¼ ² ³",
    "2024-01-15T10:30:00Z 192.168.0.1 +1-555-123-4567",
    # whitespace
    "a b  c   d    e     f      g       h        i",
    "                                  many spaces",
    "trailing spaces    ",
    "\t\ttabs\tand\t\ttabs\t",
    "line1\nline2\n\nline4\n\n\n\nline8",
    "crlf\r\nline\r\n\r\n",
    " \n \n\t \n  ",
    "\u00a0nbsp\u2003em\u3000ideographic\u200bzero-width",
    # special-looking text
    "<s> </s> <unk> <pad> [CLS] [SEP] [MASK] [UNK]",
    "<|endoftext|> <|im_start|>user<|im_end|> <|eot_id|>",
    "<0x0A> <0xFF> ▁ ▁▁ Ġ Ċ ## ##ing",
    "<fim_prefix>def<fim_suffix>pass<fim_middle>",
    ">>TITLE<< >>ABSTRACT<< <|user|> <|assistant|> <|end|>",
    # contractions and case
    "I'm you're he's she'll we've they'd it's DON'T WON'T I'M 'tis",
    "HELLO World hELLO wOrLd CamelCaseIdentifier snake_case_name",
    # punctuation runs
    "!!! ??? ... --- *** ### @@@ ~~~ ``` ''' \"\"\" ;;; ::: ,,,",
    "«quoted» „German“ “curly” ‘single’ — – … · •",
    # control characters
    "bell\x07 esc\x1b[31m del\x7f nul-free \x01\x02",
]


def run(cmd, data=None):
    r = subprocess.run(cmd, capture_output=True, input=data)
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


def ids_of(out):
    out = out.strip().splitlines()
    for line in reversed(out):
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            return json.loads(line)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama", default="/work/ref/llama.cpp/build/bin/llama-tokenize")
    ap.add_argument("--bin", default="bin")
    ap.add_argument("--data", default=os.environ.get("TERN_DATA", "../shared/data"))
    ap.add_argument("--cases", action="store_true", help="also the .inp cases")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("vocab", nargs="*")
    a = ap.parse_args()
    vdir = os.path.join(a.data, "vocab")
    names = a.vocab or sorted(f[len("ggml-vocab-"):-len(".gguf")] for f in os.listdir(vdir) if f.endswith(".gguf"))
    total_diff = 0
    with tempfile.TemporaryDirectory() as td:
        for name in names:
            path = os.path.join(vdir, f"ggml-vocab-{name}.gguf")
            texts = list(TEXTS)
            if a.cases and os.path.exists(path + ".inp"):
                texts += open(path + ".inp", encoding="utf-8").read().split("\n__ggml_vocab_test__\n")[:-1]
            ndiff = 0
            for i, t in enumerate(texts):
                f = os.path.join(td, "t.txt")
                with open(f, "wb") as fh:
                    fh.write(t.encode("utf-8"))
                rc1, o1, e1 = run([os.path.join(a.bin, "inspect"), "--tokenize-file", f, "--ids", path])
                rc2, o2, e2 = run([a.llama, "-m", path, "-f", f, "--ids", "--no-bos", "--no-escape", "--no-parse-special", "--log-disable"])
                ours, ref = ids_of(o1), ids_of(o2)
                if ours != ref:
                    ndiff += 1
                    if not a.quiet:
                        print(f"{name} text {i}: {t!r}\n  tern : {ours}\n  llama: {ref}")
            print(f"{name:16s} {len(texts) - ndiff}/{len(texts)} agree")
            total_diff += ndiff
    return 1 if total_diff else 0


if __name__ == "__main__":
    sys.exit(main())

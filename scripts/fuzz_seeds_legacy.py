#!/usr/bin/env python3
"""fuzz_seeds_legacy.py - write small legacy ggml seed files for the fuzzer.

Cuts the shared Silero and Whisper files down to a few KB each, keeping their
real headers: the Silero header with its four smallest tensors copied
verbatim, and the Whisper hyperparameters with a 2-row filter bank, the first
200 tokens and one small tensor of each common type.
Usage: fuzz_seeds_legacy.py DATA_DIR OUT_DIR   (standard library only)
"""
import os
import struct
import sys


def silero(src):
    buf = open(src, "rb").read()
    pos = 4
    (slen,) = struct.unpack_from("<i", buf, pos)
    pos += 4 + slen
    (n_layers,) = struct.unpack_from("<i", buf, pos + 20)
    pos += 4 * (6 + 3 * n_layers + 4)
    head, recs = buf[:pos], []
    while pos < len(buf):
        n_dims, name_len, ttype = struct.unpack_from("<3i", buf, pos)
        shape = struct.unpack_from("<%di" % n_dims, buf, pos + 12)
        n = 1
        for s in shape:
            n *= s
        end = pos + 12 + 4 * n_dims + name_len + n * (2 if ttype == 1 else 4)
        recs.append(buf[pos:end])
        pos = end
    small = sorted(recs, key=len)[:4]
    return head + b"".join(r for r in recs if r in small)


def tensor(name, ttype, shape, data):
    return struct.pack("<3i", len(shape), len(name), ttype) + struct.pack(
        "<%di" % len(shape), *shape) + name + data


def whisper(src):
    buf = open(src, "rb").read()
    out = buf[:48]
    n_mel, n_fft = struct.unpack_from("<2i", buf, 48)
    out += struct.pack("<2i", 2, n_fft) + buf[56:56 + 2 * n_fft * 4]
    pos = 56 + n_mel * n_fft * 4 + 4
    toks = []
    for _ in range(200):
        (ln,) = struct.unpack_from("<I", buf, pos)
        toks.append(buf[pos:pos + 4 + ln])
        pos += 4 + ln
    out += struct.pack("<i", len(toks)) + b"".join(toks)
    out += tensor(b"encoder.positional_embedding", 0, [4, 2], struct.pack("<8f", *range(8)))
    out += tensor(b"decoder.token_embedding.weight", 1, [8], b"\x00\x3c" * 8)
    out += tensor(b"encoder.blocks.0.attn.query.weight", 8, [32, 1], b"\x00\x3c" + bytes(range(32)))
    out += tensor(b"encoder.blocks.0.mlp.0.weight", 2, [32], b"\x00\x3c" + bytes(16))
    return out


def main(data, out):
    os.makedirs(out, exist_ok=True)
    m = os.path.join(data, "models")
    seeds = {
        "silero_cut.bin": silero(os.path.join(m, "silero-v6.2.0-ggml.bin")),
        "whisper_cut.bin": whisper(os.path.join(m, "whisper-vocab-only-tiny.bin")),
        "whisper_en_cut.bin": whisper(os.path.join(m, "whisper-vocab-only-tiny.en.bin")),
    }
    for name, b in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(b)
        print("%s: %d bytes" % (name, len(b)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

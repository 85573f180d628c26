#!/usr/bin/env python3
"""gen_quant_ref.py - reference data for tests/test_quant.c: encoded blocks of
every GGML type and the floats they decode to, computed by an independent
implementation: the decoders of the `gguf` Python package (gguf.quants).

For each type, tests/quant_ref/<name>.bin holds N encoded blocks followed by
N * block_size little-endian float32 values. Blocks are random bytes with
their scale fields set to finite values, plus blocks that gguf's own
quantizer made from a smooth signal where it has one. Q8_1 and Q8_K have no
decoder in gguf (they are activation formats); their floats are computed
here from the field layout (d * q).

    .venv/bin/python scripts/gen_quant_ref.py   (needs gguf >= 0.19 for MXFP4)
"""
import os

import numpy as np
from gguf import GGMLQuantizationType as T, GGML_QUANT_SIZES
from gguf import quants

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "quant_ref")
rng = np.random.default_rng(20261122)

# byte offsets of fp16 scale fields to make finite
F16_FIELDS = {
    "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
    "Q8_1": [0, 2], "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2],
    "Q6_K": [208], "IQ2_XXS": [0], "IQ2_XS": [0], "IQ2_S": [0], "IQ3_XXS": [0],
    "IQ3_S": [0], "IQ1_S": [0], "IQ4_NL": [0], "IQ4_XS": [0], "TQ1_0": [52],
    "TQ2_0": [64],
}

TYPES = ["F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q8_1",
         "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS",
         "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M", "IQ4_NL", "IQ4_XS",
         "TQ1_0", "TQ2_0", "MXFP4"]


def sizes(name):
    # gguf's table still lists the old 40-byte Q8_1 (f32 d and s); ggml's
    # block_q8_1 has been fp16 d and s, 36 bytes, for years.
    return (32, 36) if name == "Q8_1" else GGML_QUANT_SIZES[T[name]]


def rand_f16(n):
    v = rng.uniform(-2.0, 2.0, n).astype(np.float16)
    return v.view(np.uint8).reshape(n, 2)


def random_blocks(name, nb):
    blck, size = sizes(name)
    if name == "F32":
        return rng.normal(0, 3, nb * blck).astype(np.float32).view(np.uint8).reshape(nb, -1)
    if name == "F16":
        v = rng.normal(0, 3, nb).astype(np.float16)
        v[:4] = [np.inf, -0.0, np.float16(6e-8), np.float16(-3e-5)]  # inf, -0, subnormals
        return v.view(np.uint8).reshape(nb, -1)
    if name == "BF16":
        v = (rng.normal(0, 3, nb).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        return v.view(np.uint8).reshape(nb, -1)
    b = rng.integers(0, 256, (nb, size), dtype=np.uint8)
    for off in F16_FIELDS.get(name, []):
        b[:, off:off + 2] = rand_f16(nb)
    if name == "Q8_K":
        b[:, 0:4] = rng.uniform(-0.1, 0.1, nb).astype(np.float32).view(np.uint8).reshape(nb, 4)
    if name == "IQ1_M":
        # the fp16 scale is spread over the top nibbles of 4 uint16 at 48..55
        d = rand_f16(nb).view(np.uint16).reshape(nb)
        sc = b[:, 48:56].copy().view(np.uint16).reshape(nb, 4) & np.uint16(0x0FFF)
        for i in range(4):
            sc[:, i] |= ((d >> np.uint16(4 * i)) & np.uint16(0xF)) << np.uint16(12)
        b[:, 48:56] = sc.view(np.uint8).reshape(nb, 8)
    return b


def decode(name, blocks):
    blck, size = sizes(name)
    if name == "Q8_1":
        d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
        return d * blocks[:, 4:].view(np.int8).astype(np.float32)
    if name == "Q8_K":
        d = blocks[:, 0:4].copy().view(np.float32)
        return d * blocks[:, 4:260].view(np.int8).astype(np.float32)
    if name == "BF16":
        return quants.dequantize(blocks.reshape(-1), T.BF16).reshape(-1)
    return quants.dequantize(blocks.reshape(-1).copy(), T[name]).reshape(-1)


def main():
    os.makedirs(OUT, exist_ok=True)
    for name in TYPES:
        blck, size = sizes(name)
        nb = 64 if blck == 1 else 12
        blocks = random_blocks(name, nb)
        parts = [blocks]
        try:
            x = (0.1 + 2 * np.cos(np.arange(4 * blck) + 0.5)).astype(np.float32)
            if name not in ("F32", "F16", "BF16"):
                q = quants.quantize(x.reshape(1, -1), T[name])
                parts.append(q.reshape(4, size))
        except NotImplementedError:
            pass
        blocks = np.concatenate(parts).astype(np.uint8)
        y = np.asarray(decode(name, blocks), dtype=np.float32).reshape(-1)
        assert y.size == blocks.shape[0] * blck, name
        path = os.path.join(OUT, name.lower() + ".bin")
        with open(path, "wb") as f:
            f.write(blocks.tobytes())
            f.write(y.astype("<f4").tobytes())
        print("%-8s %3d blocks -> %s" % (name, blocks.shape[0], os.path.relpath(path)))


if __name__ == "__main__":
    main()

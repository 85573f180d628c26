#!/usr/bin/env python3
"""gen_quantize_ref.py - reference data for the bit-exact quantizer test in
tests/test_quant.c: float rows and the bytes that the `gguf` Python package
(gguf.quants.quantize, an implementation independent of ours) encodes them
to, for every type gguf can quantize.

The rows are chosen to hit the places where quantizers differ: rounding
ties, zeros, all-equal blocks, a negative value of largest magnitude, very
large and very small magnitudes (fp16 scales that overflow or underflow,
subnormal inputs), a lone outlier, and plain random data.

tests/quant_ref/quantize_<name>.bin: u32 type id, u32 n (floats), n
little-endian float32, then the encoded row.

    .venv/bin/python scripts/gen_quantize_ref.py [DIR]   (gguf 0.19.0)

DIR (default tests/quant_ref) lets tests/cli_quantize_ref.sh regenerate the
files elsewhere and compare them with the committed ones.
"""
import os
import struct
import sys

import numpy as np
from gguf import GGMLQuantizationType as T, GGML_QUANT_SIZES
from gguf import quants

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "quant_ref")
rng = np.random.default_rng(20261124)

TYPES = ["F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "TQ1_0", "TQ2_0", "MXFP4"]


def blocks_for(blck):
    """A list of float32 blocks of blck values, each an edge case."""
    b = []
    z = np.zeros(blck, np.float32)
    b.append(z.copy())                                   # all zeros
    b.append(np.full(blck, 0.75, np.float32))            # all equal, positive
    b.append(np.full(blck, -3.0, np.float32))            # all equal, negative
    x = z.copy(); x[5] = -1.0; b.append(x)               # one value, negative max
    x = z.copy(); x[blck - 1] = 2.0; b.append(x)         # one value, positive max
    # ties: with these end points the scale is exactly 1 (Q8_0: amax 127;
    # Q4_0 / Q5_0: max -8 / -16; Q4_1 / Q5_1: range 15 / 31 from 0 or to 0;
    # TQ: amax 1), so values k + 0.5 land exactly between two levels
    for lo, hi in ((-127, 126), (-8, 7), (-16, 15), (0, 15), (0, 31), (-15, 0), (-31, 0), (-1, 1)):
        x = lo + (np.arange(blck) * 7) % (hi - lo) + 0.5
        x[0], x[1] = lo, hi
        b.append(x.astype(np.float32))
    x = np.linspace(-1, 1, blck, dtype=np.float32); b.append(x)
    x = np.linspace(-2, 1, blck, dtype=np.float32); b.append(x)   # negative max
    x = np.linspace(-1, 3, blck, dtype=np.float32); b.append(x)
    x = rng.normal(0, 1, blck).astype(np.float32); x[3] = -9.0; b.append(x)  # outlier
    for scale in (1e-30, 1e-8, 1e-4, 1e4, 1e6, 1e30):
        b.append((rng.normal(0, 1, blck) * scale).astype(np.float32))
    b.append((rng.normal(0, 1, blck) * 1e-40).astype(np.float32))  # subnormal inputs
    x = rng.normal(0, 1, blck).astype(np.float32); x[::2] = 0; b.append(x)
    x = np.abs(rng.normal(0, 1, blck)).astype(np.float32) + 5; b.append(x)    # min > 0
    x = -np.abs(rng.normal(0, 1, blck)).astype(np.float32) - 5; b.append(x)   # max < 0
    # ternary-like: values near -1, 0, 1 times a scale, with ties at 0.5
    x = rng.choice(np.float32([-1, -0.5, 0, 0.5, 1]), blck).astype(np.float32) * 0.3; b.append(x)
    x = np.float32([0.5, -0.5, 1.5, -1.5, 2.5, 3.5, 6.0, -6.0] * (blck // 8)); b.append(x)  # MXFP4 ties
    for _ in range(8):
        b.append(rng.normal(0, 1, blck).astype(np.float32))
    return b


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else OUT
    for name in TYPES:
        qt = T[name]
        blck, size = GGML_QUANT_SIZES[qt]
        unit = 32 if blck == 1 else blck
        x = np.concatenate(blocks_for(unit)).astype(np.float32)
        with np.errstate(all="ignore"):
            q = quants.quantize(x.reshape(1, -1), qt)
        q = np.ascontiguousarray(q).view(np.uint8).reshape(-1)
        assert q.size == x.size // blck * size, name
        path = os.path.join(out, "quantize_" + name.lower() + ".bin")
        with open(path, "wb") as f:
            f.write(struct.pack("<II", int(qt), x.size))
            f.write(x.astype("<f4").tobytes())
            f.write(q.tobytes())
        print("%-6s %5d floats -> %s" % (name, x.size, os.path.relpath(path)))


if __name__ == "__main__":
    main()

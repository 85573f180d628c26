#!/usr/bin/env python3
"""legacy_ref.py - an independent reader for whisper.cpp's legacy ggml files.

Written separately from lib/format/ggml_legacy.c (numpy only) so that the tests can
compare the C reader against it. Prints one line per item:

  kind silero|whisper
  hparam NAME VALUE
  mel N_MEL N_FFT SUM                      (whisper)
  vocab N FIRST_TOKEN_HEX LAST_TOKEN_HEX   (whisper)
  tensor NAME TYPE SHAPE N SUM V0 V1 V2 V3 (SHAPE as ne0,ne1,... ggml order)
  total N_TENSORS N_VALUES

Sums are float64 sums of the values; values are printed with %.9g (exact for
float32). Usage: legacy_ref.py FILE
"""
import struct
import sys

import numpy as np

TYPES = {0: ("f32", np.dtype("<f4")), 1: ("f16", np.dtype("<f2"))}


def main(path):
    buf = open(path, "rb").read()
    pos = 0

    def ints(n):
        nonlocal pos
        v = struct.unpack_from("<%di" % n, buf, pos)
        pos += 4 * n
        return v

    (magic,) = struct.unpack_from("<I", buf, 0)
    assert magic == 0x67676D6C, "bad magic"
    pos = 4
    (slen,) = struct.unpack_from("<i", buf, pos)
    out = []
    if 6 <= slen <= 256 and buf[pos + 4:pos + 10] == b"silero":
        out.append("kind silero")
        pos += 4
        out.append("model_type " + buf[pos:pos + slen].decode())
        pos += slen
        names = ["version_major", "version_minor", "version_patch", "n_window", "n_context",
                 "n_encoder_layers"]
        vals = list(ints(6))
        for i in range(vals[5]):
            names += ["encoder.%d.%s" % (i, f) for f in ("in_channels", "out_channels", "kernel_size")]
            vals += ints(3)
        names += ["lstm_input_size", "lstm_hidden_size", "final_conv_in", "final_conv_out"]
        vals += ints(4)
        out += ["hparam %s %d" % nv for nv in zip(names, vals)]
    else:
        out.append("kind whisper")
        names = ["n_vocab", "n_audio_ctx", "n_audio_state", "n_audio_head", "n_audio_layer",
                 "n_text_ctx", "n_text_state", "n_text_head", "n_text_layer", "n_mels", "ftype"]
        out += ["hparam %s %d" % nv for nv in zip(names, ints(11))]
        n_mel, n_fft = ints(2)
        mel = np.frombuffer(buf, dtype="<f4", count=n_mel * n_fft, offset=pos)
        pos += 4 * n_mel * n_fft
        out.append("mel %d %d %.17g" % (n_mel, n_fft, mel.astype(np.float64).sum()))
        (n_vocab,) = ints(1)
        toks = []
        for _ in range(n_vocab):
            (ln,) = struct.unpack_from("<I", buf, pos)
            toks.append(buf[pos + 4:pos + 4 + ln])
            pos += 4 + ln
        out.append("vocab %d %s %s" % (n_vocab, toks[0].hex() if toks else "-",
                                        toks[-1].hex() if toks else "-"))

    n_tensors = n_values = 0
    while pos < len(buf):
        n_dims, name_len, ttype = ints(3)
        shape = ints(n_dims)
        name = buf[pos:pos + name_len].decode()
        pos += name_len
        tname, dt = TYPES[ttype]
        n = int(np.prod(shape, dtype=np.int64)) if n_dims else 1
        data = np.frombuffer(buf, dtype=dt, count=n, offset=pos)
        pos += n * dt.itemsize
        vals = data.astype(np.float64)
        first = " ".join("%.9g" % v for v in vals[:4])
        out.append("tensor %s %s %s %d %.17g %s" % (
            name, tname, ",".join(str(s) for s in shape) or "-", n, vals.sum(), first))
        n_tensors += 1
        n_values += n
    assert pos == len(buf), "trailing bytes"
    out.append("total %d %d" % (n_tensors, n_values))
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1])

#!/usr/bin/env python3
"""whisper_ref.py - a float64 numpy Whisper front end and encoder, written
from the model's definition (openai-whisper's audio.py and model.py), as a
second implementation for tern's tests.

Reads a legacy ggml Whisper file and a 16 kHz mono WAV, computes the log-mel
spectrogram (reflect-padded start, 30 s of zeros after, periodic Hann, |FFT|^2,
the file's filter bank, log10 clamped at 1e-10, max - 8, (x + 4) / 4; the
padding and frame count as whisper.cpp lays them out) and the encoder's output
for the first 30 s window, all in float64, and writes the selected positions
in the format of tests/data/whisper/README.md ("TENC").

With TOKENS (comma-separated ids) it also runs the decoder over them on
that window and writes the logits of the last one as OUT.logits64 (uint32
count, n_vocab, then the count token ids, then f32[n_vocab]).

usage: whisper_ref.py MODEL WAV OUT.enc64 [TOKENS OUT.logits64]
"""
import struct
import sys
import wave

import numpy as np


def read_model(path):
    buf = open(path, "rb").read()
    pos = 4
    hp = struct.unpack_from("<11i", buf, pos)
    pos += 44
    n_mel, n_fft = struct.unpack_from("<2i", buf, pos)
    pos += 8
    filters = np.frombuffer(buf, "<f4", n_mel * n_fft, pos).reshape(n_mel, n_fft).astype(np.float64)
    pos += 4 * n_mel * n_fft
    (n_vocab,) = struct.unpack_from("<i", buf, pos)
    pos += 4
    for _ in range(n_vocab):
        (n,) = struct.unpack_from("<i", buf, pos)
        pos += 4 + n
    tensors = {}
    while pos < len(buf):
        n_dims, n_name, ttype = struct.unpack_from("<3i", buf, pos)
        pos += 12
        ne = struct.unpack_from("<%di" % n_dims, buf, pos)
        pos += 4 * n_dims
        name = buf[pos:pos + n_name].decode()
        pos += n_name
        count = int(np.prod(ne))
        dtype, size = {0: ("<f4", 4), 1: ("<f2", 2)}[ttype]
        tensors[name] = np.frombuffer(buf, dtype, count, pos).astype(np.float64).reshape(tuple(reversed(ne)))
        pos += count * size
    return hp, filters, tensors


def log_mel(pcm, filters):
    n = len(pcm)
    padded = np.concatenate([pcm[1:201][::-1], pcm, np.zeros(30 * 16000 + 200)])
    n_frames = (n + 30 * 16000) // 160
    window = 0.5 * (1 - np.cos(2 * np.pi * np.arange(400) / 400))
    frames = np.stack([padded[i * 160:i * 160 + 400] for i in range(n_frames)]) * window
    power = np.abs(np.fft.rfft(frames, axis=1)) ** 2
    mel = np.log10(np.maximum(power @ filters.T, 1e-10)).T  # [n_mel][n_frames]
    return (np.maximum(mel, mel.max() - 8.0) + 4.0) / 4.0


def layer_norm(x, w, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * w + b


def gelu(x):  # the tanh form, as ggml's gelu
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def conv(x, w, b, stride):  # x [C][L], w [O][C][3], padding 1
    c, length = x.shape
    xp = np.pad(x, ((0, 0), (1, 1)))
    n_out = (length + 2 - 3) // stride + 1
    cols = np.stack([xp[:, j:j + stride * (n_out - 1) + 1:stride] for j in range(3)], axis=2)
    return np.einsum("ocj,clj->ol", w, cols) + b.reshape(-1, 1)


def encode(hp, t, mel):
    n_ctx, n_state, n_head, n_layer = hp[1], hp[2], hp[3], hp[4]
    x = mel[:, :2 * n_ctx]
    x = gelu(conv(x, t["encoder.conv1.weight"], t["encoder.conv1.bias"], 1))
    x = gelu(conv(x, t["encoder.conv2.weight"], t["encoder.conv2.bias"], 2)).T
    x = x + t["encoder.positional_embedding"]
    hd = n_state // n_head
    for i in range(n_layer):
        p = "encoder.blocks.%d." % i
        y = layer_norm(x, t[p + "attn_ln.weight"], t[p + "attn_ln.bias"])
        q = y @ t[p + "attn.query.weight"].T + t[p + "attn.query.bias"]
        k = y @ t[p + "attn.key.weight"].T
        v = y @ t[p + "attn.value.weight"].T + t[p + "attn.value.bias"]
        o = np.zeros_like(q)
        for h in range(n_head):
            s = slice(h * hd, (h + 1) * hd)
            a = q[:, s] @ k[:, s].T / np.sqrt(hd)
            a = np.exp(a - a.max(-1, keepdims=True))
            o[:, s] = (a / a.sum(-1, keepdims=True)) @ v[:, s]
        x = x + o @ t[p + "attn.out.weight"].T + t[p + "attn.out.bias"]
        y = layer_norm(x, t[p + "mlp_ln.weight"], t[p + "mlp_ln.bias"])
        h1 = gelu(y @ t[p + "mlp.0.weight"].T + t[p + "mlp.0.bias"])
        x = x + h1 @ t[p + "mlp.2.weight"].T + t[p + "mlp.2.bias"]
    return layer_norm(x, t["encoder.ln_post.weight"], t["encoder.ln_post.bias"])


def decode(hp, t, enc, tokens):
    n_state, n_head, n_layer = hp[6], hp[7], hp[8]
    hd = n_state // n_head
    n = len(tokens)
    x = t["decoder.token_embedding.weight"][tokens] + t["decoder.positional_embedding"][:n]
    causal = np.triu(np.full((n, n), -np.inf), 1)

    def attention(q, k, v, mask):
        o = np.zeros_like(q)
        for h in range(n_head):
            s = slice(h * hd, (h + 1) * hd)
            a = q[:, s] @ k[:, s].T / np.sqrt(hd) + mask
            a = np.exp(a - a.max(-1, keepdims=True))
            o[:, s] = (a / a.sum(-1, keepdims=True)) @ v[:, s]
        return o

    for i in range(n_layer):
        p = "decoder.blocks.%d." % i
        y = layer_norm(x, t[p + "attn_ln.weight"], t[p + "attn_ln.bias"])
        q = y @ t[p + "attn.query.weight"].T + t[p + "attn.query.bias"]
        k = y @ t[p + "attn.key.weight"].T
        v = y @ t[p + "attn.value.weight"].T + t[p + "attn.value.bias"]
        x = x + attention(q, k, v, causal) @ t[p + "attn.out.weight"].T + t[p + "attn.out.bias"]
        y = layer_norm(x, t[p + "cross_attn_ln.weight"], t[p + "cross_attn_ln.bias"])
        q = y @ t[p + "cross_attn.query.weight"].T + t[p + "cross_attn.query.bias"]
        k = enc @ t[p + "cross_attn.key.weight"].T
        v = enc @ t[p + "cross_attn.value.weight"].T + t[p + "cross_attn.value.bias"]
        x = x + attention(q, k, v, 0.0) @ t[p + "cross_attn.out.weight"].T + t[p + "cross_attn.out.bias"]
        y = layer_norm(x, t[p + "mlp_ln.weight"], t[p + "mlp_ln.bias"])
        h1 = gelu(y @ t[p + "mlp.0.weight"].T + t[p + "mlp.0.bias"])
        x = x + h1 @ t[p + "mlp.2.weight"].T + t[p + "mlp.2.bias"]
    y = layer_norm(x[-1], t["decoder.ln.weight"], t["decoder.ln.bias"])
    return t["decoder.token_embedding.weight"] @ y


def main(model, wav, out, tokens=None, out_logits=None):
    hp, filters, tensors = read_model(model)
    w = wave.open(wav)
    assert w.getnchannels() == 1 and w.getframerate() == 16000 and w.getsampwidth() == 2
    pcm = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float64) / 32768.0
    enc = encode(hp, tensors, log_mel(pcm, filters))
    positions = list(range(0, enc.shape[0], 50)) + [enc.shape[0] - 1]
    with open(out, "wb") as f:
        f.write(struct.pack("<4I", 0x434E4554, enc.shape[1], enc.shape[0], len(positions)))
        for p in positions:
            f.write(struct.pack("<I", p))
            f.write(enc[p].astype("<f4").tobytes())
    if tokens:
        ids = [int(v) for v in tokens.split(",")]
        logits = decode(hp, tensors, enc, ids)
        with open(out_logits, "wb") as f:
            f.write(struct.pack("<%dI" % (2 + len(ids)), len(ids), len(logits), *ids))
            f.write(logits.astype("<f4").tobytes())


if __name__ == "__main__":
    main(*sys.argv[1:6])

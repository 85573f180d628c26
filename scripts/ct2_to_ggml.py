#!/usr/bin/env python3
"""ct2_to_ggml.py - convert a CTranslate2 Whisper model (the format
faster-whisper uses: a folder with model.bin, config.json and
vocabulary.txt or vocabulary.json) to whisper.cpp's legacy ggml file, the
one tern-transcribe and whisper-cli read. numpy only.

The ggml file is laid out as whisper.cpp's own converter writes it
(convert-pt-to-ggml): the magic, the 11 int32 hyperparameters, the mel
filter bank, the text tokens as bytes, then the tensors in the PyTorch
checkpoint's order, each as n_dims, name length, type, the dims (fastest
first), the name and the data. Matrices are f16 (or f32 with --type f32);
biases, norms, positional embeddings and the convolution biases are f32;
the convolution kernels f16 unless --type f32.

CTranslate2 keeps the model in its own names and fuses some projections:
self-attention linear_0 is [q; k; v] (3 n_state rows), cross-attention
linear_0 is q and linear_1 is [k; v]; its key biases are zeros (Whisper has
none), which is checked, then dropped. Its f16 copies of the f32 tensors
have lost precision, which no converter can restore; its f16 matrices are
the originals' f16 roundings bit for bit, as whisper.cpp's converter makes
them. Quantized CTranslate2 models (int8 weights with scales) are refused.

The mel filter bank is not part of a CTranslate2 model: it is computed as
openai-whisper's mel_filters.npz was made (librosa's slaney-scale, slaney-
normalised filters, 16 kHz, n_fft 400, 80 or 128 bands, float64 rounded to
float32), or copied from another ggml Whisper file with --mel-from FILE.

The text tokens: vocabulary.txt holds the byte-level BPE strings (GPT-2's
byte-to-unicode mapping), which become bytes again; the first 50,257 are
written, as in whisper.cpp's files (English-only: the text tokens and
<|endoftext|>; multilingual: the text tokens and one empty string).

usage: ct2_to_ggml.py [--type f16|f32] [--mel-from FILE] CT2_DIR OUT.bin
       (CT2_DIR/model.bin may also be given as several parts:
        --model-bin PART1 --model-bin PART2 ..., concatenated in order, and
        the vocabulary as --vocab FILE; CT2_DIR is then not read)
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

# CTranslate2's DataType ids
CT2_DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16}
CT2_BF16 = 5


class ConvertError(Exception):
    pass


def read_ct2(parts):
    """The variables of a CTranslate2 model.bin (binary versions 5 and 6):
    {name: numpy array}, aliases resolved."""
    buf = b"".join(open(p, "rb").read() for p in parts)
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, buf, pos)
        pos += struct.calcsize(fmt)
        return v

    def string():
        nonlocal pos
        (n,) = take("<H")
        s = buf[pos : pos + n]
        pos += n
        return s.rstrip(b"\0").decode("utf-8")

    try:
        (version,) = take("<I")
        if version not in (5, 6):
            raise ConvertError(f"model.bin binary version {version}: only 5 and 6 are known")
        spec = string()
        if spec != "WhisperSpec":
            raise ConvertError(f"model.bin is a {spec!r}, not a WhisperSpec")
        take("<I")  # the spec's revision
        (n_vars,) = take("<I")
        variables = {}
        for _ in range(n_vars):
            name = string()
            (rank,) = take("<B")
            shape = take(f"<{rank}I") if rank else ()
            (dtype,) = take("<B")
            (nbytes,) = take("<I")
            if pos + nbytes > len(buf):
                raise ConvertError(f"variable {name} runs past the end of model.bin")
            raw = buf[pos : pos + nbytes]
            pos += nbytes
            if dtype == CT2_BF16:
                a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
            elif dtype in CT2_DTYPES:
                a = np.frombuffer(raw, np.dtype(CT2_DTYPES[dtype]).newbyteorder("<"))
            else:
                raise ConvertError(f"variable {name} has the unknown data type {dtype}")
            n = int(np.prod(shape)) if shape else 1
            if a.size != n:
                raise ConvertError(f"variable {name}: {a.size} values for the shape {list(shape)}")
            variables[name] = a.reshape(shape)
        (n_alias,) = take("<I")
        for _ in range(n_alias):
            alias, target = string(), string()
            if target not in variables:
                raise ConvertError(f"alias {alias} names the missing variable {target}")
            variables[alias] = variables[target]
    except struct.error:
        raise ConvertError("model.bin is truncated") from None
    return variables


def bytes_to_unicode():
    """GPT-2's reversible map of the 256 bytes to printable characters."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def read_vocab(ct2_dir, path=None):
    if path and path.endswith(".json"):
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    path = path or os.path.join(ct2_dir, "vocabulary.txt")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            tokens = f.read().split("\n")
        if tokens and tokens[-1] == "":
            tokens.pop()  # the file's last newline
        return tokens
    path = os.path.join(ct2_dir, "vocabulary.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    raise ConvertError(f"no vocabulary.txt or vocabulary.json in {ct2_dir}")


def token_bytes(tokens, n):
    """The first n tokens as bytes: byte-level BPE strings decoded, special
    tokens (<|...|>) kept as they are."""
    decoder = {c: b for b, c in bytes_to_unicode().items()}
    out = []
    for i, t in enumerate(tokens[:n]):
        if t.startswith("<|") and t.endswith("|>"):
            out.append(t.encode("utf-8"))
            continue
        try:
            out.append(bytes(decoder[c] for c in t))
        except KeyError:
            raise ConvertError(f"token {i} {t!r} is not a byte-level BPE string") from None
    return out


def mel_filters(n_mels, sr=16000, n_fft=400):
    """librosa.filters.mel(sr, n_fft, n_mels) with its defaults (fmin 0,
    fmax sr / 2, the slaney mel scale, slaney normalisation), as float32."""
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, np.log(6.4) / 27.0

    def hz_to_mel(f):
        f = np.asanyarray(f, dtype=np.float64)
        return np.where(f >= min_log_hz, min_log_mel + np.log(np.maximum(f, 1e-10) / min_log_hz) / logstep, f / f_sp)

    def mel_to_hz(m):
        m = np.asanyarray(m, dtype=np.float64)
        return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), f_sp * m)

    fft_freqs = np.linspace(0, sr / 2, 1 + n_fft // 2)
    mel_f = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(sr / 2), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = np.subtract.outer(mel_f, fft_freqs)
    weights = np.zeros((n_mels, len(fft_freqs)))
    for i in range(n_mels):
        lower = -ramps[i] / fdiff[i]
        upper = ramps[i + 2] / fdiff[i + 1]
        weights[i] = np.maximum(0, np.minimum(lower, upper))
    weights *= (2.0 / (mel_f[2 : n_mels + 2] - mel_f[:n_mels]))[:, None]
    return weights.astype(np.float32)


def mel_from_ggml(path, n_mels):
    buf = open(path, "rb").read(4 + 44 + 8)
    if len(buf) < 56 or struct.unpack_from("<I", buf, 0)[0] != 0x67676D6C:
        raise ConvertError(f"{path} is not a ggml Whisper file")
    n_mel, n_fft = struct.unpack_from("<2i", buf, 48)
    if n_mel != n_mels or n_fft != 201:
        raise ConvertError(f"{path} has a {n_mel} x {n_fft} filter bank, the model needs {n_mels} x 201")
    with open(path, "rb") as f:
        f.seek(56)
        return np.frombuffer(f.read(4 * n_mel * n_fft), "<f4").reshape(n_mel, n_fft)


def get(v, name, shape=None):
    if name not in v:
        raise ConvertError(f"model.bin has no variable {name}")
    a = v[name]
    if a.dtype == np.int8 or name + "_scale" in v:
        raise ConvertError(f"{name} is quantized (int8): convert an f16 or f32 CTranslate2 model")
    if shape is not None and tuple(a.shape) != tuple(shape):
        raise ConvertError(f"{name} has the shape {list(a.shape)}, expected {list(shape)}")
    return a.astype(np.float32)


def scalar(v, name):
    if name not in v or v[name].size != 1:
        raise ConvertError(f"model.bin has no scalar {name}")
    return int(v[name].reshape(-1)[0])


def convert(variables, tokens, mel, wtype):
    """(hparams, [(name, array, is_matrix)]) in whisper.cpp's order."""
    v = variables
    emb = v.get("decoder/embeddings/weight")
    if emb is None:
        raise ConvertError("model.bin has no variable decoder/embeddings/weight")
    n_vocab, n_state = emb.shape
    n_audio_ctx = v["encoder/position_encodings/encodings"].shape[0]
    n_text_ctx = v["decoder/position_encodings/encodings"].shape[0]
    n_mels = v["encoder/conv1/weight"].shape[1]
    n_audio_layer = sum(1 for k in v if k.startswith("encoder/layer_") and k.endswith("ffn/linear_0/weight"))
    n_text_layer = sum(1 for k in v if k.startswith("decoder/layer_") and k.endswith("ffn/linear_0/weight"))
    if n_audio_layer == 0 or n_text_layer == 0:
        raise ConvertError("model.bin has no encoder or decoder layers")
    if n_mels not in (80, 128):
        raise ConvertError(f"{n_mels} mel bins: Whisper models have 80 or 128")
    hp = dict(
        n_vocab=n_vocab,
        n_audio_ctx=n_audio_ctx,
        n_audio_state=n_state,
        n_audio_head=scalar(v, "encoder/num_heads"),
        n_audio_layer=n_audio_layer,
        n_text_ctx=n_text_ctx,
        n_text_state=n_state,
        n_text_head=scalar(v, "decoder/num_heads"),
        n_text_layer=n_text_layer,
        n_mels=n_mels,
        ftype=1 if wtype == "f16" else 0,
    )
    n, f = n_state, 4 * n_state
    out = []

    def add(name, a, matrix):
        out.append((name, a, matrix))

    def linear(dst, src, rows, cols, bias=True):
        add(dst + ".weight", get(v, src + "/weight", (rows, cols)), True)
        if bias:
            add(dst + ".bias", get(v, src + "/bias", (rows,)), False)

    def fused(dst_prefix, names, src, parts):
        """split a fused projection into names (None: a key, no bias)"""
        w = get(v, src + "/weight", (parts * n, n))
        b = get(v, src + "/bias", (parts * n,))
        for i, nm in enumerate(names):
            add(f"{dst_prefix}.{nm}.weight", w[i * n : (i + 1) * n], True)
            if nm == "key":
                if np.any(b[i * n : (i + 1) * n] != 0):
                    raise ConvertError(f"{src}/bias has a non-zero key bias, which Whisper does not have")
            else:
                add(f"{dst_prefix}.{nm}.bias", b[i * n : (i + 1) * n], False)

    def norm(dst, src):
        add(dst + ".weight", get(v, src + "/gamma", (n,)), False)
        add(dst + ".bias", get(v, src + "/beta", (n,)), False)

    def attn_out(dst, src):
        linear(dst, src, n, n)

    def mlp(dst, src):
        linear(dst + ".0", src + "/linear_0", f, n)
        linear(dst + ".2", src + "/linear_1", n, f)
        norm(dst + "_ln", src + "/layer_norm")

    add("encoder.positional_embedding", get(v, "encoder/position_encodings/encodings", (n_audio_ctx, n)), False)
    add("encoder.conv1.weight", get(v, "encoder/conv1/weight", (n, n_mels, 3)), True)
    add("encoder.conv1.bias", get(v, "encoder/conv1/bias", (n,)).reshape(n, 1), False)
    add("encoder.conv2.weight", get(v, "encoder/conv2/weight", (n, n, 3)), True)
    add("encoder.conv2.bias", get(v, "encoder/conv2/bias", (n,)).reshape(n, 1), False)
    for i in range(n_audio_layer):
        p, s = f"encoder.blocks.{i}", f"encoder/layer_{i}"
        fused(p + ".attn", ("query", "key", "value"), s + "/self_attention/linear_0", 3)
        attn_out(p + ".attn.out", s + "/self_attention/linear_1")
        norm(p + ".attn_ln", s + "/self_attention/layer_norm")
        mlp(p + ".mlp", s + "/ffn")
    norm("encoder.ln_post", "encoder/layer_norm")
    add("decoder.positional_embedding", get(v, "decoder/position_encodings/encodings", (n_text_ctx, n)), False)
    add("decoder.token_embedding.weight", get(v, "decoder/embeddings/weight", (n_vocab, n)), True)
    for i in range(n_text_layer):
        p, s = f"decoder.blocks.{i}", f"decoder/layer_{i}"
        fused(p + ".attn", ("query", "key", "value"), s + "/self_attention/linear_0", 3)
        attn_out(p + ".attn.out", s + "/self_attention/linear_1")
        norm(p + ".attn_ln", s + "/self_attention/layer_norm")
        linear(p + ".cross_attn.query", s + "/attention/linear_0", n, n)
        fused(p + ".cross_attn", ("key", "value"), s + "/attention/linear_1", 2)
        attn_out(p + ".cross_attn.out", s + "/attention/linear_2")
        norm(p + ".cross_attn_ln", s + "/attention/layer_norm")
        mlp(p + ".mlp", s + "/ffn")
    norm("decoder.ln", "decoder/layer_norm")
    return hp, out


def write_ggml(path, hp, mel, tokens, tensors, wtype):
    order = ("n_vocab", "n_audio_ctx", "n_audio_state", "n_audio_head", "n_audio_layer", "n_text_ctx",
             "n_text_state", "n_text_head", "n_text_layer", "n_mels", "ftype")
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<I", 0x67676D6C))
        f.write(struct.pack("<11i", *(hp[k] for k in order)))
        f.write(struct.pack("<2i", *mel.shape))
        f.write(mel.astype("<f4").tobytes())
        f.write(struct.pack("<i", len(tokens)))
        for t in tokens:
            f.write(struct.pack("<i", len(t)))
            f.write(t)
        for name, a, matrix in tensors:
            f16 = matrix and wtype == "f16"
            data = a.astype("<f2" if f16 else "<f4")
            nb = name.encode("utf-8")
            f.write(struct.pack("<3i", a.ndim, len(nb), 1 if f16 else 0))
            f.write(struct.pack(f"<{a.ndim}i", *reversed(a.shape)))
            f.write(nb)
            f.write(data.tobytes())
    os.replace(tmp, path)


def main(argv):
    ap = argparse.ArgumentParser(description="CTranslate2 Whisper model to whisper.cpp's ggml file")
    ap.add_argument("--type", choices=("f16", "f32"), default="f16", help="type of the matrices (default f16)")
    ap.add_argument("--mel-from", metavar="FILE", help="copy the mel filter bank from this ggml Whisper file")
    ap.add_argument("--model-bin", metavar="PART", action="append",
                    help="model.bin, or its parts in order (default CT2_DIR/model.bin)")
    ap.add_argument("--vocab", metavar="FILE", help="vocabulary.txt or .json (default in CT2_DIR)")
    ap.add_argument("ct2_dir")
    ap.add_argument("out")
    a = ap.parse_args(argv)
    try:
        parts = a.model_bin or [os.path.join(a.ct2_dir, "model.bin")]
        for p in parts:
            if not os.path.exists(p):
                raise ConvertError(f"{p} does not exist")
        variables = read_ct2(parts)
        tokens = read_vocab(a.ct2_dir, a.vocab)
        n_vocab = variables["decoder/embeddings/weight"].shape[0] if "decoder/embeddings/weight" in variables else 0
        if len(tokens) != n_vocab:
            raise ConvertError(f"the vocabulary has {len(tokens)} tokens, the embedding {n_vocab} rows")
        n_mels = variables["encoder/conv1/weight"].shape[1] if "encoder/conv1/weight" in variables else 80
        mel = mel_from_ggml(a.mel_from, n_mels) if a.mel_from else mel_filters(n_mels)
        hp, tensors = convert(variables, tokens, mel, a.type)
        write_ggml(a.out, hp, mel, token_bytes(tokens, 50257), tensors, a.type)
    except (ConvertError, OSError) as e:
        print(f"ct2_to_ggml: {e}", file=sys.stderr)
        return 1
    kind = "multilingual" if hp["n_vocab"] >= 51865 else "English-only"
    print(f"{a.out}: {hp['n_audio_layer']}+{hp['n_text_layer']} layers of {hp['n_audio_state']}, {hp['n_mels']} mel bins, "
          f"{kind} ({hp['n_vocab']} tokens), {len(tensors)} tensors, {a.type}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

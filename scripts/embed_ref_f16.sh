#!/bin/sh
# embed_ref_f16.sh IN.gguf OUT.gguf f16|bf16 - a copy of a GGUF file whose
# 2-D tensors (the weights and embedding tables) are stored in f16 or bf16,
# everything else as it was: the F16 / BF16 embedding files of the
# reference data (scripts/embed_ref_synth.sh records llama.cpp's embeddings
# of them; tests/cli_embed.sh makes the same bytes again and checks their
# sha256). Through gguf-py: $PYTHON, else python3.
set -eu
exec "${PYTHON:-python3}" - "$@" <<'PY'
import sys
import numpy as np
from gguf import GGUFReader, GGUFWriter, GGUFValueType, GGMLQuantizationType as T, quants

src, dst, kind = sys.argv[1], sys.argv[2], sys.argv[3]
if kind not in ("f16", "bf16"):
    sys.exit("embed_ref_f16.sh: the type is f16 or bf16")
r = GGUFReader(src)

def text(f, i):
    return bytes(f.parts[i]).decode()

arch = text(r.fields["general.architecture"], r.fields["general.architecture"].data[0])
w = GGUFWriter(dst, arch)
for f in r.fields.values():
    if f.name.startswith("GGUF.") or f.name == "general.architecture":
        continue
    t = f.types[0]
    if t == GGUFValueType.ARRAY:
        sub = f.types[-1]
        vals = [text(f, i) if sub == GGUFValueType.STRING else f.parts[i].tolist()[0] for i in f.data]
        w.add_key_value(f.name, vals, t, sub_type=sub)
    elif t == GGUFValueType.STRING:
        w.add_key_value(f.name, text(f, f.data[0]), t)
    else:
        w.add_key_value(f.name, f.parts[f.data[0]].tolist()[0], t)
for t in r.tensors:
    if t.tensor_type != T.F32:
        sys.exit("embed_ref_f16.sh: %s is not f32" % t.name)
    a = np.array(t.data, dtype=np.float32).reshape([int(x) for x in reversed(t.shape)])
    if a.ndim != 2 or t.name == "token_types.weight":  # llama.cpp adds its row in f32
        w.add_tensor(t.name, a)
    elif kind == "f16":
        w.add_tensor(t.name, a.astype(np.float16))
    else:
        w.add_tensor(t.name, quants.quantize(a, T.BF16), raw_dtype=T.BF16)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
PY

#!/usr/bin/env python3
"""Compare `inspect --json --full` with an independent reader (the gguf
package from PyPI): header, every key (type and value), every tensor (type,
shape, offset, size) and, for the types both can decode, tensor values.

usage: gguf_compare.py BIN_DIR WORK_DIR [FILE.gguf ...]

Besides the files given, it writes synthetic files with gguf.GGUFWriter (an
independent writer) covering every value type, nested arrays, alignment 64
and tensors of several types, and compares those too."""
import json
import math
import os
import subprocess
import sys

import numpy as np
import gguf
from gguf import GGUFReader, GGUFValueType, GGMLQuantizationType

JSON_TYPE = {
    GGUFValueType.UINT8: "uint8", GGUFValueType.INT8: "int8",
    GGUFValueType.UINT16: "uint16", GGUFValueType.INT16: "int16",
    GGUFValueType.UINT32: "uint32", GGUFValueType.INT32: "int32",
    GGUFValueType.FLOAT32: "float32", GGUFValueType.BOOL: "bool",
    GGUFValueType.STRING: "string", GGUFValueType.ARRAY: "array",
    GGUFValueType.UINT64: "uint64", GGUFValueType.INT64: "int64",
    GGUFValueType.FLOAT64: "float64",
}
# every type gguf.quants can decode (Q8_1 and Q8_K are activation formats it lacks)
DECODABLE = {t for t in GGMLQuantizationType
             if t.name not in ("Q8_1", "Q8_K") and t in gguf.GGML_QUANT_SIZES}
# (integer and f64 tensors are compared with numpy's conversion to float32)

failures = []
decoded = set()


def fail(path, msg):
    failures.append(f"{path}: {msg}")


def same_scalar(vtype, ours, theirs):
    if vtype == GGUFValueType.STRING:
        return ours == bytes(theirs).decode("utf-8", errors="replace")
    if vtype == GGUFValueType.BOOL:
        return ours is bool(theirs)
    if vtype == GGUFValueType.FLOAT32:
        t = float(np.float32(theirs))
        if math.isnan(t) or math.isinf(t):
            return ours is None
        return ours is not None and np.float32(ours) == np.float32(t)
    if vtype == GGUFValueType.FLOAT64:
        t = float(theirs)
        if math.isnan(t) or math.isinf(t):
            return ours is None
        return ours == t
    return isinstance(ours, int) and not isinstance(ours, bool) and ours == int(theirs)


def field_values(field):
    """Element values of an array field as the reader sees them."""
    sub = GGUFValueType(field.types[1]) if len(field.types) > 1 else None
    return sub, [field.parts[i] for i in field.data]


def compare_file(bin_dir, path):
    try:
        out = subprocess.run([os.path.join(bin_dir, "inspect"), "--json", "--full", path],
                             capture_output=True, check=True).stdout
    except subprocess.CalledProcessError as e:
        fail(path, f"inspect exited {e.returncode}: {e.stderr.decode(errors='replace').strip()}")
        return
    try:
        ours = json.loads(out.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        fail(path, f"output is not valid UTF-8 JSON: {e}")
        return
    r = GGUFReader(path)
    if ours["version"] != int(r.fields["GGUF.version"].parts[-1][0]):
        fail(path, "version differs")
    if ours["alignment"] != r.alignment:
        fail(path, f"alignment {ours['alignment']} != {r.alignment}")
    if r.tensors and ours["data_offset"] != r.data_offset:
        fail(path, f"data_offset {ours['data_offset']} != {r.data_offset}")
    keys = [k for k in r.fields if not k.startswith("GGUF.")]
    if list(ours["metadata"].keys()) != keys:
        fail(path, f"key lists differ: {len(ours['metadata'])} vs {len(keys)}")
        return
    for k in keys:
        f = r.fields[k]
        o = ours["metadata"][k]
        vtype = GGUFValueType(f.types[0])
        if o["type"] != JSON_TYPE[vtype]:
            fail(path, f"{k}: type {o['type']} != {JSON_TYPE[vtype]}")
            continue
        if vtype == GGUFValueType.ARRAY:
            sub, vals = field_values(f)
            count = int(f.parts[4][0])  # the outer length, also for nested arrays
            if o["elem_type"] != JSON_TYPE[sub] or o["count"] != count:
                fail(path, f"{k}: array {o['elem_type']}[{o['count']}] != {JSON_TYPE[sub]}[{count}]")
                continue
            if sub == GGUFValueType.ARRAY:
                continue  # the reader does not expose nested arrays' elements
            if sub == GGUFValueType.STRING:
                ref = [bytes(v).decode("utf-8", errors="replace") for v in vals]
                bad = [i for i, (a, b) in enumerate(zip(o["value"], ref)) if a != b]
            elif sub in (GGUFValueType.FLOAT32, GGUFValueType.FLOAT64):
                dt = np.float32 if sub == GGUFValueType.FLOAT32 else np.float64
                ref = np.concatenate(vals).astype(dt) if vals else np.zeros(0, dt)
                finite = np.isfinite(ref)
                got = np.array([np.nan if v is None else v for v in o["value"]], dtype=dt)
                bad = np.nonzero(~((got == ref) | (~finite & np.isnan(got))))[0].tolist()
            elif sub == GGUFValueType.BOOL:
                bad = [i for i, (a, b) in enumerate(zip(o["value"], vals)) if a is not bool(b[0])]
            else:
                ref = [int(v[0]) for v in vals]
                bad = [i for i, (a, b) in enumerate(zip(o["value"], ref)) if a != b or isinstance(a, bool)]
            if bad:
                i = bad[0]
                fail(path, f"{k}[{i}]: {o['value'][i]!r} differs from the reader's value")
        else:
            b = f.parts[f.data[0]]
            b = b if vtype == GGUFValueType.STRING else b[0]
            if not same_scalar(vtype, o["value"], b):
                fail(path, f"{k}: {o['value']!r} != {b!r}")
    if len(ours["tensors"]) != len(r.tensors):
        fail(path, f"tensor count {len(ours['tensors'])} != {len(r.tensors)}")
        return
    for ot, rt in zip(ours["tensors"], r.tensors):
        want = dict(name=rt.name, type=rt.tensor_type.name.lower(), shape=[int(x) for x in rt.shape],
                    file_offset=int(rt.data_offset), bytes=int(rt.n_bytes))
        got = dict(name=ot["name"], type=ot["type"].lower(), shape=ot["shape"],
                   file_offset=ot["file_offset"], bytes=ot["bytes"])
        if got != want:
            fail(path, f"tensor {rt.name}: {got} != {want}")
            continue
        if rt.tensor_type in DECODABLE:
            raw = subprocess.run([os.path.join(bin_dir, "inspect"), "--tensor", rt.name, "--raw", path],
                                 capture_output=True).stdout
            mine = np.frombuffer(raw, dtype="<f4")
            if rt.tensor_type.name in ("I8", "I16", "I32", "I64", "F64"):
                ref = np.asarray(rt.data).astype(np.float32).ravel()  # plain arrays: numpy's cast
            else:
                ref = gguf.quants.dequantize(rt.data, rt.tensor_type).astype(np.float32).ravel()
            if mine.shape != ref.shape or not np.array_equal(mine.view(np.uint32), ref.view(np.uint32)):
                fail(path, f"tensor {rt.name}: decoded values differ from gguf.quants.dequantize")
            decoded.add(rt.tensor_type.name)


def synth(work):
    """Files written by gguf's own writer."""
    paths = []
    rng = np.random.default_rng(11)
    # one tensor of every type, blocks as made for the quant reference data
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gen_quant_ref as qr
    p = os.path.join(work, "synth-alltypes.gguf")
    w = gguf.GGUFWriter(p, "alltypes")
    for name in qr.TYPES:
        if name in ("Q8_1", "Q8_K"):
            continue
        blck, size = qr.sizes(name)
        blocks = qr.random_blocks(name, 2 if blck > 1 else 64).reshape(2, -1)
        w.add_tensor(name.lower(), blocks, raw_dtype=GGMLQuantizationType[name])
    for dt in (np.int8, np.int16, np.int32, np.int64, np.float64):
        w.add_tensor(np.dtype(dt).name, rng.integers(-100, 100, (3, 8)).astype(dt))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    paths.append(p)

    rng = np.random.default_rng(7)

    p = os.path.join(work, "synth-values.gguf")
    w = gguf.GGUFWriter(p, "synthetic")
    w.add_uint8("v.u8", 200)
    w.add_int8("v.i8", -7)
    w.add_uint16("v.u16", 60000)
    w.add_int16("v.i16", -12345)
    w.add_uint32("v.u32", 4000000000)
    w.add_int32("v.i32", -2000000000)
    w.add_uint64("v.u64", 2**64 - 1)
    w.add_int64("v.i64", -(2**63))
    w.add_float32("v.f32", 0.1)
    w.add_float64("v.f64", 1.0 / 3.0)
    w.add_float32("v.nan", float("nan"))
    w.add_bool("v.true", True)
    w.add_bool("v.false", False)
    w.add_string("v.str", "héllo \"quoted\" \\ tab\t newline\n ctrl\x01 emoji 🦀")
    w.add_string("v.empty", "")
    w.add_array("v.ints", [1, -2, 3])
    w.add_array("v.floats", [0.5, -1.25, 3e-8])
    w.add_array("v.strs", ["a", "", "日本語", "x" * 1000])
    w.add_array("v.empty_arr", [])
    w.add_array("v.nested", [[1, 2], [3]])
    w.add_array("v.big", list(range(100000)))
    w.add_key_value("v.u8s", [1, 2, 255], GGUFValueType.ARRAY, sub_type=GGUFValueType.UINT8)
    w.add_key_value("v.f64s", [1.5, -2.5], GGUFValueType.ARRAY, sub_type=GGUFValueType.FLOAT64)
    w.add_key_value("v.bools", [True, False, True], GGUFValueType.ARRAY, sub_type=GGUFValueType.BOOL)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    paths.append(p)

    for align in (32, 64):
        p = os.path.join(work, f"synth-tensors-{align}.gguf")
        w = gguf.GGUFWriter(p, "llama")
        if align != 32:
            w.add_custom_alignment(align)
        w.add_context_length(2048)
        w.add_embedding_length(64)
        w.add_block_count(2)
        w.add_head_count(4)
        w.add_head_count_kv(2)
        w.add_rope_freq_base(10000.0)
        w.add_chat_template("{{ messages }}")
        a = rng.standard_normal((3, 64)).astype(np.float32)
        w.add_tensor("f32", a)
        w.add_tensor("f16", rng.standard_normal((5, 32)).astype(np.float16))
        w.add_tensor("vec", rng.standard_normal(7).astype(np.float32))
        q = gguf.quants.quantize(rng.standard_normal((4, 64)).astype(np.float32), GGMLQuantizationType.Q8_0)
        w.add_tensor("q8", q, raw_dtype=GGMLQuantizationType.Q8_0)
        bf = gguf.quants.quantize(rng.standard_normal((2, 16)).astype(np.float32), GGMLQuantizationType.BF16)
        w.add_tensor("bf16", bf, raw_dtype=GGMLQuantizationType.BF16)
        w.add_tensor("t3d", rng.standard_normal((2, 3, 8)).astype(np.float32))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        paths.append(p)
    return paths


def main():
    bin_dir, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    files = synth(work) + sys.argv[3:]
    for p in files:
        compare_file(bin_dir, p)
    for f in failures:
        print("FAIL", f)
    print(f"{'FAIL' if failures else 'PASS'}: {len(files)} files compared with gguf-py; "
          f"tensor values of {len(decoded)} types identical: {' '.join(sorted(decoded))}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

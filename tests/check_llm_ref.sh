#!/usr/bin/env bash
# check_llm_ref.sh - the llama.cpp reference data in tests/data/llm_ref stays
# usable: (1) scripts/gen_synth_llm.c, built against this tree's libtern.a,
# still writes byte for byte the synthetic models the data was made from
# (their sha256 is in each JSON; a change to the GGUF writer or the reference
# quantizer that alters them means the data must be regenerated with
# scripts/llm_ref_synth.sh, or embed_ref_synth.sh for embed/); (2) every logits .bin is well-formed and agrees
# with its JSON: rows' argmax = the recorded top-1, the recorded top-5
# log-probabilities = log-softmax of the stored logits (recomputed here).
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh
D=tests/data/llm_ref
OUTDIR=${OUT:-build/release}

# (1) regenerate the synthetic models
if [ -f "$OUTDIR/libtern.a" ]; then
	flags="-std=c11 -O1 -ffp-contract=off -I."
	[ "${SANITIZE:-}" = 1 ] && flags="$flags -fsanitize=address,undefined"
	PKG=$(pkg-config --libs libpcre2-8 libutf8proc 2>/dev/null || true)
	if expect 0 cc $flags scripts/gen_synth_llm.c "$OUTDIR/libtern.a" $PKG -lpthread -lm -o "$T/gen"; then
		for j in "$D"/synth/*.json "$D"/embed/*.json; do
			read -r arch type sha < <("$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(*d["model"].split()[1:], d["model_sha256"])' "$j")
			expect 0 "$T/gen" "$arch" "$type" "$T/m.gguf" &&
				check "$arch $type regenerates to the sha256 in $j" \
					[ "$(sha256sum "$T/m.gguf" | cut -d' ' -f1)" = "$sha" ]
		done
		expect 2 "$T/gen" mamba f32 "$T/m.gguf"
	fi
else
	echo "note: no $OUTDIR/libtern.a, generator not checked"
fi

# (2) the data files agree with each other
cat >"$T/check.py" <<'EOF'
import glob, json, math, struct, sys
bad = 0
def fail(msg):
    global bad
    print("FAIL:", msg)
    bad += 1
def load(path):
    b = open(path, "rb").read()
    if b[:4] != b"TLGT":
        fail(path + ": bad magic"); return None
    ver, dt, nv, nr = struct.unpack("<4I", b[4:20])
    width = 4 if dt == 0 else 2
    if ver != 1 or dt not in (0, 1) or len(b) != 20 + 8 * nr + nr * nv * width:
        fail(path + ": bad header or size"); return None
    meta = [struct.unpack("<2i", b[20 + 8 * r:28 + 8 * r]) for r in range(nr)]
    off = 20 + 8 * nr
    rows = [struct.unpack("<%d%s" % (nv, "f" if dt == 0 else "e"), b[off + r * nv * width:off + (r + 1) * nv * width])
            for r in range(nr)]
    return dt, nv, meta, rows
def logsoftmax(row):
    m = max(row)
    lse = m + math.log(sum(math.exp(x - m) for x in row))
    return [x - lse for x in row]
def same_top(path, what, row, top5, tol):
    lp = logsoftmax(row)
    best = max(range(len(row)), key=lambda i: (row[i], -i))
    # with f16 rows a near tie may swap: accept any id within the rounding
    if top5[0][0] != best and lp[best] - lp[top5[0][0]] > tol:
        fail("%s %s: top-1 %d, stored logits say %d" % (path, what, top5[0][0], best))
    for tid, tlp, _ in top5:
        if abs(lp[tid] - tlp) > tol:
            fail("%s %s: id %d logprob %.6f, stored logits give %.6f" % (path, what, tid, tlp, lp[tid]))
n = 0
for j in sorted(glob.glob(sys.argv[1] + "/*.json")) + sorted(glob.glob(sys.argv[1] + "/synth/*.json")):
    d = json.load(open(j))
    if "logits_bin" not in d:
        continue
    got = load(j.rsplit("/", 1)[0] + "/" + d["logits_bin"])
    if got is None:
        continue
    dt, nv, meta, rows = got
    # f16 rows: half an f16 ulp is 2^-7 for |logit| in [16, 32), the largest here
    tol = 1e-4 if dt == 0 else 1e-2
    if nv != d["n_vocab"]:
        fail(j + ": n_vocab differs from its .bin")
    ids = d["prompt_ids"]
    if "positions" in d:
        for (pos, tok), row, p in zip(meta, rows, d["positions"]):
            if pos != p["pos"] or tok != ids[pos]:
                fail(j + ": row order"); continue
            same_top(j, "pos %d" % pos, row, p["top5"], tol)
            n += 1
    else:
        g = d["generated"]
        for st in g:
            if st["id"] != st["top5"][0][0] or st["logprob"] != st["top5"][0][1]:
                fail("%s step %d: chosen token is not its top-1" % (j, st["step"]))
        if meta != [(len(ids) - 1, ids[-1]), (len(ids), g[0]["id"])]:
            fail(j + ": rows are not the last prompt position and the first generated one")
        for r in range(2):
            same_top(j, "step %d" % r, rows[r], g[r]["top5"], tol)
            n += 1
print("rows checked:", n)
sys.exit(1 if bad or n == 0 else 0)
EOF
check "logits files agree with their JSON" "$PYTHON" "$T/check.py" "$D"
finish

#!/usr/bin/env bash
# cli_legacy.sh - legacy ggml files, checked against the independent numpy
# reader (scripts/legacy_ref.py):
#   1. re-derive the reference data and compare it with the copy committed in
#      tests/data/legacy/ (which test_ggml_legacy compares the C reader with);
#   2. `inspect --json` on each shared
#      file gives the reference hyperparameters, tensor names and element
#      counts; `inspect --check` passes; truncated or corrupted copies give
#      exit 65 and one `tern-inspect: PATH: ...` line.
# Environment: BIN, OUT, PYTHON, TERN_DATA (see tests/run.sh).
set -u
BIN=${BIN:-bin} OUT=${OUT:-build/release} PYTHON=${PYTHON:-python3}
TERN_DATA=${TERN_DATA:-../shared/data}
files="silero-v6.2.0-ggml whisper-vocab-only-tiny whisper-vocab-only-tiny.en"
fail=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if "$PYTHON" -c 'import numpy' 2>/dev/null; then
	for f in $files; do
		"$PYTHON" scripts/legacy_ref.py "$TERN_DATA/models/$f.bin" >"$tmp/ref" ||
			bad "legacy_ref.py $f failed"
		diff -u "tests/data/legacy/$f.ref" "$tmp/ref" || bad "$f differs from tests/data/legacy/$f.ref"
	done
else
	echo "note: $PYTHON has no numpy; reference data not re-derived"
fi

for f in $files; do
	path=$TERN_DATA/models/$f.bin
	"$BIN/inspect" --check "$path" >/dev/null 2>"$tmp/err" || bad "inspect --check $f: $(head -c 300 "$tmp/err")"
	"$BIN/inspect" "$path" >/dev/null 2>"$tmp/err" || bad "inspect $f: $(head -c 300 "$tmp/err")"
	if ! "$BIN/inspect" --json "$path" >"$tmp/json" 2>"$tmp/err"; then
		bad "inspect --json $f: $(head -c 300 "$tmp/err")"
		continue
	fi
	"$PYTHON" - "$tmp/json" "tests/data/legacy/$f.ref" <<'PY' || bad "inspect --json $f disagrees with the reference"
import json, sys
def no_const(c): raise ValueError("non-standard JSON constant " + c)
doc = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"), parse_constant=no_const)
ref = [l.split() for l in open(sys.argv[2])]
md, ts = doc["metadata"], doc["tensors"]
def val(v): return v["value"] if isinstance(v, dict) else v
ok = True
variant = doc.get("variant", "")
for r in ref:
    if r[0] != "hparam":
        continue
    key = next((k for k in (r[1], variant + "." + r[1]) if k in md), None)
    if key is None or val(md[key]) != int(r[2]):
        print("hparam %s: %r, want %s" % (r[1], md.get(key), r[2])); ok = False
if "vocab" in [r[0] for r in ref]:
    # the file stores the text tokens; the model's vocabulary (n_vocab, the
    # token embedding's rows) adds the special tokens the file leaves out
    n = int([r for r in ref if r[0] == "vocab"][0][1])
    n_vocab = int([r for r in ref if r[:2] == ["hparam", "n_vocab"]][0][2])
    sm = doc["summary"]
    if sm.get("vocab_stored") != n or sm.get("vocab_size") != n_vocab:
        print("vocab_stored %r, vocab_size %r, want %d, %d" % (sm.get("vocab_stored"), sm.get("vocab_size"), n, n_vocab)); ok = False
want = [(r[1], int(r[4])) for r in ref if r[0] == "tensor"]
got = []
for t in ts:
    n = 1
    for d in t["shape"]: n *= d
    got.append((t["name"], n))
if got != want:
    print("tensors: %r\nwant:    %r" % (got[:4], want[:4])); ok = False
total = [r for r in ref if r[0] == "total"][0]
if len(ts) != int(total[1]) or sum(n for _, n in got) != int(total[2]):
    print("totals: %d tensors, %d values, want %s" % (len(ts), sum(n for _, n in got), total[1:])); ok = False
sys.exit(0 if ok else 1)
PY
done

# malformed copies: cut inside the header, a tensor header, tensor data; corrupt a type
src=$TERN_DATA/models/silero-v6.2.0-ggml.bin
for cut in 3 10 30 100 140 200 5000 885097; do
	head -c $cut "$src" >"$tmp/cut_$cut.bin"
done
cp "$src" "$tmp/bad_type.bin" && chmod u+w "$tmp/bad_type.bin"
printf '\x63' | dd of="$tmp/bad_type.bin" bs=1 seek=$((0x72)) conv=notrunc status=none # type 0x63
head -c 64400 "$TERN_DATA/models/whisper-vocab-only-tiny.bin" >"$tmp/whisper_cut_mel.bin"
head -c 300000 "$TERN_DATA/models/whisper-vocab-only-tiny.bin" >"$tmp/whisper_cut_vocab.bin"
for p in "$tmp"/cut_*.bin "$tmp"/bad_type.bin "$tmp"/whisper_cut_*.bin; do
	for mode in "" --check; do
		timeout 60 "$BIN/inspect" $mode "$p" >/dev/null 2>"$tmp/err"
		rc=$?
		if [ $rc -ne 65 ]; then
			bad "inspect $mode $p: exit $rc, want 65: $(head -c 300 "$tmp/err")"
		elif [[ $(head -n 1 "$tmp/err") != "tern-inspect: $p: "?* ]]; then
			bad "inspect $mode $p: stderr: $(head -c 300 "$tmp/err")"
		fi
	done
done

[ $fail -eq 0 ] && echo "PASS: legacy reference data and inspect on legacy files"
exit $((fail > 0))

#!/usr/bin/env bash
# cli_whisper_models.sh - tern-transcribe in whisper.cpp's numerics against
# whisper-cli's own output (tests/data/whisper/*.out: whisper-cli -t 2, the
# same model file and audio; see that folder's README), byte for byte,
# greedy (-bs 1) and the default beam search: tiny.en on jfk3.wav (jfk.wav
# three times with 0.5 s and 1 s of silence between: 34.5 s, three
# windows; jfk.wav: tests/cli_transcribe.sh, and see below); base
# (multilingual, converted from the CTranslate2 model `make models`
# fetches) on both; and scripts/ct2_to_ggml.py: the CTranslate2 tiny.en
# converted gives ggml-tiny.en.bin's hyperparameters,
# tokens, mel filters (to 1e-7) and f16 matrices bit for bit, and its own
# beam-search transcript is whisper-cli's on the converted file; a
# truncated model.bin is one line and exit 1. Each part SKIPs without its
# model.
. "$(dirname "$0")/lib.sh"
R=$BIN/transcribe
TINY=$DATA/models/ggml-tiny.en.bin
BASE=${TERN_MODELS:-models}/ggml-base.bin
CT2=${TERN_MODELS:-models}/whisper-tiny.en-ct2
J=$DATA/audio/jfk.wav
W=tests/data/whisper
TO="timeout 300"
unset TERN_WHISPER_MODEL
# under SANITIZE=1 one run per model (greedy): the beam searches and the
# second audio take the same code under ASan; the plain run compares them

if [ -f "$J" ]; then
	$PYTHON -c '
import sys, wave
r = wave.open(sys.argv[1], "rb"); d = r.readframes(r.getnframes())
w = wave.open(sys.argv[2], "wb"); w.setparams(r.getparams())
w.writeframes(d + b"\0\0" * 8000 + d + b"\0\0" * 16000 + d); w.close()' "$J" "$T/jfk3.wav"
fi

# same MODEL AUDIO REF ARGS...: tern's stdout is whisper-cli's
same() {
	local m=$1 a=$2 ref=$3; shift 3
	expect 0 $TO $R -m "$m" -t 2 "$@" "$a" && check "$(basename "$m") $(basename "$a") $*: whisper-cli's output" \
		cmp -s "$T/out" "$W/$ref"
}

if [ -f "$TINY" ] && [ -f "$J" ]; then
	# Not jfk.beam.out (tiny.en, beam search, jfk.wav): whisper.cpp's beam
	# search draws its candidates at random, and there one of its 720
	# draws falls closer to the boundary between two tokens' cumulative
	# probabilities than two correct builds agree on them (ours on an
	# AVX2 machine: the first step's top probability 0.665292 against
	# whisper.cpp's 0.665365; draw 36 picks token 350 where whisper.cpp
	# picks 355), and the final hypothesis is then the other of two
	# nearly equal ones (lower case, one segment: what whisper-cli prints
	# for the CTranslate2 conversion below). tests/cli_transcribe.sh
	# checks its words. jfk3.wav and base below are stable: the same
	# bytes under the scalar, AVX2 and AVX-512 variants.
	full && same "$TINY" "$T/jfk3.wav" jfk3.beam.out
	same "$TINY" "$T/jfk3.wav" jfk3.greedy.out -bs 1
else
	echo "SKIP: tiny.en (no $TINY or $J)"
fi

if [ -f "$BASE" ] && [ -f "$J" ]; then
	same "$BASE" "$J" base.jfk.greedy.out -bs 1
	if full; then
		same "$BASE" "$J" base.jfk.beam.out
		same "$BASE" "$T/jfk3.wav" base.jfk3.greedy.out -bs 1
		same "$BASE" "$T/jfk3.wav" base.jfk3.beam.out
	fi
else
	echo "SKIP: base (no $BASE: make models)"
fi

if [ -f "$CT2.model.bin" ] && [ -f "$TINY" ] && "$PYTHON" -c 'import numpy' 2>/dev/null; then
	expect 0 "$PYTHON" scripts/ct2_to_ggml.py --model-bin "$CT2.model.bin" --vocab "$CT2.vocabulary.txt" \
		/nonexistent "$T/tiny.en-ct2.bin"
	check "converter: its summary" grep -q "4+4 layers of 384, 80 mel bins, English-only (51864 tokens), 167 tensors, f16" "$T/out"
	check "converter: ggml-tiny.en.bin's layout and f16 matrices" "$PYTHON" - "$TINY" "$T/tiny.en-ct2.bin" <<'PY'
import struct, sys
import numpy as np
def read(p):
    f = open(p, "rb").read(); o = 4
    hp = struct.unpack_from("<11i", f, o); o += 44
    nm, nf = struct.unpack_from("<2i", f, o); o += 8
    mel = np.frombuffer(f, "<f4", nm * nf, o); o += 4 * nm * nf
    (nv,) = struct.unpack_from("<i", f, o); o += 4
    toks = []
    for _ in range(nv):
        (n,) = struct.unpack_from("<i", f, o); toks.append(f[o + 4:o + 4 + n]); o += 4 + n
    ts = []
    while o < len(f):
        nd, nl, tt = struct.unpack_from("<3i", f, o); o += 12
        ne = struct.unpack_from(f"<{nd}i", f, o); o += 4 * nd
        name = f[o:o + nl].decode(); o += nl
        n = int(np.prod(ne)); sz = 4 if tt == 0 else 2
        ts.append((name, tt, ne, f[o:o + n * sz])); o += n * sz
    return hp, mel, toks, ts
a, b = read(sys.argv[1]), read(sys.argv[2])
assert a[0] == b[0], (a[0], b[0])
assert np.abs(a[1] - b[1]).max() < 1e-7 * np.abs(a[1]).max()
assert a[2] == b[2]
assert [t[:3] for t in a[3]] == [t[:3] for t in b[3]]
for (name, tt, ne, x), (_, _, _, y) in zip(a[3], b[3]):
    if tt == 1:
        assert x == y, name
    else:  # CTranslate2 kept these in f16
        xa, ya = np.frombuffer(x, "<f4"), np.frombuffer(y, "<f4")
        assert np.abs(xa - ya).max() <= 1e-3 * np.abs(xa).max(), name
PY
	full && same "$T/tiny.en-ct2.bin" "$J" tiny.en-ct2.jfk.beam.out
	head -c 1000000 "$CT2.model.bin" >"$T/short.bin"
	expect 1 "$PYTHON" scripts/ct2_to_ggml.py --model-bin "$T/short.bin" --vocab "$CT2.vocabulary.txt" /nonexistent \
		"$T/x.bin" && check "converter: truncated model.bin, one line" one_line_err "ct2_to_ggml: "
	check "converter: nothing written" test ! -e "$T/x.bin"
else
	echo "SKIP: the converter (no $CT2.model.bin: make models)"
fi
finish

#!/usr/bin/env bash
# gen_vad_ref.sh - whisper.cpp's VAD on the corpus of tests/data/audio, as
# reference data for tests/cli_vad.sh (tests/data/vad/corpus/NAME.json).
#
# Two references per file:
#   "probs", "segments_cs": whisper.cpp's model and segments on the very
#      samples tern decodes (scripts/audio_to_f32.c: lib/audio at 16 kHz,
#      raw f32), through a small tool linked with libwhisper that calls
#      whisper_vad_segments_from_samples and prints JSON (VAD_REF);
#   "whisper_reader": the segments whisper.cpp's own example
#      (whisper-vad-speech-segments, VAD_SEGMENTS) finds reading the
#      original file with its own decoder and resampler (miniaudio), or
#      null when it cannot read the format (Opus).
# Run after `make`; needs a whisper.cpp build (not part of this project).
set -eu
cd "$(dirname "$0")/.."
VAD_REF=${VAD_REF:-/work/ref/whisper/tools/vad_ref}
VAD_SEGMENTS=${VAD_SEGMENTS:-/work/ref/whisper/build/bin/whisper-vad-speech-segments}
MODEL=${MODEL:-../shared/data/models/silero-v6.2.0-ggml.bin}
WHISPER_VERSION=${WHISPER_VERSION:-"whisper.cpp from the pywhispercpp 1.5.1 sdist"}
PYTHON=${PYTHON:-python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cc -O2 -std=c11 -I. scripts/audio_to_f32.c build/release/libtern.a $(pkg-config --libs sndfile samplerate) -lm -o "$T/to_f32"
mkdir -p tests/data/vad/corpus
for f in tests/data/audio/*; do
	name=$(basename "$f")
	"$T/to_f32" "$f" >"$T/x.f32"
	"$VAD_REF" audio "$MODEL" "$T/x.f32" >"$T/ref.json"
	"$VAD_SEGMENTS" -t 1 -vm "$MODEL" -f "$f" -np >"$T/seg.txt" 2>/dev/null || : >"$T/seg.txt"
	$PYTHON - "$f" "$T/ref.json" "$T/seg.txt" "$WHISPER_VERSION" >"tests/data/vad/corpus/$name.json" <<'PY'
import hashlib, json, re, sys
path, ref, seg, version = sys.argv[1:5]
r = json.load(open(ref))
lines = open(seg).read()
reader = None
if "Detected" in lines:
    reader = [{"start_cs": round(float(a)), "end_cs": round(float(b))}
              for a, b in re.findall(r"start = ([0-9.]+), end = ([0-9.]+)", lines)]
doc = {
    "file": path,
    "sha256": hashlib.sha256(open(path, "rb").read()).hexdigest(),
    "reference": version + ", default parameters",
    "params": r["params"],
    "n_samples": r["n_samples"],
    "probs": r["probs"],
    "segments_cs": r["segments"],
    "whisper_reader": reader,
}
print(json.dumps(doc, indent=1))
PY
	echo "$name: $(grep -c . "$T/seg.txt") lines from whisper-vad-speech-segments"
done

# jfk.wav with other segment parameters: tern-vad's options against
# whisper_vad_params (tests/data/vad/cli_params.json)
{
	echo '['
	sep=
	for args in "--threshold 0.7 --min-speech-ms 500 --min-silence-ms 300 --speech-pad-ms 0" \
		"--threshold 0.3 --min-silence-ms 50 --speech-pad-ms 100" "--max-speech-s 1.5" \
		"--threshold 0.9 --min-speech-ms 1000"; do
		"$VAD_REF" audio "$MODEL" ../shared/data/audio/jfk.wav $args >"$T/p.json"
		printf '%s' "$sep"
		$PYTHON -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(json.dumps({"ref_args": sys.argv[2], "params": r["params"], "segments_cs": r["segments"]}), end="")' "$T/p.json" "$args"
		sep=$',\n'
	done
	printf '\n]\n'
} >tests/data/vad/cli_params.json
cat tests/data/vad/cli_params.json

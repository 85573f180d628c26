#!/usr/bin/env bash
# cli_vad.sh - tern-vad as scripts use it: usage errors and exit codes, the
# segments of jfk.wav against whisper.cpp's (32-227, 327-441, 538-768,
# 816-1062 centiseconds), --json through a JSON parser, --csv, --probs,
# -oj/-ocsv/-osrt files, several files, standard input, bad audio, a closed
# pipe; and the corpus of tests/data/audio against whisper.cpp's VAD
# (tests/data/vad/corpus, scripts/gen_vad_ref.sh): the same probabilities
# (within 1e-5) and segments on the samples tern decodes, and segments
# within two windows of those whisper.cpp finds with its own decoder and
# resampler. The model runs are skipped without the Silero model.
. "$(dirname "$0")/lib.sh"
R=$BIN/vad
M=$DATA/models/silero-v6.2.0-ggml.bin
J=$DATA/audio/jfk.wav
A=tests/data/audio
unset TERN_VAD_MODEL
TO="timeout 120"

# ---- without a model ------------------------------------------------------------
expect 0 $R --help && check "help shows usage" grep -q '^usage: tern-vad \[-m MODEL\] \[OPTIONS\] FILE...' "$T/out"
check "help lists whisper-cli's spellings" grep -q -- '-vspd, --vad-min-speech-duration-ms MS' "$T/out"
expect 2 $R "$J" && check "no model: one line naming -m and TERN_VAD_MODEL" \
	one_line_err "tern-vad: no model: give -m FILE or set TERN_VAD_MODEL"
expect 2 $R -m "$M" && check "no FILE: usage error" one_line_err "tern-vad: no FILE: give the audio files to read"
expect 2 $R -m "$M" --bogus "$J" && check "unknown option" one_line_err "tern-vad: unknown option '--bogus'"
expect 2 $R -m "$M" -vt 1.5 "$J" && check "threshold above 1" one_line_err "tern-vad: option '--vad-threshold': 1.5 is not in 0..1"
expect 2 $R -m "$M" -vt -0.1 "$J" && check "threshold below 0" one_line_err "tern-vad: option '--vad-threshold'"
expect 2 $R -m "$M" -vt nan "$J" && check "threshold NaN" one_line_err "tern-vad: option '-vt': 'nan' is not a number"
expect 2 $R -m "$M" -vspd -1 "$J" && check "negative min speech" one_line_err "tern-vad: option '-vspd'"
expect 2 $R -m "$M" --vad-min-silence-duration-ms -5 "$J"
expect 2 $R -m "$M" -vp -30 "$J"
expect 2 $R -m "$M" -vmsd 0 "$J" && check "max speech 0" one_line_err "tern-vad: option '--vad-max-speech-duration-s'"
expect 2 $R -m "$M" -vmsd inf "$J"
expect 2 $R -m "$M" -vo -1 "$J" && check "negative overlap" one_line_err "tern-vad: option '--vad-samples-overlap'"
expect 2 $R -m "$M" --json --csv "$J" && check "--json excludes --csv" grep -q "cannot be combined" "$T/err"
expect 2 $R -m "$M" -of x "$J" && check "-of needs an output" one_line_err "tern-vad: --output-file needs"
expect 2 $R -m "$M" -oj -of a -of b "$J" && check "more -of than files" one_line_err "tern-vad: 2 -of names for 1 FILEs"
expect 2 $R -m "$M" -oj - <"$J" && check "stdin with -oj needs -of" one_line_err "tern-vad: FILE - (standard input) has no name"
expect 2 $R -m "$M" - - <"$J" && check "stdin twice" one_line_err "tern-vad: standard input (-) can be read only once"
expect 1 $R -m /nonexistent.bin "$J" && check "missing model: one line" one_line_err "tern-vad: /nonexistent.bin: cannot open"
TERN_VAD_MODEL=/nonexistent.bin expect 1 $R "$J" && check "TERN_VAD_MODEL is the default model" \
	one_line_err "tern-vad: /nonexistent.bin: cannot open"

if [ ! -f "$M" ]; then
	echo "SKIP: the model runs (no $M)"
	finish
fi
expect 65 $R -m "$J" "$J" && check "a model that is not Silero: one line" one_line_err "tern-vad: $J: "

# ---- jfk.wav -------------------------------------------------------------------------
expect 0 $TO $R -m "$M" "$J"
check "jfk.wav: four segments, in milliseconds" test "$(cat "$T/out")" = "0.322 --> 2.270
3.266 --> 4.414
5.378 --> 7.678
8.162 --> 10.622"
check "jfk.wav: whisper.cpp's centiseconds (32-227 327-441 538-768 816-1062)" $PYTHON -c '
import sys
got = [round(float(t) * 100) for l in open(sys.argv[1]) for t in l.split(" --> ")]
assert got == [32, 227, 327, 441, 538, 768, 816, 1062], got' "$T/out"
check "nothing on stderr without -v" test ! -s "$T/err"
cp "$T/out" "$T/jfk.txt"
TERN_VAD_MODEL=$M expect 0 $TO $R "$J" && check "TERN_VAD_MODEL supplies -m" cmp -s "$T/out" "$T/jfk.txt"
expect 0 $TO $R -vm "$M" -f "$J" && check "-vm and -f, as whisper-cli spells them" cmp -s "$T/out" "$T/jfk.txt"
expect 0 $TO $R -m "$M" -t 2 -v "$J" && check "-v: the RTF line on stderr" \
	grep -q "^tern-vad: $J: 11.000 s of audio (WAV (PCM 16-bit), 16000 Hz, 1 channel): 4 segments, .* RTF " "$T/err"
expect 0 $TO $R -m "$M" -q "$J" && check "-q: nothing on stderr" test ! -s "$T/err"

expect 0 $TO $R -m "$M" --json "$J"
check "--json: the document, parsed and checked" $PYTHON -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["model"] == sys.argv[2] and d["model_version"] == "v6" and d["sample_rate"] == 16000 and d["window"] == 512
p = d["parameters"]
assert p == {"threshold": 0.5, "min_speech_duration_ms": 250, "min_silence_duration_ms": 100,
             "max_speech_duration_s": None, "speech_pad_ms": 30, "samples_overlap": 0.1}, p
assert len(d["files"]) == 1
f = d["files"][0]
assert f["file"] == sys.argv[3] and f["format"] == "WAV (PCM 16-bit)" and f["source_rate"] == 16000
assert f["channels"] == 1 and f["samples"] == 176000 and f["duration"] == 11.0 and f["windows"] == 344
s = f["segments"]
assert [round(x["start"] * 100) for x in s] == [32, 327, 538, 816], s
assert [round(x["end"] * 100) for x in s] == [227, 441, 768, 1062], s
speech = 0
for x in s:
    assert x["start"] == round(x["start_sample"] / 16) / 1000 and x["end"] == round(x["end_sample"] / 16) / 1000, x
    assert 0 <= x["start_sample"] < x["end_sample"] <= 176000
    speech += x["end_sample"] - x["start_sample"]
assert f["speech_ratio"] == round(speech / 176000, 4) and len(str(f["speech_ratio"])) <= 6 and f["speech"] == round(speech / 16) / 1000
assert f["timings"]["decode_ms"] >= 0 and f["timings"]["vad_ms"] > 0
assert "probs" not in f
' "$T/out" "$M" "$J"
expect 0 $TO $R -m "$M" --csv "$J"
check "--csv: a header and four rows" test "$(cat "$T/out")" = "file,start,end
$J,0.322,2.270
$J,3.266,4.414
$J,5.378,7.678
$J,8.162,10.622"
expect 0 $TO $R -m "$M" --probs "$J"
check "--probs: 344 windows, 32 ms apart, probabilities in 0..1" $PYTHON -c '
import sys
rows = [l.split() for l in open(sys.argv[1])]
assert len(rows) == 344, len(rows)
for i, (t, p) in enumerate(rows):
    assert t == "%.3f" % (i * 0.032), (i, t)
    assert 0 <= float(p) <= 1
' "$T/out"
expect 0 $TO $R -m "$M" --probs --csv "$J" && check "--probs --csv: file,time,prob" \
	test "$(head -2 "$T/out" | tail -1 | cut -d, -f1,2)" = "$J,0.000"
check "--probs --csv: 345 lines" test "$(wc -l <"$T/out")" -eq 345
# other segment parameters against whisper.cpp's (tests/data/vad/cli_params.json)
while IFS= read -r args; do
	ours=$(sed 's/--threshold/-vt/; s/--min-speech-ms/-vspd/; s/--min-silence-ms/-vsd/; s/--speech-pad-ms/-vp/; s/--max-speech-s/-vmsd/' <<<"$args")
	expect 0 $TO $R -m "$M" $ours --json "$J" || continue
	check "$ours: whisper.cpp's segments" $PYTHON -c '
import json, sys
ref = next(r for r in json.load(open(sys.argv[1])) if r["ref_args"] == sys.argv[3])
d = json.load(open(sys.argv[2]))
got = [((s["start_sample"] * 100 + 8000) // 16000, (s["end_sample"] * 100 + 8000) // 16000) for s in d["files"][0]["segments"]]
want = [(s["start_cs"], s["end_cs"]) for s in ref["segments_cs"]]
assert got == want, (got, want)
p = d["parameters"]
assert abs(p["threshold"] - ref["params"]["threshold"]) < 1e-6 and p["speech_pad_ms"] == ref["params"]["speech_pad_ms"]
assert p["min_speech_duration_ms"] == ref["params"]["min_speech_ms"] and p["min_silence_duration_ms"] == ref["params"]["min_silence_ms"]
' tests/data/vad/cli_params.json "$T/out" "$args"
done < <($PYTHON -c 'import json; [print(r["ref_args"]) for r in json.load(open("tests/data/vad/cli_params.json"))]')

# ---- output files -----------------------------------------------------------------------
cp "$J" "$T/jfk.wav"
expect 0 $TO $R -m "$M" -oj -ocsv -osrt "$T/jfk.wav"
check "-oj -ocsv -osrt: FILE.json, FILE.csv and FILE.srt beside FILE" test -s "$T/jfk.wav.json" -a -s "$T/jfk.wav.csv" -a -s "$T/jfk.wav.srt"
check "stdout still gets the segments" cmp -s "$T/out" "$T/jfk.txt"
check "the JSON file is the --json document" $PYTHON -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert [x["start_sample"] for x in d["files"][0]["segments"]] == [5152, 52256, 86048, 130592], d' "$T/jfk.wav.json"
check "the SRT: one numbered cue per segment, a blank line after it" test "$(head -5 "$T/jfk.wav.srt")" = "1
00:00:00,322 --> 00:00:02,270
[speech]

2"
check "the SRT: four cues" test "$(grep -c -- '-->' "$T/jfk.wav.srt")" -eq 4
check "the CSV file" test "$(sed -n 2p "$T/jfk.wav.csv")" = "$T/jfk.wav,0.322,2.270"
expect 0 $TO $R -m "$M" -osrt -of "$T/talk" - <"$J" && check "-of names the file, also for stdin" test -s "$T/talk.srt"
check "-of: the same cues" cmp -s "$T/talk.srt" "$T/jfk.wav.srt"
expect 1 $TO $R -m "$M" -oj -of /nonexistent/dir/x "$J" && check "an output that cannot be written: one line, status 1" \
	one_line_err "tern-vad: /nonexistent/dir/x.json: cannot create"

# ---- several files, standard input -------------------------------------------------------
expect 0 $TO $R -m "$M" "$J" "$A/jfk_pad.flac"
check "several files: FILE: before each segment" test "$(cat "$T/out")" = "$J: 0.322 --> 2.270
$J: 3.266 --> 4.414
$J: 5.378 --> 7.678
$J: 8.162 --> 10.622
$A/jfk_pad.flac: 1.794 --> 3.774"
cp "$T/out" "$T/two.txt"
expect 0 $TO $R -m "$M" -f "$J" "$A/jfk_pad.flac" && check "-f FILE before the FILE arguments" cmp -s "$T/out" "$T/two.txt"
expect 0 $TO $R -m "$M" -t 2 "$J" "$A/jfk_pad.flac" && check "-t 2: the same output, in order" cmp -s "$T/out" "$T/two.txt"
expect 0 $TO $R -m "$M" --probs "$J" "$A/silence.flac"
check "--probs with several files: # FILE headers, blocks apart" test "$(grep -c '^# ' "$T/out")" -eq 2 -a "$(grep -c '^$' "$T/out")" -eq 1
cat "$J" | $TO $R -m "$M" - >"$T/out" 2>"$T/err"
check "stdin (a pipe) gives the file's segments" cmp -s "$T/out" "$T/jfk.txt"
$TO $R -m "$M" - <"$J" >"$T/out" 2>"$T/err"
check "stdin (a file) gives the file's segments" cmp -s "$T/out" "$T/jfk.txt"
$TO $R -m "$M" "$A/jfk_44k_stereo.ogg" >"$T/ogg.txt"
cat "$A/jfk_44k_stereo.ogg" | $TO $R -m "$M" - >"$T/out" 2>"$T/err"
check "an Ogg file through a pipe" cmp -s "$T/out" "$T/ogg.txt"
set -o pipefail
$TO $R -m "$M" --probs "$J" "$J" "$J" 2>"$T/err" | head -1 >/dev/null
st=$?
set +o pipefail
check "a closed pipe: status 0 ($st), nothing on stderr" test "$st" -eq 0 -a ! -s "$T/err"

# ---- bad audio ---------------------------------------------------------------------------
printf 'this is not audio at all, but some text that goes on for a while\n' >"$T/garbage.wav"
: >"$T/empty.wav"
head -c 20 "$J" >"$T/trunc.wav"
expect 65 $R -m "$M" "$T/garbage.wav" && check "garbage: one line, 65" \
	one_line_err "tern-vad: $T/garbage.wav: not audio that libsndfile can read"
expect 65 $R -m "$M" "$T/empty.wav" && check "an empty file: one line, 65" one_line_err "tern-vad: $T/empty.wav: empty file"
expect 65 $R -m "$M" "$T/trunc.wav" && check "a truncated header: one line, 65" one_line_err "tern-vad: $T/trunc.wav: not audio"
expect 65 $R -m "$M" - <"$T/garbage.wav" && check "garbage on stdin" one_line_err "tern-vad: -: not audio"
expect 1 $R -m "$M" /nonexistent.wav && check "a missing file: one line, 1" one_line_err "tern-vad: /nonexistent.wav: cannot open"
expect 1 $R -m "$M" "$T" && check "a directory: one line, 1" one_line_err "tern-vad: $T: cannot read: is a directory"
expect 65 $TO $R -m "$M" "$T/garbage.wav" "$J" && check "a bad file among good ones: the others still run" \
	test "$(wc -l <"$T/out")" -eq 4
expect 65 $TO $R -m "$M" --json "$T/garbage.wav" "$J"
check "--json: the bad file has an error, the good one its segments" $PYTHON -c '
import json, sys
f = json.load(open(sys.argv[1]))["files"]
assert set(f[0]) == {"file", "error"} and f[0]["error"].startswith("not audio"), f[0]
assert len(f[1]["segments"]) == 4' "$T/out"
$PYTHON -c 'import sys
d = bytearray(open(sys.argv[1], "rb").read())
d[5000:6000] = bytes(1000)
open(sys.argv[2], "wb").write(d)' "$A/jfk_noise.mp3" "$T/damaged.mp3"
expect 0 $TO $R -m "$M" "$T/damaged.mp3" && check "a damaged MP3: segments, and libmpg123 kept quiet" test -s "$T/out" -a ! -s "$T/err"
head -c 100000 "$J" >"$T/cut.wav"
expect 0 $TO $R -m "$M" --json "$T/cut.wav" && check "a WAV cut in its data: what is there" $PYTHON -c '
import json, sys
f = json.load(open(sys.argv[1]))["files"][0]
assert f["samples"] == (100000 - 78) // 2, f["samples"]' "$T/out"

# ---- the corpus against whisper.cpp --------------------------------------------------------
# (a) the same samples: the same segments, probabilities within 1e-5;
# (b) whisper.cpp's own reader (miniaudio: another Vorbis/MP3 decoder and a
# linear resampler where tern uses libsamplerate's sinc): the probabilities
# near a boundary differ a little, which moves it by whole windows: each
# boundary within two windows (1024 samples, 6.4 cs).
for ref in tests/data/vad/corpus/*.json; do
	f=$A/$(basename "$ref" .json)
	expect 0 $TO $R -m "$M" --json --probs "$f" || continue
	check "$(basename "$f"): whisper.cpp's probabilities and segments" $PYTHON -c '
import hashlib, json, sys
ref = json.load(open(sys.argv[1]))
f = json.load(open(sys.argv[2]))["files"][0]
path = sys.argv[3]
assert hashlib.sha256(open(path, "rb").read()).hexdigest() == ref["sha256"], "the corpus file changed: rerun scripts/gen_vad_ref.sh"
assert f["samples"] == ref["n_samples"], (f["samples"], ref["n_samples"])
assert len(f["probs"]) == len(ref["probs"])
# lib/speech sums in the order ggml does: the same floats, up to the reference
# printing (%.9g); 1e-5 leaves room for another SIMD path, 1e-4 was asked
worst = max((abs(a - b) for a, b in zip(f["probs"], ref["probs"])), default=0)
assert worst < 1e-5, worst
cs = lambda s: (s * 100 + 8000) // 16000
got = [(cs(s["start_sample"]), cs(s["end_sample"])) for s in f["segments"]]
want = [(s["start_cs"], s["end_cs"]) for s in ref["segments_cs"]]
# whisper.cpp reports an end in the zero padding of the last window; tern ends it with the audio
want = [(a, min(b, cs(ref["n_samples"]))) for a, b in want]
assert got == want, (got, want)
if ref["whisper_reader"] is not None:
    r = [(s["start_cs"], s["end_cs"]) for s in ref["whisper_reader"]]
    assert len(r) == len(got), (got, r)
    for (a, b), (c, d) in zip(got, r):
        assert abs(a - c) <= 6.4 and abs(b - d) <= 6.4, (got, r)
' "$ref" "$T/out" "$f"
done
finish

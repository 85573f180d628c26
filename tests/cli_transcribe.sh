#!/usr/bin/env bash
# cli_transcribe.sh - tern-transcribe as scripts use it: usage errors and
# exit codes; tiny.en on jfk.wav against whisper-cli's outputs
# (tests/data/whisper/jfk.greedy.*: whisper-cli -t 2 -bs 1 and its
# -otxt/-osrt/-ovtt/-ocsv/-oj files, byte for byte but the JSON's system
# information and model path), -nt, the default beam search (whisper-cli's
# words, times within 20 ms), 34.5 s in three windows, -ot/-d and --prompt
# (whisper-cli -bs 1's output), --json through a JSON parser, SRT structure, standard
# input, several files, bad audio. The model runs are skipped
# without the model.
. "$(dirname "$0")/lib.sh"
R=$BIN/transcribe
M=$DATA/models/ggml-tiny.en.bin
J=$DATA/audio/jfk.wav
W=tests/data/whisper
unset TERN_WHISPER_MODEL
TO="timeout 300"

# ---- without a model ------------------------------------------------------------
expect 0 $R --help && check "help shows usage" grep -q '^usage: tern-transcribe \[-m MODEL\] \[OPTIONS\] FILE...' "$T/out"
check "help lists whisper-cli's spellings" grep -q -- '-bs, --beam-size N' "$T/out"
expect 2 $R "$J" && check "no model: one line" one_line_err "tern-transcribe: no model: give -m MODEL or set TERN_WHISPER_MODEL"
expect 2 $R -m "$M" && check "no FILE" one_line_err "tern-transcribe: no input"
expect 2 $R -m "$M" --bogus "$J" && check "unknown option" one_line_err "tern-transcribe: unknown option '--bogus'"
expect 2 $R -m "$M" -bs 0 "$J" && check "beam size 0" one_line_err "tern-transcribe: option '-bs'"
expect 2 $R -m "$M" -bs 9 "$J"
expect 2 $R -m "$M" -nth 2 "$J" && check "-nth above 1" one_line_err "tern-transcribe: a temperature"
expect 2 $R -m "$M" -tp nan "$J"
expect 2 $R -m "$M" -l xx "$J" && check "unknown language" one_line_err "tern-transcribe: unknown language 'xx'"
expect 2 $R -m "$M" -of x "$J" && check "-of needs an output" one_line_err "tern-transcribe: --output-file needs"
expect 2 $R -m "$M" -otxt -of a -of b "$J" && check "more -of than files" one_line_err "tern-transcribe: 2 -of names for 1 files"
expect 2 $R -m "$M" -otxt - <"$J" && check "stdin with -otxt needs -of" one_line_err "tern-transcribe: standard input needs -of"
expect 2 $R -m "$M" - - <"$J" && check "stdin twice" one_line_err "tern-transcribe: standard input (-) can be read only once"
expect 1 $R -m /nonexistent.bin "$J" && check "missing model: one line" one_line_err "tern-transcribe: /nonexistent.bin: "
TERN_WHISPER_MODEL=/nonexistent.bin expect 1 $R "$J" && check "TERN_WHISPER_MODEL is the default model" \
	one_line_err "tern-transcribe: /nonexistent.bin: "

if [ ! -f "$M" ]; then
	echo "SKIP: the model runs (no $M)"
	finish
fi
expect 65 $R -m "$J" "$J" && check "a model that is not Whisper: one line, 65" one_line_err "tern-transcribe: $J: "

# ---- jfk.wav, greedy ------------------------------------------------------------------
expect 0 $TO $R -m "$M" -t 2 -bs 1 -otxt -osrt -ovtt -ocsv -oj -of "$T/g" "$J"
check "greedy: whisper-cli -bs 1's stdout" cmp -s "$T/out" $W/jfk.greedy.out
check "nothing on stderr without -v" test ! -s "$T/err"
for x in txt srt vtt csv; do
	check "greedy: whisper-cli's .$x" cmp -s "$T/g.$x" $W/jfk.greedy.$x
done
check "greedy: whisper-cli's .json but its system line and model path" $PYTHON -c '
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for d in (a, b):
    del d["systeminfo"], d["params"]["model"]
assert a == b, (a, b)' "$T/g.json" $W/jfk.greedy.json
check "SRT: numbered cues, comma times, blank line after each" $PYTHON -c '
import re, sys
cues = open(sys.argv[1]).read().split("\n\n")
assert cues[-1] == "", cues
for i, c in enumerate(cues[:-1]):
    n, t, text = c.split("\n")
    assert int(n) == i + 1 and re.fullmatch(r"\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}", t), c
    assert text.strip()' "$T/g.srt"

TERN_WHISPER_MODEL=$M expect 0 $TO $R -bs 1 -nt - <"$J"
check "-nt from stdin: whisper-cli -nt's text and a newline" test "$(cat "$T/out")" = "$(cat $W/jfk.greedy_nt.out)"

# ---- default: beam search 5 ------------------------------------------------------------------
expect 0 $TO $R -m "$M" -t 2 -v "$J"
check "beam: whisper-cli's words, times within 20 ms" $PYTHON -c '
import re, sys
def segs(p):
    return [(m.group(1), m.group(2), m.group(3)) for m in re.finditer(r"\[(\S+) --> (\S+)\]  (.*)", open(p).read())]
def ms(t):
    h, m, s = t.split(":"); return round((int(h) * 3600 + int(m) * 60 + float(s)) * 1000)
a, b = segs(sys.argv[1]), segs(sys.argv[2])
assert len(a) == len(b) == 2, (a, b)
for x, y in zip(a, b):
    assert x[2] == y[2] and abs(ms(x[0]) - ms(y[0])) <= 20 and abs(ms(x[1]) - ms(y[1])) <= 20, (x, y)' "$T/out" $W/jfk.beam.out
check "-v: timings and the real-time factor" grep -q "encode .* ms.*RTF" "$T/err"

# ---- three windows: jfk.wav, 0.5 s of silence, jfk.wav, 1 s, jfk.wav (34.5 s) -----------------
$PYTHON -c '
import sys, wave
r = wave.open(sys.argv[1], "rb"); d = r.readframes(r.getnframes())
w = wave.open(sys.argv[2], "wb"); w.setparams(r.getparams())
w.writeframes(d + b"\0\0" * 8000 + d + b"\0\0" * 16000 + d); w.close()' "$J" "$T/jfk3.wav"
expect 0 $TO $R -m "$M" -t 2 -bs 1 "$T/jfk3.wav"
check "34.5 s: whisper-cli -bs 1's windows, seeks and conditioning" cmp -s "$T/out" $W/jfk3.greedy.out
expect 0 $TO $R -m "$M" -t 2 -bs 1 -ot 5000 -d 20000 "$T/jfk3.wav"
check "-ot 5000 -d 20000: whisper-cli's" cmp -s "$T/out" $W/jfk3.greedy.ot5000.d20000.out
expect 0 $TO $R -m "$M" -t 2 -bs 1 --prompt "Hello,   world  -- it's 42 o'clock; don't panic!  ok?" "$J"
check "--prompt (contractions, space runs, digits): whisper-cli's" cmp -s "$T/out" $W/jfk.greedy.prompt.out

# ---- --json, several files, bad audio ----------------------------------------------------------
printf 'this is not audio at all, but some text that goes on for a while\n' >"$T/garbage.wav"
expect 65 $TO $R -m "$M" -bs 1 --json "$J" "$T/garbage.wav"
check "--json: a document with the segments, tokens and the failed file" $PYTHON -c '
import json, sys
d = json.load(open(sys.argv[1]))
f = d["files"]
assert len(f) == 2 and d["model"]["multilingual"] is False
s = f[0]["segments"]
assert [(x["t0"], x["t1"]) for x in s] == [(0.0, 8.0), (8.0, 11.0)], s
assert "".join(x["text"] for x in s) == " And so my fellow Americans ask not what your country can do for you ask what you can do for your country."
for x in s:
    assert "".join(t["text"] for t in x["tokens"]) == x["text"]
    assert all(0 < t["p"] <= 1 for t in x["tokens"])
assert f[0]["timings"]["encode"] > 0
assert set(f[1]) == {"file", "error"} and f[1]["error"].startswith("not audio"), f[1]' "$T/out"
check "bad audio: one line on stderr" one_line_err "tern-transcribe: $T/garbage.wav: not audio"
finish

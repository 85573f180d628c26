# lib.sh - helpers for the black-box tests of the executables (sourced).
# expect STATUS CMD...: run CMD, fail unless it exits with STATUS and was not
# killed by a signal. Output goes to $T/out, stderr to $T/err.
set -u
BIN=${BIN:-bin}
DATA=${TERN_DATA:-../shared/data}
PYTHON=${PYTHON:-python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
nfail=0 nok=0
expect() {
	local want=$1; shift
	"$@" >"$T/out" 2>"$T/err"
	local got=$?
	if [ "$got" -ne "$want" ]; then
		echo "FAIL: expected exit $want, got $got: $*"
		sed 's/^/  stderr: /' "$T/err" | head -5
		nfail=$((nfail + 1))
		return 1
	fi
	nok=$((nok + 1))
	return 0
}
# check DESCRIPTION COMMAND...: a shell condition that must hold
check() {
	local what=$1; shift
	if "$@"; then nok=$((nok + 1)); else echo "FAIL: $what"; nfail=$((nfail + 1)); fi
}
one_line_err() { [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "^$1" "$T/err"; }
# named_templates_gguf SRC OUT: a copy of the GGUF file SRC with three chat
# templates, written by gguf-py's gguf_new_metadata from a
# tokenizer_config.json as transformers saves named ones: the default
# ("D:" + contents, "+tools" when `tools` is defined), tool_use ("T" +
# the number of tools + ":" + contents) and rag ("R:" + [role]contents);
# false when $PYTHON has no gguf-py
named_templates_gguf() {
	$PYTHON -c 'import gguf' 2>/dev/null || return 1
	cat >"$T/tokenizer_config.json" <<'EOF_CFG'
{"chat_template": [
 {"name": "default", "template": "D:{% for m in messages %}{{ m.content }}{% endfor %}{% if tools is defined %}+tools{% endif %}"},
 {"name": "tool_use", "template": "T{{ tools|length }}:{% for m in messages %}{{ m.content }}{% endfor %}"},
 {"name": "rag", "template": "R:{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"}]}
EOF_CFG
	$PYTHON -m gguf.scripts.gguf_new_metadata --force --chat-template-config "$T/tokenizer_config.json" "$1" "$2" \
		>/dev/null 2>&1
}
# full: true but under SANITIZE=1, where a script may leave to the plain run
# the model runs that take a path another of its runs already took
full() { [ "${SANITIZE:-}" != 1 ]; }
# synth_gen: build scripts/gen_synth_llm.c against this build's libtern.a
# into $T/gen (the synthetic models: "$T/gen ARCH TYPE FILE"); false, after
# saying why, when it cannot be built
synth_gen() {
	local lib=${OUT:-build/release}/libtern.a
	if [ ! -f "$lib" ]; then
		echo "SKIP: no $lib to build the model generator"
		return 1
	fi
	local flags="-std=c11 -O1 -ffp-contract=off -I."
	[ "${SANITIZE:-}" = 1 ] && flags="$flags -fsanitize=address,undefined"
	expect 0 cc $flags scripts/gen_synth_llm.c "$lib" $(pkg-config --libs libpcre2-8 libutf8proc 2>/dev/null) \
		-lpthread -lm -o "$T/gen"
}
finish() {
	if [ "$nfail" -eq 0 ]; then echo "PASS: $nok checks"; exit 0; fi
	echo "FAIL: $nfail of $((nok + nfail)) checks"; exit 1
}

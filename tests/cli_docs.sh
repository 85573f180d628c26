#!/usr/bin/env bash
# cli_docs.sh - the man pages and completions are generated from each
# executable's option table; the committed copies must match what the
# binaries generate now, and the bash completion must actually complete.
. "$(dirname "$0")/lib.sh"
for b in "$BIN"/*; do
	n=$(basename "$b")
	expect 0 "$b" --help-man && check "man/tern-$n.1 is up to date (run 'make man')" cmp -s "$T/out" "man/tern-$n.1"
	expect 0 "$b" --completion bash && check "completions/tern-$n.bash is up to date" cmp -s "$T/out" "completions/tern-$n.bash"
	expect 0 "$b" --completion zsh && check "completions/_tern-$n is up to date" cmp -s "$T/out" "completions/_tern-$n"
	expect 0 "$b" --completion fish && check "completions/tern-$n.fish is up to date" cmp -s "$T/out" "completions/tern-$n.fish"
	check "tern-$n.bash parses" bash -n "completions/tern-$n.bash"
	# every long option in --help appears in the man page and completions
	"$b" --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u >"$T/opts"
	while read -r o; do
		check "man page of $n documents $o" grep -q -- "\\\\-\\\\-${o#--}" "man/tern-$n.1"
		check "bash completion of $n offers $o" grep -q -- "$o " "completions/tern-$n.bash"
		check "fish completion of $n offers $o" grep -q -- "-l ${o#--}" "completions/tern-$n.fish"
	done <"$T/opts"
	if command -v groff >/dev/null; then
		check "tern-$n.1 renders without warnings" test -z "$(groff -man -Tutf8 -ww -z "man/tern-$n.1" 2>&1)"
	fi
done
# the bash completion completes options and file names by extension
mkdir -p "$T/c" && touch "$T/c/model.gguf" "$T/c/notes.txt"
root=$PWD
out=$(cd "$T/c" && bash -c '. '"$root"'/completions/tern-inspect.bash
	COMP_WORDS=(tern-inspect --ten); COMP_CWORD=1; _tern_inspect; echo "${COMPREPLY[*]}"
	COMP_WORDS=(tern-inspect ""); COMP_CWORD=1; _tern_inspect; echo "${COMPREPLY[*]}"')
check "bash completes --ten to --tensor" grep -q -- '--tensor' <<<"$(echo "$out" | head -1)"
check "bash completes FILE by extension" test "$(echo "$out" | tail -1)" = "model.gguf"
finish

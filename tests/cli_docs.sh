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
	# one ENVIRONMENT section; SEE ALSO names only pages that exist here
	check "tern-$n.1 has one ENVIRONMENT section" test "$(grep -c '^\.SH ENVIRONMENT' "man/tern-$n.1")" -eq 1
	for ref in $(sed -n '/^\.SH SEE ALSO/,/^\.SH/p' "man/tern-$n.1" | grep -o 'tern\\-[a-z]*(1)' | sed 's/\\//; s/(1)//'); do
		check "tern-$n.1: SEE ALSO names $ref, which exists" test -f "man/$ref.1"
	done
	check "tern-$n.1 does not name itself in SEE ALSO" test -z "$(sed -n '/^\.SH SEE ALSO/,$p' "man/tern-$n.1" | grep "tern\\\\-$n(1)")"
	# every option's text is a sentence: it ends with a period before any "One of:"
	check "tern-$n.1: option texts end with a period" test -z "$(grep -E '[^.] One of: ' "man/tern-$n.1")"
	check "tern-$n.1: a choice list ends with a period" test -z "$(grep -E 'One of: [^.]*$' "man/tern-$n.1")"
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

# the rules between options are stated where users read them
check "man page states what --raw needs" grep -q 'float32 to stdout (one FILE)\. Needs \\-\\-tensor\. Cannot be combined with \\-\\-json or \\-\\-values\.' man/tern-inspect.1
check "man page states exclusions on both sides" grep -q '^print JSON .*Cannot be combined with .*\\-\\-raw' man/tern-inspect.1
# a paragraph of more than 1024 bytes is written whole, on one line
check "a long paragraph whole: tern-run's chat templates" \
	grep -q 'A template the engine cannot render .* The text is tokenized with special\\-token text parsed\.$' man/tern-run.1
check "a long paragraph whole: tern-transcribe's -dl" grep -q 'With \\-dl standard output carries one line per file, its name, a colon and the five likeliest' man/tern-transcribe.1
check "help states what --raw needs" grep -q 'needs --tensor; not with --json or --values' <<<"$("$BIN/inspect" --help | tr -s ' \n' ' ')"
# the README says how the installed pages and completions are found
check "README: make install PREFIX=~/.local" grep -q 'make install PREFIX=~/.local' README.md
check "README: MANPATH" grep -q 'MANPATH' README.md
check "README: zsh fpath" grep -q 'fpath' README.md
finish

#!/usr/bin/env bash
# cli_install.sh - make install puts bin/X in PREFIX/bin as tern-X with its
# man page and completions; make uninstall removes exactly those files.
. "$(dirname "$0")/lib.sh"
P=$T/prefix
mk() { make --no-print-directory -s ${SANITIZE:+SANITIZE=$SANITIZE} PREFIX="$P" "$@"; }
expect 0 mk install
for b in "$BIN"/*; do
	n=$(basename "$b")
	check "tern-$n installed" test -x "$P/bin/tern-$n"
	check "tern-$n man page" test -f "$P/share/man/man1/tern-$n.1"
	check "tern-$n bash completion" test -f "$P/share/bash-completion/completions/tern-$n"
	check "tern-$n zsh completion" test -f "$P/share/zsh/site-functions/_tern-$n"
	check "tern-$n fish completion" test -f "$P/share/fish/vendor_completions.d/tern-$n.fish"
	expect 0 "$P/bin/tern-$n" --version && check "installed tern-$n runs" grep -q "^tern-$n " "$T/out"
done
# man-db finds the pages from PATH alone (README: no MANPATH needed)
if command -v manpath >/dev/null; then
	check "man finds the installed page through PATH" \
		test "$(env -u MANPATH PATH="$P/bin:/usr/bin:/bin" man -w tern-inspect 2>/dev/null)" = "$P/share/man/man1/tern-inspect.1"
fi
expect 0 mk uninstall
check "uninstall leaves no files" test -z "$(find "$P" -type f)"
finish

#!/usr/bin/env bash
# check_layers.sh - the include order of README's "Layout" holds.
#
# Every project include is written from the repository root ("lib/format/gguf.h",
# built with -I. only) and points down the layers, never up or sideways:
#
#   0 lib/core    errors, UTF-8, file mapping, byte cursor, name map
#   1 quant       block formats and kernels
#   2 lib/format  GGUF and legacy ggml readers, the model-file view, arch keys
#   3 tokenizer lib/jinja lib/audio  (each on its own)
#   4 lib         the engine's interfaces (backend.h; gpu/device.h, what every
#                 device reports, and gpu/plan.h, the memory planner)
#   5 lib/cpu gpu/cuda gpu/vulkan  backends (each on its own: no backend includes another)
#   6 lib/llm lib/speech  models (through backend.h, never a backend's files)
#   6 gpu/registry  the devices by name and the backend factory (opens the backends;
#                 the models never include it)
#   7 cmd         programs and their shared CLI code
#
# tests/ and scripts/ may include anything. The script checks the tree, then
# proves that it would notice: a planted upward include must fail the check.
set -u
cd "$(dirname "$0")/.."

layer() { # path -> "rank group", or nothing for unranked paths
	case $1 in
	lib/core/*) echo "0 core" ;;
	quant/*) echo "1 quant" ;;
	lib/format/*) echo "2 format" ;;
	tokenizer/*) echo "3 tokenizer" ;;
	lib/jinja/*) echo "3 jinja" ;;
	lib/audio/*) echo "3 audio" ;;
	lib/cpu/*) echo "5 cpu" ;;
	gpu/cuda/*) echo "5 cuda" ;;
	gpu/vulkan/*) echo "5 vulkan" ;;
	gpu/registry.*) echo "6 registry" ;;
	gpu/*) echo "4 engine" ;;
	lib/llm/*) echo "6 llm" ;;
	lib/speech/*) echo "6 speech" ;;
	lib/*/*) echo "9 unknown" ;; # a new lib/ folder must be given a rank here
	lib/*) echo "4 engine" ;;
	cmd/*) echo "7 cmd" ;;
	esac
}

# check ROOT: prints one line per violation, returns 1 if any.
check() {
	local root=$1 bad=0 f line inc src dst
	while IFS= read -r f; do
		src=$(layer "$f")
		[ -n "$src" ] || continue
		if [ "${src%% *}" = 9 ]; then
			echo "$f: folder has no layer in tests/check_layers.sh"; bad=1; continue
		fi
		while IFS= read -r line; do
			inc=${line#*\"}; inc=${inc%%\"*}
			if [ ! -e "$root/$inc" ]; then
				echo "$f: #include \"$inc\" is not a path from the repository root"; bad=1; continue
			fi
			dst=$(layer "$inc")
			[ -n "$dst" ] || { echo "$f: includes $inc outside the library"; bad=1; continue; }
			[ "${src#* }" = "${dst#* }" ] && continue
			if [ "${dst%% *}" -ge "${src%% *}" ]; then
				echo "$f (${src#* }) includes $inc (${dst#* }): points up or sideways"; bad=1
			fi
			case "${src#* }:${dst#* }" in
			llm:cpu | llm:cuda | llm:vulkan | llm:registry | speech:cpu | speech:cuda | speech:vulkan | speech:registry)
				echo "$f includes $inc: models use lib/backend.h, not a backend"; bad=1 ;;
			esac
		done < <(grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]+"' "$root/$f")
	done < <(cd "$root" && find lib quant tokenizer gpu cmd -type f \( -name '*.c' -o -name '*.h' -o -name '*.inc' -o -name '*.cu' -o -name '*.cuh' \) 2>/dev/null | LC_ALL=C sort)
	return $bad
}

nfail=0
if out=$(check .); then
	echo "ok: include order"
else
	echo "$out"; echo "FAIL: include order"; nfail=1
fi

# The check must catch what it exists for: copy the tree, plant an upward
# include in the lowest layer, and expect a failure naming it.
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
for d in lib quant tokenizer cmd; do cp -r "$d" "$T/"; done
[ -d gpu ] && cp -r gpu "$T/"
printf '#include "tokenizer/tok.h"\n' >>"$T/lib/core/error.c"
if out=$(check "$T"); then
	echo "FAIL: a planted include of tokenizer/ in lib/core/ was not noticed"; nfail=1
elif ! grep -q 'lib/core/error.c (core) includes tokenizer/tok.h' <<<"$out"; then
	echo "FAIL: the planted include was not the one reported: $out"; nfail=1
else
	echo "ok: a planted upward include is reported"
fi

[ "$nfail" -eq 0 ] && { echo "PASS: 2 checks"; exit 0; }
echo "FAIL: $nfail of 2 checks"; exit 1

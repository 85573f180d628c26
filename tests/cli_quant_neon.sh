#!/usr/bin/env bash
# cli_quant_neon.sh - the quant kernels on ARM64: cross-compiles quant/ and
# tests/cross/check_kernels.c with Debian's aarch64-linux-gnu-gcc and runs
# the checks under qemu-user, once on a CPU with dotprod (the NEON kernels)
# and once without (the scalar fallbacks). Prints SKIP when the cross
# compiler or qemu is not installed (make deps installs both).
set -eu
cd "$(dirname "$0")/.."
CC=aarch64-linux-gnu-gcc
if ! command -v $CC >/dev/null 2>&1 || ! command -v qemu-aarch64 >/dev/null 2>&1; then
	echo "SKIP: no $CC or qemu-aarch64"
	exit 0
fi
out=${OUT:-build/release}/cross-aarch64
mkdir -p "$out"
flags="-std=c11 -O2 -Wall -Wextra -Wshadow -Wno-unused-parameter -D_GNU_SOURCE -I."
[ -n "${CI:-}" ] && flags="$flags -Werror"
objs=()
for f in quant/*.c lib/core/error.c; do
	case $f in *_avx2.c | *_avx512.c) continue ;; esac
	extra=
	case $f in *_neon.c) extra="-march=armv8.2-a+dotprod+fp16" ;; esac
	o=$out/$(basename "$f" .c).o
	$CC $flags $extra -c "$f" -o "$o"
	objs+=("$o")
done
$CC $flags tests/cross/check_kernels.c "${objs[@]}" -lm -lpthread -o "$out/check_kernels"
status=0
for cpu in max cortex-a72; do
	echo "== qemu-aarch64 -cpu $cpu"
	qemu-aarch64 -cpu $cpu -L /usr/aarch64-linux-gnu "$out/check_kernels" tests/quant_ref || status=1
done
[ $status -eq 0 ] && echo PASS || echo FAIL
exit $status

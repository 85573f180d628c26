#!/usr/bin/env bash
# gpu_check.sh - the one command a session with a GPU machine runs: build tern
# with every backend the machine supports, run the op tests and the GPU
# end-to-end tests, then tern-bench prefill and decode on synthetic 1.1B and
# 7B llamas, everything written under one folder in at most 8 minutes.
#
#   scripts/gpu_check.sh --prepare      here, with network: fetch the .debs
#   scripts/gpu_check.sh [OUTDIR]       on the GPU machine (OUTDIR: $OUT,
#                                       else ./gpu-check-out)
#   scripts/gpu_check.sh --local [OUTDIR]   the same here without a GPU
#   scripts/gpu_check.sh [--local] [OUTDIR] --exec CMD...   CMD in the
#                                       environment the build gets, alone
#
# Why a prepare step. The GPU machine (the workplace's 'cuda' image: nvcc,
# gcc, Python; 16 cores, one H200; see /work/.library/device/) reaches no
# network and has none of tern's build dependencies. So --prepare, run in the
# root of the checkout the session sends (a Debian 12 machine with apt), puts
# into .gpudeps/ (git-ignored) the .debs of what the build and the tests
# need: the -dev packages of libsndfile, libsamplerate, fftw3, jansson, zlib,
# cmocka, pcre2, utf8proc, libedit and libmd, the Vulkan loader and headers,
# glslc, the validation layer, vulkaninfo, make and pkg-config, with every
# library they pull in except the C toolchain, libc and the interpreters
# (python3, perl), which the image has. It prints their size and that of the
# whole tree that travels (at most 64 MiB), and the call to make:
#
#   run(command="scripts/gpu_check.sh", carry=[".gpudeps"], timeout_s=540)
#
# On the GPU machine the .debs are unpacked with dpkg-deb -x into a private
# prefix in a temporary folder, never into / (the device README's exception
# for the Vulkan loader is not needed: the loader, like every library the
# image lacks, is found through LD_LIBRARY_PATH, which lists only libraries
# whose soname the system does not have, so no system program loads one of
# ours). pkg-config sees only the prefix's .pc files (PKG_CONFIG_LIBDIR,
# paths rewritten), the compiler its headers and libraries (CPATH, -L and
# -rpath-link in EXTRA_LDFLAGS), and make, pkg-config and glslc come from it
# only when the system has none. The NVIDIA Vulkan driver is found through
# its ICD file (VK_DRIVER_FILES and VK_ICD_FILENAMES; the device README names
# /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json).
#
# Phases, each timed, one line each in summary.txt; a phase that fails does
# not stop the later ones, and a bench that would overrun the budget
# (GPUCHECK_BUDGET seconds, 480 by default) is skipped with a line:
#   deps    unpack the prefix, set the environment
#   build   make -jN CUDA_ARCH=sm_90 (every backend found), the GPU tests
#   tests   on each GPU device the tools list (--list-devices: vulkan0,
#           cuda0, ...), the test programs that take one from
#           TERN_TEST_DEVICE (the op test test_backend_ops, test_offload,
#           test_llm: found by grep, as tests/run.sh runs them on vulkan0);
#           then once the other GPU tests found by name
#           (tests/test_*{vulkan,vk_,cuda,gpu,offload,device,plan}*.c,
#           tests/cli_*{gpu,vulkan,cuda,device,offload}*.sh), each under a
#           timeout
#   models  scripts/gen_synth_llm.c against the tree's libtern.a: bench-1b
#           (TinyLlama's shape) and bench-7b (Llama-2-7B's) in q4_k_m, q4_0
#           and q8_0, seconds each, written while the tests run
#   bench   bin/bench -m MODEL -p 512 -n 128 -r 3 -o jsonl, per model on each
#           GPU device that `bin/bench --list-devices` names (-dev NAME -ngl
#           all, when tern-bench has those options), and on the CPU for the
#           1.1B models only, as a reference
# What comes back, in OUTDIR (6 files, as the device's $OUT returns at most
# 8): summary.txt (the phase lines and a table of the results), env.txt (the
# machine: OS, glibc, compilers, GPU, Vulkan devices, the prefix's
# libraries), build.log, tests.log, bench.jsonl (tern-bench's JSON lines),
# bench.log (the generator's and tern-bench's stderr, and a last run's
# time per shader: TERN_GPU_PROFILE=1 on the first GPU). Exit 0 when every
# phase passed, 1 otherwise.
#
# --local runs the same here: the Vulkan device is Mesa's lavapipe, the
# benches smaller (bench-1b, -p 64 -n 16 -r 1; GPUCHECK_BUDGET 1800), the
# build in build/release-gpucheck (bin there too). When .gpudeps exists it
# builds against the unpacked prefix as the GPU machine does, and as root
# (with unshare) inside a private mount namespace in which the system's
# copies of the carried packages (headers, libraries, .pc files, glslc) are
# hidden, so that a build that passes used the prefix alone. A machine with
# no NVIDIA GPU (no nvidia-smi -L) runs as --local.
#
# Knobs (environment): GPUCHECK_BUDGET (seconds), GPUCHECK_JOBS,
# GPUCHECK_SIZES ("1b 7b"), GPUCHECK_TYPES ("q4_k_m q4_0 q8_0"),
# GPUCHECK_BENCH ("-p 512 -n 128 -r 3"), GPUCHECK_BENCH_BIN (the tern-bench
# to run, bin/bench), GPUCHECK_HIDE=0 (no namespace),
# GPUCHECK_KEEP_MODELS=1, CUDA_ARCH (sm_90).
set -u
export LC_ALL=C
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
DEPS=$ROOT/.gpudeps
TRIPLET=x86_64-linux-gnu
# The packages the build and tests need (Debian 12 names), the roots of the
# closure --prepare downloads.
ROOT_PKGS="libsndfile1-dev libsamplerate0-dev libfftw3-dev libjansson-dev zlib1g-dev
	libcmocka-dev libpcre2-dev libutf8proc-dev libedit-dev libmd-dev
	libvulkan-dev libvulkan1 glslc vulkan-validationlayers vulkan-tools libglvnd0 make pkgconf"
# Never downloaded nor followed: the C toolchain and libc, the interpreters
# and dpkg's own tools, which any image that runs nvcc and python3 has.
STOP_PKGS="libc6 libc6-dev libc-dev-bin linux-libc-dev libcrypt1 libcrypt-dev libgcc-s1 gcc-*-base
	libstdc++6 rpcsvc-proto libnsl* libtirpc* perl perl-* libperl* python3 python3-* python3.*
	libpython3* dpkg tar install-info debconf* mime-support media-types mailcap"
# --local: packages whose system copies stay visible in the namespace (the
# machine's own tools load them), as an image would have them too.
KEEP_PKGS="zlib1g libpcre2-8-0 libmd0 libbsd0 libtinfo6 libncurses6 libncursesw6 ncurses-bin libedit2
	libgomp1 libquadmath0 make pkgconf pkgconf-bin libpkgconf3 pkg-config libglvnd0 libffi8 libx11-6
	libxcb1 libxau6 libxdmcp6 libwayland-client0 libx11-data"
MAX_TREE=$((64 * 1024 * 1024))

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }
now() { echo "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

# ---- --prepare ------------------------------------------------------------------
# A private apt state (amd64 lists in a temp folder) so that the system's is
# untouched and an arm64 machine fetches amd64 packages too.
APT_TMP=
apt_o() {
	echo "-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=$APT_TMP/lists" \
		"-oDir::Cache=$APT_TMP/cache -oDebug::NoLocking=1$( [ "$(id -u)" = 0 ] && echo ' -oAPT::Sandbox::User=root')"
}

is_stop() {
	local p=$1 s
	for s in $STOP_PKGS; do
		# shellcheck disable=SC2254
		case $p in $s) return 0 ;; esac
	done
	return 1
}

# The direct dependencies of the packages named: the first of each group of
# alternatives, the first provider of a virtual package.
direct_deps() {
	# shellcheck disable=SC2046
	apt-cache $(apt_o) depends --no-recommends --no-suggests --no-conflicts --no-breaks \
		--no-replaces --no-enhances "$@" 2>/dev/null | awk '
		/^ [ |](Pre)?Depends: / {
			alt = substr($0, 2, 1) == "|"
			name = $2; sub(/:.*/, "", name)
			if (in_group) { in_group = alt; next }
			in_group = alt
			if (name ~ /^</) { want = 1; next }
			want = 0; print name; next
		}
		/^    [^ ]/ { if (want) { n = $1; sub(/:.*/, "", n); print n; want = 0 } next }
		{ want = 0 }'
}

prepare() {
	for c in apt-get apt-cache dpkg-deb; do
		command -v $c >/dev/null || { echo "gpu_check: --prepare needs $c (a Debian or Ubuntu machine)" >&2; return 1; }
	done
	APT_TMP=$(mktemp -d) || return 1
	trap 'rm -rf "$APT_TMP"' EXIT
	mkdir -p "$APT_TMP/lists/partial" "$APT_TMP/cache/archives/partial"
	echo "== apt-get update (amd64 lists in $APT_TMP)"
	# shellcheck disable=SC2046
	apt-get $(apt_o) -qq update || { echo "gpu_check: apt-get update failed" >&2; return 1; }
	# the closure, one apt-cache call per level
	declare -A seen=()
	local level=() next p d list=()
	for p in $ROOT_PKGS; do level+=("$p"); seen[$p]=1; done
	while [ ${#level[@]} -gt 0 ]; do
		list+=("${level[@]}")
		next=()
		for d in $(direct_deps "${level[@]}"); do
			[ -n "${seen[$d]:-}" ] && continue
			seen[$d]=1
			is_stop "$d" || next+=("$d")
		done
		level=("${next[@]}")
	done
	echo "== ${#list[@]} packages: ${list[*]}"
	rm -rf "$DEPS.new"
	mkdir -p "$DEPS.new" || return 1
	# shellcheck disable=SC2046
	(cd "$DEPS.new" && apt-get $(apt_o) -qq download "${list[@]}") ||
		{ echo "gpu_check: apt-get download failed" >&2; rm -rf "$DEPS.new"; return 1; }
	{
		echo "# gpu_check.sh --prepare, $(date -u +%FT%TZ), $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-?}")"
		# the newest glibc any of them asks for
		echo "# glibc >= $(for f in "$DEPS.new"/*.deb; do dpkg-deb -f "$f" Depends Pre-Depends; done |
			grep -o 'libc6 (>= [0-9.]*)' | sed 's/.*>= //; s/)//' | sort -V | tail -n1)"
		for f in "$DEPS.new"/*.deb; do
			printf '%s %s %s\n' "$(dpkg-deb -f "$f" Package)" "$(dpkg-deb -f "$f" Version)" "$(stat -c %s "$f")"
		done
	} >"$DEPS.new/MANIFEST"
	rm -rf "$DEPS" && mv "$DEPS.new" "$DEPS" || return 1
	local deps_b tree_b
	deps_b=$(du -cb "$DEPS"/* | tail -n1 | cut -f1)
	# what travels: tracked and untracked-not-ignored files (what git lists,
	# deleted ones aside), shared/ if the checkout has one, and .gpudeps
	tree_b=$(git ls-files -co --exclude-standard -z | xargs -0 stat -c %s 2>/dev/null |
		awk '{ s += $1 } END { print s + 0 }')
	[ -d shared ] && tree_b=$((tree_b + $(du -sb shared | cut -f1)))
	echo "== .gpudeps: $(ls "$DEPS"/*.deb | wc -l) .debs, $(mib "$deps_b"); the tree that travels with it: $(mib $((tree_b + deps_b))) of 64 MiB"
	if [ $((tree_b + deps_b)) -gt $MAX_TREE ]; then
		echo "gpu_check: the tree would be over 64 MiB: ignore or remove something first" >&2
		return 1
	fi
	grep -qx '/.gpudeps/' .gitignore 2>/dev/null ||
		echo "note: .gpudeps is not in .gitignore here: it travels untracked (no carry needed), never commit it"
	cat <<EOF
== on the GPU machine, from this checkout's root (the one the session sends):
run(command="scripts/gpu_check.sh", carry=[".gpudeps"], timeout_s=540)
   then read summary.txt, env.txt, build.log, tests.log, bench.jsonl, bench.log in files_at
EOF
}

# ---- the environment: the prefix ------------------------------------------------------
# PFX holds the unpacked packages; RT the libraries the system lacks (what
# LD_LIBRARY_PATH adds); GCBIN the tools the system lacks (first in PATH).
PFX='' RT='' GCBIN=''

# True if the system has a usable copy (a non-empty file: --local's hidden
# ones are empty) of library file name $1. LDCACHE: ldconfig -p.
LDCACHE=
sys_has_lib() {
	local n=$1 d p
	for d in /lib/$TRIPLET /usr/lib/$TRIPLET /lib64 /usr/lib64 /lib /usr/lib /usr/local/lib; do
		[ -f "$d/$n" ] && [ -s "$d/$n" ] && return 0
	done
	p=$(awk -v n="$n" '$1 == n { print $NF; exit }' <<<"$LDCACHE")
	[ -n "$p" ] && [ -f "$p" ] && [ -s "$p" ]
}

# True if the system has tool $1 (not --local's stub).
sys_has_tool() {
	local p
	p=$(PATH=$SYS_PATH command -v "$1" 2>/dev/null) || return 1
	[ -f "$p" ] && [ -s "$p" ] && [ -x "$p" ] && ! grep -q 'hidden by gpu_check' "$p"
}

unpack_deb() {
	if command -v dpkg-deb >/dev/null; then
		dpkg-deb -x "$1" "$PFX"
	else # ar and tar alone (binutils is there wherever gcc is)
		local m
		m=$(ar t "$1" | grep '^data\.tar') || return 1
		ar p "$1" "$m" | case $m in
			*.xz) tar -xJ -C "$PFX" ;; *.zst) zstd -dc | tar -x -C "$PFX" ;;
			*.gz) tar -xz -C "$PFX" ;; *) tar -x -C "$PFX" ;;
		esac
	fi
}

setup_prefix() {
	local f n l t
	PFX=$TMPD/prefix RT=$TMPD/rt GCBIN=$TMPD/bin
	mkdir -p "$PFX" "$RT" "$GCBIN"
	local n_deb=0
	for f in "$DEPS"/*.deb; do
		unpack_deb "$f" || { echo "cannot unpack $f"; return 1; }
		n_deb=$((n_deb + 1))
	done
	# absolute symlinks (libz.so -> /lib/...) point into the prefix
	while IFS= read -r l; do
		t=$(readlink "$l")
		case $t in /*) ln -sfn "$PFX$t" "$l" ;; esac
	done < <(find "$PFX" -type l)
	# .pc files: every /usr path into the prefix
	for f in "$PFX"/usr/lib/$TRIPLET/pkgconfig/*.pc "$PFX"/usr/share/pkgconfig/*.pc "$PFX"/usr/lib/pkgconfig/*.pc; do
		[ -f "$f" ] || continue
		sed -i -e "s#^\([A-Za-z_]*\)=/usr#\1=$PFX/usr#" -e "s#-I/usr/#-I$PFX/usr/#g" -e "s#-L/usr/#-L$PFX/usr/#g" \
			-e "s#-L/lib/#-L$PFX/lib/#g" "$f"
	done
	# runtime libraries whose name the system lacks -> RT
	local libdirs="$PFX/usr/lib/$TRIPLET $PFX/lib/$TRIPLET"
	local n_rt=0 n_sys=0
	LDCACHE=$(ldconfig -p 2>/dev/null)
	for d in $libdirs; do
		[ -d "$d" ] || continue
		for f in "$d"/lib*.so*; do
			[ -e "$f" ] || continue
			n=${f##*/}
			# libfoo.so: a development symlink or linker script, for the
			# linker only, unless a plain ELF file (a Vulkan layer)
			if [ "${n%.so}" != "$n" ]; then
				[ -L "$f" ] && continue
				[ "$(head -c4 "$f" | tail -c3)" = ELF ] || continue
			fi
			if sys_has_lib "$n"; then
				n_sys=$((n_sys + 1))
			else
				ln -sfn "$f" "$RT/$n"
				n_rt=$((n_rt + 1))
			fi
		done
	done
	# tools the system lacks
	local tools=""
	for t in make pkg-config glslc vulkaninfo; do
		if ! sys_has_tool $t && [ -x "$PFX/usr/bin/$t" ]; then
			ln -sfn "$PFX/usr/bin/$t" "$GCBIN/$t"
			tools="$tools $t"
		fi
	done
	export PATH="$GCBIN:$SYS_PATH"
	export LD_LIBRARY_PATH="$RT${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	export PKG_CONFIG_LIBDIR="$PFX/usr/lib/$TRIPLET/pkgconfig:$PFX/usr/share/pkgconfig:$PFX/usr/lib/pkgconfig"
	unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
	export CPATH="$PFX/usr/include:$PFX/usr/include/$TRIPLET${CPATH:+:$CPATH}"
	# the libraries by -L, not LIBRARY_PATH: gcc searches that after its own
	# multiarch folder, where --local's hidden copies are
	MAKE_LDFLAGS="-L$PFX/usr/lib/$TRIPLET -L$PFX/lib/$TRIPLET -Wl,-rpath-link,$PFX/usr/lib/$TRIPLET:$PFX/lib/$TRIPLET"
	# the validation layer (the op test runs under it where it is found)
	if [ -d "$PFX/usr/share/vulkan/explicit_layer.d" ]; then
		export VK_LAYER_PATH="$PFX/usr/share/vulkan/explicit_layer.d"
		export VK_ADD_LAYER_PATH="$VK_LAYER_PATH"
	fi
	NOTE="$n_deb .debs in $PFX; $n_rt libraries from the prefix, $n_sys of the system's; tools from the prefix:${tools:- none}"
	{
		echo "== prefix: $NOTE"
		echo "libraries from the prefix (LD_LIBRARY_PATH):"; ls "$RT" | sed 's/^/  /'
		echo "PKG_CONFIG_LIBDIR=$PKG_CONFIG_LIBDIR"
		echo "CPATH=$CPATH"
		echo "link flags: $MAKE_LDFLAGS"
		echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
		echo "PATH=$PATH"
		for p in sndfile samplerate fftw3f jansson zlib cmocka libpcre2-8 libutf8proc libedit libmd vulkan; do
			printf '  pkg-config %-12s %s\n' "$p" "$(pkg-config --modversion $p 2>&1 | head -n1)"
		done
	} >>"$ENV_TXT"
}

# The Vulkan driver: the NVIDIA ICD file, where the image keeps it.
find_icd() {
	local f d
	for f in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
		/etc/vulkan/icd.d/nvidia_icd.json; do
		[ -f "$f" ] && { echo "$f"; return 0; }
	done
	for d in /usr/local/nvidia /usr/share/vulkan /etc/vulkan /usr/lib/$TRIPLET/nvidia; do
		[ -d "$d" ] || continue
		f=$(find "$d" -maxdepth 4 -name '*nvidia*icd*.json' 2>/dev/null | head -n1)
		[ -n "$f" ] && { echo "$f"; return 0; }
	done
	return 1
}

# ---- --local: hide the system's copies ---------------------------------------------
# In a private mount namespace (unshare -m, as root): every file the carried
# packages installed here, under the paths a build reads, is covered by an
# empty file (tools by a stub that fails), except KEEP_PKGS's.
hide_system_copies() {
	local stub=$TMPD/hidden-tool n=0 p f keep
	printf '#!/bin/sh\necho "hidden by gpu_check.sh --local" >&2\nexit 127\n' >"$stub"
	chmod 755 "$stub"
	for p in $(awk '!/^#/ { print $1 }' "$DEPS/MANIFEST"); do
		keep=0
		for k in $KEEP_PKGS; do [ "$p" = "$k" ] && keep=1; done
		[ $keep = 1 ] && continue
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || continue
		while IFS= read -r f; do
			case $f in
				/usr/include/* | /usr/lib/* | /lib/* | /usr/share/pkgconfig/* | /usr/share/vulkan/*) ;;
				/usr/bin/*) [ -f "$f" ] && [ ! -L "$f" ] && mount --bind "$stub" "$f" && n=$((n + 1)); continue ;;
				*) continue ;;
			esac
			[ -f "$f" ] && [ ! -L "$f" ] && mount --bind /dev/null "$f" && n=$((n + 1))
		done < <(dpkg -L "$p" 2>/dev/null)
	done
	echo "$n files of the system's copies hidden (mount namespace)"
}

# ---- phases ------------------------------------------------------------------------
FAILED=0 NOTE=
phase() { # NAME FUNCTION: one line in summary.txt; a failure marks the run failed
	local name=$1 t0 rc st
	shift
	t0=$(now)
	NOTE=
	"$@"
	rc=$?
	case $rc in 0) st=ok ;; 3) st=SKIP ;; *) st=FAIL; FAILED=1 ;; esac
	printf '%-7s %-4s %6ss  %s\n' "$name" "$st" "$(since "$t0")" "$NOTE" | tee -a "$SUMMARY"
	if [ -s "$DETAIL" ]; then tee -a "$SUMMARY" <"$DETAIL"; : >"$DETAIL"; fi
}
left() { echo $((T_END - EPOCHSECONDS)); }

# truncate a log over 8 MiB to its first and last 2 MiB (the device returns
# files up to 16 MiB)
cap_log() {
	local f=$1 s
	[ -f "$f" ] || return 0
	s=$(stat -c %s "$f")
	[ "$s" -le $((8 * 1048576)) ] && return 0
	{ head -c 2097152 "$f"; printf '\n[... %s bytes cut by gpu_check.sh ...]\n' $((s - 4194304)); tail -c 2097152 "$f"; } >"$f.cut"
	mv "$f.cut" "$f"
}

do_env() {
	{
		echo "== gpu_check.sh $MODE, $(date -u +%FT%TZ)"
		echo "commit: $(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- 2>/dev/null || echo ' (dirty or no git)')"
		uname -a
		(. /etc/os-release 2>/dev/null && echo "os: ${PRETTY_NAME:-?}")
		echo "glibc: $(ldd --version 2>/dev/null | head -n1)"
		echo "cpus: $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
		echo "cpu flags: $(grep -m1 '^flags' /proc/cpuinfo | grep -oE 'avx2|avx512f|avx512_vnni|avx512_bf16|amx_tile' | sort -u | tr '\n' ' ')"
		free -g 2>/dev/null | head -n2
		df -h "$ROOT" "${TMPDIR:-/tmp}" 2>/dev/null
		echo "cc: $(command -v cc) $(cc --version 2>/dev/null | head -n1); gcc: $(gcc --version 2>/dev/null | head -n1)"
		echo "nvcc: $(nvcc --version 2>/dev/null | tail -n2 | tr '\n' ' ')"
		echo "python3: $(python3 --version 2>&1)"
		for t in make pkg-config glslc git dpkg-deb ar zstd xz; do printf '  %-10s %s\n' $t "$(command -v $t || echo -)"; done
		echo "== nvidia-smi"
		if command -v nvidia-smi >/dev/null; then
			nvidia-smi 2>&1 | head -n 20
			nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm --format=csv 2>&1
		else
			echo "none"
		fi
		echo "== ldconfig: vulkan, glvnd, nvidia"
		ldconfig -p 2>/dev/null | grep -iE 'vulkan|GLdispatch|GLX_nvidia|libcuda' | head -n 20
		[ -f "$DEPS/MANIFEST" ] && { echo "== .gpudeps/MANIFEST"; cat "$DEPS/MANIFEST"; }
	} >>"$ENV_TXT" 2>&1
	local gpu
	gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n1)
	NOTE="$(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-?}"), $(nproc) cpus, glibc $(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ print $2 }'), GPU: ${gpu:-none}"
	return 0
}

do_deps() {
	if [ ! -f "$DEPS/MANIFEST" ]; then
		NOTE="no .gpudeps (run scripts/gpu_check.sh --prepare where apt works, carry .gpudeps): the system's packages only"
		[ "$MODE" = local ] && return 3
		return 1
	fi
	if [ "$MODE" = local ] && [ "${GPUCHECK_IN_NS:-}" = 1 ]; then
		hide_system_copies >>"$ENV_TXT" 2>&1
	fi
	local need have warn=
	need=$(sed -n 's/^# glibc >= //p' "$DEPS/MANIFEST")
	have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ print $2 }')
	if [ -n "$need" ] && [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n1)" != "$need" ]; then
		warn="GLIBC $have IS OLDER THAN THE $need THE PACKAGES WANT; "
	fi
	setup_prefix || return 1
	NOTE="$warn$NOTE"
	if [ "$MODE" = gpu ]; then
		local icd
		if icd=$(find_icd); then
			export VK_DRIVER_FILES="$icd" VK_ICD_FILENAMES="$icd"
			{ echo "== Vulkan ICD: $icd"; cat "$icd"; } >>"$ENV_TXT"
			NOTE="$NOTE; ICD $icd"
		else
			NOTE="$NOTE; no NVIDIA Vulkan ICD file found"
			echo "== no NVIDIA Vulkan ICD file found" >>"$ENV_TXT"
		fi
	fi
	if command -v vulkaninfo >/dev/null; then
		echo "== vulkaninfo --summary" >>"$ENV_TXT"
		VK_LOADER_DEBUG=error,warn timeout 30 vulkaninfo --summary >>"$ENV_TXT" 2>&1
		NOTE="$NOTE; vulkaninfo: $(timeout 30 vulkaninfo --summary 2>/dev/null | grep -c 'deviceName') device(s)"
	fi
	return 0
}

# GPU test programs and scripts, by name
# GPU test programs: those that take a device from TERN_TEST_DEVICE (run
# once per GPU device, as tests/run.sh runs them on vulkan0), then those
# named for a GPU part (run once)
dev_test_srcs() { grep -l 'TERN_TEST_DEVICE' tests/test_*.c 2>/dev/null; }
gpu_test_srcs() {
	local f
	dev_test_srcs
	for f in tests/test_*.c; do
		grep -q 'TERN_TEST_DEVICE' "$f" && continue
		case ${f##*/} in test_backend_ops.c | *vulkan* | *vk_* | *cuda* | *gpu* | *offload* | *device* | *plan*) echo "$f" ;; esac
	done
}
# the GPU devices the tools list (vulkan0, cuda0, ...)
GPU_DEVS=
list_gpu_devs() {
	local b
	for b in "$BIN/run" "$BIN/bench"; do
		"$b" --help 2>&1 | grep -q -- '--list-devices' || continue
		"$b" --list-devices 2>/dev/null | grep -oE '^(vulkan|cuda)[0-9]+' | awk '!s[$0]++' | tr '\n' ' '
		return
	done
}
gpu_test_scripts() {
	local f
	for f in tests/cli_*.sh; do
		case ${f##*/} in *gpu* | *vulkan* | *cuda* | *device* | *offload*) echo "$f" ;; esac
	done
}

do_build() {
	local targets=() f
	for f in $(gpu_test_srcs); do
		f=${f##*/}
		targets+=("$BOUT/tests/${f%.c}")
	done
	# the build may take the budget but the last minute
	local to=$(($(left) - 60))
	[ $to -lt 60 ] && to=60
	{
		echo "== make -j$JOBS CUDA_ARCH=$CUDA_ARCH ${MAKE_VARS[*]} all ${targets[*]} (timeout ${to}s)"
		timeout -k 5 "$to" nice make -j"$JOBS" CUDA_ARCH="$CUDA_ARCH" "${MAKE_VARS[@]}" ${MAKE_LDFLAGS:+EXTRA_LDFLAGS="$MAKE_LDFLAGS"} \
			all "${targets[@]}"
	} >>"$BUILD_LOG" 2>&1
	local rc=$?
	local yes no
	[ $rc -eq 124 ] && echo "== make: stopped after ${to}s (budget)" >>"$BUILD_LOG"
	yes=$(grep -E '^  ✓ ' "$BUILD_LOG" | awk '{ print $2 }' | tr '\n' ' ')
	no=$(grep -E '^  ✗ ' "$BUILD_LOG" | awk '{ print $2 }' | tr '\n' ' ')
	NOTE="found: ${yes:-?}; missing: ${no:-none}"

	if [ $rc -ne 0 ]; then
		NOTE="make failed (build.log); $NOTE"
		grep -E ': error|: undefined reference|\*\*\*' "$BUILD_LOG" | head -n 5 | sed 's/^/        /' >>"$DETAIL"
		return 1
	fi
	# the libraries every program loads, resolved now (LD_BIND_NOW): an
	# older system copy without a symbol ours were built against shows here
	if ! LD_BIND_NOW=1 "$BIN/inspect" --version >>"$BUILD_LOG" 2>&1; then
		NOTE="$NOTE; $BIN/inspect does not start (build.log)"
		return 1
	fi
	ldd "$BIN/bench" >>"$BUILD_LOG" 2>&1
	return 0
}

TEST_PASS=0 TEST_FAIL=0 TEST_NOTES=
run_test() { # NAME TIMEOUT CMD...: appended to tests.log
	local name=$1 to=$2 t0 rc st
	shift 2
	t0=$(now)
	echo "==== $name ($*) timeout ${to}s" >>"$TESTS_LOG"
	BIN=$BIN OUT=$BOUT PYTHON=$PYTHON TERN_DATA=$TERN_DATA timeout -k 5 "$to" "$@" >>"$TESTS_LOG" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then st=ok; TEST_PASS=$((TEST_PASS + 1)); else
		st=FAIL; TEST_FAIL=$((TEST_FAIL + 1))
		[ $rc -eq 124 ] && st=TIMEOUT
	fi
	echo "==== $name: $st (exit $rc) $(since "$t0")s" >>"$TESTS_LOG"
	printf '        %-7s %-28s %6ss\n' "$st" "$name" "$(since "$t0")" >>"$DETAIL"
	return $rc
}

do_tests() {
	[ -x "$BIN/bench" ] || { NOTE="no build"; return 1; }
	local f name to found=0 dev devtests
	GPU_DEVS=$(list_gpu_devs)
	echo "==== GPU devices: ${GPU_DEVS:-none}" >>"$TESTS_LOG"
	devtests=$(dev_test_srcs)
	for f in $(gpu_test_srcs); do
		name=${f##*/}; name=${name%.c}
		[ -x "$BOUT/tests/$name" ] || { echo "==== $name: not built" >>"$TESTS_LOG"; TEST_FAIL=$((TEST_FAIL + 1)); continue; }
		local devs=("")
		if grep -qx "$f" <<<"$devtests"; then
			# shellcheck disable=SC2206
			devs=($GPU_DEVS)
			[ ${#devs[@]} -gt 0 ] || { TEST_NOTES="$TEST_NOTES $name not run (no GPU device)"; continue; }
		fi
		for dev in "${devs[@]}"; do
			to=$(($(left) - BENCH_RESERVE))
			[ $to -gt "$TEST_TIMEOUT" ] && to=$TEST_TIMEOUT
			if [ $to -lt 20 ]; then TEST_NOTES="$TEST_NOTES $name${dev:+@$dev} skipped (budget)"; continue; fi
			found=1
			if ! run_test "$name${dev:+@$dev}" $to env ${dev:+TERN_TEST_DEVICE=$dev} "$BOUT/tests/$name" &&
				[ "$name" = test_backend_ops ] && [ -n "${VK_LAYER_PATH:-}" ] && [ "${dev#vulkan}" != "$dev" ] &&
				tail -n 200 "$TESTS_LOG" | grep -q 'validation'; then
				# a validation message may be the (older) layer's: once more without it
				TEST_NOTES="$TEST_NOTES; $name@$dev failed under the validation layer, rerun without it"
				run_test "$name@$dev-no-validation" $to env VK_LAYER_PATH= VK_ADD_LAYER_PATH= \
					TERN_TEST_DEVICE="$dev" "$BOUT/tests/$name"
			fi
		done
	done
	for f in $(gpu_test_scripts); do
		name=${f##*/}; name=${name%.sh}
		to=$(($(left) - BENCH_RESERVE))
		[ $to -gt "$TEST_TIMEOUT" ] && to=$TEST_TIMEOUT
		if [ $to -lt 20 ]; then TEST_NOTES="$TEST_NOTES $name skipped (budget)"; continue; fi
		found=1
		run_test "$name" $to bash "$f"
	done
	grep -q 'no Vulkan device, skipped\|SKIP: no Vulkan device' "$TESTS_LOG" && TEST_NOTES="$TEST_NOTES; NO VULKAN DEVICE: Vulkan tests skipped"
	NOTE="GPU devices: ${GPU_DEVS:-NONE}; $TEST_PASS passed, $TEST_FAIL failed$TEST_NOTES"
	[ $found = 1 ] || { NOTE="no GPU tests run; $NOTE"; return 1; }
	[ -n "$GPU_DEVS" ] || return 1
	[ $TEST_FAIL -eq 0 ]
}

# The models: built and written in the background while the tests run; each
# NAME.gguf appears (renamed from .tmp) when done, NAME.fail if it failed.
GEN_PID=
start_models() {
	[ -f "$BOUT/libtern.a" ] || { NOTE="no libtern.a"; return 1; }
	mkdir -p "$MODELS"
	rm -f "$MODELS"/*.gguf "$MODELS"/*.tmp "$MODELS"/*.fail
	local pkg
	pkg=$(pkg-config --libs libpcre2-8 libutf8proc 2>/dev/null)
	# shellcheck disable=SC2086
	if ! "$CC" -std=c11 -O2 -I. scripts/gen_synth_llm.c "$BOUT/libtern.a" $pkg -lpthread -lm \
		${MAKE_LDFLAGS:+$MAKE_LDFLAGS} -o "$TMPD/gen_synth_llm" >>"$BENCH_LOG" 2>&1; then
		NOTE="scripts/gen_synth_llm.c does not build (bench.log)"
		return 1
	fi
	local need=0 s t
	for s in $SIZES; do for t in $TYPES; do need=$((need + $(model_mib "$s" "$t"))); done; done
	local avail
	avail=$(($(df -Pk "$MODELS" | awk 'NR == 2 { print $4 }') / 1024))
	if [ "$avail" -lt $((need + 1024)) ]; then
		NOTE="$need MiB of models wanted, $avail MiB free in $MODELS: bench-7b dropped"
		SIZES=$(echo "$SIZES" | sed 's/7b//')
	fi
	gen_all &
	GEN_PID=$!
	NOTE="${NOTE:+$NOTE; }models: $(model_order | tr '\n' ' ')(about $need MiB) being written to $MODELS"
	return 0
}
# In the background: up to GEN_JOBS generators at once, each a child of
# this shell (killed with it).
gen_all() {
	declare -A gens=() t0s=()
	trap 'kill "${!gens[@]}" 2>/dev/null; exit 1' TERM
	local name pid rc
	reap() {
		wait -n -p pid
		rc=$?
		name=${gens[$pid]}
		if [ $rc -eq 0 ]; then
			mv "$MODELS/$name.gguf.tmp" "$MODELS/$name.gguf"
			echo "gen bench-$name: $(since "${t0s[$pid]}")s, $(mib "$(stat -c %s "$MODELS/$name.gguf")")" >>"$BENCH_LOG"
		else
			rm -f "$MODELS/$name.gguf.tmp"
			touch "$MODELS/$name.fail"
			echo "gen bench-$name: FAILED (exit $rc)" >>"$BENCH_LOG"
		fi
		unset "gens[$pid]"
	}
	for name in $(model_order); do
		"$TMPD/gen_synth_llm" "bench-${name%%-*}" "${name#*-}" "$MODELS/$name.gguf.tmp" 2>>"$BENCH_LOG" &
		gens[$!]=$name t0s[$!]=$EPOCHREALTIME
		while [ ${#gens[@]} -ge "$GEN_JOBS" ]; do reap; done
	done
	while [ ${#gens[@]} -gt 0 ]; do reap; done
}

# approximate file size in MiB
model_mib() {
	case $1-$2 in
		1b-q4_k_m) echo 640 ;; 1b-q4_0) echo 600 ;; 1b-q8_0) echo 1120 ;;
		7b-q4_k_m) echo 3900 ;; 7b-q4_0) echo 3660 ;; 7b-q8_0) echo 6830 ;; *) echo 8000 ;;
	esac
}
# SIZE-TYPE names, the order in which they are written and benchmarked:
# one of each size first, so that a cut budget still measures both
model_order() {
	local t s
	for t in $TYPES; do for s in $SIZES; do echo "$s-$t"; done; done
}
wait_model() { # NAME: 0 once MODELS/NAME.gguf is there, 1 if its generation failed or the budget ran out
	while :; do
		[ -f "$MODELS/$1.gguf" ] && return 0
		[ -f "$MODELS/$1.fail" ] && return 1
		[ -n "$GEN_PID" ] && ! kill -0 "$GEN_PID" 2>/dev/null && [ ! -f "$MODELS/$1.gguf" ] && return 1
		[ "$(left)" -lt "$MIN_BENCH" ] && return 1
		sleep 1
	done
}

BENCH_OK=0 BENCH_FAIL=0 BENCH_SKIP=0
do_bench() {
	BENCH_BIN=${GPUCHECK_BENCH_BIN:-$BIN/bench}
	[ -x "$BENCH_BIN" ] || { NOTE="no build"; return 1; }
	[ -n "$GEN_PID" ] || { NOTE="no models"; return 1; }
	local help devs=() dev_flag=0 ngl=""
	help=$("$BENCH_BIN" --help 2>&1)
	if grep -q -- '--list-devices' <<<"$help"; then
		"$BENCH_BIN" --list-devices >>"$BENCH_LOG" 2>&1
		mapfile -t devs < <("$BENCH_BIN" --list-devices 2>/dev/null | grep -oE '\b(cuda|vulkan)[0-9]+\b' | awk '!s[$0]++')
	fi
	grep -qE '(^|[ ,])-dev(,|[ ]|$)' <<<"$help" && dev_flag=1
	# -ngl all where tern-bench takes it (llama.cpp's spelling), else a count over any model's
	if grep -qE '(^|[ ,])-ngl(,|[ ]|$)' <<<"$help"; then
		grep -A2 -E '(^|[ ,])-ngl(,|[ ]|$)' <<<"$help" | grep -q 'all' && ngl=all || ngl=999
	fi
	echo "== devices: ${devs[*]:-none}; -dev: $dev_flag; -ngl: ${ngl:-no}" >>"$BENCH_LOG"
	local notes=""
	if [ $dev_flag = 0 ] || [ ${#devs[@]} -eq 0 ]; then
		notes="; no GPU device for tern-bench ($([ $dev_flag = 0 ] && echo 'no -dev option yet' || echo '--list-devices names none')): CPU only"
		devs=()
	fi
	local name dev args to t0 rc
	# the runs: each model on each GPU device, then the 1.1B ones on the CPU
	# (--local: the CPU first, since lavapipe takes minutes a model)
	local runs=() cpu_runs=()
	for name in $(model_order); do [ "${name%%-*}" = 1b ] && cpu_runs+=("$name@cpu"); done
	[ "$MODE" = local ] && runs=("${cpu_runs[@]}")
	for name in $(model_order); do
		for dev in "${devs[@]}"; do runs+=("$name@$dev"); done
	done
	[ "$MODE" = local ] || runs+=("${cpu_runs[@]}")
	for r in "${runs[@]}"; do
		name=${r%@*} dev=${r#*@}
		if [ "$(left)" -lt "$MIN_BENCH" ]; then
			BENCH_SKIP=$((BENCH_SKIP + 1))
			printf '        %-7s %-28s %s\n' SKIP "$name on $dev" "(budget: $(left)s left)" >>"$DETAIL"
			continue
		fi
		if ! wait_model "$name"; then
			BENCH_FAIL=$((BENCH_FAIL + 1))
			printf '        %-7s %-28s %s\n' FAIL "$name on $dev" "(no model: bench.log)" >>"$DETAIL"
			continue
		fi
		# shellcheck disable=SC2206
		args=(-m "$MODELS/$name.gguf" $BENCH_ARGS -o jsonl)
		if [ $dev_flag = 1 ]; then
			args+=(-dev "$dev")
			[ -n "$ngl" ] && [ "$dev" != cpu ] && args+=(-ngl "$ngl")
		fi
		to=$(($(left) - 10))
		[ $to -gt "$BENCH_TIMEOUT" ] && to=$BENCH_TIMEOUT
		t0=$(now)
		echo "==== bench $name on $dev: $BENCH_BIN ${args[*]} (timeout ${to}s)" >>"$BENCH_LOG"
		timeout -k 5 "$to" "$BENCH_BIN" "${args[@]}" >"$TMPD/bench.out" 2>>"$BENCH_LOG"
		rc=$?
		cat "$TMPD/bench.out" >>"$BENCH_JSONL"
		local st=ok
		if [ $rc -ne 0 ]; then
			st=FAIL; [ $rc -eq 124 ] && st=TIMEOUT
			BENCH_FAIL=$((BENCH_FAIL + 1))
		else
			BENCH_OK=$((BENCH_OK + 1))
		fi
		echo "==== bench $name on $dev: $st (exit $rc) $(since "$t0")s" >>"$BENCH_LOG"
		printf '        %-7s %-28s %6ss  %s\n' $st "$name on $dev" "$(since "$t0")" "$(bench_line "$TMPD/bench.out")" >>"$DETAIL"
	done
	# one more run, apart from the measured ones (a timestamp after every
	# dispatch may slow a step): TERN_GPU_PROFILE=1's time per shader of the
	# 7B Q4_K_M model (else the first) on the first GPU, into bench.log
	if [ ${#devs[@]} -gt 0 ] && [ "$(left)" -ge "$MIN_BENCH" ]; then
		name=$(model_order | grep -m1 '^7b-q4_k_m$' || model_order | head -n 1)
		if wait_model "$name"; then
			# shellcheck disable=SC2206
			args=(-m "$MODELS/$name.gguf" $BENCH_ARGS -r 1 --warmup 0 --no-probe -o jsonl -dev "${devs[0]}")
			[ -n "$ngl" ] && args+=(-ngl "$ngl")
			to=$(($(left) - 10))
			[ $to -gt "$BENCH_TIMEOUT" ] && to=$BENCH_TIMEOUT
			echo "==== profile $name on ${devs[0]}: TERN_GPU_PROFILE=1 $BENCH_BIN ${args[*]} (timeout ${to}s)" >>"$BENCH_LOG"
			TERN_GPU_PROFILE=1 timeout -k 5 "$to" "$BENCH_BIN" "${args[@]}" >/dev/null 2>>"$BENCH_LOG"
			echo "==== profile $name on ${devs[0]}: exit $?" >>"$BENCH_LOG"
		fi
	fi
	NOTE="$BENCH_OK ok, $BENCH_FAIL failed, $BENCH_SKIP skipped ($BENCH_ARGS)$notes"
	[ $BENCH_FAIL -eq 0 ]
}

# "pp512 1234.5 t/s, tg128 56.7 t/s" from tern-bench's JSON lines
bench_line() {
	awk '{
		n = ""; v = ""
		if (match($0, /"name": "[^"]*"/)) n = substr($0, RSTART + 9, RLENGTH - 10)
		if (match($0, /"tokens_per_s": \{"median": [0-9.eE+-]*/)) { v = substr($0, RSTART, RLENGTH); sub(/.*: /, "", v) }
		if (match($0, /"status": "[^"]*"/) && substr($0, RSTART + 11, RLENGTH - 12) != "ok") v = substr($0, RSTART + 11, RLENGTH - 12)
		if (n != "") printf "%s%s %s%s", sep, n, (v ~ /^[0-9]/ ? sprintf("%.1f", v) : v), (v ~ /^[0-9]/ ? " t/s" : ""); sep = ", "
	}' "$1"
}

cleanup() {
	[ -n "$GEN_PID" ] && kill "$GEN_PID" 2>/dev/null
	[ -n "$GEN_PID" ] && wait "$GEN_PID" 2>/dev/null
	[ "${GPUCHECK_KEEP_MODELS:-}" = 1 ] || rm -rf "$MODELS"
	[ -n "${TMPD:-}" ] && rm -rf "$TMPD"
}

# ---- main -------------------------------------------------------------------------------
MODE='' EXEC=()
ARGS=("$@")
while [ $# -gt 0 ]; do
	case $1 in
		-h | --help) usage; exit 0 ;;
		--prepare) prepare; exit $? ;;
		--local) MODE=local; shift ;;
		--exec) shift; EXEC=("$@"); [ $# -gt 0 ] || { echo "gpu_check: --exec needs a command" >&2; exit 2; }; break ;;
		-*) echo "gpu_check: unknown option $1" >&2; usage >&2; exit 2 ;;
		*) [ -z "${OUTDIR:-}" ] || { echo "gpu_check: one OUTDIR only" >&2; exit 2; }; OUTDIR=$1; shift ;;
	esac
done
if [ -z "$MODE" ]; then
	if nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then MODE=gpu; else MODE=local; fi
fi
OUTDIR=${OUTDIR:-${OUT:-$ROOT/gpu-check-out}}
# --local as root: once more inside a private mount namespace (see above)
if [ "$MODE" = local ] && [ "${GPUCHECK_IN_NS:-}" != 1 ] && [ "${GPUCHECK_HIDE:-1}" = 1 ] &&
	[ -f "$DEPS/MANIFEST" ] && [ "$(id -u)" = 0 ] && command -v unshare >/dev/null &&
	unshare -m --propagation private true 2>/dev/null; then
	GPUCHECK_IN_NS=1 exec unshare -m --propagation private "$BASH" "$0" --local "${ARGS[@]}"
fi
mkdir -p "$OUTDIR" || exit 2
OUTDIR=$(cd "$OUTDIR" && pwd)
SUMMARY=$OUTDIR/summary.txt ENV_TXT=$OUTDIR/env.txt BUILD_LOG=$OUTDIR/build.log
TESTS_LOG=$OUTDIR/tests.log BENCH_JSONL=$OUTDIR/bench.jsonl BENCH_LOG=$OUTDIR/bench.log
: >"$SUMMARY"; : >"$ENV_TXT"; : >"$BUILD_LOG"; : >"$TESTS_LOG"; : >"$BENCH_JSONL"; : >"$BENCH_LOG"
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX") || exit 2
DETAIL=$TMPD/detail
: >"$DETAIL"
SYS_PATH=$PATH
JOBS=${GPUCHECK_JOBS:-$(nproc)}
CUDA_ARCH=${CUDA_ARCH:-sm_90}
PYTHON=python3
TERN_DATA=${TERN_DATA:-$ROOT/../shared/data}
MAKE_VARS=() MAKE_LDFLAGS=
# the Makefile's cc; an image with gcc alone gets CC=gcc
CC=cc
if ! command -v cc >/dev/null && command -v gcc >/dev/null; then CC=gcc MAKE_VARS+=(CC=gcc); fi
if [ "$MODE" = gpu ]; then
	BUDGET=${GPUCHECK_BUDGET:-480}
	SIZES=${GPUCHECK_SIZES:-1b 7b}
	BENCH_ARGS=${GPUCHECK_BENCH:--p 512 -n 128 -r 3}
	BOUT=build/release BIN=bin
	TEST_TIMEOUT=200 BENCH_TIMEOUT=120 MIN_BENCH=25 BENCH_RESERVE=150 GEN_JOBS=3
else
	BUDGET=${GPUCHECK_BUDGET:-1800}
	SIZES=${GPUCHECK_SIZES:-1b}
	BENCH_ARGS=${GPUCHECK_BENCH:--p 64 -n 16 -r 1}
	# its own build folder: objects built against the system stay apart
	MAKE_VARS+=(CROSS=gpucheck)
	BOUT=build/release-gpucheck BIN=build/release-gpucheck/bin
	TEST_TIMEOUT=900 BENCH_TIMEOUT=300 MIN_BENCH=60 BENCH_RESERVE=240 GEN_JOBS=1
fi
TYPES=${GPUCHECK_TYPES:-q4_k_m q4_0 q8_0}
MODELS=$ROOT/build/gpu-check-models
T_START=$EPOCHSECONDS T_END=$((EPOCHSECONDS + BUDGET))
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "gpu_check.sh: $MODE mode, budget ${BUDGET}s, $JOBS jobs, output in $OUTDIR" | tee -a "$SUMMARY"
phase env do_env
phase deps do_deps
if [ ${#EXEC[@]} -gt 0 ]; then # --exec: the command in this environment, nothing else
	export BIN BOUT
	"${EXEC[@]}"
	exit $?
fi
phase build do_build
phase models start_models
phase tests do_tests
phase bench do_bench
[ -n "$GEN_PID" ] && { kill "$GEN_PID" 2>/dev/null; wait "$GEN_PID" 2>/dev/null; GEN_PID=; }

# a table of the results
if [ -s "$BENCH_JSONL" ] && command -v python3 >/dev/null; then
	python3 - "$BENCH_JSONL" 2>&1 <<'EOF' | tee -a "$SUMMARY"
import json, os, sys
rows = []
for line in open(sys.argv[1]):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    model = os.path.basename(d.get("model_path", "?")).replace(".gguf", "")
    dev = d.get("device") or d.get("backend") or "?"
    tps = (d.get("tokens_per_s") or {}).get("median")
    rows.append((model, dev, d.get("name", "?"), tps, d.get("roofline_pct"), d.get("status")))
print("\n%-12s %-10s %-7s %12s %9s" % ("model", "device", "test", "tokens/s", "roofline"))
for m, dev, n, t, r, st in rows:
    print("%-12s %-10s %-7s %12s %9s" % (m, dev, n, "%.1f" % t if t is not None else st,
                                          "%.0f%%" % r if r is not None else "-"))
EOF
fi
for f in "$BUILD_LOG" "$TESTS_LOG" "$BENCH_LOG" "$ENV_TXT" "$BENCH_JSONL"; do cap_log "$f"; done
total=$((EPOCHSECONDS - T_START))
echo "gpu_check.sh: $([ $FAILED = 0 ] && echo 'all passed' || echo 'FAILED') in ${total}s (budget ${BUDGET}s); files in $OUTDIR: $(cd "$OUTDIR" && ls | tr '\n' ' ')" |
	tee -a "$SUMMARY"
[ $FAILED = 0 ]

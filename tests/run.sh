#!/usr/bin/env bash
# run.sh - run the whole suite: every cmocka test binary given on the command
# line, then every tests/check_*.sh script (checks of the source tree) and
# tests/cli_*.sh script (black-box tests of the executables).
# Environment: BIN (directory of the executables), OUT (build directory),
# PYTHON. Prints one summary line; exits non-zero if anything failed.
set -u
cd "$(dirname "$0")/.."
export BIN=${BIN:-bin} OUT=${OUT:-build/release} PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] && export PYTHON=$PWD/.venv/bin/python
export TERN_DATA=${TERN_DATA:-../shared/data}
pass=0 fail=0 failed=()
run_one() {
	local name=$1; shift
	local log=$OUT/tests/$name.log
	mkdir -p "$OUT/tests"
	local t0=$EPOCHREALTIME
	if "$@" >"$log" 2>&1; then
		pass=$((pass + 1)); status=ok
	else
		fail=$((fail + 1)); failed+=("$name"); status=FAIL
	fi
	printf '%-5s %-34s %6.2fs  %s\n' "$status" "$name" "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{print b-a}')" \
		"$(grep -E '^\[  PASSED  \]|^\[  FAILED  \]|^SKIP|^PASS|^FAIL' "$log" | tr '\n' ' ' | cut -c1-60)"
	[ "$status" = FAIL ] && sed 's/^/    | /' "$log" | tail -n 40
	return 0
}
# Under ASan, Mesa's lavapipe leaks from its JIT-compiled code as soon as a
# process enumerates it (a few hundred bytes a process, from code no
# suppression can name: no module), and every tool enumerates the devices
# for -dev auto. So under ASan the tests see no Vulkan driver, but for the
# Vulkan runs below and cli_vulkan, which run with leak detection off
# (ASan's other checks on); every other test still checks our leaks.
vk_unhide=()
if [ "${SANITIZE:-}" = 1 ]; then
	export VK_ICD_FILENAMES=/nonexistent/tern-asan-icd.json VK_DRIVER_FILES=/nonexistent/tern-asan-icd.json
	vk_unhide=(-u VK_ICD_FILENAMES -u VK_DRIVER_FILES)
fi
for t in "$@"; do run_one "$(basename "$t")" "$t"; done
# The forward pass against llama.cpp again on the Vulkan device (Mesa's
# lavapipe where there is no GPU) when the build has the Vulkan backend.
if [ -n "${HAVE_VULKAN:-}" ]; then
	vk_env=("${vk_unhide[@]}" TERN_TEST_DEVICE=vulkan0)
	[ "${SANITIZE:-}" = 1 ] && vk_env+=(ASAN_OPTIONS=detect_leaks=0)
	for t in "$@"; do
		case $(basename "$t") in
		test_backend_ops) run_one "$(basename "$t")@vulkan0" env "${vk_env[@]}" "$t" ;;
		# the forward passes on lavapipe take minutes: once, not again under ASan
		test_llm | test_offload) [ "${SANITIZE:-}" = 1 ] || run_one "$(basename "$t")@vulkan0" env "${vk_env[@]}" "$t" ;;
		esac
	done
fi
# Every op again on the CUDA backend: under the CPU emulation of
# gpu/cuda/emu (built into the tests but under ASan), and on a real device
# where the build has CUDA and one is present (test_backend_ops says when
# it is not).
if [ -n "${HAVE_CUEMU:-}" ]; then
	for t in "$@"; do
		case $(basename "$t") in
		test_backend_ops | test_offload | test_llm) run_one "$(basename "$t")@cuemu0" env TERN_TEST_DEVICE=cuemu0 "$t" ;;
		esac
	done
fi
if [ -e /dev/nvidia0 ] || [ -e /dev/nvidiactl ]; then
	for t in "$@"; do
		case $(basename "$t") in
		test_backend_ops) run_one "$(basename "$t")@cuda0" env TERN_TEST_DEVICE=cuda0 "$t" ;;
		test_llm | test_offload) [ "${SANITIZE:-}" = 1 ] || run_one "$(basename "$t")@cuda0" env TERN_TEST_DEVICE=cuda0 "$t" ;;
		esac
	done
else
	echo "skip  test_backend_ops@cuda0 test_llm@cuda0 test_offload@cuda0: no CUDA device on this machine"
fi
for s in tests/check_*.sh tests/cli_*.sh; do
	[ -e "$s" ] || continue
	case $s in
	tests/cli_vulkan.sh) run_one cli_vulkan env "${vk_unhide[@]}" bash "$s" ;; # its own detect_leaks=0 under ASan
	*) run_one "$(basename "$s" .sh)" bash "$s" ;;
	esac
done
echo "----"
echo "tests: $pass passed, $fail failed${failed:+ (${failed[*]})}"
[ "$fail" -eq 0 ]

#!/usr/bin/env bash
# check_gpu_check.sh - scripts/gpu_check.sh (the GPU machine's one command)
# parses and answers its usage errors; it is run for real by a session with
# a GPU, or here with --local (minutes: not part of the suite).
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh
S=scripts/gpu_check.sh
check "$S is executable" test -x "$S"
check "$S parses" bash -n "$S"
expect 0 bash "$S" --help && check "--help names --prepare" grep -q -- '--prepare' "$T/out"
expect 2 bash "$S" --bogus && check "an unknown option is one line, then the usage" grep -q 'unknown option --bogus' "$T/err"
expect 2 bash "$S" --local --exec
expect 2 bash "$S" a b
check ".gpudeps is ignored" git check-ignore -q .gpudeps/x.deb
finish

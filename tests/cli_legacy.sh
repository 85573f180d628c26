#!/usr/bin/env bash
# cli_legacy.sh - re-derive the legacy ggml reference data with the
# independent numpy reader (scripts/legacy_ref.py) and check it against the
# copy committed in tests/data/legacy/, which test_ggml_legacy compares the C
# reader with. Environment: PYTHON, TERN_DATA (see tests/run.sh).
set -u
PYTHON=${PYTHON:-python3}
TERN_DATA=${TERN_DATA:-../shared/data}
if ! "$PYTHON" -c 'import numpy' 2>/dev/null; then
	echo "SKIP: $PYTHON has no numpy"
	exit 0
fi
fail=0
for f in silero-v6.2.0-ggml whisper-vocab-only-tiny whisper-vocab-only-tiny.en; do
	if ! "$PYTHON" scripts/legacy_ref.py "$TERN_DATA/models/$f.bin" | diff -u "tests/data/legacy/$f.ref" -; then
		echo "FAIL: $f differs from tests/data/legacy/$f.ref"
		fail=1
	fi
done
[ $fail -eq 0 ] && echo "PASS: legacy reference data reproduced"
exit $fail

#!/usr/bin/env bash
# Builds the native codec module (codecs/_speedups.c) with AddressSanitizer and UndefinedBehaviorSanitizer
# and runs the suites that drive it (native against pure-Python decoding and encoding, mutated and
# truncated input, record batches of every codec) on that build. Any sanitizer report fails the run.
# Needs gcc with libasan and libubsan (Debian: gcc). Run from anywhere: bash ci/sanitizers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}  # the interpreter kconform is installed in
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
flags="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all"
CFLAGS="$flags" LDFLAGS="-fsanitize=address,undefined" \
  "$python" setup.py -q build_ext --build-lib "$build/lib" --build-temp "$build/tmp" >/dev/null
module=$(find "$build/lib" -name '_speedups*.so' | head -n 1)
[ -n "$module" ] || { echo "sanitizers: the extension did not build" >&2; exit 1; }
asan=$(gcc -print-file-name=libasan.so)
ubsan=$(gcc -print-file-name=libubsan.so)
# Python's own allocations are not ours to judge: leaks off, every other report fatal.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# the suites below must be running on the sanitized build, not the installed one
KCONFORM_SPEEDUPS="$module" LD_PRELOAD="$asan $ubsan" "$python" -c \
  'import sys; from kconform.codecs import _native as n; assert n._speedups.__file__ == sys.argv[1]' "$module"
KCONFORM_SPEEDUPS="$module" LD_PRELOAD="$asan $ubsan" \
  "$python" -m pytest -q -p no:xdist suites/codecs/test_native.py suites/codecs/test_records_v2_batches.py \
  suites/codecs/test_records_legacy_and_peers.py suites/codecs/test_records_hostile_input.py "$@"

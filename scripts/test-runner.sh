#!/usr/bin/env bash
# Runs one test binary for `cargo test` (scripts/test.sh sets it as cargo's runner): a binary that
# runs past SNARKD_TEST_BINARY_LIMIT seconds (default 1200) is stopped, so a hanging test fails
# the run with a message instead of holding CI until its own limit. Each binary's wall time is
# printed and added to test-durations.txt in the target directory, which scripts/test.sh sums up at the end.
set -uo pipefail
limit="${SNARKD_TEST_BINARY_LIMIT:-1200}"
name="$(basename "$1")"
start="${EPOCHREALTIME/./}"
timeout --kill-after=10 "$limit" "$@"
rc=$?
tenths=$(( (${EPOCHREALTIME/./} - start) / 100000 ))
root="$(cd "$(dirname "$0")/.." && pwd)"
printf '%6d.%d s  %s (exit %s)\n' "$((tenths / 10))" "$((tenths % 10))" "${name%-*}" "$rc" \
  | tee -a "${CARGO_TARGET_DIR:-$root/target}/test-durations.txt" >&2
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  echo "test binary ${name%-*} ran past SNARKD_TEST_BINARY_LIMIT (${limit} s) and was stopped: a test in it hangs" >&2
fi
exit "$rc"

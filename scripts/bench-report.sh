#!/usr/bin/env bash
# The benchmark report: release binaries, 2 KiB parameters (made once when missing, as for the
# tests), then `snarkd-bench report`, which starts its own daemons and writes report.md and
# report.json into target/bench-report (or --out DIR). Extra arguments go to `snarkd-bench report`.
set -euo pipefail
cd "$(dirname "$0")/.."
SNARKD_SETUP=demo source scripts/setup.sh

export SNARKD_TEST_PARAMS_DIR="${SNARKD_TEST_PARAMS_DIR:-$HOME/.cache/snarkd/params-2k}"
bin="$(./scripts/build.sh --release --no-monitor | tail -n 1)"
say "2 KiB parameters in $SNARKD_TEST_PARAMS_DIR"
"$bin/snarkd" params generate --sector-size 2KiB --kind winning --kind wpost --kind porep --kind snap \
  --dir "$SNARKD_TEST_PARAMS_DIR"
say "benchmarks (each against its baseline, side by side)"
"$bin/snarkd-bench" report --params-dir "$SNARKD_TEST_PARAMS_DIR" --snarkd "$bin/snarkd" "$@"

#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine (scripts/setup.sh), makes the 2 KiB test parameters once
# (cached outside the checkout), runs every test of the workspace, then builds the monitor and
# runs its browser tests.
# Extra arguments go to `cargo test`, e.g. ./scripts/test.sh -p snarkd
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

# Local test parameters (they verify only against their own .vk). Generated when missing:
# PoRep ~10–25 min and SnapDeals ~7–14 min on two cores, the PoSt kinds about a minute.
export SNARKD_TEST_PARAMS_DIR="${SNARKD_TEST_PARAMS_DIR:-$HOME/.cache/snarkd/params-2k}"
say "2 KiB test parameters in $SNARKD_TEST_PARAMS_DIR"
cargo run -q -p snarkd -- params generate --sector-size 2KiB \
  --kind winning --kind wpost --kind snap --kind porep --dir "$SNARKD_TEST_PARAMS_DIR"

say "cargo test --workspace $*"
cargo test --workspace "$@"

# The monitor: build it, then drive it in headless Chromium against the real daemon.
./scripts/build-monitor.sh
cargo build -p snarkd -p snarkd-bench
say "monitor browser tests (monitor-ui/e2e; screenshots in target/monitor-e2e)"
SNARKD_BIN_DIR="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/debug"
(cd monitor-ui/e2e && npm ci --no-audit --no-fund --silent && SNARKD_BIN_DIR="$SNARKD_BIN_DIR" npm test)

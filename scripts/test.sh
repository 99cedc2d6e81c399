#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine (scripts/setup.sh) and runs every test of the workspace.
# Extra arguments go to `cargo test`, e.g. ./scripts/test.sh -p snarkd
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

say "cargo test --workspace $*"
cargo test --workspace "$@"

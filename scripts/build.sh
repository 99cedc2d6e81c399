#!/usr/bin/env bash
# Builds what snarkd ships: the `snarkd` daemon, the `snarkd-bench` client and the monitor's web
# bundle (monitor-ui/dist). The Docker images and the test script build through here, so a
# container and CI build the same way.
#   scripts/build.sh [--release] [--features LIST] [--no-monitor]
# Prints the directory holding the binaries on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=debug
cargo_args=()
monitor=1
while [ $# -gt 0 ]; do
  case "$1" in
    --release) profile=release; cargo_args+=(--release) ;;
    --features) cargo_args+=(--features "$2"); shift ;;
    --no-monitor) monitor=0 ;;
    *) echo "scripts/build.sh: unknown argument $1 (use --release, --features LIST, --no-monitor)" >&2; exit 2 ;;
  esac
  shift
done

# The daemon on its own, then the client: built together, cargo would unify their features and
# ship the prover's bench and fixture code (the client's) in the daemon. scripts/test.sh checks
# that the daemon carries none.
cargo build --locked -p snarkd "${cargo_args[@]}"
cargo build --locked -p snarkd-bench "${cargo_args[@]}"
if [ "$monitor" = 1 ]; then
  ./scripts/build-monitor.sh
fi
target="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
echo "$target/$profile"

#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine (scripts/setup.sh), makes the 2 KiB test parameters once
# (cached outside the checkout), runs every test of the workspace, builds what ships with
# scripts/build.sh, runs the monitor's browser tests and the Docker images' static checks.
# Extra arguments go to `cargo test`, e.g. ./scripts/test.sh -p snarkd
set -euo pipefail
cd "$(dirname "$0")/.."
SNARKD_SETUP=test source scripts/setup.sh

# Local test parameters (they verify only against their own .vk). Generated when missing:
# PoRep ~85 s and SnapDeals ~50 s on two cores, the PoSt kinds seconds.
export SNARKD_TEST_PARAMS_DIR="${SNARKD_TEST_PARAMS_DIR:-$HOME/.cache/snarkd/params-2k}"
# Made with the build that ships (scripts/build.sh, run again below with the monitor): one build
# of the daemon's features, not a second one for `cargo run -p snarkd` alone.
say "building what ships (scripts/build.sh --no-monitor)"
SNARKD_BIN_DIR="$(./scripts/build.sh --no-monitor | tail -n 1)"
# The daemon that ships has none of the client's bench or fixture code: stock bellperson's
# prover (`prove_stock`, feature `bench`) is in the client's build and must not be in it.
# (grep -c reads all of nm's output: grep -q would stop early and fail the pipe.)
bench_symbols="$(nm -C "$SNARKD_BIN_DIR/snarkd-bench" | grep -c 'prove_stock' || true)"
daemon_symbols="$(nm -C "$SNARKD_BIN_DIR/snarkd" | grep -c 'prove_stock' || true)"
[ "$bench_symbols" -gt 0 ] \
  || { echo "the client lacks prove_stock: this check cannot tell anything" >&2; exit 1; }
if [ "$daemon_symbols" -gt 0 ]; then
  echo "the daemon carries the prover's bench code ($daemon_symbols prove_stock symbols): scripts/build.sh must build it alone" >&2
  exit 1
fi
say "2 KiB test parameters in $SNARKD_TEST_PARAMS_DIR"
"$SNARKD_BIN_DIR/snarkd" params generate --sector-size 2KiB \
  --kind winning --kind wpost --kind snap --kind porep --dir "$SNARKD_TEST_PARAMS_DIR"

# promtool ships in Debian's prometheus package, which also installs and starts a Prometheus
# server (port 9090, enabled at boot) where an init system runs. Only promtool is wanted: stop
# and disable the server this install started (in a container without an init system, apt's
# policy usually keeps it from starting at all).
if ! command -v promtool >/dev/null; then
  say "installing promtool (Debian's prometheus package): the metrics and alert-rule tests use it"
  as_root apt-get update
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus
  if [ -d /run/systemd/system ]; then
    as_root systemctl disable --now prometheus.service || true
  elif [ -x /etc/init.d/prometheus ]; then
    as_root /etc/init.d/prometheus stop || true
    as_root update-rc.d prometheus disable || true
  fi
fi
export PROMTOOL="${PROMTOOL:-promtool}"

# The demo's setup, on a machine that has nothing, installs none of what only the tests use
# (Node.js and npm among them).
say "setup: what the demo installs on a bare machine (SNARKD_SETUP_PLAN)"
bare="$(mktemp -d)"
for tool in bash sed sort head cut dirname; do ln -s "$(command -v "$tool")" "$bare/$tool"; done
demo_plan="$(env -i HOME="$HOME" PATH="$bare" SNARKD_SETUP=demo SNARKD_SETUP_PLAN=1 "$bare/bash" -c 'source scripts/setup.sh')"
test_plan="$(env -i HOME="$HOME" PATH="$bare" SNARKD_SETUP=test SNARKD_SETUP_PLAN=1 "$bare/bash" -c 'source scripts/setup.sh')"
rm -r "$bare"
for pkg in chromium podman pocl-opencl-icd systemd nodejs npm; do
  [[ " $test_plan " == *" $pkg "* ]] || { echo "the test setup's plan lacks $pkg: $test_plan" >&2; exit 1; }
  [[ " $demo_plan " != *" $pkg "* ]] || { echo "the demo's setup would install $pkg: $demo_plan" >&2; exit 1; }
done

say "module cycles (scripts/module-cycles.py)"
python3 scripts/module-cycles.py
say "sizes: files and functions (scripts/code-size.py)"
python3 scripts/code-size.py

# The dependency tree's licenses, bans and sources against deny.toml, by cargo-deny at a pinned
# version built once into the tools cache (about 3 minutes on two cores). Its advisories check
# needs the RustSec database from GitHub: deny.toml says where it runs.
deny_version=0.20.2
deny="${SNARKD_TOOLS_CACHE:-$HOME/.cache/snarkd/tools}/cargo-deny-$deny_version/bin/cargo-deny"
if [ ! -x "$deny" ]; then
  say "installing cargo-deny $deny_version (once)"
  cargo install cargo-deny --locked --version "$deny_version" --root "$(dirname "$(dirname "$deny")")"
fi
say "dependencies: licenses, bans, sources (cargo deny, deny.toml)"
"$deny" check licenses bans sources

# Each test binary runs under scripts/test-runner.sh: stopped past SNARKD_TEST_BINARY_LIMIT
# seconds (a hang fails with a message), its wall time recorded.
# Compiled kernels kept for every test binary (the daemon's [gpus] kernel_cache, which the
# tests' own backends read too): only the first to build a program compiles it from source.
target_dir="${CARGO_TARGET_DIR:-target}"
[[ "$target_dir" = /* ]] || target_dir="$PWD/$target_dir"
export SNARKD_GPUS_KERNEL_CACHE="${SNARKD_GPUS_KERNEL_CACHE:-$target_dir/test-kernels}"
say "cargo test --workspace $*"
durations="${CARGO_TARGET_DIR:-target}/test-durations.txt"
rm -f "$durations"
cargo test --workspace --config "target.'cfg(all())'.runner='$PWD/scripts/test-runner.sh'" "$@"
say "slowest test binaries"
sort -rn "$durations" | head -n 5 >&2

# What ships (the build the Docker images run too): daemon, client and monitor bundle, its wasm
# through binaryen's wasm-opt as the images have it. Then the monitor in headless Chromium against
# the real daemon, and the images' static checks.
SNARKD_BIN_DIR="$(SNARKD_MONITOR_WASM_OPT=1 ./scripts/build.sh | tail -n 1)"
say "monitor browser tests (monitor-ui/e2e; screenshots in target/monitor-e2e)"
(cd monitor-ui/e2e && npm ci --no-audit --no-fund --silent && SNARKD_BIN_DIR="$SNARKD_BIN_DIR" npm test)

say "the Debian package under a real systemd (scripts/package-test.sh)"
fixtures="$(mktemp -d)"
"$SNARKD_BIN_DIR/snarkd-bench" gen --sector-size 2KiB --out "$fixtures" >/dev/null
./scripts/package-test.sh "$SNARKD_BIN_DIR" "$fixtures" "$SNARKD_TEST_PARAMS_DIR"
rm -rf "$fixtures"

say "Docker images: static checks"
./docker/check.sh

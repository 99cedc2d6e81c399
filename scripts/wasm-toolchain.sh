# Which wasm32 standard library builds the monitor; sourced by setup.sh (which installs only
# what that route needs) and build-monitor.sh (which builds with it).
#   rustup: rustup's wasm32-unknown-unknown target, installed or installable within a minute
#   debian: Debian's rustc-web packages and an lld, building std with -Zbuild-std
# SNARKD_WASM_TOOLCHAIN=rustup or =debian forces one.

WASM_TARGET=wasm32-unknown-unknown

rustup_has_wasm_std() {
  local libdir
  libdir="$(rustc --print target-libdir --target "$WASM_TARGET" 2>/dev/null)" || return 1
  compgen -G "$libdir/libstd-*.rlib" >/dev/null
}

# Prints rustup or debian.
choose_wasm_toolchain() {
  case "${SNARKD_WASM_TOOLCHAIN:-}" in
    rustup | debian) echo "$SNARKD_WASM_TOOLCHAIN"; return ;;
    "") ;;
    *) echo "SNARKD_WASM_TOOLCHAIN must be rustup or debian, not $SNARKD_WASM_TOOLCHAIN" >&2; return 2 ;;
  esac
  if rustup_has_wasm_std; then echo rustup; return; fi
  # Where rustup cannot download, `rustup target add` hangs: give it a minute at most.
  if command -v rustup >/dev/null && timeout 60 rustup target add "$WASM_TARGET" >/dev/null 2>&1 \
    && rustup_has_wasm_std; then
    echo rustup; return
  fi
  echo debian
}

#!/usr/bin/env bash
# The README's two commands on a stock Debian 12 (bookworm), as a newcomer's fresh machine has it:
# a root made here by mmdebstrap (Debian's "important" packages: what a minimal server install
# has; no compiler, no Rust, no Node.js, no Python packages), into which a clean clone of this
# checkout's HEAD is copied. Inside it, as root, with the host's network (and its TLS trust):
#   1. ./scripts/demo.sh --once, which must end with its two real proofs COMPLETED and install
#      none of what only the tests use (Chromium, podman, Node.js, npm);
#   2. the test command's setup step (SNARKD_SETUP=test source scripts/setup.sh), through
#      installing (the test suite itself is not run).
# Prints each step's wall time and what it installed (Debian packages added, the toolchains and
# tools it fetched) and writes them to target/fresh-box/report.md. Not part of CI: it downloads
# and compiles everything once, about 35 minutes on 2 cores.
#
#   scripts/fresh-box.sh [--keep]    # --keep leaves the root in target/fresh-box/root
#
# Needs root (chroot and mounts) and mmdebstrap (installed when missing), and free ports 9820
# and 9821 (the demo's).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="$PWD/target/fresh-box"
ROOTFS="$OUT/root"
KEEP=0
[ "${1:-}" = "--keep" ] && KEEP=1
say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
fail() { printf 'fresh-box: FAILED: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "needs root (chroot, mounts)"
command -v mmdebstrap >/dev/null || {
  say "installing mmdebstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends mmdebstrap >/dev/null
}

mounts=()
cleanup() {
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done
  [ "$KEEP" = 1 ] || rm -rf "$ROOTFS"
}
trap cleanup EXIT

rm -rf "$ROOTFS"
mkdir -p "$OUT"
t0=$SECONDS
say "a stock Debian 12 root (mmdebstrap --variant=important bookworm)"
mmdebstrap --quiet --variant=important bookworm "$ROOTFS"
debootstrap_s=$((SECONDS - t0))

say "a clean clone of HEAD in /root/snarkd"
git clone --quiet --no-local "$PWD" "$ROOTFS/root/snarkd"
# The commit measured: the clone's, whatever this checkout moves to while the run goes on.
COMMIT="$(git -C "$ROOTFS/root/snarkd" rev-parse --short HEAD)"
for m in proc sys dev dev/pts; do
  mount --bind "/$m" "$ROOTFS/$m"
  mounts+=("$ROOTFS/$m")
done
cp /etc/resolv.conf "$ROOTFS/etc/resolv.conf"
# The host's network as it is, trust anchors included: a network that inspects TLS (a company
# proxy) has its CA among the local ones, which ca-certificates adds to the root's bundle when
# setup installs it, and the variables that point tools at the system bundle.
mkdir -p "$ROOTFS/usr/local/share/ca-certificates"
cp /usr/local/share/ca-certificates/*.crt "$ROOTFS/usr/local/share/ca-certificates/" 2>/dev/null || true
ca_env=()
for v in SSL_CERT_FILE SSL_CERT_DIR CURL_CA_BUNDLE REQUESTS_CA_BUNDLE PIP_CERT NODE_EXTRA_CA_CERTS GIT_SSL_CAINFO; do
  [ -n "${!v:-}" ] && ca_env+=("$v=${!v}")
done

# A login-like environment: nothing of this machine's PATH, caches or tool locations.
in_root() {
  chroot "$ROOTFS" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 "${ca_env[@]}" \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash -c "cd /root/snarkd && $1"
}
packages() { chroot "$ROOTFS" dpkg-query -W -f '${Package}\n' | sort; }

packages >"$OUT/packages-stock.txt"
say "1/2 ./scripts/demo.sh --once"
t=$SECONDS
in_root "./scripts/demo.sh --once" 2>&1 | tee "$OUT/demo.log"
demo_s=$((SECONDS - t))
proofs="$(grep -c '^status COMPLETED' "$OUT/demo.log" || true)"
[ "$proofs" = 2 ] || fail "the demo printed $proofs COMPLETED proofs, not 2 (log: $OUT/demo.log)"
packages >"$OUT/packages-demo.txt"
demo_installed="$(comm -13 "$OUT/packages-stock.txt" "$OUT/packages-demo.txt")"
demo_tools="$(in_root 'ls ~/.cargo/bin 2>/dev/null | tr "\n" " "; ls .tools 2>/dev/null | tr "\n" " "')"
for pkg in chromium podman nodejs npm; do
  ! grep -qx "$pkg" <<<"$demo_installed" || fail "the demo installed $pkg"
done
! in_root 'test -e .tools/node' || fail "the demo installed Node.js into .tools/node"

say "2/2 the test command's setup (SNARKD_SETUP=test source scripts/setup.sh)"
t=$SECONDS
in_root "SNARKD_SETUP=test source scripts/setup.sh" 2>&1 | tee "$OUT/test-setup.log"
setup_s=$((SECONDS - t))
packages >"$OUT/packages-test.txt"
test_installed="$(comm -13 "$OUT/packages-demo.txt" "$OUT/packages-test.txt")"

named() { grep -xE 'build-essential|pkg-config|git|curl|python3|python3-venv|brotli|nodejs|npm|chromium|podman|systemd|pocl-opencl-icd|ocl-icd-opencl-dev|lld(-[0-9]+)?|rustc-web' <<<"$1" | tr '\n' ' '; }
{
  echo "# Fresh-box run: the README's commands on a stock Debian 12 root"
  echo
  echo "Commit $COMMIT, $(nproc) cores, $(date -u +%F)."
  echo
  echo "| step | wall time | installed |"
  echo "|---|---|---|"
  echo "| stock root (mmdebstrap, $(wc -l <"$OUT/packages-stock.txt") packages) | ${debootstrap_s} s | — |"
  echo "| \`./scripts/demo.sh --once\` (two proofs COMPLETED) | ${demo_s} s | $(wc -l <<<"$demo_installed") Debian packages, among them: $(named "$demo_installed"); fetched: $demo_tools |"
  echo "| the test command's setup | ${setup_s} s | $(wc -l <<<"$test_installed") more Debian packages, among them: $(named "$test_installed") |"
} | tee "$OUT/report.md"

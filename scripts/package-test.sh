#!/usr/bin/env bash
# The Debian package as an operator meets it, under a real systemd:
#   scripts/package-test.sh BIN_DIR FIXTURES_DIR PARAMS_DIR
# Builds the package (scripts/package-deb.sh BIN_DIR) and boots systemd as PID 1 of a container
# of this machine's own system: new mount, PID and network namespaces, the root an overlay on
# this machine's root (every write lands in a tmpfs layer and is gone afterwards; nothing of the
# host changes). In it: `dpkg -i` (the postinst makes the user and directories, enables and starts
# the unit), the config edited as an operator would (the OpenCL backend, i.e. PoCL here), the
# 2 KiB WindowPoSt parameters put in the unit's default parameter directory, `systemctl restart`
# (Type=notify: returns once snarkd says READY), then a 2 KiB WindowPoSt from FIXTURES_DIR
# (`snarkd-bench gen`) proved through the hardened unit and checked with filecoin-proofs'
# verifier, on the device (its launch counter moved); `systemctl stop` drains and exits 0;
# `dpkg -r` stops, disables and removes it, keeping the edited config; `dpkg -P` removes the
# config and the state directory. Needs root, unshare and overlayfs (the test setup's machine).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 3 ] || { echo "usage: scripts/package-test.sh BIN_DIR FIXTURES_DIR PARAMS_DIR" >&2; exit 2; }
bin="$(realpath "$1")" fixtures="$(realpath "$2")" params="$(realpath "$3")"
say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
fail() { echo "package-test.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (it boots systemd in namespaces of its own)"

scratch="$(mktemp -d)"
boot_log="$scratch/boot.log"
deb="$(./scripts/package-deb.sh --out "$scratch" "$bin" | tail -n 1)"
say "built $(basename "$deb") ($(du -m "$deb" | cut -f1) MB)"
tag="snarkd-package-test-$$"
# The container: its root an overlay whose upper layer is a tmpfs (an upper layer inside the
# lower one is refused), /proc of its PID namespace, the host's /sys and /dev, loopback only.
cat > "$scratch/boot.sh" <<'EOF'
set -euo pipefail
layers="$1/layers"
mkdir -p "$layers"
mount -t tmpfs -o size=4g tmpfs "$layers"
mkdir -p "$layers/upper" "$layers/work" "$layers/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$layers/upper,workdir=$layers/work" "$layers/root"
root="$layers/root"
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
ip link set lo up
exec chroot "$root" /usr/bin/env -i "container=$2" /lib/systemd/systemd --system --unit=multi-user.target
EOF
setsid unshare --mount --pid --net --fork --propagation private bash "$scratch/boot.sh" "$scratch" "$tag" \
  >"$boot_log" 2>&1 < /dev/null &
unshare_pid=$!
cleanup() {
  # PID 1 of the namespace takes every process of it along; the mounts go with the namespace.
  [ -z "${init:-}" ] || kill -9 "$init" 2>/dev/null || true
  kill -9 "$unshare_pid" 2>/dev/null || true
  wait "$unshare_pid" 2>/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT

# The container's PID 1: the systemd started with this run's tag in its environment.
init=
for _ in $(seq 100); do
  for pid in $(pgrep -x systemd || true); do
    grep -qxz "container=$tag" "/proc/$pid/environ" 2>/dev/null && init="$pid"
  done
  [ -z "$init" ] || break
  sleep 0.1
done
[ -n "$init" ] || { cat "$boot_log" >&2; fail "systemd did not start in the container"; }
inside() { nsenter --target "$init" --mount --pid --net --root --wd "$@"; }
journal() { inside journalctl -u snarkd --no-pager -o cat | tail -n 30; }
# Only the network: the host's own binaries (the client) against the container's loopback.
beside() { nsenter --target "$init" --net "$@"; }
# Until its bus answers: then wait for the boot to end.
state=
for _ in $(seq 100); do
  state="$(inside systemctl is-system-running --wait 2>/dev/null || true)"
  [ -z "$state" ] || break
  sleep 0.1
done
say "systemd in the container: $state"
[ "$state" = running ] || [ "$state" = degraded ] || fail "the container's systemd is $state"

say "dpkg -i"
# A machine where snarkd once ran as root (`sudo snarkd run`): a state directory that is root's.
inside rm -rf /var/lib/snarkd /etc/snarkd /run/snarkd
inside mkdir -p /var/lib/snarkd/jobs
cp "$deb" "/proc/$init/root/root/snarkd.deb"
inside dpkg -i /root/snarkd.deb || fail "dpkg -i failed; the unit's log:
$(journal)"
inside systemctl is-enabled snarkd.service >/dev/null || fail "the package did not enable snarkd.service"
inside systemctl is-active --quiet snarkd.service || fail "the package did not start snarkd.service"
[ "$(inside stat -c %U:%G /var/lib/snarkd /etc/snarkd/snarkd.toml | sort -u | tr '\n' ' ')" = "root:snarkd snarkd:snarkd " ] \
  || fail "owners: $(inside stat -c '%n %U:%G' /var/lib/snarkd /etc/snarkd/snarkd.toml)"

say "the operator's config: the OpenCL backend (PoCL), the 2 KiB WindowPoSt parameters"
mkdir -p "/proc/$init/root/var/tmp/filecoin-proof-parameters"
for f in "$params"/*proof-of-spacetime*; do
  cp "$f" "/proc/$init/root/var/tmp/filecoin-proof-parameters/"
done
sed -i 's/^backend = "auto"$/backend = "opencl"/' "/proc/$init/root/etc/snarkd/snarkd.toml"
grep -q '^backend = "opencl"$' "/proc/$init/root/etc/snarkd/snarkd.toml" || fail "no backend line to edit in the default config"
inside systemctl restart snarkd.service
inside systemctl is-active --quiet snarkd.service || fail "snarkd.service is not active after restart: $(journal)"

say "a 2 KiB WindowPoSt through the unit, checked with filecoin-proofs' verifier"
beside "$bin/snarkd-bench" single --type wpost --input "$fixtures" --params-dir "$params" \
  || fail "the proof failed: $(journal)"
metrics="$(beside python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:9821/metrics").read().decode())')"
launches="$(grep -E '^snarkd_device_launches_total\{device="opencl:0"\} ' <<<"$metrics" | awk '{print $2}')"
[ -n "$launches" ] && [ "$launches" != 0 ] || fail "no device launch counted: $(grep device_launches <<<"$metrics")"
say "proved on the device ($launches launches); the unit restarted $(inside systemctl show -P NRestarts snarkd.service) times"
[ "$(inside systemctl show -P NRestarts snarkd.service)" = 0 ] || fail "the unit restarted"
unit_log="$(inside journalctl -u snarkd --no-pager)"
grep -q 'job finalized' <<<"$unit_log" || fail "no 'job finalized' line in the journal"

say "systemctl stop drains and exits 0"
inside systemctl stop snarkd.service
[ "$(inside systemctl show -P ExecMainStatus snarkd.service)" = 0 ] \
  || fail "exit status $(inside systemctl show -P ExecMainStatus snarkd.service)"

say "dpkg -r, then dpkg -P"
inside systemctl start snarkd.service
inside dpkg -r snarkd
! inside systemctl is-active --quiet snarkd.service || fail "snarkd.service still runs after dpkg -r"
for gone in /usr/bin/snarkd /usr/lib/systemd/system/snarkd.service /usr/share/snarkd; do
  ! inside test -e "$gone" || fail "$gone is left after dpkg -r"
done
inside test -e /etc/systemd/system/multi-user.target.wants/snarkd.service && fail "still enabled after dpkg -r"
inside grep -q '^backend = "opencl"$' /etc/snarkd/snarkd.toml || fail "dpkg -r did not keep the edited config"
inside dpkg -P snarkd
for gone in /etc/snarkd /var/lib/snarkd; do
  ! inside test -e "$gone" || fail "$gone is left after dpkg -P"
done
[ -z "$(inside dpkg-query -W -f='${Status}' snarkd 2>/dev/null | grep -v not-installed || true)" ] \
  || fail "dpkg still lists snarkd"
say "package test passed"

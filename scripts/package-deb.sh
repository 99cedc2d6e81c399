#!/usr/bin/env bash
# Builds snarkd's Debian package with dpkg-deb, Debian's own tool:
#   scripts/package-deb.sh [--monitor DIR] [--out DIR] BIN_DIR
# BIN_DIR holds `snarkd` and `snarkd-bench` (what `scripts/build.sh --release` prints); the
# monitor defaults to monitor-ui/dist. Prints the package's path on its last line. The package:
#   /usr/bin/snarkd, /usr/bin/snarkd-bench           the daemon and the client
#   /usr/share/snarkd/monitor/                       the monitor (the daemon's default: <bin>/../share)
#   /usr/lib/systemd/system/snarkd.service           the unit of server/deploy, binaries in /usr/bin
#   /usr/lib/sysusers.d/snarkd.conf                  the snarkd user and group
#   /usr/lib/tmpfiles.d/snarkd.conf                  its directories; the parameters never aged
#   /etc/snarkd/snarkd.toml                          `snarkd config default`, a conffile: an edited
#                                                    one is kept across upgrades
#   /usr/share/doc/snarkd/                           copyright, README
# Installing creates the user and directories and enables and starts the service; an upgrade
# restarts a running one (it drains first); removing stops and disables it; purging also deletes
# /etc/snarkd and the state directory (the job journal, pre-compiled circuits, kernels).
set -euo pipefail
cd "$(dirname "$0")/.."
monitor=monitor-ui/dist
out=target/deb
bin=
while [ $# -gt 0 ]; do
  case "$1" in
    --monitor) monitor="$2"; shift ;;
    --out) out="$2"; shift ;;
    -*) echo "package-deb.sh: unknown option $1 (use --monitor DIR, --out DIR)" >&2; exit 2 ;;
    *) bin="$1" ;;
  esac
  shift
done
[ -n "$bin" ] || { echo "usage: scripts/package-deb.sh [--monitor DIR] [--out DIR] BIN_DIR" >&2; exit 2; }
for name in snarkd snarkd-bench; do
  [ -x "$bin/$name" ] || { echo "package-deb.sh: $bin/$name is missing (scripts/build.sh --release builds it)" >&2; exit 1; }
done
[ -f "$monitor/index.html" ] || { echo "package-deb.sh: no monitor in $monitor (scripts/build.sh builds it)" >&2; exit 1; }

# "snarkd 0.1.0 (commit 8898c1b0573b)" -> 0.1.0+g8898c1b0573b: the build is in the version.
said="$("$bin/snarkd" --version)"
version="$(sed -E 's/^snarkd ([^ ]+) \(commit ([0-9a-f]+)\).*/\1+g\2/; s/^snarkd ([^ ]+)$/\1/' <<<"$said")"
[[ "$version" =~ ^[0-9][0-9A-Za-z.+~-]*$ ]] || { echo "package-deb.sh: cannot read a version from: $said" >&2; exit 1; }
arch="$(dpkg --print-architecture)"

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
pkg="$stage/snarkd"
# Without their debug information (hundreds of MB), as Debian ships binaries; symbols stay.
for name in snarkd snarkd-bench; do
  install -D -m 0755 "$bin/$name" "$pkg/usr/bin/$name"
  strip --strip-debug "$pkg/usr/bin/$name"
done
mkdir -p "$pkg/usr/share/snarkd"
cp -R "$monitor" "$pkg/usr/share/snarkd/monitor"
mkdir -p "$pkg/usr/lib/systemd/system"
sed 's#/usr/local/bin/#/usr/bin/#g; s#server/deploy/install.sh installs it#the snarkd package installs it#' \
  server/deploy/snarkd.service > "$pkg/usr/lib/systemd/system/snarkd.service"
install -D -m 0644 server/deploy/sysusers.conf "$pkg/usr/lib/sysusers.d/snarkd.conf"
install -D -m 0644 server/deploy/tmpfiles.conf "$pkg/usr/lib/tmpfiles.d/snarkd.conf"
mkdir -p "$pkg/etc/snarkd"
"$bin/snarkd" config default > "$pkg/etc/snarkd/snarkd.toml"
chmod 0640 "$pkg/etc/snarkd/snarkd.toml"
doc="$pkg/usr/share/doc/snarkd"
mkdir -p "$doc"
cp README.md "$doc/README.md"
{
  echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
  echo "Upstream-Name: snarkd"
  echo
  echo "Files: *"
  echo "License: MIT or Apache-2.0"
  echo
  cat LICENSE-MIT
  echo
  cat LICENSE-APACHE
} > "$doc/copyright"
chmod -R u+rwX,go+rX,go-w "$pkg/usr"

mkdir -p "$pkg/DEBIAN"
echo /etc/snarkd/snarkd.toml > "$pkg/DEBIAN/conffiles"
cat > "$pkg/DEBIAN/control" <<EOF
Package: snarkd
Version: $version
Architecture: $arch
Maintainer: snarkd developers <maintainers@snarkd.invalid>
Depends: libc6 (>= 2.34), libgcc-s1, systemd
Recommends: ocl-icd-libopencl1
Section: net
Priority: optional
Installed-Size: $(du -sk "$pkg/usr" "$pkg/etc" | awk '{n += $1} END {print n}')
Homepage: https://github.com/snarkd/snarkd
Description: Filecoin zk-SNARK proving daemon for Curio
 snarkd proves Filecoin's Groth16 proofs (PoRep C2, WinningPoSt, WindowPoSt,
 SnapDeals) on GPUs and CPUs behind Curio's cuzk.v1.ProvingEngine gRPC
 contract, under a memory budget and priorities, with a web monitor.
EOF

cat > "$pkg/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
  systemd-sysusers /usr/lib/sysusers.d/snarkd.conf
  # A state directory made by snarkd run as root before the package (its journal among it) is
  # handed to the snarkd user, or the service could not open its own journal.
  if [ -d /var/lib/snarkd ] && [ -n "$(find /var/lib/snarkd ! -user snarkd -print -quit)" ]; then
    chown -R snarkd:snarkd /var/lib/snarkd
    echo "snarkd: /var/lib/snarkd handed to the snarkd user (parts of it were another user's)"
  fi
  systemd-tmpfiles --create /usr/lib/tmpfiles.d/snarkd.conf
  chgrp snarkd /etc/snarkd/snarkd.toml
  chmod 0640 /etc/snarkd/snarkd.toml
  if [ -z "$2" ]; then
    systemctl enable snarkd.service >/dev/null 2>&1 || true
  fi
  if [ -d /run/systemd/system ]; then
    systemctl daemon-reload
    if [ -z "$2" ]; then
      systemctl start snarkd.service
      echo "snarkd started: set [params] dir in /etc/snarkd/snarkd.toml, then: systemctl restart snarkd"
    else
      # An upgrade: a running daemon drains its proofs, then runs the new binary.
      systemctl try-restart snarkd.service
    fi
  fi
fi
EOF
cat > "$pkg/DEBIAN/prerm" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = remove ]; then
  if [ -d /run/systemd/system ]; then
    # Drains: running proofs finish (up to [daemon] drain_timeout) before the files go.
    systemctl stop snarkd.service || true
  fi
  systemctl disable snarkd.service >/dev/null 2>&1 || true
fi
EOF
cat > "$pkg/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload || true
fi
if [ "$1" = purge ]; then
  # The job journal, pre-compiled circuits and compiled kernels; the parameters are not ours.
  rm -rf /var/lib/snarkd /run/snarkd
  rmdir /etc/snarkd 2>/dev/null || true
fi
EOF
chmod 0755 "$pkg/DEBIAN/postinst" "$pkg/DEBIAN/prerm" "$pkg/DEBIAN/postrm"

mkdir -p "$out"
deb="$out/snarkd_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$pkg" "$deb" >&2
echo "$deb"

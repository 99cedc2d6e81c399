#!/usr/bin/env bash
# Installs or upgrades snarkd as a systemd service:
#   server/deploy/install.sh [--root DIR] [--monitor DIR] BIN_DIR
# BIN_DIR holds `snarkd` and, optionally, `snarkd-bench` (what scripts/build.sh --release prints,
# e.g. target/release). Installs, under --root (default /, a scratch root for images and tests):
#   /usr/local/bin/snarkd, snarkd-bench       the binaries
#   /usr/local/share/snarkd/monitor/          the monitor (--monitor, default monitor-ui/dist)
#   /etc/systemd/system/snarkd.service        the unit
#   /usr/lib/sysusers.d/snarkd.conf           the snarkd user and group
#   /usr/lib/tmpfiles.d/snarkd.conf           /var/lib/snarkd (journal, pre-compiled circuits),
#                                             /run/snarkd, /etc/snarkd
#   /etc/snarkd/snarkd.toml                   `snarkd config default`, only when there is none
# then creates the user and the directories (systemd-sysusers, systemd-tmpfiles) and, on a
# running systemd with the default root, reloads it. Each binary is copied beside the installed
# one under a temporary name, checked with `--version`, then renamed over it: a daemon still
# running the old file keeps it until it restarts, so nothing fails with "text file busy" and no
# half-written binary is ever started. Afterwards: `systemctl enable --now snarkd` (a first
# install) or `systemctl restart snarkd` (it drains first), and check the build id in status.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root=/
monitor="$here/../../monitor-ui/dist"
src=
while [ $# -gt 0 ]; do
  case "$1" in
    --root) root="$2"; shift ;;
    --monitor) monitor="$2"; shift ;;
    -*) echo "install.sh: unknown option $1" >&2; exit 2 ;;
    *) src="$1" ;;
  esac
  shift
done
[ -n "$src" ] || { echo "usage: install.sh [--root DIR] [--monitor DIR] BIN_DIR" >&2; exit 2; }
[ -x "$src/snarkd" ] || { echo "install.sh: $src/snarkd is missing or not executable" >&2; exit 1; }
root="${root%/}"
bin="$root/usr/local/bin"

mkdir -p "$bin"
for name in snarkd snarkd-bench; do
  [ -x "$src/$name" ] || continue
  tmp="$bin/.$name.new.$$"
  trap 'rm -f "$tmp"' EXIT
  install -m 0755 "$src/$name" "$tmp"
  version="$("$tmp" --version)" || { echo "install.sh: $src/$name does not run here" >&2; exit 1; }
  mv -f "$tmp" "$bin/$name"
  trap - EXIT
  echo "installed $bin/$name: $version"
done

# The monitor: a fresh copy renamed into place, so the daemon never serves half of one.
if [ -f "$monitor/index.html" ]; then
  share="$root/usr/local/share/snarkd"
  mkdir -p "$share"
  rm -rf "$share/.monitor.new"
  cp -R "$monitor" "$share/.monitor.new"
  rm -rf "$share/monitor.old"
  [ ! -e "$share/monitor" ] || mv "$share/monitor" "$share/monitor.old"
  mv "$share/.monitor.new" "$share/monitor"
  rm -rf "$share/monitor.old"
  echo "installed $share/monitor"
else
  echo "install.sh: no monitor at $monitor (build it with scripts/build.sh); the page will say so" >&2
fi

install -D -m 0644 "$here/snarkd.service" "$root/etc/systemd/system/snarkd.service"
install -D -m 0644 "$here/sysusers.conf" "$root/usr/lib/sysusers.d/snarkd.conf"
install -D -m 0644 "$here/tmpfiles.conf" "$root/usr/lib/tmpfiles.d/snarkd.conf"
echo "installed the unit, $root/usr/lib/sysusers.d/snarkd.conf and tmpfiles.d/snarkd.conf"

sysroot=()
[ "$root" = "" ] || sysroot=(--root "$root")
systemd-sysusers "${sysroot[@]}" "$root/usr/lib/sysusers.d/snarkd.conf"
systemd-tmpfiles --create "${sysroot[@]}" "$root/usr/lib/tmpfiles.d/snarkd.conf"

config="$root/etc/snarkd/snarkd.toml"
if [ ! -e "$config" ]; then
  "$bin/snarkd" config default > "$config.new"
  chmod 0640 "$config.new"
  chgrp --reference="$root/etc/snarkd" "$config.new"
  mv "$config.new" "$config"
  echo "installed $config (the defaults; edit it, then restart snarkd)"
fi

if [ "$root" = "" ] && [ -d /run/systemd/system ]; then
  systemctl daemon-reload
fi

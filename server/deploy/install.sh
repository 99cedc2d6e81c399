#!/usr/bin/env bash
# Installs or upgrades the snarkd binaries without touching a running one:
#   server/deploy/install.sh SOURCE_DIR [DEST_DIR]     (DEST_DIR defaults to /usr/local/bin)
# SOURCE_DIR holds `snarkd` and, optionally, `snarkd-bench` (e.g. target/release). Each binary is copied beside the installed one under a temporary name, checked with
# `--version`, then renamed over it. A rename swaps the directory entry only: a daemon still
# running the old file keeps it until it restarts, so nothing fails with "text file busy" and
# no half-written binary is ever started. Restart the service afterwards (it drains first) and
# check that status shows the new build id.
set -euo pipefail

src="${1:?usage: install.sh SOURCE_DIR [DEST_DIR]}"
dest="${2:-/usr/local/bin}"
mkdir -p "$dest"
[ -x "$src/snarkd" ] || { echo "install.sh: $src/snarkd is missing or not executable" >&2; exit 1; }
for name in snarkd snarkd-bench; do
  [ -x "$src/$name" ] || continue
  tmp="$dest/.$name.new.$$"
  trap 'rm -f "$tmp"' EXIT
  install -m 0755 "$src/$name" "$tmp"
  version="$("$tmp" --version)" || { echo "install.sh: $src/$name does not run here" >&2; exit 1; }
  mv -f "$tmp" "$dest/$name"
  trap - EXIT
  echo "installed $dest/$name: $version"
done

#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh runs on a GPU box that has no toolchain and no network: the
# release binaries (snarkd, snarkd-bench and the examples device_bench, device_shape and
# production_shape), stripped, in one gzip'd tar laid out as SNARKD_BIN_DIR wants them
# (target/gpu-pack/snarkd-gpu.tar.gz, under a lent box's 64 MiB a call). There:
#
#   mkdir -p /tmp/snarkd && tar -xzf target/gpu-pack/snarkd-gpu.tar.gz -C /tmp/snarkd
#   SNARKD_BIN_DIR=/tmp/snarkd scripts/gpu-check.sh --out "$OUT/gpu-check"
#
# Prints the tar's path and size on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."

bin="$(./scripts/build.sh --release --no-monitor | tail -n 1)"
cargo build --release --locked -p snarkd-prover --features bench --example device_bench \
  --example device_shape --example production_shape
pack="$(dirname "$bin")/gpu-pack"
rm -rf "$pack"
mkdir -p "$pack/bin/examples"
cp "$bin/snarkd" "$bin/snarkd-bench" "$pack/bin/"
cp "$bin/examples/device_bench" "$bin/examples/device_shape" "$bin/examples/production_shape" \
  "$pack/bin/examples/"
strip --strip-debug "$pack/bin/snarkd" "$pack/bin/snarkd-bench" "$pack/bin/examples/"*
tar -C "$pack/bin" -czf "$pack/snarkd-gpu.tar.gz" .
rm -r "$pack/bin"
size=$(stat -c %s "$pack/snarkd-gpu.tar.gz")
if [ "$size" -gt $((56 << 20)) ]; then
  echo "scripts/gpu-pack.sh: the pack is $size bytes, more than a lent box takes beside the checkout" >&2
  exit 1
fi
echo "$pack/snarkd-gpu.tar.gz $size"

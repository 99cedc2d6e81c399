#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine, builds snarkd, starts it on the default ports with the
# built-in defaults, and shows it working through its public interfaces. The daemon keeps running
# (open http://127.0.0.1:9821/) until Ctrl-C; with --once it stops after the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

ONCE=0
[ "${1:-}" = "--once" ] && ONCE=1
GRPC_ADDR=127.0.0.1:9820
HTTP_ADDR=127.0.0.1:9821

say "building snarkd"
cargo build -p snarkd
SNARKD="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/debug/snarkd"

say "starting snarkd (gRPC $GRPC_ADDR, HTTP $HTTP_ADDR)"
"$SNARKD" run --listen "$GRPC_ADDR" --http-listen "$HTTP_ADDR" &
DAEMON=$!
stop() { kill -TERM "$DAEMON" 2>/dev/null && wait "$DAEMON" || true; }
trap stop EXIT

for _ in $(seq 1 100); do
  curl -fsS "http://$HTTP_ADDR/healthz" >/dev/null 2>&1 && break
  kill -0 "$DAEMON" 2>/dev/null || { echo "snarkd exited during startup (see its message above)" >&2; exit 1; }
  sleep 0.1
done

say "services, through gRPC reflection"
"$GRPCURL" -plaintext "$GRPC_ADDR" list
say "GetStatus (what Curio polls for backpressure)"
"$GRPCURL" -plaintext -d '{}' "$GRPC_ADDR" cuzk.v1.ProvingEngine/GetStatus
say "the first StreamStatus message"
timeout 3 "$GRPCURL" -plaintext -d '{}' "$GRPC_ADDR" cuzk.v1.ProvingEngine/StreamStatus | sed '/^}$/q' || true
say "GET /status (the original daemon's JSON)"
curl -fsS "http://$HTTP_ADDR/status"; echo

if [ "$ONCE" = 1 ]; then
  say "stopping snarkd"
  exit 0
fi
say "snarkd is running: dashboard http://$HTTP_ADDR/ , gRPC $GRPC_ADDR . Ctrl-C stops it."
wait "$DAEMON"

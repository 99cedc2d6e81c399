#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine, builds snarkd, starts it on the default ports with the
# built-in defaults, and shows it working through its public interfaces. The daemon keeps running
# (open http://127.0.0.1:9821/) until Ctrl-C; with --once it stops after the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
SNARKD_SETUP=demo source scripts/setup.sh

ONCE=0
[ "${1:-}" = "--once" ] && ONCE=1
GRPC_ADDR=127.0.0.1:9820
HTTP_ADDR=127.0.0.1:9821

say "building snarkd, snarkd-bench and the monitor (scripts/build.sh: the daemon as it ships)"
BIN="$(./scripts/build.sh | tail -n 1)"
SNARKD="$BIN/snarkd"

# Real proofs need parameters and inputs. The demo makes LOCAL TEST parameters for 2 KiB PoSt
# circuits (seconds; they verify only against their own .vk, never on chain) and seals a
# random 2 KiB sector to get real WinningPoSt and WindowPoSt inputs.
PARAMS="${SNARKD_TEST_PARAMS_DIR:-$HOME/.cache/snarkd/params-2k}"
FIXTURES="$SNARKD_TOOLS/fixtures-2k"
say "2 KiB PoSt test parameters in $PARAMS"
"$SNARKD" params generate --sector-size 2KiB --kind winning --kind wpost --dir "$PARAMS"
say "sealing a random 2 KiB sector for real request inputs ($FIXTURES)"
"$BIN/snarkd-bench" gen --sector-size 2KiB --out "$FIXTURES" >/dev/null
export SNARKD_PARAMS_DIR="$PARAMS"
# The built-in "auto" backend warns when it finds no GPU (on a GPU box that is a fault). The demo
# proves 2 KiB circuits in seconds on the CPU: say so when `snarkd devices` lists no GPU.
if [ -z "${SNARKD_GPUS_BACKEND:-}" ] && ! "$SNARKD" devices 2>/dev/null | awk -F'\t' 'NR > 1 && $4 == "gpu"' | grep -q .; then
  export SNARKD_GPUS_BACKEND=cpu
fi

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
for kind in winning wpost; do
  say "Prove: a real 2 KiB $kind proof through grpcurl, as Curio would ask for it"
  python3 scripts/fixture_request.py "$FIXTURES" "$kind" \
    | "$GRPCURL" -plaintext -max-msg-sz 268435456 -d @ "$GRPC_ADDR" cuzk.v1.ProvingEngine/Prove \
    | python3 -c 'import json,sys; r=json.load(sys.stdin)["result"]; print("status", r.get("status"), "| proof bytes", len(__import__("base64").b64decode(r.get("proof",""))), "| total_ms", r.get("totalMs"), r.get("errorMessage",""))'
done

say "GET /status (the original daemon's JSON)"
curl -fsS "http://$HTTP_ADDR/status"; echo

if [ "$ONCE" = 1 ]; then
  say "stopping snarkd"
  exit 0
fi
say "snarkd is running: dashboard http://$HTTP_ADDR/ , gRPC $GRPC_ADDR . Ctrl-C stops it."
wait "$DAEMON"

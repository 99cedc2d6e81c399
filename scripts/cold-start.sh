#!/usr/bin/env bash
# From start to the first WinningPoSt served, cold and warm: starts snarkd on the OpenCL devices
# (`auto` where there are GPUs, else `opencl`, which takes PoCL's CPU device) with nothing kept
# (a fresh state directory: no compiled kernels; fresh driver caches: CUDA_CACHE_PATH and
# POCL_CACHE_DIR), proves one real 2 KiB WinningPoSt as soon as it serves, waits for its devices
# to be ready, stops it, then does the same again with what the first start kept. Prints one
# JSON row per start: seconds to serving, to the WinningPoSt proved, to every device ready, the
# kernel build (from source or from the kept binary) and where the WinningPoSt ran (cpu while
# the device warmed, or the device).
#
#   SNARKD_BIN_DIR=DIR scripts/cold-start.sh FIXTURES_DIR PARAMS_DIR
#
# FIXTURES_DIR is `snarkd-bench gen`'s output, PARAMS_DIR holds the 2 KiB WinningPoSt parameters.
# With SNARKD_COLD_START_POREP=1 it also times a fresh CPU daemon's first 2 KiB PoRep against
# its second (parameters loaded) and says on which path each was synthesized. With
# SNARKD_COLD_START_KEEP_KERNELS=DIR it leaves the kernels the starts kept in DIR.
# scripts/gpu-check.sh runs it; it runs alone as well.
set -euo pipefail
fixtures="$1"
params="$2"
bin="${SNARKD_BIN_DIR:?set SNARKD_BIN_DIR to the release binaries}"
# Its starts keep their kernels in their own state directory, whatever the caller keeps.
unset SNARKD_GPUS_KERNEL_CACHE
work="$(mktemp -d)"
daemon=""
cleanup() {
  [ -n "$daemon" ] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" || true
  rm -rf "$work"
}
trap cleanup EXIT

backend=opencl
"$bin/snarkd" devices 2>/dev/null | awk -F'\t' '$4 == "gpu"' | grep -q . && backend=auto

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# The first log line (JSON) whose message is $2, its field $3.
log_field() {
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    try:
        event = json.loads(line)
    except ValueError:
        continue
    if event.get("message") == sys.argv[2]:
        print(event.get(sys.argv[3], ""))
        break
' "$1" "$2" "$3"
}

# Starts `snarkd run` on loopback ports it picks, with the settings given as NAME=value
# arguments and its log in $work/daemon-$1.log; returns once it serves, with its addresses in
# $grpc and $http and its pid in $daemon.
start_daemon() {
  local name="$1" ready="$work/ready-$1.json"
  shift
  rm -f "$ready"
  env "$@" SNARKD_PARAMS_DIR="$params" SNARKD_LOGGING_FORMAT=json \
    "$bin/snarkd" run --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 --ready-file "$ready" \
    2>"$work/daemon-$name.log" &
  daemon=$!
  until [ -s "$ready" ]; do
    kill -0 "$daemon" 2>/dev/null || { echo "snarkd exited at startup:" >&2; cat "$work/daemon-$name.log" >&2; exit 1; }
    sleep 0.05
  done
  grpc="$(sed -n 's/.*"grpc":"\([^"]*\)".*/\1/p' "$ready")"
  http="$(sed -n 's/.*"http":"\([^"]*\)".*/\1/p' "$ready")"
}

stop_daemon() {
  kill -TERM "$daemon" && wait "$daemon" || true
  daemon=""
}

# Each series on the daemon's /metrics that the sed pattern $1 (`name{labels}`) matches,
# written as $2 (default `\1`: its value; a pattern with a group of its own can write `\1=\2`).
metric() {
  python3 -c 'import sys,urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())' \
    "http://$http/metrics" | sed -n "s/^$1 \(.*\)/${2:-\\1}/p"
}

one_start() {
  local which="$1" log="$work/daemon-$1.log" started
  started=$(now_ms)
  start_daemon "$which" STATE_DIRECTORY="$work/state" CUDA_CACHE_PATH="$work/state/kernels/nvidia" \
    POCL_CACHE_DIR="$work/pocl" SNARKD_GPUS_BACKEND="$backend" SNARKD_JOBS_DIR="$work/jobs" \
    SNARKD_GPUS_TELEMETRY_INTERVAL=1s
  local serving=$(( $(now_ms) - started ))
  "$bin/snarkd-bench" --addr "http://$grpc" single -t winning --input "$fixtures" >/dev/null
  local proved=$(( $(now_ms) - started ))
  local on_cpu
  on_cpu="$(metric 'snarkd_cpu_while_warming_total{kind="winning-post"}')"
  # Every device set up: the devices' readings say none is warming any more.
  local waited=$SECONDS
  until python3 -c 'import json,sys,urllib.request; d=json.load(urllib.request.urlopen(sys.argv[1])).get("devices", []); sys.exit(0 if d and not any(x.get("warming") for x in d) else 1)' "http://$http/status" 2>/dev/null; do
    [ $((SECONDS - waited)) -lt 900 ] || { echo "devices still warming after 15 minutes" >&2; exit 1; }
    sleep 0.1
  done
  local ready_ms=$(( $(now_ms) - started ))
  stop_daemon
  local from build_ms
  from="$(log_field "$log" "opencl kernels loaded from their kept binary" build_ms)"
  if [ -n "$from" ]; then build_ms="$from"; from=binary; else
    build_ms="$(log_field "$log" "opencl kernels built" build_ms)"; from=source; fi
  printf '{"bench":"cold_start","start":"%s","backend":"%s","serving_s":%s,"first_winning_s":%s,"winning_on":"%s","devices_ready_s":%s,"kernels_from":"%s","kernel_build_s":%s}\n' \
    "$which" "$backend" "$(awk "BEGIN{print $serving/1000}")" "$(awk "BEGIN{print $proved/1000}")" \
    "$([ "${on_cpu:-0}" = 1 ] && echo cpu || echo device)" "$(awk "BEGIN{print $ready_ms/1000}")" \
    "$from" "$(awk "BEGIN{print ${build_ms:-0}/1000}")"
}

one_start cold
one_start warm
# What the starts kept (snarkd's kernel binaries, NVIDIA's compute cache), for whatever runs next
# on this machine to load instead of building again (scripts/gpu-check.sh).
if [ -n "${SNARKD_COLD_START_KEEP_KERNELS:-}" ] && [ -d "$work/state/kernels" ]; then
  mkdir -p "$SNARKD_COLD_START_KEEP_KERNELS"
  cp -a "$work/state/kernels/." "$SNARKD_COLD_START_KEEP_KERNELS/"
fi

# A fresh daemon's first PoRep (its parameters loaded, its matrices recorded or read, the
# partition synthesized the plain way or waiting for them: `[synthesis]` and the load's
# estimate decide) against the next one, parameters loaded: on the CPU backend, so that the
# figure is the start's cost, not PoCL's device phase. With SNARKD_COLD_START_POREP=1 only
# (it needs the 2 KiB PoRep parameters).
first_porep() {
  start_daemon porep STATE_DIRECTORY="$work/porep-state" SNARKD_GPUS_BACKEND=cpu \
    SNARKD_JOBS_DIR="$work/porep-jobs"
  local which started took path
  for which in first second; do
    started=$(now_ms)
    "$bin/snarkd-bench" --addr "http://$grpc" single -t porep --input "$fixtures" >/dev/null 2>&1
    took=$(( $(now_ms) - started ))
    path="$(metric 'snarkd_partitions_synthesized_total{kind="porep-c2",path="\([a-z]*\)"}' '\1=\2' | tr '\n' ' ')"
    printf '{"bench":"cold_start","start":"%s porep on a fresh cpu daemon","seconds":%s,"synthesized":"%s"}\n' \
      "$which" "$(awk "BEGIN{print $took/1000}")" "${path% }"
  done
  stop_daemon
}
[ "${SNARKD_COLD_START_POREP:-0}" = 1 ] && first_porep
exit 0

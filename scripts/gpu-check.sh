#!/usr/bin/env bash
# The GPU check: one command for a machine with a GPU (it runs on PoCL's CPU device too). It
#   1. lists the devices snarkd sees (`snarkd devices`),
#   2. proves each kind once through a daemon on the OpenCL device and once through a daemon on
#      the CPU (real 2 KiB proofs, verified before they are returned),
#      and records what the devices report (NVML's utilisation, memory, temperature, power and
#      snarkd's pool: /status and /metrics; an NVIDIA device without NVML readings, or whose
#      snarkd_device_info lacks NVML's PCI bus id and UUID, fails),
#   3. times the device phase on the OpenCL device (before the device-resident plan and now)
#      and on the CPU for the same partitions (`device_bench`), the device phase of one
#      production-shaped partition step by step (`device_shape`, SNARKD_GPU_CHECK_SHAPE, default
#      "porep 32GiB 18"; SNARKD_GPU_CHECK_LIMBS="64 32" measures both limb widths,
#      SNARKD_GPU_CHECK_GROUPS="1,4" the multiexp's work groups per compute unit, and with
#      SNARKD_GPU_CHECK_WORKERS workers, default "auto", that many partitions at once; then one
#      with its bases streamed, unless SNARKD_GPU_CHECK_STREAMED=0; with B's G2 multiexp on the
#      CPU; and the old path's, unless SNARKD_GPU_CHECK_BEFORE=0), and our
#      whole prover against stock bellperson (`snarkd-bench bench`; stock bellperson runs on the
#      CPU: it is built without its GPU features),
#   4. synthesizes one production-shaped partition at 1 to 16 threads (`production_shape`,
#      SNARKD_GPU_CHECK_SYNTHESIS, default "porep 32GiB 18", at SNARKD_GPU_CHECK_THREADS, default
#      "1,2,4,8,16"): wall, user and system CPU seconds, page faults, peak RSS against the estimate,
#   5. times a cold and a warm start to the first WinningPoSt (`scripts/cold-start.sh`),
# and writes one small report, target/gpu-check/report.md (or --out DIR), with every device-phase
# and synthesis figure as a JSON row in device.jsonl beside it.
#
#   scripts/gpu-check.sh [--out DIR] [--kind winning --kind wpost ...]
#
# Without SNARKD_BIN_DIR it builds release binaries first (scripts/build.sh, network needed once).
# With SNARKD_BIN_DIR pointing at release binaries (snarkd, snarkd-bench, examples/device_bench,
# examples/device_shape, examples/production_shape)
# it needs no network and no toolchain: copy them to the GPU machine and run this there. Kinds
# default to all four; PoRep and SnapDeals parameters take a while to make the first time
# (kept in $SNARKD_TEST_PARAMS_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."

out=target/gpu-check
kinds=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift ;;
    --kind) kinds+=("$2"); shift ;;
    *) echo "scripts/gpu-check.sh: unknown argument $1 (use --out DIR, --kind KIND)" >&2; exit 2 ;;
  esac
  shift
done
[ ${#kinds[@]} -gt 0 ] || kinds=(winning wpost snap porep)

say() { printf '\n== %s\n' "$*" >&2; }

if [ -z "${SNARKD_BIN_DIR:-}" ]; then
  source scripts/setup.sh
  SNARKD_BIN_DIR="$(./scripts/build.sh --release --no-monitor | tail -n 1)"
  cargo build --release --locked -p snarkd-prover --features bench --example device_bench \
    --example device_shape --example production_shape
fi
bin="$SNARKD_BIN_DIR"
for tool in snarkd snarkd-bench examples/device_bench examples/device_shape examples/production_shape; do
  [ -x "$bin/$tool" ] || { echo "scripts/gpu-check.sh: $bin/$tool is missing" >&2; exit 1; }
done

mkdir -p "$out"
out="$(cd "$out" && pwd)"
work="$(mktemp -d)"
daemon=""
cleanup() {
  [ -n "$daemon" ] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" || true
  rm -rf "$work"
}
trap cleanup EXIT

export SNARKD_TEST_PARAMS_DIR="${SNARKD_TEST_PARAMS_DIR:-$HOME/.cache/snarkd/params-2k}"
kind_args=()
for k in "${kinds[@]}"; do kind_args+=(--kind "$k"); done
say "2 KiB test parameters in $SNARKD_TEST_PARAMS_DIR (${kinds[*]})"
"$bin/snarkd" params generate --sector-size 2KiB "${kind_args[@]}" --dir "$SNARKD_TEST_PARAMS_DIR" >&2
say "sealing a random 2 KiB sector for real inputs"
"$bin/snarkd-bench" gen --sector-size 2KiB --out "$work/fixtures" >/dev/null

report="$out/report.md"
{
  echo "# snarkd GPU check"
  echo
  echo "$("$bin/snarkd" --version 2>&1 | head -n 1), $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores"
  echo
  echo "## Devices"
  echo
  echo '```'
  "$bin/snarkd" devices 2>&1
  echo '```'
} >"$report"

# A field of the ready file `snarkd run --ready-file` writes (one JSON object on one line).
ready_field() { sed -n "s/.*\"$2\":\"\([^\"]*\)\".*/\1/p" "$1"; }

# Proves each kind once through a daemon whose device phase runs on `$1` (opencl or cpu). The
# daemon picks its own ports and names them in its ready file.
prove_through_daemon() {
  local backend="$1" ready="$work/ready-$1.json" grpc=""
  say "proving each kind through a daemon on backend $backend"
  SNARKD_GPUS_BACKEND="$backend" SNARKD_PARAMS_DIR="$SNARKD_TEST_PARAMS_DIR" \
    SNARKD_JOBS_DIR="$work/jobs-$backend" SNARKD_LOGGING_LEVEL=warn \
    "$bin/snarkd" run --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 --ready-file "$ready" \
    2>"$out/daemon-$backend.log" &
  daemon=$!
  # The daemon serves once its journal is read back; its devices warm in the background.
  local started=$SECONDS
  grpc=""
  while [ $((SECONDS - started)) -lt "${SNARKD_GPU_CHECK_START_S:-600}" ]; do
    if [ -s "$ready" ]; then
      grpc="$(ready_field "$ready" grpc)"
      "$bin/snarkd-bench" --addr "http://$grpc" status >/dev/null 2>&1 && break
    fi
    kill -0 "$daemon" 2>/dev/null || { echo "snarkd ($backend) exited at startup:" >&2; cat "$out/daemon-$backend.log" >&2; exit 1; }
    sleep 0.2
  done
  echo >>"$report"
  echo "## Proofs through the daemon, backend \`$backend\`" >>"$report"
  echo >>"$report"
  if [ ! -s "$ready" ]; then
    echo "FAILED: not serving after $((SECONDS - started)) s (SNARKD_GPU_CHECK_START_S); its log: $out/daemon-$backend.log" >>"$report"
    failures=$((failures + 1))
    kill -TERM "$daemon" && wait "$daemon" || true
    daemon=""
    return
  fi
  echo "Serving after $((SECONDS - started)) s (devices warm in the background: WinningPoSt on the CPU until they are ready)." >>"$report"
  # Every proof below on the device: wait until no device reading says warming.
  local http
  http="$(ready_field "$ready" http)"
  until python3 -c 'import json,sys,urllib.request; d=json.load(urllib.request.urlopen(sys.argv[1])).get("devices", []); sys.exit(0 if d and not any(x.get("warming") for x in d) else 1)' "http://$http/status" 2>/dev/null; do
    [ $((SECONDS - started)) -lt "${SNARKD_GPU_CHECK_START_S:-600}" ] || break
    sleep 0.5
  done
  echo "Devices ready after $((SECONDS - started)) s." >>"$report"
  echo >>"$report"
  echo "| kind | result | seconds |" >>"$report"
  echo "|---|---|---|" >>"$report"
  local k start result
  for k in "${kinds[@]}"; do
    start=$(date +%s%N)
    if "$bin/snarkd-bench" --addr "http://$grpc" single -t "$k" --input "$work/fixtures" >"$work/single.txt" 2>&1; then
      result="completed, verified"
    else
      result="FAILED: $(tail -n 1 "$work/single.txt")"
      failures=$((failures + 1))
    fi
    printf '| %s | %s | %d.%03d |\n' "$k" "$result" $(( ($(date +%s%N) - start) / 1000000000 )) \
      $(( ($(date +%s%N) - start) / 1000000 % 1000 )) >>"$report"
  done
  [ "$backend" != cpu ] && device_readings "$(ready_field "$ready" http)"
  kill -TERM "$daemon" && wait "$daemon" || true
  daemon=""
}

# What the devices report (NVML and snarkd's pool) in /status and /metrics; on NVIDIA's driver,
# NVML's readings must be there.
device_readings() {
  local http="$1" status metrics
  status="$(python3 -c 'import json,sys,urllib.request; print(json.dumps(json.load(urllib.request.urlopen(sys.argv[1])).get("devices", [])))' "http://$http/status")"
  metrics="$(python3 -c 'import sys,urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())' "http://$http/metrics" | grep '^snarkd_device_' || true)"
  {
    echo
    echo "## Device readings (backend \`$gpu_backend\`)"
    echo
    echo '```'
    echo "$status"
    echo "$metrics"
    echo '```'
  } >>"$report"
  if "$bin/snarkd" devices 2>/dev/null | grep -q 'NVIDIA'; then
    if ! grep -q '"utilization_percent"' <<<"$status"; then
      echo "| device readings | FAILED: an NVIDIA device but no NVML readings in /status | |" >>"$report"
      failures=$((failures + 1))
    fi
    # The info series joins with DCGM's by pci_bus_id and UUID: NVML gives both on NVIDIA.
    if ! grep -Eq '^snarkd_device_info\{.*pci_bus_id="[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-9]".*UUID="GPU-' <<<"$metrics"; then
      echo "| device info | FAILED: an NVIDIA device but snarkd_device_info lacks NVML's pci_bus_id or UUID | |" >>"$report"
      failures=$((failures + 1))
    fi
  fi
}

failures=0
# The GPUs alone where there are any (`auto`; `opencl` would also run PoCL's CPU device where it
# is installed), else every OpenCL device.
gpu_backend=opencl
"$bin/snarkd" devices 2>/dev/null | awk -F'\t' '$4 == "gpu"' | grep -q . && gpu_backend=auto
prove_through_daemon "$gpu_backend"
prove_through_daemon cpu

# Every device-phase and synthesis figure, one JSON object a line (each row names its bench), in
# one file beside the report.
figures="$out/device.jsonl"
: >"$figures"
# Runs a benchmark that prints JSON rows, its stderr to $out/LOG: the rows go to $figures and,
# under TITLE, to the report; a failure is counted and said in the report.
json_rows() {
  local title="$1" log="$2"
  shift 2
  if "$@" >"$work/rows.jsonl" 2>"$out/$log"; then
    cat "$work/rows.jsonl" >>"$figures"
    {
      echo
      echo "## $title"
      echo
      echo '```'
      cat "$work/rows.jsonl"
      echo '```'
    } >>"$report"
  else
    echo "| $title | FAILED: see $out/$log | |" >>"$report"
    failures=$((failures + 1))
  fi
}

say "device phase: before and now on OpenCL, and the CPU, on the same 2 KiB partitions"
# The benchmarks keep their compiled kernels in one directory (the daemon's setting, read by them
# too), so only the first of them builds each program from source; the daemons above and the
# cold start below keep theirs apart.
kernels="$work/kernels"
json_rows "Device phase, same partitions (seconds, bytes, launches, waits)" device_bench.log \
  env SNARKD_GPUS_KERNEL_CACHE="$kernels" "$bin/examples/device_bench" --json "${kinds[@]}"

# One production-shaped partition (default: a whole 32 GiB PoRep partition, 18 challenges; made-up
# parameters of its counts, no files needed), each step timed, its bases going up and then kept.
shape="${SNARKD_GPU_CHECK_SHAPE:-porep 32GiB 18}"
# Multiexp work groups per compute unit, each run in turn (0 is the device's own choice).
groups="${SNARKD_GPU_CHECK_GROUPS:-1,4}"
# Workers on the device: after the single partitions, this many at once on a backend of as many
# workers (what a second worker gains); "auto" is what the daemon's "auto" gives the device (two
# on an H200, one, and so nothing more, on a card without the room).
workers="${SNARKD_GPU_CHECK_WORKERS:-auto}"
# Then one partition with its bases streamed (through pinned memory, a chunk's copy beside the
# chunk before's kernels), as a card without the room for them runs it; set to 0 to skip. Then
# B's G2 multiexp alone on the CPU's threads (`--b-g2-cpu`), against the device's b_g2 step, and
# the partition proved with it there, beside the G1 multiexps (`[gpus] b_g2 = "cpu"`). Last,
# unless SNARKD_GPU_CHECK_BEFORE=0, the same partition the way the device phase ran before
# (ec-gpu-gen's multiexp kernel, bellperson's GPU path's, bases and scalars copied up every step):
# the ratio to it.
streamed=()
[ "${SNARKD_GPU_CHECK_STREAMED:-1}" = 1 ] && streamed=(--streamed)
before=()
[ "${SNARKD_GPU_CHECK_BEFORE:-1}" = 1 ] && before=(--before)
for limbs in ${SNARKD_GPU_CHECK_LIMBS:-64}; do
  say "device phase at production shape ($shape, $limbs-bit limbs)"
  # shellcheck disable=SC2086 # the shape is three words
  json_rows "Device phase at production shape: $shape, $limbs-bit limbs" device_shape.log \
    env SNARKD_GPUS_KERNEL_CACHE="$kernels" "$bin/examples/device_shape" $shape --json \
    --limbs "$limbs" --groups "$groups" --workers "$workers" ${streamed[@]+"${streamed[@]}"} \
    --b-g2-cpu ${before[@]+"${before[@]}"}
done

# Synthesis of one production-shaped partition at each thread count: whether it scales with the
# cores (CPU seconds at 16 threads against 1: parallel efficiency).
synthesis="${SNARKD_GPU_CHECK_SYNTHESIS:-porep 32GiB 18}"
threads="${SNARKD_GPU_CHECK_THREADS:-1,2,4,8,16}"
say "synthesis at production shape ($synthesis, threads $threads)"
# shellcheck disable=SC2086 # the shape is three words
json_rows "Synthesis at production shape: $synthesis, threads $threads" production_shape.log \
  "$bin/examples/production_shape" $synthesis --paths precompiled-native --threads "$threads" --json

say "cold and warm start to the first WinningPoSt"
json_rows "Start to the first WinningPoSt: cold (nothing kept), then warm" cold_start.log \
  env SNARKD_BIN_DIR="$bin" scripts/cold-start.sh "$work/fixtures" "$SNARKD_TEST_PARAMS_DIR"

say "our prover against stock bellperson (CPU)"
{
  echo
  echo "## snarkd's prover against stock bellperson"
  echo
  echo '```'
  "$bin/snarkd-bench" bench --fixtures "$work/fixtures" --params-dir "$SNARKD_TEST_PARAMS_DIR" "${kind_args[@]}" 2>&1
  echo '```'
} >>"$report"

say "report: $report"
cat "$report"
[ "$failures" -eq 0 ] || { echo "scripts/gpu-check.sh: $failures proof(s) failed" >&2; exit 1; }

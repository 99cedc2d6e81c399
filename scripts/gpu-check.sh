#!/usr/bin/env bash
# The GPU check: one command for a machine with a GPU (it runs on PoCL's CPU device too), within
# a time budget (SNARKD_GPU_CHECK_BUDGET_S, default 480 s: a lent GPU box's command runs at most
# 10 minutes). Its stages run in the order they matter, each under the time left: a stage that
# would not fit is skipped and one cut short keeps the rows it printed, both said in the report.
#   1. lists the devices snarkd sees (`snarkd devices`);
#   2. times a cold and a warm start to the first WinningPoSt (`scripts/cold-start.sh`); the
#      kernels the cold start built are kept for every later stage, so no stage builds them again;
#   3. times the device phase of one production-shaped partition step by step (`device_shape`,
#      SNARKD_GPU_CHECK_SHAPE, default "porep 32GiB 18": made-up parameters of its counts, no
#      files needed): its first partition and SNARKD_GPU_CHECK_REPEAT (default 3) later ones at
#      each of SNARKD_GPU_CHECK_GROUPS (default "1,4") work groups per compute unit; then B's G2
#      multiexp on the CPU, the old path (unless SNARKD_GPU_CHECK_BEFORE=0), SNARKD_GPU_CHECK_WORKERS
#      workers at once (default "auto") and streamed bases (unless SNARKD_GPU_CHECK_STREAMED=0);
#      at each of SNARKD_GPU_CHECK_LIMBS (default 64; "64 32" measures both, each a kernel
#      build). Where nvidia-smi answers, the GPU's utilisation is sampled meanwhile and each
#      partition's busy share (the mean utilisation over its interval) is a row of its own;
#   4. synthesizes one production-shaped partition at SNARKD_GPU_CHECK_THREADS threads (default
#      "16,8,4,2,1", the slowest last) (`production_shape`, SNARKD_GPU_CHECK_SYNTHESIS, default
#      "porep 32GiB 18"): wall, user and system CPU seconds, page faults, peak RSS;
#   5. proves each kind once through a daemon on the OpenCL device and once through a daemon on
#      the CPU (real 2 KiB proofs, verified before they are returned), and records what the
#      devices report (NVML's utilisation, memory, temperature, power and snarkd's pool: /status
#      and /metrics; an NVIDIA device without NVML readings, or whose snarkd_device_info lacks
#      NVML's PCI bus id and UUID, fails);
#   6. times the device phase on the OpenCL device (before the device-resident plan and now)
#      and on the CPU for the same 2 KiB partitions (`device_bench`);
#   7. our whole prover against stock bellperson (`snarkd-bench bench`; stock bellperson runs on
#      the CPU: it is built without its GPU features);
# and writes at most four files to --out DIR (default target/gpu-check): report.md, device.jsonl
# (every benchmark row, one JSON object a line, written as the benchmarks print them, so a
# check cut short keeps what it measured), nvidia-smi.csv (the samples) and logs.tar.gz.
#
#   scripts/gpu-check.sh [--out DIR] [--kind winning --kind wpost ...]
#
# Without SNARKD_BIN_DIR it builds release binaries first (scripts/build.sh, network needed once).
# With SNARKD_BIN_DIR pointing at release binaries (snarkd, snarkd-bench, examples/device_bench,
# examples/device_shape, examples/production_shape)
# it needs no network and no toolchain: copy them to the GPU machine and run this there. Kinds
# (of stages 5 to 7) default to all four; their 2 KiB parameters are made when missing (kept in
# $SNARKD_TEST_PARAMS_DIR; about a minute on 16 cores for PoRep and SnapDeals).
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

# The budget counts from here (the build above, where there is one, is not in it).
budget_s="${SNARKD_GPU_CHECK_BUDGET_S:-480}"
deadline=$((SECONDS + budget_s))
mkdir -p "$out"
out="$(cd "$out" && pwd)"
work="$(mktemp -d)"
logs="$work/logs"
mkdir -p "$logs"
daemon=""
sampler=""
cleanup() {
  [ -n "$daemon" ] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" || true
  [ -n "$sampler" ] && kill "$sampler" 2>/dev/null || true
  tar -C "$work" -czf "$out/logs.tar.gz" logs 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

export SNARKD_TEST_PARAMS_DIR="${SNARKD_TEST_PARAMS_DIR:-$HOME/.cache/snarkd/params-2k}"
# Every program below keeps its kernels here (snarkd's binaries and NVIDIA's compute cache): the
# cold start builds them, the rest load them.
kernels="$work/kernels"
export SNARKD_GPUS_KERNEL_CACHE="$kernels" CUDA_CACHE_PATH="$kernels/nvidia" CUDA_CACHE_MAXSIZE=4294967296
# The production-shape benchmarks record their circuit's matrices once between them (about a
# minute at 32 GiB PoRep).
export SNARKD_BENCH_MATRICES_DIR="$work/matrices"

report="$out/report.md"
figures="$out/device.jsonl"
: >"$figures"
{
  echo "# snarkd GPU check"
  echo
  echo "$("$bin/snarkd" --version 2>&1 | head -n 1), $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, budget ${budget_s} s"
  echo
  echo "## Devices"
  echo
  echo '```'
  "$bin/snarkd" devices 2>&1
  echo '```'
} >"$report"

failures=0
cut=0
# Runs a benchmark that prints JSON rows (other lines of its output are dropped) under TITLE,
# with what is left of the budget, unless less than MIN_S is: its rows go to $figures as it
# prints them and, under TITLE, to the report; its stderr to logs/LOG. A failure is counted; a
# stage cut short by the budget is said, its rows kept.
#   stage TITLE LOG MIN_S COMMAND...
stage() {
  local title="$1" log="$2" min="$3" left from rc
  shift 3
  left=$((deadline - SECONDS))
  {
    echo
    echo "## $title"
    echo
  } >>"$report"
  if [ "$left" -lt "$min" ]; then
    echo "Skipped: $left s of the budget left, it needs at least $min s." >>"$report"
    say "skipped ($left s left): $title"
    return
  fi
  say "$title ($left s left)"
  from=$(wc -l <"$figures")
  set +e
  timeout --kill-after=15 "$left" "$@" 2>"$logs/$log" | { grep --line-buffered '^{' || true; } >>"$figures"
  rc=${PIPESTATUS[0]}
  set -e
  {
    echo '```'
    tail -n +"$((from + 1))" "$figures"
    echo '```'
  } >>"$report"
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "Cut short by the budget after $left s: the rows above are what it measured (logs/$log)." >>"$report"
    cut=$((cut + 1))
  elif [ "$rc" -ne 0 ]; then
    echo "FAILED (exit $rc): see logs/$log." >>"$report"
    failures=$((failures + 1))
  fi
}

say "2 KiB WinningPoSt parameters in $SNARKD_TEST_PARAMS_DIR, and a sealed 2 KiB sector for real inputs"
"$bin/snarkd" params generate --sector-size 2KiB --kind winning --dir "$SNARKD_TEST_PARAMS_DIR" >&2
"$bin/snarkd-bench" gen --sector-size 2KiB --out "$work/fixtures" >/dev/null

stage "Start to the first WinningPoSt: cold (nothing kept), then warm" cold_start.log 30 \
  env SNARKD_BIN_DIR="$bin" SNARKD_COLD_START_KEEP_KERNELS="$kernels" \
  scripts/cold-start.sh "$work/fixtures" "$SNARKD_TEST_PARAMS_DIR"

# One production-shaped partition (default: a whole 32 GiB PoRep partition, 18 challenges), each
# step timed: see the header and examples/device_shape.rs.
shape="${SNARKD_GPU_CHECK_SHAPE:-porep 32GiB 18}"
shape_args=(--json --groups "${SNARKD_GPU_CHECK_GROUPS:-1,4}" --repeat "${SNARKD_GPU_CHECK_REPEAT:-3}"
  --b-g2-cpu --workers "${SNARKD_GPU_CHECK_WORKERS:-auto}")
[ "${SNARKD_GPU_CHECK_BEFORE:-1}" = 1 ] && shape_args+=(--before)
[ "${SNARKD_GPU_CHECK_STREAMED:-1}" = 1 ] && shape_args+=(--streamed)
samples="$out/nvidia-smi.csv"
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  # The GPU's utilisation (the share of the last sample period a kernel ran) every 100 ms.
  nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used \
    --format=csv,noheader,nounits -lms 100 >"$samples" 2>>"$logs/nvidia-smi.log" &
  sampler=$!
fi
for limbs in ${SNARKD_GPU_CHECK_LIMBS:-64}; do
  # shellcheck disable=SC2086 # the shape is three words
  stage "Device phase at production shape: $shape, $limbs-bit limbs" "device_shape-$limbs.log" 60 \
    "$bin/examples/device_shape" $shape --limbs "$limbs" "${shape_args[@]}"
done
if [ -n "$sampler" ]; then
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  sampler=""
  # Each device partition's busy share: the mean of the utilisation samples inside its total
  # row's interval (its `at` less its seconds, to its `at`), and the most memory used then; of
  # the first GPU (index 0), which device_shape takes.
  from=$(wc -l <"$figures")
  python3 - "$figures" "$samples" >>"$figures" 2>>"$logs/busy.log" <<'PY' || echo "busy share: see logs/busy.log" >>"$report"
import datetime, json, sys
rows = []
for line in open(sys.argv[1]):
    try:
        rows.append(json.loads(line))
    except ValueError:
        continue
samples = []
for line in open(sys.argv[2]):
    parts = [p.strip() for p in line.split(",")]
    try:
        at = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
        if int(parts[1]) == 0:
            samples.append((at, float(parts[2]), float(parts[3])))
    except (ValueError, IndexError):
        continue
for r in rows:
    if r.get("bench") != "device_shape" or r.get("step") != "total" or r.get("device") == "cpu":
        continue
    start, end = r["at"] - r["seconds"], r["at"]
    inside = [s for s in samples if start <= s[0] <= end]
    if not inside:
        continue
    print(json.dumps({
        "bench": "gpu_busy", "circuit": r["circuit"], "shape": r["shape"], "path": r["path"],
        "groups_per_unit": r["groups_per_unit"], "limbs": r.get("limbs"), "seconds": r["seconds"],
        "busy_share": sum(s[1] for s in inside) / len(inside) / 100, "samples": len(inside),
        "memory_used_max_mib": max(s[2] for s in inside),
    }))
PY
  {
    echo
    echo "## GPU busy share (nvidia-smi's utilisation inside each partition's interval)"
    echo
    echo '```'
    tail -n +"$((from + 1))" "$figures"
    echo '```'
  } >>"$report"
fi

# Synthesis of one production-shaped partition at each thread count: whether it scales with the
# cores (CPU seconds at 16 threads against 1: parallel efficiency).
synthesis="${SNARKD_GPU_CHECK_SYNTHESIS:-porep 32GiB 18}"
threads="${SNARKD_GPU_CHECK_THREADS:-16,8,4,2,1}"
# shellcheck disable=SC2086 # the shape is three words
stage "Synthesis at production shape: $synthesis, threads $threads" production_shape.log 60 \
  "$bin/examples/production_shape" $synthesis --paths precompiled-native --threads "$threads" --json

kind_args=()
for k in "${kinds[@]}"; do kind_args+=(--kind "$k"); done

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
    2>"$logs/daemon-$backend.log" &
  daemon=$!
  # The daemon serves once its journal is read back; its devices warm in the background.
  local started=$SECONDS
  grpc=""
  while [ "$SECONDS" -lt "$deadline" ]; do
    if [ -s "$ready" ]; then
      grpc="$(ready_field "$ready" grpc)"
      "$bin/snarkd-bench" --addr "http://$grpc" status >/dev/null 2>&1 && break
    fi
    kill -0 "$daemon" 2>/dev/null || { echo "snarkd ($backend) exited at startup:" >&2; cat "$logs/daemon-$backend.log" >&2; exit 1; }
    sleep 0.2
  done
  echo >>"$report"
  echo "## Proofs through the daemon, backend \`$backend\`" >>"$report"
  echo >>"$report"
  if [ ! -s "$ready" ]; then
    echo "FAILED: not serving after $((SECONDS - started)) s; its log: logs/daemon-$backend.log" >>"$report"
    failures=$((failures + 1))
    kill -TERM "$daemon" && wait "$daemon" || true
    daemon=""
    return
  fi
  echo "Serving after $((SECONDS - started)) s (devices warm in the background: WinningPoSt on the CPU until they are ready)." >>"$report"
  # Every proof below on the device: wait until no device reading says warming (the CPU
  # backend has none to wait for).
  local http
  http="$(ready_field "$ready" http)"
  if [ "$backend" != cpu ]; then
    until python3 -c 'import json,sys,urllib.request; d=json.load(urllib.request.urlopen(sys.argv[1])).get("devices", []); sys.exit(0 if d and not any(x.get("warming") for x in d) else 1)' "http://$http/status" 2>/dev/null; do
      [ "$SECONDS" -lt "$deadline" ] || break
      sleep 0.5
    done
    echo "Devices ready after $((SECONDS - started)) s." >>"$report"
  fi
  echo >>"$report"
  echo "| kind | result | seconds |" >>"$report"
  echo "|---|---|---|" >>"$report"
  local k start result rc left
  for k in "${kinds[@]}"; do
    left=$((deadline - SECONDS))
    if [ "$left" -le 0 ]; then
      echo "| $k | skipped: the budget is spent | |" >>"$report"
      continue
    fi
    start=$(date +%s%N)
    rc=0
    timeout "$left" "$bin/snarkd-bench" --addr "http://$grpc" single -t "$k" \
      --input "$work/fixtures" >"$work/single.txt" 2>&1 || rc=$?
    if [ "$rc" -eq 0 ]; then
      result="completed, verified"
    elif [ "$rc" -eq 124 ]; then
      result="cut short by the budget"
      cut=$((cut + 1))
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

# The 2 KiB stages: each kind's parameters first (made when missing: about a minute on 16 cores
# for PoRep and SnapDeals), PoRep's too (device_bench's multiexp of real A scalars takes a PoRep
# witness). Without the time for them, neither stage runs.
params_made=0
if [ $((deadline - SECONDS)) -ge 120 ]; then
  param_args=("${kind_args[@]}")
  [[ " ${kinds[*]} " == *" porep "* ]] || param_args+=(--kind porep)
  say "2 KiB test parameters in $SNARKD_TEST_PARAMS_DIR (${param_args[*]})"
  "$bin/snarkd" params generate --sector-size 2KiB "${param_args[@]}" --dir "$SNARKD_TEST_PARAMS_DIR" >&2
  params_made=1
fi
if [ "$params_made" = 1 ] && [ $((deadline - SECONDS)) -ge 60 ]; then
  # The GPUs alone where there are any (`auto`; `opencl` would also run PoCL's CPU device where
  # it is installed), else every OpenCL device.
  gpu_backend=opencl
  "$bin/snarkd" devices 2>/dev/null | awk -F'\t' '$4 == "gpu"' | grep -q . && gpu_backend=auto
  prove_through_daemon "$gpu_backend"
  if [ $((deadline - SECONDS)) -ge 30 ]; then
    prove_through_daemon cpu
  fi
else
  printf '\n## Proofs through the daemon\n\nSkipped: %s s of the budget left.\n' $((deadline - SECONDS)) >>"$report"
fi

if [ "$params_made" = 1 ]; then
  stage "Device phase, same 2 KiB partitions: before and now on OpenCL, and the CPU" device_bench.log 30 \
    "$bin/examples/device_bench" --json "${kinds[@]}"
else
  printf '\n## Device phase, same 2 KiB partitions\n\nSkipped: no time for the 2 KiB parameters.\n' >>"$report"
fi

say "our prover against stock bellperson (CPU)"
{
  echo
  echo "## snarkd's prover against stock bellperson"
  echo
  echo '```'
  if [ "$params_made" = 1 ] && [ $((deadline - SECONDS)) -ge 60 ]; then
    timeout $((deadline - SECONDS)) "$bin/snarkd-bench" bench --fixtures "$work/fixtures" \
      --params-dir "$SNARKD_TEST_PARAMS_DIR" "${kind_args[@]}" 2>&1 || echo "(ended early: exit $?)"
  else
    echo "Skipped: $((deadline - SECONDS)) s of the budget left."
  fi
  echo '```'
} >>"$report"

{
  echo
  echo "Done in $((SECONDS - (deadline - budget_s))) s of the ${budget_s} s budget; $cut stage(s) cut short, $failures failure(s)."
} >>"$report"
say "report: $report"
cat "$report"
[ "$failures" -eq 0 ] || { echo "scripts/gpu-check.sh: $failures check(s) failed" >&2; exit 1; }

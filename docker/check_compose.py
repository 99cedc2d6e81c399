"""Checks docker/compose.yaml as a compose implementation resolves it.

Reads the output of `podman-compose config` (without and with the nvidia profile) on stdin and
checks that every variable was resolved (to the values docker/check.sh sets), that the default
service builds docker/Dockerfile into the image the nvidia service runs, and that the nvidia
service reserves NVIDIA GPUs.
    podman-compose [--profile nvidia] -f docker/compose.yaml config | python3 check_compose.py PROFILE
"""

import os
import sys

import yaml

profile = sys.argv[1] if len(sys.argv) > 1 else ""
text = sys.stdin.read()
assert "${" not in text, "an unresolved variable is left:\n" + text
services = yaml.safe_load(text)["services"]
snarkd = services["snarkd"]
env = snarkd["environment"]
assert env["SNARKD_MEMORY_BUDGET"] == os.environ["SNARKD_MEMORY_BUDGET"], env
build = snarkd["build"]
assert f"SNARKD_BUILD_ID={os.environ['SNARKD_BUILD_ID']}" in build["args"], build
dockerfile = os.path.join(build["context"], build["dockerfile"])
assert os.path.isfile(dockerfile), f"{dockerfile} does not exist"
assert {"127.0.0.1:9820:9820", "127.0.0.1:9821:9821"} <= set(snarkd["ports"]), snarkd["ports"]
if profile == "nvidia":
    nvidia = services["snarkd-nvidia"]
    assert nvidia["image"] == snarkd["image"], (nvidia["image"], snarkd["image"])
    devices = nvidia["deploy"]["resources"]["reservations"]["devices"]
    assert any(d["driver"] == "nvidia" and "gpu" in d["capabilities"] for d in devices), devices
else:
    assert "snarkd-nvidia" not in services, "the nvidia service runs only under its profile"
print(f"docker/compose.yaml resolves ({profile or 'default'} profile): {', '.join(services)}")

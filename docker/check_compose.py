"""Checks docker/compose.yaml, as written and as a compose implementation resolves it.

Without arguments, static checks of the files in docker/:
  - every service has exactly one profile (compose starts a service without one under every
    profile), the two daemon services `cpu` and `nvidia`, which are one daemon: the same image,
    ports, journal volume and network name, so that one replaces the other;
  - each daemon service mounts the host's parameter cache read-only from
    ${FIL_PROOFS_PARAMETER_CACHE:-<absolute default>} at the image's params dir without creating
    it, keeps its pre-compiled circuits in a writable volume, and sets memlock unlimited and a
    json-file log with max-size and max-file;
  - the monitoring services (Prometheus, Grafana) run only under `monitoring`, on loopback, from
    pinned images; every file compose mounts exists and is mounted read-only; Prometheus loads
    alerts.yml and scrapes job "snarkd" at a host name the daemon's HTTP port allows;
  - the Dockerfile's build keeps cargo's registry and target dir and the wasm-bindgen-cli build
    (SNARKD_TOOLS_CACHE) in cache mounts;
  - the metric checks of check_metrics.py (alert rules, dashboard, HELP texts).
    python3 docker/check_compose.py
    python3 docker/check_compose.py --dashboard FILE   # only the dashboard checks, on FILE

With a profile, reads the output of `podman-compose --profile P config` on stdin and checks
that every variable was resolved (to the values docker/check.sh sets), that exactly that
profile's services are in it, that a daemon service builds docker/Dockerfile with the build id
and mounts the parameter cache named by FIL_PROOFS_PARAMETER_CACHE read-only, and that the
nvidia service reserves NVIDIA GPUs and answers to `snarkd` on the network.
    podman-compose --profile P -f docker/compose.yaml config | python3 check_compose.py P
"""

import json
import os
import posixpath
import re
import sys

import yaml

import check_metrics

DOCKER = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(DOCKER)
MONITORING = {"prometheus", "grafana"}
# Each daemon profile and its service; `--profile P up` starts exactly these.
DAEMONS = {"cpu": "snarkd", "nvidia": "snarkd-nvidia"}
PARAMS_VARIABLE = "FIL_PROOFS_PARAMETER_CACHE"
PROMETHEUS_CONFIG = os.path.join(DOCKER, "prometheus", "prometheus.yml")


def dockerfile_env(text):
    """{name: value} of the Dockerfile's ENV lines (`ENV A=1 B=2`, continuations joined)."""
    env = {}
    for line in re.findall(r"^ENV\s+(.*)$", text.replace("\\\n", " "), re.M):
        env.update(re.findall(r"(\w+)=(\S+)", line))
    return env


def check_build_caches():
    """The RUN that calls scripts/build.sh keeps its caches (cargo's, wasm-bindgen-cli's)."""
    with open(os.path.join(DOCKER, "Dockerfile"), encoding="utf-8") as f:
        text = f.read()
    build_stage = re.split(r"^FROM\s", text, flags=re.M)[1]  # the first stage: the build
    runs = [r for r in re.findall(r"^RUN\s+(.*)$", build_stage.replace("\\\n", " "), re.M)
            if "scripts/build.sh" in r]
    assert len(runs) == 1, f"expected one RUN calling scripts/build.sh in the build stage: {runs}"
    caches = set(re.findall(r"--mount=type=cache,(?:\S*,)?target=([^,\s]+)", runs[0]))
    workdir = re.findall(r"^WORKDIR\s+(\S+)", build_stage, re.M)[-1]
    tools = dockerfile_env(build_stage).get("SNARKD_TOOLS_CACHE", "/root/.cache/snarkd/tools")
    wanted = {"/usr/local/cargo/registry", posixpath.join(workdir, "target"), tools}
    assert wanted <= caches, f"the build's RUN lacks cache mounts for {sorted(wanted - caches)}"


def params_mount(name, service):
    """The bind mount of the parameter cache, checked: (source as written, target)."""
    binds = [v for v in service.get("volumes", []) if isinstance(v, dict) and v.get("type") == "bind"]
    assert len(binds) == 1, f"{name}: expected one bind mount (the parameter cache): {binds}"
    bind = binds[0]
    assert bind.get("read_only") is True, f"{name}: mount the parameter cache read-only"
    assert bind.get("bind", {}).get("create_host_path") is False, \
        f"{name}: a missing parameter cache must fail the start (bind.create_host_path: false)"
    return bind["source"], bind["target"]


def check_daemon(name, service, params_dir):
    source, target = params_mount(name, service)
    m = re.fullmatch(r"\$\{(\w+):-(/[^}]*)\}", source)
    assert m and m.group(1) == PARAMS_VARIABLE, \
        f"{name}: the parameter cache is ${{{PARAMS_VARIABLE}:-/absolute/default}}, not {source}"
    assert target == params_dir, f"{name}: params at {target}, the image reads {params_dir}"
    env = service["environment"]
    # Read-only params: the pre-compiled circuits (written beside them by default) need a
    # writable place of their own, kept across restarts.
    precompiled = env.get("SNARKD_SYNTHESIS_PRECOMPILED_DIR")
    named = {str(v).split(":")[1]: str(v).split(":")[0] for v in service["volumes"] if isinstance(v, str)}
    assert precompiled in named, f"{name}: SNARKD_SYNTHESIS_PRECOMPILED_DIR is not a named volume"
    assert "/var/lib/snarkd/jobs" in named, f"{name}: the job journal is not a named volume"
    assert "/var/lib/snarkd/kernels" in named, f"{name}: the compiled kernels are not a named volume"
    memlock = service.get("ulimits", {}).get("memlock", {})
    assert memlock in (-1, {"soft": -1, "hard": -1}), f"{name}: memlock must be unlimited: {memlock}"
    logging = service.get("logging", {})
    assert logging.get("driver") == "json-file", f"{name}: log with json-file and a size limit"
    assert {"max-size", "max-file"} <= set(logging.get("options", {})), f"{name}: {logging}"
    return source, named


def check_static():
    with open(os.path.join(DOCKER, "compose.yaml"), encoding="utf-8") as f:
        services = yaml.safe_load(f)["services"]
    with open(os.path.join(DOCKER, "Dockerfile"), encoding="utf-8") as f:
        params_dir = dockerfile_env(f.read())["SNARKD_PARAMS_DIR"]
    assert MONITORING <= set(services), f"compose.yaml lacks {MONITORING - set(services)}"
    assert set(DAEMONS.values()) <= set(services), f"compose.yaml lacks {set(DAEMONS.values())}"
    mounts = {}
    for name, service in services.items():
        profiles = service.get("profiles", [])
        assert len(profiles) == 1, f"{name} must have one profile (one without starts always)"
        if name in MONITORING:
            assert profiles == ["monitoring"], f"{name} must be only in the monitoring profile"
            image, _, tag = service["image"].rpartition(":")
            assert image and tag and tag != "latest", f"{name}: pin the image's tag"
            for port in service.get("ports", []):
                assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} widely"
        else:
            assert name in DAEMONS.values() and profiles == [
                next(p for p, s in DAEMONS.items() if s == name)], f"{name}: profiles {profiles}"
            mounts[name] = check_daemon(name, service, params_dir)
        for volume in service.get("volumes", []):
            if isinstance(volume, dict):
                continue  # the parameter cache, checked above
            source, _, rest = str(volume).partition(":")
            if not source.startswith((".", "/")):
                continue  # a named volume
            path = os.path.normpath(os.path.join(DOCKER, source))
            assert os.path.exists(path), f"{name} mounts {source}, which is not in the repository"
            assert rest.endswith(":ro"), f"{name} mounts {source} writable"
    # One daemon under two profiles: whichever runs has the same ports, volumes and image.
    cpu, nvidia = (services[DAEMONS[p]] for p in ("cpu", "nvidia"))
    for key in ("image", "ports", "build"):
        assert cpu.get(key) == nvidia.get(key), f"the daemon services differ in {key}"
    assert mounts[DAEMONS["cpu"]] == mounts[DAEMONS["nvidia"]], mounts
    assert cpu["environment"].get("SNARKD_GPUS_BACKEND") == "cpu", \
        "the cpu service passes no GPU in: set SNARKD_GPUS_BACKEND: cpu (else a GPU is expected)"
    assert nvidia["environment"].get("SNARKD_GPUS_BACKEND", "auto") != "cpu", nvidia["environment"]
    aliases = nvidia.get("networks", {}).get("default", {}).get("aliases", [])
    assert "snarkd" in aliases, "the nvidia service must answer to `snarkd`, the scraped name"
    check_monitoring(services)
    check_build_caches()
    print("docker/compose.yaml: one profile each, the daemon's two profiles alike, params "
          "read-only from the host, memlock and log limits, mounts present; build caches kept")
    check_metrics.check_rules()
    check_metrics.check_dashboard(check_metrics.DASHBOARD)
    check_metrics.check_help_texts()


def check_monitoring(services):
    grafana = services["grafana"]
    mounted = {str(v).split(":")[1]: str(v).split(":")[0] for v in grafana["volumes"]}
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert os.path.normpath(os.path.join(DOCKER, mounted[home])) == check_metrics.DASHBOARD
    prometheus = {str(v).split(":")[1]: os.path.normpath(os.path.join(DOCKER, str(v).split(":")[0]))
                  for v in services["prometheus"]["volumes"] if str(v).startswith(".")}
    config_in = "/etc/prometheus/prometheus.yml"
    assert prometheus.get(config_in) == PROMETHEUS_CONFIG, prometheus
    with open(PROMETHEUS_CONFIG, encoding="utf-8") as f:
        config = yaml.safe_load(f)
    # Rule files resolve against the config's directory: each must be mounted beside it.
    rules = [posixpath.join(posixpath.dirname(config_in), r) for r in config.get("rule_files", [])]
    assert rules and all(r in prometheus for r in rules), f"rule files not mounted: {rules}"
    assert check_metrics.ALERTS in (prometheus[r] for r in rules), "alerts.yml is not loaded"
    # Prometheus scrapes a Host name the daemon allows, so the scrape works with
    # [http] scrapes_any_host = false too.
    hosts = services["snarkd"]["environment"]["SNARKD_HTTP_ALLOWED_HOSTS"]
    hosts = json.loads(re.fullmatch(r"\$\{\w+:-(.*)\}", hosts).group(1))
    scrape = config["scrape_configs"]
    targets = [t for job in scrape for sc in job["static_configs"] for t in sc["targets"]]
    assert targets and all(job.get("metrics_path", "/metrics") == "/metrics" for job in scrape)
    # The rules select job "snarkd".
    assert [job["job_name"] for job in scrape] == ["snarkd"], scrape
    for target in targets:
        host, _, port = target.rpartition(":")
        assert host in services and host in hosts and port == "9821", (target, hosts)


def check_resolved(profile):
    text = sys.stdin.read()
    assert "${" not in text, "an unresolved variable is left:\n" + text
    services = yaml.safe_load(text)["services"] or {}
    expected = {DAEMONS[profile]} if profile in DAEMONS else MONITORING
    assert set(services) == expected, f"--profile {profile} starts {set(services)}, not {expected}"
    if profile == "monitoring":
        assert services["grafana"]["ports"] == ["127.0.0.1:3000:3000"], services["grafana"]["ports"]
    else:
        daemon = services[DAEMONS[profile]]
        env = daemon["environment"]
        assert env["SNARKD_MEMORY_BUDGET"] == os.environ["SNARKD_MEMORY_BUDGET"], env
        build = daemon["build"]
        assert f"SNARKD_BUILD_ID={os.environ['SNARKD_BUILD_ID']}" in build["args"], build
        dockerfile = os.path.join(build["context"], build["dockerfile"])
        assert os.path.isfile(dockerfile), f"{dockerfile} does not exist"
        assert {"127.0.0.1:9820:9820", "127.0.0.1:9821:9821"} <= set(daemon["ports"]), daemon["ports"]
        source, _ = params_mount(DAEMONS[profile], daemon)
        assert source == os.environ[PARAMS_VARIABLE], f"params from {source}"
        assert daemon["ulimits"]["memlock"] in (-1, {"soft": -1, "hard": -1}), daemon["ulimits"]
        assert daemon["logging"]["driver"] == "json-file", daemon["logging"]
    if profile == "nvidia":
        nvidia = services["snarkd-nvidia"]
        devices = nvidia["deploy"]["resources"]["reservations"]["devices"]
        assert any(d["driver"] == "nvidia" and "gpu" in d["capabilities"] for d in devices), devices
        assert "snarkd" in nvidia["networks"]["default"]["aliases"], nvidia["networks"]
    print(f"docker/compose.yaml resolves (--profile {profile}): {', '.join(sorted(services))}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--dashboard":
        check_metrics.check_dashboard(sys.argv[2])
    elif len(sys.argv) == 1:
        check_static()
    elif len(sys.argv) == 2 and sys.argv[1] in (*DAEMONS, "monitoring"):
        check_resolved(sys.argv[1])
    else:
        sys.exit(__doc__)

"""Checks docker/compose.yaml, as written and as a compose implementation resolves it.

Without arguments, static checks of the files in docker/: the monitoring services (Prometheus,
Grafana) run only under the `monitoring` profile, on loopback, from pinned images; every file
compose mounts exists and is mounted read-only; Prometheus scrapes a host name the daemon's
HTTP port answers to; and the Grafana dashboard parses and uses only metrics and labels that the
daemon's sources (server/, not its tests) register, so renaming a metric fails here.
    python3 docker/check_compose.py
    python3 docker/check_compose.py --dashboard FILE   # only the dashboard checks, on FILE

With a profile, reads the output of `podman-compose config` on stdin and checks that every
variable was resolved (to the values docker/check.sh sets), that the default service builds
docker/Dockerfile into the image the nvidia service runs, that the nvidia service reserves
NVIDIA GPUs, and that each profile's services start only under it; with the profile `default`
(as docker/check.sh runs it first), the static checks too.
    podman-compose [--profile P] -f docker/compose.yaml config | python3 check_compose.py P
"""

import json
import os
import re
import sys

import yaml

DOCKER = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(DOCKER)
MONITORING = {"prometheus", "grafana"}
DASHBOARD = os.path.join(DOCKER, "grafana", "snarkd-dashboard.json")
# Series Prometheus makes itself, and labels it adds to every series (`le`: histogram buckets).
PROMETHEUS_SERIES = {"up"}
PROMETHEUS_LABELS = {"instance", "job", "le"}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
GROUPING = r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)"
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and",
                "or", "unless", "offset", "inf", "nan"}


def registered_metrics():
    """{name: (kind, label keys)} of every counter!/gauge!/histogram! call in server/'s sources."""
    found = {}
    for top, dirs, files in os.walk(os.path.join(ROOT, "server")):
        dirs[:] = [d for d in dirs if d not in ("target", "tests", "fuzz", "benches")]
        for name in files:
            if not name.endswith(".rs"):
                continue
            with open(os.path.join(top, name), encoding="utf-8") as f:
                text = f.read().split("\n#[cfg(test)]\nmod ")[0]
            for m in re.finditer(r'\b(counter|gauge|histogram)!\(\s*"([^"]+)"', text):
                depth, end = 1, m.end()
                while depth and end < len(text):
                    depth += {"(": 1, ")": -1}.get(text[end], 0)
                    end += 1
                labels = set(re.findall(r'"(\w+)"\s*=>', text[m.end():end]))
                kind, old = m.group(1), found.get(m.group(2), (m.group(1), set()))
                found[m.group(2)] = (kind, old[1] | labels)
    assert found, "no metrics found in server/'s sources"
    return found


def promql_names(expr):
    """(metric names, label names) an expression uses."""
    expr = re.sub(r"\$\{?\w+\}?", "", expr)  # Grafana variables ($instance, ${x}, $__range)
    labels = set()
    for body in re.findall(r"\{([^}]*)\}", expr):
        labels |= set(re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", re.sub(r'"(?:[^"\\]|\\.)*"', "", body)))
    expr = re.sub(r'"(?:[^"\\]|\\.)*"|\{[^}]*\}|\[[^\]]*\]', " ", expr)
    for body in re.findall(GROUPING, expr):
        labels |= set(re.findall(r"\w+", body))
    expr = re.sub(GROUPING, " ", expr)
    names = {n for n in re.findall(r"(?<![\w.:])([a-zA-Z_:][\w:]*)(?![\w:]|\s*\()", expr)}
    return names - PROMQL_WORDS, labels


def check_dashboard(path):
    with open(path, encoding="utf-8") as f:
        dashboard = json.load(f)
    metrics = registered_metrics()
    known_labels = PROMETHEUS_LABELS.union(*(labels for _, labels in metrics.values()))
    exprs, legends = [], []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("expr"), str):
                exprs.append(node["expr"])
            if isinstance(node.get("legendFormat"), str):
                legends.append(node["legendFormat"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(dashboard.get("panels", []))
    assert exprs, f"{path}: no PromQL expressions in its panels"
    variables = {v["name"]: v for v in dashboard.get("templating", {}).get("list", [])}
    assert variables.get("datasource", {}).get("type") == "datasource", "no datasource variable"
    assert variables["datasource"].get("query") == "prometheus", variables["datasource"]
    for v in variables.values():
        if v.get("type") != "query":
            continue
        query = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"\s*label_values\(\s*([\w:]+)\s*,\s*(\w+)\s*\)\s*", query)
        exprs.append(m.group(1) + "{" + m.group(2) + '=""}' if m else query)
    used, bad = set(), []
    for expr in exprs:
        names, labels = promql_names(expr)
        for name in names:
            base = next((name[: -len(s)] for s in HISTOGRAM_SUFFIXES if name.endswith(s)), None)
            if name in metrics or name in PROMETHEUS_SERIES:
                used.add(name)
            elif base and metrics.get(base, ("",))[0] == "histogram":
                used.add(base)
            else:
                bad.append(f"metric {name!r} in {expr!r}")
        bad += [f"label {label!r} in {expr!r}" for label in labels - known_labels]
    for legend in legends:
        bad += [f"label {label!r} in legend {legend!r}"
                for label in set(re.findall(r"\{\{\s*(\w+)\s*\}\}", legend)) - known_labels]
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            uid = target.get("datasource", {}).get("uid")
            assert uid == "${datasource}", (panel["title"], target)
    assert not bad, f"{path} uses what the daemon's sources do not register:\n  " + "\n  ".join(bad)
    unused = sorted(set(metrics) - used)
    print(f"{os.path.relpath(path)}: {len(exprs)} queries over {len(used)} metrics, all registered"
          + (f" (not shown: {', '.join(unused)})" if unused else ""))


def check_static():
    with open(os.path.join(DOCKER, "compose.yaml"), encoding="utf-8") as f:
        services = yaml.safe_load(f)["services"]
    assert MONITORING <= set(services), f"compose.yaml lacks {MONITORING - set(services)}"
    for name, service in services.items():
        profiles = service.get("profiles", [])
        if name in MONITORING:
            assert profiles == ["monitoring"], f"{name} must be only in the monitoring profile"
            image, _, tag = service["image"].rpartition(":")
            assert image and tag and tag != "latest", f"{name}: pin the image's tag"
            for port in service.get("ports", []):
                assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} widely"
        else:
            assert "monitoring" not in profiles, f"{name} is not a monitoring service"
        for volume in service.get("volumes", []):
            source, _, rest = str(volume).partition(":")
            if not source.startswith((".", "/")):
                continue  # a named volume
            path = os.path.normpath(os.path.join(DOCKER, source))
            assert os.path.exists(path), f"{name} mounts {source}, which is not in the repository"
            assert rest.endswith(":ro"), f"{name} mounts {source} writable"
    grafana = services["grafana"]
    mounted = {str(v).split(":")[1]: str(v).split(":")[0] for v in grafana["volumes"]}
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert os.path.normpath(os.path.join(DOCKER, mounted[home])) == DASHBOARD, (home, mounted)
    # The daemon answers only the Host names it allows, so Prometheus must scrape one of them.
    hosts = services["snarkd"]["environment"]["SNARKD_HTTP_ALLOWED_HOSTS"]
    hosts = json.loads(re.fullmatch(r"\$\{\w+:-(.*)\}", hosts).group(1))
    with open(os.path.join(DOCKER, "prometheus.yml"), encoding="utf-8") as f:
        scrape = yaml.safe_load(f)["scrape_configs"]
    targets = [t for job in scrape for sc in job["static_configs"] for t in sc["targets"]]
    assert targets and all(job.get("metrics_path", "/metrics") == "/metrics" for job in scrape)
    for target in targets:
        host, _, port = target.rpartition(":")
        assert host in services and host in hosts and port == "9821", (target, hosts)
    check_dashboard(DASHBOARD)
    print("docker/compose.yaml: monitoring services only under their profile, mounts present")


def check_resolved(profile):
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
    if profile == "monitoring":
        assert MONITORING <= set(services), set(services)
        assert services["grafana"]["ports"] == ["127.0.0.1:3000:3000"], services["grafana"]["ports"]
    else:
        assert not MONITORING & set(services), "Prometheus and Grafana run only under monitoring"
    print(f"docker/compose.yaml resolves ({profile or 'default'} profile): {', '.join(services)}")


if len(sys.argv) == 3 and sys.argv[1] == "--dashboard":
    check_dashboard(sys.argv[2])
elif len(sys.argv) == 1:
    check_static()
else:
    if sys.argv[1] == "default":
        check_static()
    check_resolved(sys.argv[1])

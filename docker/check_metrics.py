"""The daemon's metrics as its sources register them, and the checks that lean on that list.

snarkd registers each metric with a `counter!`/`gauge!`/`histogram!` call naming it literally,
(a `gauge!` named `*_total` is a counter that keeps fractions: `/metrics` types it `counter`),
and describes it (its `# HELP` line) with a `describe_counter!`/`describe_gauge!`/
`describe_histogram!` call with a literal name and help text, somewhere in server/'s non-test
sources. From those calls:
  - every registered metric is described, as the same kind, with a non-empty help text, and
    nothing is described that is not registered (a renamed metric leaves one or the other);
  - the Grafana dashboard queries only registered metrics and labels, picks its data source,
    job and instance from variables, and narrows every selector by `$job` and `$instance`;
  - the alert rules (docker/prometheus/alerts.yml) use only registered metrics and labels;
  - docs/metrics.md, the metrics reference, is what `--write-docs` makes of them (a metric
    added, renamed or described anew without the reference written again fails).
Series Prometheus makes itself (`up`, `ALERTS`) and the process metrics a library registers
count as registered.
    python3 docker/check_metrics.py                       # all of the above
    python3 docker/check_metrics.py --dashboard FILE      # only the dashboard, on FILE
    python3 docker/check_metrics.py --help-texts          # only the descriptions
    python3 docker/check_metrics.py --write-docs          # writes docs/metrics.md
docker/test_check_metrics.py tests these checks on made-up sources.
"""

import json
import os
import re
import sys

import yaml

DOCKER = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(DOCKER)
DASHBOARD = os.path.join(DOCKER, "grafana", "snarkd-dashboard.json")
METRICS_DOC = os.path.join(ROOT, "docs", "metrics.md")
ALERTS = os.path.join(DOCKER, "prometheus", "alerts.yml")
# The process metrics the metrics-process crate registers and describes on Linux (its
# `Collector`), so no call in server/ names them. process_virtual_memory_max_bytes is one of
# them too (the address-space limit).
LIBRARY_METRICS = {
    "process_cpu_seconds_total": "counter",
    "process_open_fds": "gauge",
    "process_max_fds": "gauge",
    "process_virtual_memory_bytes": "gauge",
    "process_virtual_memory_max_bytes": "gauge",
    "process_resident_memory_bytes": "gauge",
    "process_start_time_seconds": "gauge",
    "process_threads": "gauge",
}
# Series Prometheus makes itself: `up` per target, `ALERTS` per pending or firing alert.
PROMETHEUS_SERIES = {"up", "ALERTS"}
# Labels Prometheus adds: to every series, to histogram buckets (`le`), and to ALERTS (with the
# alert's own labels, taken from alerts.yml).
PROMETHEUS_LABELS = {"instance", "job", "le"}
ALERTS_LABELS = {"alertname", "alertstate"}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
GROUPING = r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)"
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and",
                "or", "unless", "offset", "inf", "nan"}
SKIPPED_DIRS = ("target", "tests", "fuzz", "benches")
RUST_STRING = r'r(#*)"(.*?)"\1|"((?:[^"\\]|\\.)*)"'


def rust_sources(root):
    """(path, text) of server/'s Rust sources, without tests (dirs, files, `#[cfg(test)] mod`)."""
    for top, dirs, files in os.walk(os.path.join(root, "server")):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(files):
            if not name.endswith(".rs") or name == "tests.rs" or name.endswith("_tests.rs"):
                continue
            path = os.path.join(top, name)
            with open(path, encoding="utf-8") as f:
                yield path, re.split(r"\n\s*#\[cfg\(test\)\]\s*mod ", f.read())[0]


def macro_calls(text, macros):
    """(macro, body) of each call of one of `macros`, the body up to its closing parenthesis."""
    for m in re.finditer(r"\b(%s)!\s*\(" % "|".join(macros), text):
        depth, end, quoted = 1, m.end(), False
        while depth and end < len(text):
            c = text[end]
            if quoted and c == "\\":
                end += 1  # an escaped character, `\"` included
            elif c == '"':
                quoted = not quoted
            elif not quoted:
                depth += {"(": 1, ")": -1}.get(c, 0)
            end += 1
        yield m.group(1), text[m.end():end - 1]


def string_literals(text):
    """The values of the Rust string literals in `text`, in order (escapes left as written)."""
    return [m.group(2) if m.group(2) is not None else m.group(3)
            for m in re.finditer(RUST_STRING, text, re.S)]


def registered_metrics(root=ROOT):
    """{name: (kind, label keys)} of every counter!/gauge!/histogram! call in server/'s sources."""
    found = {}
    for _, text in rust_sources(root):
        for kind, body in macro_calls(text, ("counter", "gauge", "histogram")):
            m = re.match(r'\s*"([^"]+)"', body)
            if not m:
                continue  # a name from a variable: not one this check can follow
            labels = set(re.findall(r'"(\w+)"\s*=>', body))
            if kind == "gauge" and m.group(1).endswith("_total"):
                kind = "counter"  # a counter with fractions: /metrics types it so
            old = found.get(m.group(1), (kind, set()))
            found[m.group(1)] = (kind, old[1] | labels)
    assert found, f"no metrics found in {root}/server's sources"
    return found


def described_metrics(root=ROOT):
    """{name: [(kind, help text)]} of every describe_*! call in server/'s sources."""
    found = {}
    for _, text in rust_sources(root):
        for macro, body in macro_calls(text, ("describe_counter", "describe_gauge",
                                              "describe_histogram")):
            m = re.match(r'\s*"([^"]+)"\s*,', body)
            if not m:
                continue
            # The help text is the last argument: the literals after the name (and the unit).
            help_text = "".join(string_literals(body[m.end():])).strip()
            found.setdefault(m.group(1), []).append((macro[len("describe_"):], help_text))
    return found


def help_text_problems(root=ROOT):
    """What keeps /metrics from a HELP line per metric, one sentence each (empty when none)."""
    registered, described = registered_metrics(root), described_metrics(root)
    problems = []
    for name, (kind, _) in sorted(registered.items()):
        texts = described.get(name)
        if not texts:
            problems.append(f"{name} ({kind}) has no describe_{kind}! call")
            continue
        problems += [f"{name} is a {kind} but described by describe_{k}!" for k, _ in texts if k != kind]
        problems += [f"{name}: describe_{k}! has an empty help text" for k, t in texts if not t]
        if len(texts) > 1:
            problems.append(f"{name} is described {len(texts)} times")
    problems += [f"{name} is described but not registered (renamed?)"
                 for name in sorted(set(described) - set(registered))]
    return problems


def check_help_texts(root=ROOT):
    problems = help_text_problems(root)
    assert not problems, "metrics without a proper HELP text:\n  " + "\n  ".join(problems)
    print(f"server/: all {len(registered_metrics(root))} registered metrics are described")


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


def selectors(expr):
    """(metric name, matchers or None) of each series selector in an expression."""
    bare = re.sub(r'"(?:[^"\\]|\\.)*"', lambda m: "_" * len(m.group(0)), expr)
    bare = re.sub(GROUPING, lambda m: " " * len(m.group(0)), bare)
    bare = re.sub(r"\[[^\]]*\]", lambda m: " " * len(m.group(0)), bare)
    names, _ = promql_names(expr)
    found = []
    for m in re.finditer(r"(?<![\w.:$])([a-zA-Z_:][\w:]*)(?![\w:])(\s*\{[^}]*\})?", bare):
        if m.group(1) in names:
            found.append((m.group(1), expr[m.start(2):m.end(2)].strip() if m.group(2) else None))
    return found


def unknown_names(exprs, legends, metrics, known_labels):
    """What the expressions and legends use that is neither registered nor Prometheus's."""
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
    return used, bad


def all_metrics(root):
    """Registered metrics, the library's included: {name: (kind, label keys)}."""
    metrics = {name: (kind, set()) for name, kind in LIBRARY_METRICS.items()}
    metrics.update(registered_metrics(root))
    return metrics


def alert_rules(path=ALERTS):
    with open(path, encoding="utf-8") as f:
        return [r for g in yaml.safe_load(f)["groups"] for r in g["rules"]]


def check_dashboard(path, root=ROOT, alerts=ALERTS):
    with open(path, encoding="utf-8") as f:
        dashboard = json.load(f)
    metrics = all_metrics(root)
    alert_labels = ALERTS_LABELS.union(*(r.get("labels", {}) for r in alert_rules(alerts)))
    known_labels = PROMETHEUS_LABELS.union(alert_labels, *(l for _, l in metrics.values()))
    panel_exprs, legends = [], []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("expr"), str):
                panel_exprs.append(node["expr"])
            if isinstance(node.get("legendFormat"), str):
                legends.append(node["legendFormat"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(dashboard.get("panels", []))
    assert panel_exprs, f"{path}: no PromQL expressions in its panels"
    variables = {v["name"]: v for v in dashboard.get("templating", {}).get("list", [])}
    assert variables.get("datasource", {}).get("type") == "datasource", "no datasource variable"
    assert variables["datasource"].get("query") == "prometheus", variables["datasource"]
    for name in ("job", "instance"):
        v = variables.get(name, {})
        assert v.get("type") == "query", f"{path}: no {name} variable from a query"
        assert v.get("datasource", {}).get("uid") == "${datasource}", (name, v.get("datasource"))
        # "All" must match series without the label too (absent()'s ALERTS have no instance).
        assert not v.get("includeAll") or v.get("allValue") == ".*", (name, v.get("allValue"))
    exprs = list(panel_exprs)
    for v in variables.values():
        if v.get("type") != "query":
            continue
        query = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"\s*label_values\(\s*([\w:]+(?:\s*\{[^}]*\})?)\s*,\s*(\w+)\s*\)\s*", query)
        exprs.append(f"sum by ({m.group(2)}) ({m.group(1)})" if m else query)
    used, bad = unknown_names(exprs, legends, metrics, known_labels)
    # Every selector narrowed by the variables, so the dashboard fits any job name and instance.
    for expr in panel_exprs:
        for name, matchers in selectors(expr):
            if not (matchers and 'job=~"$job"' in matchers and 'instance=~"$instance"' in matchers):
                bad.append(f'{name} not narrowed by job=~"$job" and instance=~"$instance" in {expr!r}')
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            uid = target.get("datasource", {}).get("uid")
            assert uid == "${datasource}", (panel["title"], target)
    assert not bad, f"{path} uses what the daemon's sources do not register:\n  " + "\n  ".join(bad)
    unused = sorted(set(metrics) - used)
    print(f"{os.path.relpath(path)}: {len(exprs)} queries over {len(used)} metrics, all registered"
          + (f" (not shown: {', '.join(unused)})" if unused else ""))


def check_rules(path=ALERTS, root=ROOT):
    """The alert rules use registered metrics and labels; each has a severity and summary."""
    rules = alert_rules(path)
    metrics = all_metrics(root)
    known_labels = PROMETHEUS_LABELS.union(*(labels for _, labels in metrics.values()))
    _, bad = unknown_names([r["expr"] for r in rules], [], metrics, known_labels)
    for rule in rules:
        name = rule.get("alert", rule.get("record"))
        assert name.startswith("Snarkd"), f"{name}: the dashboard shows ALERTS of Snarkd.* only"
        assert rule.get("labels", {}).get("severity") in ("critical", "warning"), name
        assert {"summary", "description"} <= set(rule.get("annotations", {})), name
    assert not bad, f"{path} uses what the daemon's sources do not register:\n  " + "\n  ".join(bad)
    print(f"{os.path.relpath(path)}: {len(rules)} rules over registered metrics")


def metrics_doc(root=ROOT):
    """The metrics reference: every metric the daemon registers, its type, labels and HELP text."""
    registered, described = registered_metrics(root), described_metrics(root)
    out = [
        "# Metrics",
        "",
        "Every metric snarkd registers on `GET /metrics` (and GetMetrics), with its type, its",
        "labels and its HELP text. Generated from the daemon's sources by",
        "`python3 docker/check_metrics.py --write-docs`; `docker/check.sh` fails when this file",
        "differs from what that makes. Counters with a fixed set of label values (kinds, intake",
        "limits, devices) are exported at 0 from the start. Besides these: the process metrics",
        "(`process_*`, from the metrics-process crate).",
        "",
        "| metric | type | labels | what it is |",
        "|---|---|---|---|",
    ]
    for name, (kind, labels) in sorted(registered.items()):
        help_text = (described.get(name) or [("", "")])[0][1].replace("|", "\\|")
        shown = ", ".join(f"`{l}`" for l in sorted(labels)) or "none"
        out.append(f"| `{name}` | {kind} | {shown} | {help_text} |")
    return "\n".join(out) + "\n"


def check_metrics_doc(root=ROOT, path=METRICS_DOC):
    want = metrics_doc(root)
    have = open(path).read() if os.path.exists(path) else ""
    assert have == want, (f"{os.path.relpath(path, ROOT)} is not the metrics the daemon registers: "
                          "run python3 docker/check_metrics.py --write-docs")
    print(f"{os.path.relpath(path, ROOT)}: the reference of all {len(registered_metrics(root))} metrics")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--dashboard":
        check_dashboard(sys.argv[2])
    elif sys.argv[1:] == ["--help-texts"]:
        check_help_texts()
    elif sys.argv[1:] == ["--write-docs"]:
        with open(METRICS_DOC, "w") as f:
            f.write(metrics_doc())
    elif len(sys.argv) == 1:
        check_rules()
        check_dashboard(DASHBOARD)
        check_help_texts()
        check_metrics_doc()
    else:
        sys.exit(__doc__)

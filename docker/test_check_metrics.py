"""Tests of docker/check_metrics.py on made-up daemon sources and dashboards, so that a check
that could never fail is caught here (docker/check.sh runs these before the real checks).
    python3 -m unittest discover --start-directory docker --pattern 'test_*.py'
"""

import contextlib
import io
import json
import os
import tempfile
import unittest

import check_metrics

SOURCES = {
    "server/src/api/calls.rs": '''
        fn count(code: &str) {
            metrics::counter!("grpc_server_handled_total", "grpc_method" => m,
                "grpc_code" => code)
            .increment(1);
            metrics::gauge!("snarkd_build_info", "version" => v, "build_id" => b).set(1.0);
            metrics::histogram!("snarkd_proof_seconds", "kind" => k).record(s);
        }
        #[cfg(test)]
        mod tests {
            fn t() { metrics::counter!("only_in_a_test_total").increment(1); }
        }
    ''',
    "server/src/telemetry/describe.rs": '''
        pub fn describe_all() {
            describe_counter!("grpc_server_handled_total", "Calls ended (\\"handled\\"), by code.");
            describe_gauge!("snarkd_build_info", r#"Always 1; the "version" as a label."#);
            describe_histogram!(
                "snarkd_proof_seconds",
                Unit::Seconds,
                "Time from acceptance to end, ",
                // (a comment between the arguments)
            );
        }
    ''',
    "server/tests/real.rs": 'fn t() { metrics::gauge!("only_in_tests").set(1.0); }',
    "server/src/config/tests.rs": 'fn t() { metrics::gauge!("only_in_tests_rs").set(1.0); }',
}
SELECTOR = '{job=~"$job", instance=~"$instance"}'


def variable(name, query):
    return {"name": name, "type": "query", "datasource": {"uid": "${datasource}"},
            "query": {"query": query}, "includeAll": True, "allValue": ".*"}


def dashboard(*exprs, legends=()):
    targets = [{"datasource": {"uid": "${datasource}"}, "expr": e, "refId": "A"} for e in exprs]
    targets += [{"datasource": {"uid": "${datasource}"}, "expr": f"up{SELECTOR}",
                 "legendFormat": legend} for legend in legends]
    return {"templating": {"list": [
        {"name": "datasource", "type": "datasource", "query": "prometheus"},
        variable("job", "label_values(snarkd_build_info, job)"),
        variable("instance", 'label_values(snarkd_build_info{job=~"$job"}, instance)'),
    ]}, "panels": [{"title": "p", "targets": targets}]}


class MadeUpSources(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = self.dir.name
        for path, text in SOURCES.items():
            self.write(path, text)
        self.alerts = self.write("alerts.yml", "groups:\n  - name: g\n    rules:\n"
                                 "      - alert: SnarkdDown\n        expr: up == 0\n"
                                 "        labels: {severity: critical}\n")

    def tearDown(self):
        self.dir.cleanup()

    def write(self, path, text):
        path = os.path.join(self.root, path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def check(self, board):
        path = self.write("dashboard.json", json.dumps(board))
        with contextlib.redirect_stdout(io.StringIO()):
            check_metrics.check_dashboard(path, self.root, self.alerts)

    def test_registered_metrics_have_their_labels_and_not_the_tests_metrics(self):
        found = check_metrics.registered_metrics(self.root)
        self.assertEqual(set(found), {"grpc_server_handled_total", "snarkd_build_info",
                                      "snarkd_proof_seconds"})
        self.assertEqual(found["grpc_server_handled_total"], ("counter", {"grpc_method", "grpc_code"}))

    def test_described_sources_pass(self):
        self.assertEqual(check_metrics.help_text_problems(self.root), [])
        texts = check_metrics.described_metrics(self.root)
        self.assertEqual(texts["snarkd_build_info"], [("gauge", 'Always 1; the "version" as a label.')])

    def test_a_total_gauge_is_a_counter_with_fractions(self):
        self.write("server/engine/src/driver.rs",
                   'fn f() { metrics::gauge!("snarkd_worker_busy_seconds_total", "worker" => w).set(1.5); }')
        found = check_metrics.registered_metrics(self.root)
        self.assertEqual(found["snarkd_worker_busy_seconds_total"], ("counter", {"worker"}))

    def test_an_undescribed_metric_is_named(self):
        self.write("server/engine/src/driver.rs", 'fn f() { metrics::gauge!("snarkd_queue_depth").set(0.0); }')
        self.assertEqual(check_metrics.help_text_problems(self.root),
                         ["snarkd_queue_depth (gauge) has no describe_gauge! call"])
        with self.assertRaises(AssertionError):
            check_metrics.check_help_texts(self.root)

    def test_the_metrics_reference_lists_every_metric_and_fails_on_one_added(self):
        doc = self.write("docs/metrics.md", check_metrics.metrics_doc(self.root))
        with contextlib.redirect_stdout(io.StringIO()):
            check_metrics.check_metrics_doc(self.root, doc)
        text = open(doc).read()
        self.assertIn('| `snarkd_build_info` | gauge | `build_id`, `version` | Always 1; the "version" as a label. |', text)
        self.write("server/engine/src/driver.rs", 'fn f() { metrics::gauge!("snarkd_queue_depth").set(0.0); }')
        with self.assertRaises(AssertionError):
            check_metrics.check_metrics_doc(self.root, doc)

    def test_a_wrong_kind_an_empty_text_and_a_stale_name_are_named(self):
        self.write("server/src/telemetry/describe.rs", '''
            describe_gauge!("grpc_server_handled_total", "Calls ended.");
            describe_gauge!("snarkd_build_info", "");
            describe_histogram!("snarkd_proof_seconds", Unit::Seconds, "Time.");
            describe_gauge!("snarkd_memory_total_bytes", Unit::Bytes, "The old name.");
        ''')
        self.assertEqual(check_metrics.help_text_problems(self.root), [
            "grpc_server_handled_total is a counter but described by describe_gauge!",
            "snarkd_build_info: describe_gauge! has an empty help text",
            "snarkd_memory_total_bytes is described but not registered (renamed?)",
        ])

    def test_a_dashboard_of_registered_metrics_and_prometheus_series_passes(self):
        self.check(dashboard(
            f'sum by (grpc_method, grpc_code) (rate(grpc_server_handled_total{SELECTOR}[5m]))',
            f'histogram_quantile(0.99, sum by (le, kind) (rate(snarkd_proof_seconds_bucket{SELECTOR}[5m])))',
            f'rate(process_cpu_seconds_total{SELECTOR}[5m]) or vector(0)',
            'ALERTS{alertname=~"Snarkd.*", alertstate="firing", job=~"$job", instance=~"$instance"}',
            legends=["{{grpc_code}} {{severity}} {{alertname}}"]))

    def test_an_unregistered_metric_or_label_fails(self):
        for expr in (f"snarkd_memory_total_bytes{SELECTOR}",
                     f"sum by (method) (grpc_server_handled_total{SELECTOR})",
                     f"snarkd_build_info_bucket{SELECTOR}",
                     f"rate(snarkd_worker_busy_seconds{SELECTOR}[5m])"):
            with self.subTest(expr=expr), self.assertRaises(AssertionError):
                self.check(dashboard(expr))
        with self.assertRaises(AssertionError):
            self.check(dashboard(legends=["{{code}}"]))

    def test_every_selector_is_narrowed_by_the_variables(self):
        for expr in ('up{job="snarkd", instance=~"$instance"}',
                     "snarkd_build_info",
                     f'snarkd_build_info{SELECTOR} * on (job) snarkd_build_info{{instance=~"$instance"}}'):
            with self.subTest(expr=expr), self.assertRaises(AssertionError):
                self.check(dashboard(expr))

    def test_job_and_instance_come_from_variables(self):
        board = dashboard(f"up{SELECTOR}")
        board["templating"]["list"] = board["templating"]["list"][:2]
        with self.assertRaises(AssertionError):
            self.check(board)
        board = dashboard(f"up{SELECTOR}")
        del board["templating"]["list"][2]["allValue"]
        with self.assertRaises(AssertionError):
            self.check(board)

    def test_rules_with_unregistered_metrics_fail(self):
        rules = ("groups:\n  - name: g\n    rules:\n      - alert: SnarkdX\n"
                 "        expr: snarkd_memory_total_bytes > 0\n        labels: {severity: warning}\n"
                 "        annotations: {summary: s, description: d}\n")
        with self.assertRaises(AssertionError):
            check_metrics.check_rules(self.write("bad.yml", rules), self.root)
        good = rules.replace("snarkd_memory_total_bytes", "snarkd_build_info")
        with contextlib.redirect_stdout(io.StringIO()):
            check_metrics.check_rules(self.write("good.yml", good), self.root)


if __name__ == "__main__":
    unittest.main()

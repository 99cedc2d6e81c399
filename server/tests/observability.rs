//! What an operator's monitoring sees of the real binary: `/metrics` after a real proof passes
//! Prometheus' own linter (`promtool check metrics`, Debian's `prometheus` package, found through
//! `PROMTOOL`), answers a scrape that names the port by address, and carries the device, gRPC
//! and process metrics; every job lifecycle log line carries the client's `request_id`; the
//! startup log says how the memory budget was reckoned and which devices prove; a refused `Host`
//! is logged at WARN, at most once a second; a fresh daemon exports every counter the alerts
//! and the dashboard name, at zero; buffers a finished partition leaves kept are shown as such,
//! and the next proof of that shape, written into them, verifies.

mod common;
#[path = "common/real.rs"]
mod real;

use std::io::Write;
use std::process::{Command, Stdio};

use common::get_with_host;
use common::process::{self, SNARKD};
use snarkd_proto::v1 as pb;
use snarkd_prover::ProofKind;

/// promtool, failing the test with how to install it when it is missing.
fn promtool() -> String {
    let program = std::env::var("PROMTOOL").unwrap_or_else(|_| "promtool".into());
    match Command::new(&program).arg("--version").output() {
        Ok(out) if out.status.success() => program,
        _ => panic!(
            "promtool is not installed (looked for {program:?}): install Debian's `prometheus` \
             package, or run ./scripts/test.sh which does, or set PROMTOOL to its path"
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_proofs_metrics_pass_promtool_and_its_log_lines_carry_the_request_id() {
    let promtool = promtool();
    real::ensure_params(&[ProofKind::WindowPost]);
    let mut request = real::wire(
        &real::env().fixtures.request(ProofKind::WindowPost),
        pb::Priority::Unspecified,
    );
    // As Curio names a WindowPoSt task: spaces and brackets.
    request.request_id = "wdpost-[1000 7] 0".into();
    let mut daemon = process::spawn(std::path::Path::new(SNARKD), real::binary_env());
    let ready = daemon.ready();
    real::prove_completed(&ready.grpc, request.clone()).await;

    // A scraper names the port by its address, on the default config.
    let (code, metrics) = get_with_host(ready.http, "/metrics", "10.0.0.5:9821").await;
    assert_eq!(code, 200, "{metrics}");
    for wanted in [
        "# HELP snarkd_proof_seconds ",
        "# TYPE snarkd_worker_busy_seconds_total counter",
        r#"snarkd_proofs_completed_total{kind="window-post"} 1"#,
        // Its one partition, on whichever path its parameters' load allowed.
        r#"snarkd_partitions_synthesized_total{kind="window-post",path="#,
        r#"grpc_server_handled_total{grpc_type="unary",grpc_service="cuzk.v1.ProvingEngine",grpc_method="Prove",grpc_code="OK"} 1"#,
        "grpc_server_handling_seconds_bucket{",
        r#"snarkd_device_info{device="cpu",backend="cpu",ordinal="0","#,
        "snarkd_gpu_expected 0",
        "snarkd_journal_writable 1",
        "process_resident_memory_bytes ",
        "process_start_time_seconds ",
    ] {
        assert!(
            metrics.contains(wanted),
            "{wanted:?} missing from:\n{metrics}"
        );
    }
    let mut check = Command::new(&promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    check
        .stdin
        .take()
        .unwrap()
        .write_all(metrics.as_bytes())
        .unwrap();
    let out = check.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool check metrics: {said}\non:\n{metrics}"
    );

    daemon.sigterm();
    let log = daemon.expect_clean_exit().await;
    let events: Vec<serde_json::Value> = log
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let lifecycle: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e.get("job_id").is_some())
        .collect();
    for message in ["proof submitted", "job queued", "job finalized"] {
        assert!(
            lifecycle.iter().any(|e| e["message"] == message),
            "no {message:?} line: {log:?}"
        );
    }
    for e in &lifecycle {
        assert_eq!(e["request_id"], request.request_id.as_str(), "{e}");
    }
    // How the memory budget was reckoned, and what the devices are, said once at startup.
    let budget = events
        .iter()
        .find(|e| e["message"] == "memory budget")
        .unwrap_or_else(|| panic!("no memory budget line: {log:?}"));
    assert!(
        budget["reckoned"]
            .as_str()
            .is_some_and(|r| r.starts_with("set by [memory] budget")),
        "{budget}"
    );
    assert!(
        events
            .iter()
            .any(|e| e["message"] == "proving devices chosen"),
        "{log:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_host_is_logged_at_warn_at_most_once_a_second() {
    let mut daemon = process::spawn(
        std::path::Path::new(SNARKD),
        [("SNARKD_GPUS_BACKEND", "cpu")],
    );
    let http = daemon.ready().http;
    const REFUSALS: usize = 20;
    let started = std::time::Instant::now();
    for _ in 0..REFUSALS {
        let (code, body) = get_with_host(http, "/", "evil.example").await;
        assert_eq!(code, 403, "{body}");
    }
    // However long the refusals took here, at most one line a second of it (and the first).
    let allowed = started.elapsed().as_secs() as usize + 2;
    daemon.sigterm();
    let log = daemon.expect_clean_exit().await;
    let warnings: Vec<serde_json::Value> = log
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| {
            e["level"] == "WARN"
                && e["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("[http] allowed_hosts"))
        })
        .collect();
    assert!(
        !warnings.is_empty(),
        "no WARN line for a refused host: {log:?}"
    );
    assert_eq!(warnings[0]["host"], "evil.example", "{}", warnings[0]);
    assert!(
        warnings.len() <= allowed.min(REFUSALS - 1),
        "{} lines for {REFUSALS} refusals in under {allowed} s: {warnings:?}",
        warnings.len()
    );
}

/// Every metric name in `text` (`snarkd_…`, `grpc_server_…`), histogram series folded into
/// their family.
fn metric_names(text: &str) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for (start, _) in text.match_indices("snarkd_") {
        let before = text[..start].chars().last();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = text[start..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .unwrap_or(&name)
            .to_string();
        names.insert(family);
    }
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_daemon_exports_every_counter_the_alerts_and_the_dashboard_name_at_zero() {
    let mut daemon = process::spawn(
        std::path::Path::new(SNARKD),
        [("SNARKD_GPUS_BACKEND", "cpu")],
    );
    let http = daemon.ready().http;
    let metrics = reqwest::get(format!("http://{http}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let exported = metric_names(&metrics);
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let mut named = String::new();
    for file in [
        "docker/prometheus/alerts.yml",
        "docker/grafana/snarkd-dashboard.json",
    ] {
        named.push_str(&std::fs::read_to_string(format!("{root}/{file}")).unwrap());
    }
    // Histograms have samples only once something was timed; the fallbacks appear at their
    // first event by design (one series per circuit and stage); a device's readings are absent,
    // never 0, where it cannot give them (the CPU has no NVML, no pool).
    let readings = [
        "snarkd_device_memory_total_bytes",
        "snarkd_device_memory_used_bytes",
        "snarkd_device_pool_limit_bytes",
        "snarkd_device_pool_used_bytes",
        "snarkd_device_power_watts",
        "snarkd_device_temperature_celsius",
        "snarkd_device_utilization_ratio",
    ];
    let later = |name: &str| {
        name.ends_with("_seconds")
            || name == "snarkd_native_witness_fallbacks_total"
            || readings.contains(&name)
    };
    let missing: Vec<String> = metric_names(&named)
        .into_iter()
        .filter(|n| !exported.contains(n) && !later(n))
        .collect();
    assert!(
        missing.is_empty(),
        "named by the alerts or the dashboard, absent from a fresh daemon's /metrics: {missing:?}"
    );
    // The failure counters the deadline alerts watch are there, at zero, for every kind.
    for kind in ["porep-c2", "snap-update", "window-post", "winning-post"] {
        for class in ["input", "setup", "resource", "device", "bug"] {
            let line = format!("snarkd_proofs_failed_total{{kind=\"{kind}\",class=\"{class}\"}} 0");
            assert!(metrics.lines().any(|l| l == line), "no {line}:\n{metrics}");
        }
    }
    assert!(
        metrics
            .lines()
            .any(|l| l == "snarkd_device_faults_total{device=\"cpu\"} 0"),
        "{metrics}"
    );
    daemon.sigterm();
    daemon.expect_clean_exit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_buffers_are_shown_and_the_next_proof_written_into_them_verifies() {
    real::ensure_params(&[ProofKind::WindowPost]);
    let mut settings = real::binary_env();
    // Every buffer kept: a 2 KiB partition's are far below the default's 64 MiB.
    settings.push(("SNARKD_MEMORY_KEEP_BUFFERS_FROM", "1B".into()));
    let mut daemon = process::spawn(std::path::Path::new(SNARKD), settings);
    let ready = daemon.ready();
    // Parameters and matrices loaded first, so both proofs take the pre-compiled path (the
    // plain one writes its witness into buffers of other sizes).
    let mut client = common::connect(ready.grpc.parse().unwrap()).await;
    client
        .preload_srs(pb::PreloadSrsRequest {
            circuit_id: "wpost-2k".into(),
        })
        .await
        .unwrap();
    let input = real::env().fixtures.request(ProofKind::WindowPost);
    let mut request = real::wire(&input, pb::Priority::Unspecified);
    let mut kept = Vec::new();
    for round in 0..2 {
        request.request_id = format!("wdpost-kept-{round}");
        let result = real::prove_completed(&ready.grpc, request.clone()).await;
        real::assert_verifies(&input, &result.proof);
        let (code, status) = get_with_host(ready.http, "/status", &ready.http.to_string()).await;
        assert_eq!(code, 200, "{status}");
        let status: serde_json::Value = serde_json::from_str(&status).unwrap();
        kept.push(status["memory"]["spare_bytes"].as_u64().unwrap_or(0));
    }
    assert!(
        kept[0] > 0,
        "the first partition's witness is kept: {kept:?}"
    );
    assert_eq!(
        kept[1], kept[0],
        "the second wrote into it and left it again: {kept:?}"
    );
    let (_, metrics) = get_with_host(ready.http, "/metrics", &ready.http.to_string()).await;
    assert!(
        metrics.contains(&format!("snarkd_memory_spare_bytes {}", kept[1])),
        "{metrics}"
    );
    daemon.sigterm();
    daemon.expect_clean_exit().await;
}

//! Logs and metrics. Logs go through `tracing` to stderr (text or JSON, filtered by `RUST_LOG` or
//! `[logging] level`, which by default shows snarkd's info lines and only warnings of the rest); metrics go through the `metrics` facade into one Prometheus recorder that
//! `GET /metrics` and GetMetrics both render.

mod describe;
mod zeros;

pub use zeros::zero_counters;

use std::sync::OnceLock;
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::EnvFilter;

use crate::config::{LogFormat, LoggingSection};

/// How often histogram buckets are drained so they do not grow without bound.
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// The crates whose lines a bare `[logging] level` applies to; every other target (filecoin-proofs,
/// bellperson, tonic, …) logs at warn and above.
const OUR_TARGETS: [&str; 3] = ["snarkd", "snarkd_engine", "snarkd_prover"];

/// Latency histogram buckets in seconds, from a WinningPoSt on a GPU to a 64 GiB PoRep on a CPU.
const SECONDS_BUCKETS: [f64; 16] = [
    0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0,
    3600.0,
];

/// The tracing filter for `[logging] level`: a bare level ("info", "debug") is snarkd's own
/// level, with dependencies at warn (or at the level, when it is quieter); a filter with
/// directives ("snarkd=debug,info") is used as written.
pub fn log_filter(level: &str) -> String {
    use tracing_subscriber::filter::LevelFilter;
    let Ok(ours) = level.trim().parse::<LevelFilter>() else {
        return level.to_string();
    };
    let theirs = ours.min(LevelFilter::WARN);
    let mut filter = theirs.to_string().to_lowercase();
    for target in OUR_TARGETS {
        filter.push_str(&format!(",{target}={}", ours.to_string().to_lowercase()));
    }
    filter
}

/// Installs the process's log subscriber. `RUST_LOG`, when set and not empty, wins over
/// `[logging] level`. Text logs on a journald stream (systemd's service stderr) go to the
/// journal natively instead, each entry at its level's priority (so `journalctl -p warning`
/// finds the warnings) with its fields; JSON stays JSON for shippers. A second call (tests
/// start several daemons) keeps the first subscriber.
pub fn init_logging(logging: &LoggingSection) {
    let filter = std::env::var(EnvFilter::DEFAULT_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .and_then(|v| EnvFilter::try_new(v).ok())
        .unwrap_or_else(|| EnvFilter::new(log_filter(&logging.level)));
    if logging.format == LogFormat::Text && crate::service::under_journald() {
        use tracing_subscriber::layer::SubscriberExt;
        use tracing_subscriber::util::SubscriberInitExt;
        match tracing_journald::layer() {
            Ok(journald) => {
                let _ = tracing_subscriber::registry()
                    .with(filter)
                    .with(journald.with_syslog_identifier("snarkd".into()))
                    .try_init();
                return;
            }
            Err(err) => eprintln!("snarkd: journald unreachable ({err}); logging to stderr"),
        }
    }
    // Colour only for a person at a terminal: journald, log files and pipes get plain text.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let _ = match logging.format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .try_init(),
    };
}

static PROMETHEUS: OnceLock<PrometheusHandle> = OnceLock::new();
/// The `process_*` metrics (CPU, resident memory, open files, start time, threads).
static PROCESS: OnceLock<metrics_process::Collector> = OnceLock::new();

/// `/metrics`' and GetMetrics' text: the process metrics read now, then everything recorded.
pub fn render(handle: &PrometheusHandle) -> String {
    if let Some(process) = PROCESS.get() {
        process.collect();
    }
    float_counters_typed(handle.render())
}

/// The exporter's counters hold whole numbers, so a counter of seconds that must keep its
/// fractions (`snarkd_worker_busy_seconds_total`) is recorded as a gauge named `*_total`, which
/// only ever rises, and typed `counter` here. Prometheus reserves `_total` for counters, so no
/// real gauge is named so (`docker/check_metrics.py` holds the sources to the same rule).
fn float_counters_typed(text: String) -> String {
    if !text.contains("_total gauge\n") {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        match line
            .strip_prefix("# TYPE ")
            .and_then(|rest| rest.strip_suffix(" gauge\n"))
            .filter(|name| name.ends_with("_total"))
        {
            Some(name) => {
                out.push_str("# TYPE ");
                out.push_str(name);
                out.push_str(" counter\n");
            }
            None => out.push_str(line),
        }
    }
    out
}

/// The process-wide Prometheus recorder, installed on first use. Call it before the engine
/// starts so the engine's first metrics are recorded.
pub fn prometheus() -> PrometheusHandle {
    PROMETHEUS
        .get_or_init(|| match recorder().install_recorder() {
            Ok(handle) => {
                describe::describe_all();
                let process = metrics_process::Collector::default();
                process.describe();
                let _ = PROCESS.set(process);
                metrics::gauge!(
                    "snarkd_build_info",
                    "version" => crate::build_info::VERSION,
                    "build_id" => crate::build_info::BUILD_ID
                )
                .set(1.0);
                handle
            }
            Err(err) => {
                // Only when something else in the process installed a recorder first.
                tracing::warn!(%err, "another metrics recorder is installed: /metrics shows only its own recorder's view");
                recorder().build_recorder().handle()
            }
        })
        .clone()
}

/// gRPC call latency buckets in seconds: most calls answer in milliseconds (GetStatus, a
/// refusal, an AwaitProof of a finished job); Prove waits for its proof, up to Curio's 30 minutes.
const RPC_SECONDS_BUCKETS: [f64; 18] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    300.0, 1800.0, 3600.0,
];

/// The exporter's settings: latency metrics (`*_seconds`) as histograms with fixed buckets, which
/// keep their counts for good (a summary's quantiles decay to 0 once proofs stop): the gRPC
/// calls' from a millisecond, the proofs' and their steps' from 100 ms to an hour. (The
/// exporter tries full names before suffixes.)
fn recorder() -> PrometheusBuilder {
    PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full("grpc_server_handling_seconds".into()),
            &RPC_SECONDS_BUCKETS,
        )
        .and_then(|b| {
            b.set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &SECONDS_BUCKETS)
        })
        .expect("the bucket lists are not empty")
}

/// Drains histogram buckets periodically; runs until the runtime stops.
pub fn spawn_upkeep(handle: PrometheusHandle) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(UPKEEP_INTERVAL);
        loop {
            tick.tick().await;
            handle.run_upkeep();
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_latencies_are_bucketed_from_a_millisecond_and_proof_times_to_an_hour() {
        let recorder = recorder().build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            metrics::histogram!("grpc_server_handling_seconds").record(0.002);
            metrics::histogram!("snarkd_proof_seconds").record(0.002);
        });
        let text = handle.render();
        assert!(
            text.contains(r#"grpc_server_handling_seconds_bucket{le="0.0025"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"grpc_server_handling_seconds_bucket{le="0.001"} 0"#),
            "{text}"
        );
        assert!(
            text.contains(r#"snarkd_proof_seconds_bucket{le="0.1"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"snarkd_proof_seconds_bucket{le="3600"} 1"#),
            "{text}"
        );
    }

    #[test]
    fn a_total_gauge_is_a_counter_that_keeps_its_fractions() {
        let recorder = recorder().build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            metrics::gauge!("snarkd_worker_busy_seconds_total", "worker" => "0").set(1.25);
            metrics::gauge!("snarkd_queue_depth").set(3.0);
        });
        let text = float_counters_typed(handle.render());
        assert!(
            text.contains("# TYPE snarkd_worker_busy_seconds_total counter\n")
                && text.contains("snarkd_worker_busy_seconds_total{worker=\"0\"} 1.25\n")
                && text.contains("# TYPE snarkd_queue_depth gauge\n")
                && !text.contains("_total gauge"),
            "{text}"
        );
    }

    #[test]
    fn a_bare_level_is_snarkds_and_dependencies_log_warnings() {
        assert_eq!(
            log_filter("info"),
            "warn,snarkd=info,snarkd_engine=info,snarkd_prover=info"
        );
        assert_eq!(
            log_filter("DEBUG"),
            "warn,snarkd=debug,snarkd_engine=debug,snarkd_prover=debug"
        );
        // Quieter than warn: everything at that level.
        assert_eq!(
            log_filter("error"),
            "error,snarkd=error,snarkd_engine=error,snarkd_prover=error"
        );
        assert_eq!(log_filter("snarkd=debug,info"), "snarkd=debug,info");
        for level in ["info", "trace", "off", "snarkd=debug,info"] {
            assert!(EnvFilter::try_new(log_filter(level)).is_ok(), "{level}");
        }
    }

    #[test]
    fn latencies_are_histograms_that_keep_their_counts() {
        let recorder = recorder().build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            metrics::histogram!("snarkd_proof_seconds", "kind" => "winning-post").record(3.0);
        });
        // Upkeep drains a summary's window; a histogram's buckets stay.
        handle.run_upkeep();
        let text = handle.render();
        assert!(
            text.contains(r#"snarkd_proof_seconds_bucket{kind="winning-post",le="5"} 1"#)
                && text.contains(r#"snarkd_proof_seconds_bucket{kind="winning-post",le="2"} 0"#)
                && text.contains(r#"snarkd_proof_seconds_count{kind="winning-post"} 1"#)
                && !text.contains("quantile"),
            "{text}"
        );
    }
}

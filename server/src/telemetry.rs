//! Logs and metrics. Logs go through `tracing` to stderr (text or JSON, filtered by `RUST_LOG` or
//! `[logging] level`); metrics go through the `metrics` facade into one Prometheus recorder that
//! `GET /metrics` and GetMetrics both render.

use std::sync::OnceLock;
use std::time::Duration;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::EnvFilter;

use crate::config::{LogFormat, LoggingSection};

/// How often histogram buckets are drained so they do not grow without bound.
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// Installs the process's log subscriber. `RUST_LOG`, when set, wins over `[logging] level`.
/// A second call (tests start several daemons) keeps the first subscriber.
pub fn init_logging(logging: &LoggingSection) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&logging.level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
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

/// The process-wide Prometheus recorder, installed on first use. Call it before the engine
/// starts so the engine's first metrics are recorded.
pub fn prometheus() -> PrometheusHandle {
    PROMETHEUS
        .get_or_init(|| match PrometheusBuilder::new().install_recorder() {
            Ok(handle) => {
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
                PrometheusBuilder::new().build_recorder().handle()
            }
        })
        .clone()
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

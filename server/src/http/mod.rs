//! The HTTP port: what operators, scripts and the browser monitor reach (usually through
//! `ssh -L 9821:localhost:9821`). It serves `GET /status` (the original daemon's JSON),
//! `GET /metrics` (Prometheus text), `GET /healthz`, the read-only gRPC calls over gRPC-web (and
//! plain gRPC; every call with `[http] serve_all_rpcs`), and the monitor's static files for every
//! other path. Every request but a scrape must name an allowed host (`[http] allowed_hosts`;
//! `/metrics` and `/healthz` answer any host unless `[http] scrapes_any_host = false`).
//!
//! Layout:
//! - `mod.rs`: the router and the small handlers.
//! - `status_json`: engine snapshot → the original `/status` schema.
//! - `monitor`: static files, or a page saying the monitor is not built.
//! - `hosts`: the `Host` allowlist against DNS rebinding.
//! - `refusal`: refusing a request as a gRPC status or a plain HTTP status, as it was asked.

mod hosts;
pub mod monitor;
pub mod refusal;
pub mod status_json;

use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Json, Response};
use axum::routing::get;
use axum::Router;
use http::{header, StatusCode};
use metrics_exporter_prometheus::PrometheusHandle;
use snarkd_engine::Engine;
use tokio::sync::watch;

use crate::api::status::now_unix_ms;
use crate::config::HttpSection;

/// What the HTTP handlers read.
#[derive(Clone)]
pub struct HttpState {
    pub engine: Engine,
    pub metrics: PrometheusHandle,
    /// True once shutdown has begun: /healthz then answers 503.
    pub draining: watch::Receiver<bool>,
    /// The startup summary, once gathered (`startup` in /status).
    pub startup: crate::startup::Published,
}

/// The HTTP router. `grpc` holds the gRPC routes, already wrapped for gRPC-web (only they are:
/// the gRPC-web layer answers 400 to plain HTTP/1 requests). Every route is behind the host
/// allowlist of `http`.
pub fn router(state: HttpState, grpc: Router, monitor_dir: PathBuf, http: &HttpSection) -> Router {
    let scrapes = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .with_state(state.clone());
    let pages = Router::new()
        .route("/status", get(status))
        .with_state(state);
    let monitor = Router::new()
        .fallback(monitor::serve)
        .with_state(monitor_dir);
    let host_check =
        axum::middleware::from_fn_with_state(Arc::new(http.clone()), hosts::check_host);
    let guarded = pages.merge(grpc).merge(monitor);
    let routes = if http.scrapes_any_host {
        guarded.layer(host_check).merge(scrapes)
    } else {
        guarded.merge(scrapes).layer(host_check)
    };
    // Request logs at DEBUG (`RUST_LOG=tower_http=debug`).
    routes.layer(tower_http::trace::TraceLayer::new_for_http())
}

/// `/status`: the engine's status and, once gathered, the startup summary.
#[derive(serde::Serialize)]
struct StatusPage {
    #[serde(flatten)]
    status: status_json::StatusJson,
    #[serde(skip_serializing_if = "Option::is_none")]
    startup: Option<crate::startup::StartupSummary>,
}

async fn status(State(state): State<HttpState>) -> Json<StatusPage> {
    Json(StatusPage {
        status: status_json::status_json(&state.engine.snapshot(), now_unix_ms()),
        startup: state.startup.get().cloned(),
    })
}

async fn metrics(State(state): State<HttpState>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        crate::telemetry::render(&state.metrics),
    )
        .into_response()
}

async fn healthz(State(state): State<HttpState>) -> Response {
    if let Some(why) = state.engine.stopped_reason() {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not serving: the engine stopped ({why}); snarkd exits so its service manager restarts it\n"),
        )
            .into_response()
    } else if let Some(why) = state.engine.snapshot().daemon.journal_unwritable.clone() {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not serving: the job journal cannot be written ({why}); no new work is taken until it can\n"),
        )
            .into_response()
    } else if *state.draining.borrow() {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "draining: snarkd is shutting down and takes no new proofs\n",
        )
            .into_response()
    } else {
        (StatusCode::OK, "ok\n").into_response()
    }
}

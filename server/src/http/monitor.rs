//! The monitor's static files, served on the HTTP port for every path no other route takes.
//! Until the monitor is built into `[daemon] monitor_dir`, `/` is a short page saying so.

use std::path::PathBuf;

use axum::extract::{Request, State};
use axum::response::{Html, IntoResponse, Response};
use http::StatusCode;
use tower::ServiceExt;
use tower_http::services::{ServeDir, ServeFile};

/// Serves `dir` (falling back to its `index.html`, the monitor's single page), or the
/// not-built page when it has no `index.html`. Checked per request, so building the monitor
/// while the daemon runs needs no restart.
pub async fn serve(State(dir): State<PathBuf>, req: Request) -> Response {
    let index = dir.join("index.html");
    if index.is_file() {
        let files = ServeDir::new(&dir)
            .append_index_html_on_directories(true)
            .fallback(ServeFile::new(index));
        return match files.oneshot(req).await {
            Ok(response) => response.into_response(),
            Err(never) => match never {},
        };
    }
    if matches!(req.uri().path(), "/" | "/index.html") {
        return Html(not_built_page(&dir)).into_response();
    }
    (
        StatusCode::NOT_FOUND,
        format!(
            "no such page: {}; snarkd serves /status, /metrics, /healthz and the monitor at /\n",
            req.uri().path()
        ),
    )
        .into_response()
}

fn not_built_page(dir: &std::path::Path) -> String {
    let dir = html_escape(&dir.display().to_string());
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>snarkd</title></head><body>\
         <h1>snarkd</h1>\
         <p>The monitor is not built: there is no <code>index.html</code> in <code>{dir}</code>. \
         Build <code>monitor-ui</code> (see the README), or point <code>[daemon] monitor_dir</code> at a built copy.</p>\
         <p>Meanwhile: <a href=\"/status\">/status</a> (JSON), <a href=\"/metrics\">/metrics</a> (Prometheus), \
         <a href=\"/healthz\">/healthz</a>.</p></body></html>"
    )
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

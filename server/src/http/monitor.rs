//! The monitor's static files, served on the HTTP port for every path no other route takes.
//! Until the monitor is built into `[daemon] monitor_dir`, `/` is a short page saying so.
//!
//! `scripts/build-monitor.sh` stores every file also brotli- and gzip-compressed (`NAME.br`,
//! `NAME.gz`); a browser that accepts either gets a compressed copy as it is (brotli first),
//! nothing is compressed per request. The names carry no content hash, so every response says `no-cache`
//! with a validator: a reload asks with `If-None-Match` (or `If-Modified-Since`) and gets an empty
//! 304 while the bundle is unchanged.

use std::path::PathBuf;

use axum::extract::{Request, State};
use axum::response::{Html, IntoResponse, Response};
use http::header::{self, HeaderMap, HeaderValue};
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
            .precompressed_br()
            .precompressed_gzip()
            .fallback(
                ServeFile::new(index)
                    .precompressed_br()
                    .precompressed_gzip(),
            );
        let if_none_match = req.headers().get(header::IF_NONE_MATCH).cloned();
        let response = match files.oneshot(req).await {
            Ok(response) => response.into_response(),
            Err(never) => match never {},
        };
        return revalidated(response, if_none_match.as_ref());
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

/// Adds the caching headers to a static file's response, and answers 304 when the browser's
/// copy (`If-None-Match`) is the one it would get.
fn revalidated(mut response: Response, if_none_match: Option<&HeaderValue>) -> Response {
    if !matches!(response.status(), StatusCode::OK | StatusCode::NOT_MODIFIED) {
        return response;
    }
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    let Some(etag) = etag(headers) else {
        return response;
    };
    let fresh = if_none_match.is_some_and(|v| matches_etag(v, &etag));
    headers.insert(header::ETAG, etag);
    if fresh && response.status() == StatusCode::OK {
        let (mut parts, _) = response.into_parts();
        parts.status = StatusCode::NOT_MODIFIED;
        parts.headers.remove(header::CONTENT_LENGTH);
        return Response::from_parts(parts, axum::body::Body::empty());
    }
    response
}

/// A weak validator from what identifies the file sent: its length, its modification time and
/// its encoding (a brotli copy is not the gzip one). None when the response lacks either.
fn etag(headers: &HeaderMap) -> Option<HeaderValue> {
    let length = headers.get(header::CONTENT_LENGTH)?.to_str().ok()?;
    let modified = httpdate_secs(headers.get(header::LAST_MODIFIED)?.to_str().ok()?)?;
    let encoding = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("identity");
    HeaderValue::from_str(&format!("W/\"{length}-{modified:x}-{encoding}\"")).ok()
}

/// Seconds since the epoch of an HTTP date.
fn httpdate_secs(date: &str) -> Option<u64> {
    let at = httpdate::parse_http_date(date).ok()?;
    Some(at.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs())
}

/// Whether an `If-None-Match` list names `etag` (weak comparison, as RFC 9110 asks for it).
fn matches_etag(if_none_match: &HeaderValue, etag: &HeaderValue) -> bool {
    let Ok(list) = if_none_match.to_str() else {
        return false;
    };
    let bare = |tag: &str| tag.trim().trim_start_matches("W/").to_string();
    let want = bare(etag.to_str().unwrap_or_default());
    list.split(',')
        .any(|tag| tag.trim() == "*" || bare(tag) == want)
}

fn not_built_page(dir: &std::path::Path) -> String {
    let dir = html_escape(&dir.display().to_string());
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>snarkd</title></head><body>\
         <h1>snarkd</h1>\
         <p>The monitor is not built: there is no <code>index.html</code> in <code>{dir}</code>. \
         Build <code>monitor-ui</code> (<code>scripts/build-monitor.sh</code>, see docs/operations.md), or point <code>[daemon] monitor_dir</code> at a built copy.</p>\
         <p>Meanwhile: <a href=\"/status\">/status</a> (JSON), <a href=\"/metrics\">/metrics</a> (Prometheus), \
         <a href=\"/healthz\">/healthz</a>.</p></body></html>"
    )
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

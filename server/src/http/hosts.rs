//! The `Host` allowlist of the HTTP port (`[http] allowed_hosts`): a web page that makes its
//! own name resolve to 127.0.0.1 (DNS rebinding) reaches the port with that name in `Host`, and
//! is refused before any handler runs.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::{header, StatusCode};
use tonic::Status;

use super::refusal::refuse;
use crate::config::HttpSection;
use crate::once_per_second::OncePerSecond;

static LOG_REFUSALS: OncePerSecond = OncePerSecond::new();

/// The longest client-sent host name echoed in a refusal.
const ECHO_CHARS: usize = 64;

/// Middleware: answers 403 (PERMISSION_DENIED for gRPC) unless the request's host is allowed.
/// HTTP/1 names it in `Host`, HTTP/2 in `:authority` (which hyper puts in the URI).
pub async fn check_host(
    State(http): State<Arc<HttpSection>>,
    request: Request,
    next: Next,
) -> Response<Body> {
    let host = request
        .uri()
        .authority()
        .map(|a| a.as_str().to_string())
        .or_else(|| {
            request
                .headers()
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .map(str::to_string)
        });
    match host {
        Some(host) if http.allows_host(&host) => next.run(request).await,
        host => {
            let shown: String = host.unwrap_or_default().chars().take(ECHO_CHARS).collect();
            if let Some(suppressed) = LOG_REFUSALS.allow() {
                let path = snarkd_types::clip(request.uri().path(), ECHO_CHARS);
                tracing::warn!(host = %shown, %path, suppressed,
                    "refused a request naming a host not in [http] allowed_hosts (a guard against \
                     DNS rebinding); add the name there if it is yours (logged at most once a second)");
            }
            refuse(
                request.headers(),
                StatusCode::FORBIDDEN,
                Status::permission_denied(format!(
                    "host {shown:?} is not served here (a guard against DNS rebinding): browse to localhost, or add the name to [http] allowed_hosts"
                )),
            )
        }
    }
}

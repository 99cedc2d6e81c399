//! Refusing a request in the caller's own protocol: a gRPC or gRPC-web call gets a gRPC status
//! (trailers-only, so every client reads it from the headers), anything else a plain HTTP status.

use axum::body::Body;
use http::{header, HeaderMap, HeaderValue, Response, StatusCode};
use tonic::Status;

/// Whether the request is a gRPC or gRPC-web call (`content-type: application/grpc…`).
pub fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/grpc"))
}

/// `status` as a trailers-only gRPC response in the content type the request used (so a
/// gRPC-web client sees its own content type); `http_status` and the message as text for any
/// other request.
pub fn refuse(request: &HeaderMap, http_status: StatusCode, status: Status) -> Response<Body> {
    if !is_grpc(request) {
        let mut response = Response::new(Body::from(format!("{}\n", status.message())));
        *response.status_mut() = http_status;
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        return response;
    }
    let mut response = status.into_http::<Body>();
    if let Some(content_type) = request.get(header::CONTENT_TYPE) {
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, content_type.clone());
    }
    response
}

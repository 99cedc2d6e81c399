//! The gRPC services: `cuzk.v1.ProvingEngine`, `grpc.health.v1.Health`, and server reflection in
//! both v1 and v1alpha (grpcurl 1.8.6 only speaks v1alpha). The gRPC listener serves them all;
//! the HTTP port only the read-only calls unless `[http] serve_all_rpcs` is set.

use std::convert::Infallible;

use axum::Router;
use http::{HeaderName, Method, Request, StatusCode};
use snarkd_proto::v1::proving_engine_server::ProvingEngineServer;
use tonic::service::Routes;
use tonic::Status;
use tonic_health::server::HealthReporter;
use tonic_health::ServingStatus;
use tonic_web::GrpcWebLayer;
use tower::Layer;
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};

use super::auth::{Token, TokenLayer, PROVING};
use crate::api::ProvingService;
use crate::config::HttpSection;
use crate::http::refusal::refuse;

const HEALTH: &str = "grpc.health.v1.Health";
const REFLECTION: [&str; 2] = [
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
];
/// ProvingEngine calls the HTTP port serves by default, besides StreamStatus (routed with CORS).
const READ_ONLY_ON_HTTP: [&str; 2] = ["GetStatus", "GetMetrics"];

/// All gRPC services as one set of routes.
pub struct Services {
    pub routes: Routes,
}

impl Services {
    /// The services for the HTTP port, each answering gRPC-web as well as gRPC. Only these
    /// routes get the gRPC-web layer: it answers 400 to plain HTTP/1 requests. By default only
    /// health and the read-only ProvingEngine calls are served; the others and reflection get
    /// PERMISSION_DENIED. With `serve_all_rpcs` every call is served, behind `token` if set.
    pub fn grpc_web_router(&self, http: &HttpSection, token: Option<Token>) -> Router {
        let web = GrpcWebLayer::new().layer(TokenLayer(token).layer(self.routes.clone()));
        let everything = || [PROVING, HEALTH].into_iter().chain(REFLECTION);
        let router = if http.serve_all_rpcs {
            everything().fold(Router::new(), |router, name| {
                router.route_service(&format!("/{name}/{{*method}}"), web.clone())
            })
        } else {
            let refused = tower::service_fn(|request: Request<axum::body::Body>| async move {
                Ok::<_, Infallible>(refuse_on_http(&request))
            });
            let router = [PROVING]
                .into_iter()
                .chain(REFLECTION)
                .fold(Router::new(), |router, name| {
                    router.route_service(&format!("/{name}/{{*method}}"), refused)
                })
                .route_service(&format!("/{HEALTH}/{{*method}}"), web.clone());
            READ_ONLY_ON_HTTP.iter().fold(router, |router, method| {
                router.route_service(&format!("/{PROVING}/{method}"), web.clone())
            })
        };
        // The monitor watches several daemons side by side (`?daemon=URL`), each usually a
        // tunnelled port on the operator's localhost: a page from one may read the others'
        // status stream. Only that read-only call, and only for loopback origins.
        router.route_service(
            &format!("/{PROVING}/StreamStatus"),
            status_cors().layer(web),
        )
    }
}

/// PERMISSION_DENIED for a call the HTTP port does not serve (403 to a request that is not gRPC).
fn refuse_on_http(request: &Request<axum::body::Body>) -> http::Response<axum::body::Body> {
    let call: String = request.uri().path().chars().take(100).collect();
    refuse(
        request.headers(),
        StatusCode::FORBIDDEN,
        Status::permission_denied(format!(
            "{call} is not served on the HTTP port, which is read-only: call it on the gRPC listener ([daemon] listen), or set [http] serve_all_rpcs = true"
        )),
    )
}

/// CORS for StreamStatus over gRPC-web from pages served on a loopback address.
fn status_cors() -> CorsLayer {
    CorsLayer::new()
        .allow_origin(AllowOrigin::predicate(|origin, _| {
            origin.to_str().is_ok_and(is_loopback_origin)
        }))
        .allow_methods([Method::POST])
        .allow_headers(AllowHeaders::mirror_request())
        .expose_headers([
            HeaderName::from_static("grpc-status"),
            HeaderName::from_static("grpc-message"),
        ])
}

/// `http://localhost[:port]`, `http://127.0.0.1[:port]` or `http://[::1][:port]`.
fn is_loopback_origin(origin: &str) -> bool {
    let Some(host_port) = origin.strip_prefix("http://") else {
        return false;
    };
    let host = match host_port.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => host,
        _ => host_port,
    };
    matches!(host, "localhost" | "127.0.0.1" | "[::1]")
}

/// Builds the services; the health reporter flips them to NOT_SERVING when draining.
pub async fn services(proving: ProvingService) -> anyhow::Result<(HealthReporter, Services)> {
    let (health, health_service) = tonic_health::server::health_reporter();
    health
        .set_serving::<ProvingEngineServer<ProvingService>>()
        .await;

    // Both reflection versions describe both, so either kind of client sees every service.
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .include_reflection_service(false)
            .register_encoded_file_descriptor_set(snarkd_proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(
                tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
            )
    };
    let reflection_v1 = reflection().build_v1()?;
    let reflection_v1alpha = reflection().build_v1alpha()?;

    let routes = Routes::new(proving.into_server())
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha);
    Ok((health, Services { routes }))
}

/// Marks the proving service and the server as a whole SERVING (again).
pub async fn set_serving(health: &HealthReporter) {
    health
        .set_serving::<ProvingEngineServer<ProvingService>>()
        .await;
    health.set_service_status("", ServingStatus::Serving).await;
}

/// Marks the proving service and the server as a whole NOT_SERVING.
pub async fn set_not_serving(health: &HealthReporter) {
    health
        .set_not_serving::<ProvingEngineServer<ProvingService>>()
        .await;
    health
        .set_service_status("", ServingStatus::NotServing)
        .await;
}

#[cfg(test)]
mod tests {
    use super::is_loopback_origin;

    #[test]
    fn only_loopback_origins_may_read_the_status_stream_cross_origin() {
        for origin in [
            "http://localhost:9821",
            "http://127.0.0.1:19821",
            "http://[::1]:9821",
            "http://localhost",
        ] {
            assert!(is_loopback_origin(origin), "{origin}");
        }
        for origin in [
            "http://example.com",
            "https://localhost:9821",
            "http://localhost.example.com:80",
            "http://127.0.0.1.nip.io:9821",
            "null",
        ] {
            assert!(!is_loopback_origin(origin), "{origin}");
        }
    }
}

//! The gRPC services both ports serve: `cuzk.v1.ProvingEngine`, `grpc.health.v1.Health`, and
//! server reflection in both v1 and v1alpha (grpcurl 1.8.6 only speaks v1alpha).

use axum::Router;
use http::{HeaderName, Method};
use snarkd_proto::v1::proving_engine_server::ProvingEngineServer;
use tonic::server::NamedService;
use tonic::service::Routes;
use tonic_health::server::HealthReporter;
use tonic_health::ServingStatus;
use tonic_web::GrpcWebLayer;
use tower::Layer;
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};

use crate::api::ProvingService;

/// The service names mounted on the HTTP port for gRPC-web.
const SERVICE_NAMES: [&str; 4] = [
    <ProvingEngineServer<ProvingService> as NamedService>::NAME,
    "grpc.health.v1.Health",
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
];

/// All gRPC services as one set of routes.
pub struct Services {
    pub routes: Routes,
}

impl Services {
    /// The same services for the HTTP port, each answering gRPC-web as well as gRPC. Only these
    /// routes get the gRPC-web layer: it answers 400 to plain HTTP/1 requests.
    pub fn grpc_web_router(&self) -> Router {
        let web = GrpcWebLayer::new().layer(self.routes.clone());
        let router = SERVICE_NAMES.iter().fold(Router::new(), |router, name| {
            router.route_service(&format!("/{name}/{{*method}}"), web.clone())
        });
        // The monitor watches several daemons side by side (`?daemon=URL`), each usually a
        // tunnelled port on the operator's localhost: a page from one may read the others'
        // status stream. Only that read-only call, and only for loopback origins.
        let stream_status = format!(
            "/{}/StreamStatus",
            <ProvingEngineServer<ProvingService> as NamedService>::NAME
        );
        router.route_service(&stream_status, status_cors().layer(web))
    }
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

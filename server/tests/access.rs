//! Access control against the real daemon: the HTTP port is read-only and answers only allowed
//! host names, and mutating calls on TCP need the token when one is set. TLS is tested in
//! `access_tls.rs`, the unix socket in `access_unix.rs`.

mod common;

use std::path::Path;

use common::{
    connect, get_with_host, grpc_web_frame, http_get, start, start_err, start_with, test_config,
    winning, StandInProver,
};
use prost::Message;
use snarkd_proto::v1 as pb;
use tonic::Code;
use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};

fn assert_refused_on_http(status: tonic::Status) {
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    assert!(
        status.message().contains("gRPC listener")
            && status.message().contains("[http] serve_all_rpcs"),
        "{}",
        status.message()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutating_calls_are_refused_on_the_http_port_by_default() {
    let d = start().await;
    let mut web = connect(d.http).await;

    assert_refused_on_http(web.submit_proof(winning("via-http")).await.unwrap_err());
    assert_refused_on_http(
        web.prove(pb::ProveRequest {
            submit: Some(winning("via-http")),
        })
        .await
        .unwrap_err(),
    );
    // A job submitted where it belongs cannot be cancelled through the HTTP port.
    let job = d.grpc.clone().submit_proof(winning("real")).await.unwrap();
    let job_id = job.into_inner().job_id;
    assert_refused_on_http(
        web.cancel_proof(pb::CancelProofRequest {
            job_id: job_id.clone(),
        })
        .await
        .unwrap_err(),
    );
    let circuit_id = "winning-2k".to_string();
    assert_refused_on_http(
        web.preload_srs(pb::PreloadSrsRequest {
            circuit_id: circuit_id.clone(),
        })
        .await
        .unwrap_err(),
    );
    assert_refused_on_http(
        web.evict_srs(pb::EvictSrsRequest { circuit_id })
            .await
            .unwrap_err(),
    );
    assert_refused_on_http(
        web.await_proof(pb::AwaitProofRequest {
            job_id,
            timeout_ms: 1,
        })
        .await
        .unwrap_err(),
    );
    let jobs = &d.daemon.engine().snapshot().jobs;
    assert_eq!(jobs.len(), 1, "only the gRPC listener's job exists");
    assert_eq!(jobs[0].request_id, "real");

    // What the monitor and a scraper use still answers.
    web.get_status(pb::GetStatusRequest {}).await.unwrap();
    web.get_metrics(pb::GetMetricsRequest {}).await.unwrap();
    let mut stream = web
        .stream_status(pb::StreamStatusRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert!(stream.message().await.unwrap().is_some());
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", d.http))
        .unwrap()
        .connect()
        .await
        .unwrap();
    HealthClient::new(channel)
        .check(HealthCheckRequest::default())
        .await
        .unwrap();

    // gRPC-web over HTTP/1, as a page would send it.
    let response =
        grpc_web_post(d.http, "SubmitProof", &winning("web").encode_to_vec(), None).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["grpc-status"], "7", "PERMISSION_DENIED");
    assert_eq!(
        response.headers()["content-type"],
        "application/grpc-web+proto"
    );
    // Reflection is not served there either (it lists the mutating calls).
    let (code, _, body) = http_get(
        d.http,
        "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    )
    .await;
    assert_eq!(code, 403, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_all_rpcs_serves_every_call_on_the_http_port() {
    let mut config = test_config();
    config.http.serve_all_rpcs = true;
    let d = start_with(config, StandInProver::new()).await;
    let mut web = connect(d.http).await;
    let done = web
        .prove(pb::ProveRequest {
            submit: Some(winning("via-http")),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        done.result.unwrap().status,
        pb::await_proof_response::Status::Completed as i32
    );
}

/// POSTs one gRPC-web message to `/cuzk.v1.ProvingEngine/{method}`, with `host` as the Host
/// header when given.
async fn grpc_web_post(
    http: std::net::SocketAddr,
    method: &str,
    message: &[u8],
    host: Option<&str>,
) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(format!("http://{http}/cuzk.v1.ProvingEngine/{method}"))
        .header("content-type", "application/grpc-web+proto")
        .header("x-grpc-web", "1")
        .body(grpc_web_frame(message));
    if let Some(host) = host {
        request = request.header("host", host);
    }
    request.send().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_host_name_is_refused_on_the_http_port() {
    let d = start().await;
    for path in ["/status", "/"] {
        let (code, body) = get_with_host(d.http, path, "evil.example").await;
        assert_eq!(code, 403, "{path}: {body}");
        assert!(
            body.contains("evil.example") && body.contains("[http] allowed_hosts"),
            "{body}"
        );
    }
    // Scrapers and probes name the port by address or service-discovery name.
    for path in ["/metrics", "/healthz"] {
        let (code, body) = get_with_host(d.http, path, "10.0.0.5:9821").await;
        assert_eq!(code, 200, "{path}: {body}");
    }
    for host in ["localhost:9821", "127.0.0.1", "[::1]:19821"] {
        assert_eq!(
            get_with_host(d.http, "/healthz", host).await.0,
            200,
            "{host}"
        );
    }
    let response = grpc_web_post(
        d.http,
        "GetStatus",
        &pb::GetStatusRequest {}.encode_to_vec(),
        Some("evil.example:9821"),
    )
    .await;
    assert_eq!(response.headers()["grpc-status"], "7", "PERMISSION_DENIED");

    // HTTP/2 names the host in :authority.
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", d.http))
        .unwrap()
        .origin("http://evil.example:9821".parse().unwrap())
        .connect()
        .await
        .unwrap();
    let refused = pb::proving_engine_client::ProvingEngineClient::new(channel)
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::PermissionDenied);
    assert!(
        refused.message().contains("[http] allowed_hosts"),
        "{}",
        refused.message()
    );

    let mut config = test_config();
    config.http.allowed_hosts = vec!["gpu-box".into()];
    let d = start_with(config, StandInProver::new()).await;
    assert_eq!(
        get_with_host(d.http, "/status", "gpu-box:9821").await.0,
        200
    );
    assert_eq!(get_with_host(d.http, "/status", "localhost").await.0, 403);

    // `scrapes_any_host = false` puts the scrapes behind the allowlist too.
    let mut config = test_config();
    config.http.scrapes_any_host = false;
    let d = start_with(config, StandInProver::new()).await;
    for path in ["/metrics", "/healthz"] {
        assert_eq!(
            get_with_host(d.http, path, "10.0.0.5:9821").await.0,
            403,
            "{path}"
        );
        assert_eq!(
            get_with_host(d.http, path, "localhost").await.0,
            200,
            "{path}"
        );
    }
}

fn write_token(dir: &Path, token: &str) -> std::path::PathBuf {
    let path = dir.join("token");
    std::fs::write(&path, format!("{token}\n")).unwrap();
    path
}

fn with_token<T>(message: T, token: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    request
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_token_guards_mutating_calls_on_tcp() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config();
    config.auth.token_file = Some(write_token(dir.path(), "t0ken-of-the-daemon"));
    let mut d = start_with(config, StandInProver::new()).await;

    let refused = d.grpc.submit_proof(winning("no-token")).await.unwrap_err();
    assert_eq!(refused.code(), Code::Unauthenticated);
    assert!(
        refused.message().contains("authorization: Bearer <token>")
            && refused.message().contains("[auth] token_file"),
        "{}",
        refused.message()
    );
    let wrong = d
        .grpc
        .submit_proof(with_token(winning("wrong"), "t0ken-of-the-daemoN"))
        .await
        .unwrap_err();
    assert_eq!(wrong.code(), Code::Unauthenticated);
    assert!(d.daemon.engine().snapshot().jobs.is_empty());

    let job = d
        .grpc
        .submit_proof(with_token(winning("with-token"), "t0ken-of-the-daemon"))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    // Reading needs no token; cancelling does.
    d.grpc
        .await_proof(pb::AwaitProofRequest {
            job_id: job.clone(),
            timeout_ms: 0,
        })
        .await
        .unwrap();
    d.grpc.get_status(pb::GetStatusRequest {}).await.unwrap();
    let cancel = pb::CancelProofRequest { job_id: job };
    assert_eq!(
        d.grpc
            .cancel_proof(cancel.clone())
            .await
            .unwrap_err()
            .code(),
        Code::Unauthenticated
    );
    d.grpc
        .cancel_proof(with_token(cancel, "t0ken-of-the-daemon"))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_also_guards_the_http_port_when_it_serves_every_call() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config();
    config.auth.token_file = Some(write_token(dir.path(), "abc"));
    config.http.serve_all_rpcs = true;
    let d = start_with(config, StandInProver::new()).await;
    let mut web = connect(d.http).await;
    assert_eq!(
        web.submit_proof(winning("x")).await.unwrap_err().code(),
        Code::Unauthenticated
    );
    web.submit_proof(with_token(winning("x"), "abc"))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_settings_that_cannot_work_fail_startup_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config();
    config.auth.token_file = Some(dir.path().join("missing"));
    let err = start_err(config).await;
    assert!(err.contains("auth.token_file"), "{err}");

    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "not a certificate").unwrap();
    let mut config = test_config();
    config.tls.cert_file = Some(garbage.clone());
    config.tls.key_file = Some(garbage);
    let err = start_err(config).await;
    assert!(err.contains("[tls]"), "{err}");
}

//! Startup and shutdown: taken ports, unix sockets, health, and the two-phase drain.

mod common;

use std::time::Duration;

use common::{
    connect_unix, hold_running_job, http_get, start, start_err, test_config, winning, StandInProver,
};
use snarkd::config::ListenAddr;
use snarkd::{Daemon, Drained};
use snarkd_engine::Engine;
use snarkd_proto::v1 as pb;
use tonic::Code;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_port_is_a_startup_error_naming_the_address() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();

    let mut config = test_config();
    config.daemon.listen = ListenAddr::Tcp(addr);
    let err = start_err(config).await;
    assert!(
        err.contains(&addr.to_string())
            && err.contains("already in use")
            && err.contains("--listen"),
        "{err}"
    );

    let mut config = test_config();
    config.daemon.http_listen = snarkd::config::TcpAddr(addr);
    let err = start_err(config).await;
    assert!(
        err.contains(&format!("HTTP on {addr}")) && err.contains("--http-listen"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_grpc_on_a_unix_socket() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snarkd.sock");
    // A socket file left by a daemon that did not exit cleanly is replaced.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(path.exists());
    let mut config = test_config();
    config.daemon.listen = ListenAddr::Unix(path.clone());
    let engine = Engine::start(config.engine_config().unwrap(), StandInProver::new());
    let daemon = Daemon::start(&config, engine).await.unwrap();
    assert_eq!(
        daemon.grpc_addr().to_string(),
        format!("unix://{}", path.display())
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o660, "[daemon] socket_mode applies to the socket");

    let mut client = connect_unix(&path).await;
    let status = client
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(status.gpus.len(), 1);

    // A second daemon on the same socket is refused while the first one listens.
    let err = start_err(config.clone()).await;
    assert!(
        err.contains("a running process is listening") && err.contains("snarkd.sock"),
        "{err}"
    );

    assert_eq!(daemon.shutdown(Duration::from_secs(5)).await, Drained::Idle);
    assert!(!path.exists(), "the socket file is removed on shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_drains_running_jobs_and_refuses_new_ones() {
    let mut d = start().await;
    let job = hold_running_job(&mut d).await;
    let (daemon, prover, mut grpc, http, grpc_addr) =
        (d.daemon, d.prover, d.grpc, d.http, d.grpc_addr);

    let channel = tonic::transport::Endpoint::from_shared(format!("http://{grpc_addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health = HealthClient::new(channel);
    let check = HealthCheckRequest {
        service: "cuzk.v1.ProvingEngine".into(),
    };
    let serving = health.check(check.clone()).await.unwrap().into_inner();
    assert_eq!(serving.status, ServingStatus::Serving as i32);
    let mut health_watch = health.watch(check).await.unwrap().into_inner();
    let mut status_stream = grpc
        .stream_status(pb::StreamStatusRequest::default())
        .await
        .unwrap()
        .into_inner();
    common::within("first status snapshot", status_stream.message())
        .await
        .unwrap()
        .unwrap();

    let shutdown = tokio::spawn(daemon.shutdown(Duration::from_secs(600)));

    // Event-driven: the health watch reports NOT_SERVING once draining has begun.
    common::within("NOT_SERVING on the health watch", async {
        while let Some(update) = health_watch.message().await.unwrap() {
            if update.status == ServingStatus::NotServing as i32 {
                break;
            }
        }
    })
    .await;
    // A watch never ends by itself; an open one would hold the server's graceful stop.
    drop(health_watch);
    let refused = grpc.submit_proof(winning("")).await.unwrap_err();
    assert_eq!(refused.code(), Code::Unavailable);
    assert!(
        refused.message().contains("shutting down"),
        "{}",
        refused.message()
    );
    let (code, _, body) = http_get(http, "/healthz").await;
    assert_eq!(code, 503);
    assert!(body.contains("draining"), "{body}");

    // The running job finishes and can still be read; then the daemon stops.
    let waiter = {
        let mut grpc = grpc.clone();
        let job = job.clone();
        tokio::spawn(async move {
            grpc.await_proof(pb::AwaitProofRequest {
                job_id: job,
                timeout_ms: 0,
            })
            .await
        })
    };
    prover.open();
    let done = common::within("AwaitProof reply", waiter)
        .await
        .unwrap()
        .unwrap()
        .into_inner();
    assert_eq!(
        done.status,
        pb::await_proof_response::Status::Completed as i32
    );
    let drained = common::within("end of the shutdown", shutdown).await;
    assert_eq!(drained.unwrap(), Drained::Idle);

    // Status streams end with UNAVAILABLE rather than hanging.
    common::within("end of the status stream", async {
        loop {
            match status_stream.message().await {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("the stream should end with a status saying why"),
                Err(status) => {
                    assert_eq!(status.code(), Code::Unavailable);
                    break;
                }
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_drain_deadline_bounds_shutdown() {
    let mut d = start().await;
    hold_running_job(&mut d).await;
    // The job cannot end while the gate is closed, so only the deadline ends the drain.
    assert_eq!(
        d.daemon.shutdown(Duration::from_millis(50)).await,
        Drained::TimedOut
    );
    d.prover.open();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflection_v1_lists_every_service() {
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    use tonic_reflection::pb::v1::ServerReflectionRequest;

    let d = start().await;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", d.grpc_addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut responses = ServerReflectionClient::new(channel)
        .server_reflection_info(tokio_stream::once(request))
        .await
        .unwrap()
        .into_inner();
    let response = common::within("reflection response", responses.message())
        .await
        .unwrap()
        .unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = response.message_response else {
        panic!("not a service list: {response:?}");
    };
    let names: Vec<_> = list.service.iter().map(|s| s.name.as_str()).collect();
    for name in [
        "cuzk.v1.ProvingEngine",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
    ] {
        assert!(names.contains(&name), "{name} not listed: {names:?}");
    }
}

//! Supervision of the engine's single writer task: if it dies, health says NOT_SERVING at once
//! and the `snarkd` process exits with a failure code (so systemd restarts it).

mod common;

use std::path::Path;

use common::process::{self, SNARKD};
use common::{http_get, start, winning};
use tonic::Code;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_turns_not_serving_when_the_writer_task_dies() {
    let mut d = start().await;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", d.grpc_addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health = HealthClient::new(channel);
    let mut watch = health
        .watch(HealthCheckRequest {
            service: "cuzk.v1.ProvingEngine".into(),
        })
        .await
        .unwrap()
        .into_inner();
    let first = common::within("first health update", watch.message()).await;
    assert_eq!(
        first.unwrap().unwrap().status,
        ServingStatus::Serving as i32
    );
    assert_eq!(http_get(d.http, "/healthz").await.0, 200);
    assert!(d.daemon.engine().stopped_reason().is_none());

    d.daemon.engine().panic_writer_for_test();

    // Event-driven: the watch reports the change.
    common::within("NOT_SERVING on the health watch", async {
        loop {
            let update = watch.message().await.unwrap().expect("the watch goes on");
            if update.status == ServingStatus::NotServing as i32 {
                break;
            }
        }
    })
    .await;
    let overall = health
        .check(HealthCheckRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(overall.status, ServingStatus::NotServing as i32);
    let reason = d.daemon.engine().stopped_reason().expect("stopped");
    assert!(
        reason.contains("panicked") && reason.contains("test hook"),
        "{reason}"
    );
    let (code, _, body) = http_get(d.http, "/healthz").await;
    assert_eq!(code, 503);
    assert!(
        body.contains("engine stopped") && body.contains("panicked"),
        "{body}"
    );
    let refused = d.grpc.submit_proof(winning("")).await.unwrap_err();
    assert_eq!(refused.code(), Code::Unavailable);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snarkd_exits_with_a_failure_when_the_writer_task_panics() {
    let mut daemon = process::spawn(Path::new(SNARKD), [("SNARKD_TEST_PANIC_ENGINE", "1")]);
    // The panic itself is printed as plain text by Rust's panic hook, among the JSON lines.
    let mut seen = String::new();
    let stopped = daemon
        .next_log(
            "the engine stopped: no request can be served any more",
            &mut seen,
        )
        .unwrap_or_else(|| panic!("snarkd exited without saying the engine stopped: {seen}"));
    assert!(
        seen.contains("test hook: the writer task was told to panic"),
        "{seen}"
    );
    assert_eq!(stopped["level"], "ERROR", "{stopped}");
    assert!(
        stopped["reason"]
            .as_str()
            .is_some_and(|r| r.contains("panicked")),
        "{stopped}"
    );
    let (exit, rest) = tokio::task::spawn_blocking(move || (daemon.wait(), daemon.rest()))
        .await
        .unwrap();
    assert_eq!(exit.code(), Some(1), "{rest:?}");
    assert!(
        rest.iter()
            .any(|l| l.contains("exiting: the engine stopped")),
        "{rest:?}"
    );
    assert!(
        rest.iter()
            .any(|l| l.contains("service manager restarts snarkd")),
        "{rest:?}"
    );
}

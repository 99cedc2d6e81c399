//! A job journal whose writes fail, through the daemon (stand-in prover): health turns
//! NOT_SERVING (gRPC health and `/healthz`), new work is refused UNAVAILABLE naming the
//! journal, and once writes succeed again the daemon serves and takes work as before.

mod common;

use common::{http_get, start_with, test_config, winning, StandInProver};
use snarkd_engine::journal::inject_write_fault;
use tonic::Code;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_that_cannot_be_written_turns_health_not_serving_until_it_can() {
    let jobs = tempfile::tempdir().unwrap();
    let mut config = test_config();
    config.jobs.journal = true;
    config.jobs.dir = jobs.path().join("jobs");
    let mut d = start_with(config, StandInProver::new()).await;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", d.grpc_addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health = HealthClient::new(channel);
    let check = HealthCheckRequest {
        service: "cuzk.v1.ProvingEngine".into(),
    };
    let mut watch = health.watch(check).await.unwrap().into_inner();
    let status = |m: Result<Option<tonic_health::pb::HealthCheckResponse>, tonic::Status>| {
        m.unwrap().unwrap().status
    };
    assert_eq!(
        status(common::within("health update", watch.message()).await),
        ServingStatus::Serving as i32
    );

    let dir = jobs.path().join("jobs");
    inject_write_fault(&dir, true);
    let failed = d
        .grpc
        .submit_proof(winning("winpost-1-1"))
        .await
        .unwrap_err();
    assert_eq!(failed.code(), Code::Unavailable, "{failed:?}");
    assert!(
        failed.message().contains("injected write fault"),
        "{}",
        failed.message()
    );
    assert_eq!(
        status(common::within("health update", watch.message()).await),
        ServingStatus::NotServing as i32
    );
    let (code, _, body) = http_get(d.http, "/healthz").await;
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("the job journal cannot be written"), "{body}");
    let refused = d
        .grpc
        .submit_proof(winning("winpost-1-2"))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
    assert!(
        refused.message().contains("no new work is taken"),
        "{}",
        refused.message()
    );

    inject_write_fault(&dir, false);
    assert_eq!(
        status(common::within("health update", watch.message()).await),
        ServingStatus::Serving as i32
    );
    let (code, _, _) = http_get(d.http, "/healthz").await;
    assert_eq!(code, 200);
    let job = d
        .grpc
        .submit_proof(winning("winpost-1-3"))
        .await
        .expect("work is taken again")
        .into_inner();
    common::await_job(&mut d.grpc, &job.job_id, 0)
        .await
        .unwrap();
}

//! The `snarkd` binary stopped with SIGTERM while it proves a real 2 KiB WinningPoSt: the proof
//! still completes and is returned, a new submit during the drain is refused with UNAVAILABLE,
//! and the process exits 0. Stopped while a parameter read hangs, it still exits 0 once the
//! drain has run out, and the next start proves the job.

mod common;

use std::path::Path;

use common::process;
use snarkd_proto::v1 as pb;
use snarkd_prover::params::params_paths;
use snarkd_prover::{test_params_dir, CircuitId, ProofInput, ProofKind};
use tokio_stream::StreamExt;
use tonic::Code;

#[path = "common/real.rs"]
mod real;

use real::SECTOR_2K;

/// The fixture sector's WinningPoSt, its 2 KiB parameters made.
fn winning_request() -> ProofInput {
    real::ensure_params(&[ProofKind::WinningPost]);
    real::env().fixtures.request(ProofKind::WinningPost)
}

fn submit(r: &ProofInput, request_id: &str) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        request_id: request_id.to_string(),
        ..real::wire(r, pb::Priority::Critical)
    }
}

/// The binary started with `settings`, `request` submitted to it as `request_id`: the daemon,
/// a client of it and the job's id.
async fn start_and_submit(
    settings: &[(&str, std::ffi::OsString)],
    request: &ProofInput,
    request_id: &str,
) -> (process::Proc, common::Client, String) {
    let mut daemon = process::spawn(Path::new(process::SNARKD), settings.iter().cloned());
    let grpc: std::net::SocketAddr = daemon.ready().grpc.parse().unwrap();
    let mut client = common::connect(grpc).await;
    let job_id = client
        .submit_proof(submit(request, request_id))
        .await
        .expect("submit")
        .into_inner()
        .job_id;
    (daemon, client, job_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_real_proof_finishes_it_refuses_new_work_and_exits_zero() {
    let request = winning_request();
    let settings = [
        ("SNARKD_PARAMS_DIR", test_params_dir().into_os_string()),
        ("SNARKD_DAEMON_DRAIN_TIMEOUT", "10m".into()),
        ("SNARKD_MEMORY_BUDGET", "8GiB".into()),
    ];
    let (mut daemon, mut client, job_id) =
        start_and_submit(&settings, &request, "drain-running").await;

    // SIGTERM only once a partition of the job is being worked on.
    let mut stream = client
        .stream_status(pb::StreamStatusRequest {
            min_interval_ms: 50,
            job_ids: vec![job_id.clone()],
        })
        .await
        .unwrap()
        .into_inner();
    common::within("started partition on the status stream", async {
        loop {
            let snapshot = stream.next().await.expect("status stream").unwrap();
            let job = snapshot.jobs.iter().find(|j| j.job_id == job_id);
            let started = job.is_some_and(|j| {
                j.partitions.iter().any(|p| {
                    p.state != pb::PartitionState::Pending as i32
                        && p.state != pb::PartitionState::Unspecified as i32
                })
            });
            if started {
                break;
            }
        }
    })
    .await;
    drop(stream);
    daemon.sigterm();
    let daemon = tokio::task::spawn_blocking(move || {
        daemon.wait_for_log("draining: no new proofs are accepted");
        daemon
    })
    .await
    .unwrap();
    let refused = client
        .submit_proof(submit(&request, "drain-new"))
        .await
        .expect_err("a submit during the drain is refused");
    assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");

    let outcome = common::await_job(&mut client, &job_id, 0)
        .await
        .expect("await during the drain");
    assert_eq!(
        outcome.status,
        pb::await_proof_response::Status::Completed as i32,
        "{}",
        outcome.error_message
    );
    // Finished during the drain, and a proof filecoin-proofs' own verifier accepts.
    real::assert_verifies(&request, &outcome.proof);

    daemon.expect_clean_exit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_while_a_parameter_read_hangs_exits_zero_and_the_next_start_proves_the_job() {
    let request = winning_request();
    // The .vk as it is, the .params a FIFO nobody writes: its read never returns, as on a dead
    // network mount.
    let params = tempfile::tempdir().unwrap();
    let circuit = CircuitId::new(ProofKind::WinningPost, SECTOR_2K).unwrap();
    let (real_params, real_vk) = params_paths(&test_params_dir(), circuit);
    let (fifo, vk) = params_paths(params.path(), circuit);
    std::fs::copy(&real_vk, &vk).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let jobs = tempfile::tempdir().unwrap();
    let drain = std::time::Duration::from_secs(2);
    let settings = [
        ("SNARKD_PARAMS_DIR", params.path().as_os_str().to_owned()),
        ("SNARKD_JOBS_DIR", jobs.path().as_os_str().to_owned()),
        ("SNARKD_DAEMON_DRAIN_TIMEOUT", "2s".into()),
        ("SNARKD_MEMORY_BUDGET", "8GiB".into()),
    ];
    let (mut daemon, _client, job_id) =
        start_and_submit(&settings, &request, "winpost-hung-read").await;
    let daemon = tokio::task::spawn_blocking(move || {
        daemon.wait_for_log("loading params");
        daemon
    })
    .await
    .unwrap();

    // The read hangs: SIGTERM still ends the process, with 0, once the drain has run out.
    daemon.sigterm();
    let stopped = std::time::Instant::now();
    let rest = daemon.expect_clean_exit().await;
    assert!(
        stopped.elapsed() < drain + std::time::Duration::from_secs(5),
        "exited {:?} after SIGTERM: {rest:?}",
        stopped.elapsed()
    );

    // The parameters back: the next start recovers the job from the journal and proves it.
    std::fs::remove_file(&fifo).unwrap();
    std::fs::copy(&real_params, &fifo).unwrap();
    let mut daemon = process::spawn(Path::new(process::SNARKD), settings);
    let grpc: std::net::SocketAddr = daemon.ready().grpc.parse().unwrap();
    let mut client = common::connect(grpc).await;
    let outcome = common::await_job(&mut client, &job_id, 0)
        .await
        .expect("the recovered job");
    assert_eq!(
        outcome.status,
        pb::await_proof_response::Status::Completed as i32,
        "{}",
        outcome.error_message
    );
    real::assert_verifies(&request, &outcome.proof);
    daemon.sigterm();
    daemon.expect_clean_exit().await;
}

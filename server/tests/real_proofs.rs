//! End to end with real Filecoin proofs: the daemon with the real prover (CPU backend) and 2 KiB
//! test parameters, driven through gRPC like Curio. Every proof that comes back COMPLETED is
//! checked again here with filecoin-proofs' verifier, and a tampered copy must be rejected.
//!
//! Parameters are generated once into `$SNARKD_TEST_PARAMS_DIR` (default
//! `~/.cache/snarkd/params-2k`) when missing; PoRep's take about 85 s on two cores.

mod common;
#[path = "common/real.rs"]
mod real;

use real::{env, metrics_text, prove_and_check, start, wire};
use snarkd_proto::v1 as pb;
use snarkd_prover::ProofKind;

#[tokio::test(flavor = "multi_thread")]
async fn post_proofs_through_grpc_verify() {
    let mut d = start(&[ProofKind::WinningPost, ProofKind::WindowPost], 2).await;
    prove_and_check(&mut d, ProofKind::WinningPost).await;
    prove_and_check(&mut d, ProofKind::WindowPost).await;
    let status = d
        .grpc
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(status.total_proofs_completed, 2);
    assert!(
        status
            .loaded_srs
            .iter()
            .any(|s| s.circuit_id == "winning-2k"),
        "{:?}",
        status.loaded_srs
    );
    let metrics = metrics_text(&mut d).await;
    for line in [
        "snarkd_proofs_completed_total{kind=\"winning-post\"}",
        "snarkd_device_seconds_count{kind=\"window-post\"}",
        "snarkd_memory_budget_bytes",
        "snarkd_memory_used_bytes",
        "snarkd_queue_depth",
        "snarkd_worker_busy_seconds_total{worker=\"0\"}",
    ] {
        assert!(
            metrics.lines().any(|l| l.starts_with(line)),
            "metrics lack {line}:\n{metrics}"
        );
    }
    d.daemon.shutdown(std::time::Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn porep_and_snap_proofs_through_grpc_verify() {
    let mut d = start(&[ProofKind::PorepSealCommit, ProofKind::SnapDealsUpdate], 2).await;
    prove_and_check(&mut d, ProofKind::SnapDealsUpdate).await;
    prove_and_check(&mut d, ProofKind::PorepSealCommit).await;
    d.daemon.shutdown(std::time::Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn winning_post_overtakes_queued_window_posts() {
    let mut d = start(&[ProofKind::WinningPost, ProofKind::WindowPost], 1).await;
    let window = env().fixtures.request(ProofKind::WindowPost);
    let mut queued = Vec::new();
    for _ in 0..4 {
        let job = d
            .grpc
            .submit_proof(wire(&window, pb::Priority::Low))
            .await
            .unwrap()
            .into_inner();
        queued.push(job.job_id);
    }
    let winning = env().fixtures.request(ProofKind::WinningPost);
    let critical = d
        .grpc
        .submit_proof(wire(&winning, pb::Priority::Unspecified))
        .await
        .unwrap()
        .into_inner();
    assert!(
        critical.queue_position <= 1,
        "a critical job waits for nothing but running work: {}",
        critical.queue_position
    );
    let mut finished = Vec::new();
    for id in std::iter::once(&critical.job_id).chain(&queued) {
        let r = common::await_job(&mut d.grpc, id, 0).await.unwrap();
        assert_eq!(
            r.status,
            pb::await_proof_response::Status::Completed as i32,
            "{}",
            r.error_message
        );
    }
    let snapshot = d.daemon.engine().snapshot();
    for id in std::iter::once(&critical.job_id).chain(&queued) {
        let job = snapshot
            .jobs
            .iter()
            .find(|j| &j.job_id == id)
            .expect("retained");
        finished.push(job.finished_at_unix_ms.expect("finished"));
    }
    let winning_done = finished[0];
    let later = finished[1..].iter().filter(|&&t| t >= winning_done).count();
    assert!(
        later >= 2,
        "WinningPoSt must finish before the queued WindowPoSts behind it: {finished:?}"
    );
    d.daemon.shutdown(std::time::Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_subscriber_sees_a_real_job_move_through_its_states() {
    let mut d = start(&[ProofKind::WindowPost], 1).await;
    let mut stream = d
        .grpc
        .stream_status(pb::StreamStatusRequest {
            min_interval_ms: 1,
            job_ids: vec![],
        })
        .await
        .unwrap()
        .into_inner();
    let window = env().fixtures.request(ProofKind::WindowPost);
    let job = d
        .grpc
        .submit_proof(wire(&window, pb::Priority::Unspecified))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let mut seen: Vec<i32> = Vec::new();
    common::within("COMPLETED job on the status stream", async {
        while let Some(s) = stream.message().await.unwrap() {
            let Some(j) = s.jobs.iter().find(|j| j.job_id == job) else {
                continue;
            };
            let state = j.partitions[0].state;
            if seen.last() != Some(&state) {
                seen.push(state);
            }
            if state == pb::PartitionState::Gpu as i32 {
                let worker = j.partitions[0]
                    .worker_id
                    .expect("gpu partition names its worker");
                let w = s.workers.iter().find(|w| w.worker_id == worker).unwrap();
                assert_eq!(
                    (w.state, w.current_job_id.as_str()),
                    (pb::WorkerState::Proving as i32, job.as_str())
                );
            }
            if j.state == pb::JobState::Completed as i32 {
                break;
            }
            assert_ne!(j.state, pb::JobState::Failed as i32, "{}", j.error_message);
        }
    })
    .await;
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "states out of order: {seen:?}"
    );
    assert_eq!(seen.last(), Some(&(pb::PartitionState::Done as i32)));
    d.daemon.shutdown(std::time::Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_porep_that_can_never_fit_the_budget_is_refused_at_submit() {
    // One 2 KiB PoRep partition needs far more than 64 MiB in its device phase: the real
    // prover's estimate must refuse the job at submit, before anything is loaded or queued.
    // (The budget's baseline is this test process's memory, so the budget is that plus 64 MiB.)
    let mut config = real::real_config(1);
    let budget = snarkd::config::resident_memory_bytes() + (64 << 20);
    config.memory.budget = snarkd::config::MemoryBudget::Fixed(bytesize::ByteSize::b(budget));
    config.gpus.backend = snarkd::config::Backend::Cpu;
    let prover = snarkd::proving::from_config(&config).expect("cpu prover");
    let mut d = real::start_with(&[], &config, prover).await;
    // Held before the submit: the daemon's baseline only.
    let before = (d.grpc.get_status(pb::GetStatusRequest {}).await)
        .expect("GetStatus")
        .into_inner()
        .pinned_memory_bytes;
    let porep = env().fixtures.request(ProofKind::PorepSealCommit);
    let status = d
        .grpc
        .submit_proof(wire(&porep, pb::Priority::Unspecified))
        .await
        .expect_err("a job that can never fit is refused");
    // No retry helps until the budget is raised: the operator's to fix, not a busy moment.
    assert_eq!(status.code(), tonic::Code::FailedPrecondition, "{status:?}");
    let message = status.message();
    assert!(
        message.contains("cannot fit the memory budget")
            && message.contains("of it snarkd's own memory")
            && message.contains("[memory] budget"),
        "{message}"
    );
    let idle = d
        .grpc
        .get_status(pb::GetStatusRequest {})
        .await
        .expect("GetStatus")
        .into_inner();
    let queued: u32 = idle.queues.iter().map(|q| q.pending + q.in_progress).sum();
    assert_eq!(queued, 0, "{idle:?}");
    assert_eq!(idle.pinned_memory_bytes, before, "{idle:?}");
    d.daemon.shutdown(std::time::Duration::from_secs(5)).await;
}

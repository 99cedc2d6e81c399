//! Deadline-first proving with the real prover, through the real binary: a WinningPoSt that
//! arrives while a PoRep partition's device phase runs is proved while that phase waits at a step
//! boundary, and both proofs verify with filecoin-proofs-api.
//!
//! The order is shown with the prover's step-boundary hold (`SNARKD_TEST_HOLD_PHASE`, the
//! `test-hooks` feature), not with the clock: the PoRep's phase is held after its H step, the
//! WinningPoSt's after its own; releasing the PoRep first, it must not go on (the worker keeps it
//! at its boundary, `PhaseHooks::step_done`) until the WinningPoSt's phase has ended. Without that
//! bridge the PoRep's phase leaves at once and the test fails.

mod common;
#[path = "common/real.rs"]
mod real;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::process::{self, SNARKD};
use snarkd_proto::v1 as pb;
use snarkd_prover::ProofKind;

/// The hold directory's marks: phase `k` (in the order phases reach the hold) holds while file
/// `k` exists; it writes `k.holding` when it starts to hold and `k.left` when it goes on, each
/// with the number of marks written before it plus one.
struct Holds(PathBuf);

impl Holds {
    fn hold(&self, k: u32) {
        std::fs::write(self.0.join(k.to_string()), b"").unwrap();
    }

    fn release(&self, k: u32) {
        std::fs::remove_file(self.0.join(k.to_string())).unwrap();
    }

    /// The mark's sequence number, if it is there.
    fn mark(&self, k: u32, what: &str) -> Option<u64> {
        let text = std::fs::read_to_string(self.0.join(format!("{k}.{what}"))).ok()?;
        text.trim().parse().ok()
    }

    /// Waits (at most `common::WAIT_LIMIT`) for phase `k`'s mark `what`.
    async fn wait_for(&self, k: u32, what: &str) -> u64 {
        let deadline = tokio::time::Instant::now() + common::WAIT_LIMIT;
        loop {
            if let Some(n) = self.mark(k, what) {
                return n;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "device phase {k} did not write `{what}` within {:?}",
                common::WAIT_LIMIT
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn partition_state(s: &pb::StatusSnapshot, id: &str) -> Option<i32> {
    let job = s.jobs.iter().find(|j| j.job_id == id)?;
    Some(job.partitions.first()?.state)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_winning_post_is_proved_while_a_real_porep_phase_waits_at_its_step_boundary() {
    real::ensure_params(&[ProofKind::PorepSealCommit, ProofKind::WinningPost]);
    let dir = tempfile::tempdir().unwrap();
    let holds = Holds(dir.path().to_path_buf());
    holds.hold(1);
    holds.hold(2);
    let mut env = real::binary_env();
    env.push((
        snarkd_prover::groth16::test_hold::HOLD_PHASE_ENV,
        dir.path().display().to_string(),
    ));
    let mut daemon = process::spawn(Path::new(SNARKD), env);
    let grpc = daemon.ready().grpc;
    let mut client = common::connect(grpc.parse().unwrap()).await;

    let porep_input = real::env().fixtures.request(ProofKind::PorepSealCommit);
    let porep = client
        .submit_proof(real::wire(&porep_input, pb::Priority::Unspecified))
        .await
        .expect("PoRep accepted")
        .into_inner()
        .job_id;
    holds.wait_for(1, "holding").await;

    // The WinningPoSt, as Curio sends it (Prove), on a task of its own.
    let winning_input = real::env().fixtures.request(ProofKind::WinningPost);
    let submit = real::wire(&winning_input, pb::Priority::Unspecified);
    let at = grpc.clone();
    let winning_call = tokio::spawn(async move { real::prove_completed(&at, submit).await });
    holds.wait_for(2, "holding").await;
    let seen = common::wait_for_status(&mut client, |s| {
        s.jobs.iter().any(|j| {
            j.job_id != porep
                && j.partitions.first().map(|p| p.state) == Some(pb::PartitionState::Gpu as i32)
        })
    })
    .await;
    assert_eq!(
        partition_state(&seen, &porep),
        Some(pb::PartitionState::Gpu as i32),
        "both device phases are on the one CPU worker"
    );

    // The PoRep's phase, preempted, waits at its next step boundary (the worker says so); only
    // then is it released, and it must not go on until the WinningPoSt's phase has ended.
    // Without the worker's boundary (PhaseHooks::step_done) it never waits there, and the wait
    // below fails.
    tokio::task::block_in_place(|| {
        daemon.wait_for_log("device phase waiting at its step boundary")
    });
    holds.release(1);
    assert_eq!(
        holds.mark(1, "left"),
        None,
        "the PoRep's device phase went on while the WinningPoSt's ran"
    );

    holds.release(2);
    let winning = tokio::time::timeout(common::WAIT_LIMIT, winning_call)
        .await
        .expect("the WinningPoSt ends")
        .expect("the Prove task");
    let porep_left = holds.wait_for(1, "left").await;
    let winning_left = holds
        .mark(2, "left")
        .expect("the WinningPoSt's phase went on");
    assert!(
        winning_left < porep_left,
        "the WinningPoSt's phase went on (mark {winning_left}) before the PoRep's (mark {porep_left})"
    );
    real::assert_verifies(&winning_input, &winning.proof);

    let porep_result = common::await_job(&mut client, &porep, 0).await.unwrap();
    assert_eq!(
        porep_result.status,
        pb::await_proof_response::Status::Completed as i32,
        "{}",
        porep_result.error_message
    );
    real::assert_verifies(&porep_input, &porep_result.proof);
    daemon.sigterm();
    daemon.expect_clean_exit().await;
}

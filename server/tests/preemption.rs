//! Deadline-first proving through the API: a WinningPoSt submitted while a PoRep partition's
//! device phase runs is proved beside it (the PoRep's phase pauses at its next step boundary),
//! before that phase finishes. Observed through the status stream, not timing: the PoRep's
//! device phase is held (the stand-in prover's gate) until the WinningPoSt has completed.

mod common;

use snarkd_proto::v1 as pb;

fn job<'a>(s: &'a pb::StatusSnapshot, id: &str) -> Option<&'a pb::JobStatus> {
    s.jobs.iter().find(|j| j.job_id == id)
}

/// Submits a PoRep with PoRep device phases held (step after step) and returns its job id once
/// its partition is on a worker.
async fn porep_held_on_device(d: &mut common::TestDaemon) -> String {
    d.prover.close_background();
    let porep = d
        .grpc
        .submit_proof(pb::SubmitProofRequest {
            proof_kind: pb::ProofKind::PorepSealCommit as i32,
            vanilla_proof: common::prover::vanilla(3),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .job_id;
    common::wait_for_status(&mut d.grpc, |s| on_device(s, &porep)).await;
    porep
}

fn on_device(s: &pb::StatusSnapshot, id: &str) -> bool {
    job(s, id).is_some_and(|j| j.partitions[0].state == pb::PartitionState::Gpu as i32)
}

#[tokio::test]
async fn a_winning_post_is_proved_while_a_porep_device_phase_is_held() {
    let mut d = common::start().await;
    let porep = porep_held_on_device(&mut d).await;

    let winning = d
        .grpc
        .submit_proof(common::winning(""))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let seen = common::wait_for_status(&mut d.grpc, |s| {
        job(s, &winning).is_some_and(|j| j.state == pb::JobState::Completed as i32)
    })
    .await;
    assert!(
        on_device(&seen, &porep),
        "the PoRep's device phase has not finished: {:?}",
        job(&seen, &porep)
    );
    let result = common::await_job(&mut d.grpc, &winning, 0).await.unwrap();
    assert_eq!(
        result.status,
        pb::await_proof_response::Status::Completed as i32
    );

    d.prover.open();
    let result = common::await_job(&mut d.grpc, &porep, 0).await.unwrap();
    assert_eq!(
        result.status,
        pb::await_proof_response::Status::Completed as i32
    );
}

/// Cancel stops work: a cancelled PoRep's device phase, held step after step by the stand-in
/// prover's gate, ends at its next step boundary, and its worker is free while the gate is
/// still closed (without the stop the phase could not end before the gate opens).
#[tokio::test]
async fn a_cancelled_poreps_device_phase_stops_within_a_step_and_frees_its_worker() {
    let mut d = common::start().await;
    let porep = porep_held_on_device(&mut d).await;
    let cancelled = d
        .grpc
        .cancel_proof(pb::CancelProofRequest {
            job_id: porep.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(cancelled.was_running);
    common::wait_for_status(&mut d.grpc, |s| {
        s.workers
            .iter()
            .all(|w| w.state == pb::WorkerState::Idle as i32)
    })
    .await;
    // The freed worker proves the next job at once, the gate still closed for PoRep work.
    let next = d
        .grpc
        .prove(pb::ProveRequest {
            submit: Some(common::winning("")),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        next.result.unwrap().status,
        pb::await_proof_response::Status::Completed as i32
    );
    d.prover.open();
}

//! A client's priority is capped by its kind's ceiling (`[scheduler] <kind>_max_priority`): the
//! job gets the lowered priority, and the status says so.

mod common;

use snarkd_proto::v1 as pb;

async fn submitted_priority(d: &mut common::TestDaemon, request: pb::SubmitProofRequest) -> i32 {
    let job_id = d
        .grpc
        .submit_proof(request)
        .await
        .expect("submit")
        .into_inner()
        .job_id;
    let snapshot =
        common::wait_for_status(&mut d.grpc, |s| s.jobs.iter().any(|j| j.job_id == job_id)).await;
    snapshot
        .jobs
        .iter()
        .find(|j| j.job_id == job_id)
        .unwrap()
        .priority
}

#[tokio::test]
async fn a_priority_above_the_kinds_ceiling_is_lowered() {
    let mut d = common::start().await;
    let critical = pb::Priority::Critical as i32;
    let snap = pb::SubmitProofRequest {
        priority: critical,
        ..common::snap(1)
    };
    assert_eq!(
        submitted_priority(&mut d, snap).await,
        pb::Priority::Normal as i32
    );
    let wpost = pb::SubmitProofRequest {
        proof_kind: pb::ProofKind::WindowPostPartition as i32,
        priority: critical,
        ..common::winning("")
    };
    assert_eq!(
        submitted_priority(&mut d, wpost).await,
        pb::Priority::High as i32
    );
    let winning = pb::SubmitProofRequest {
        priority: critical,
        ..common::winning("")
    };
    assert_eq!(submitted_priority(&mut d, winning).await, critical);
    let low = pb::SubmitProofRequest {
        priority: pb::Priority::Low as i32,
        ..common::snap(1)
    };
    assert_eq!(
        submitted_priority(&mut d, low).await,
        pb::Priority::Low as i32,
        "lowering only"
    );

    let metrics = d
        .grpc
        .get_metrics(pb::GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(
        metrics
            .prometheus_text
            .lines()
            .any(|l| l.starts_with("snarkd_priority_lowered_total{kind=\"snap-update\"} 1")),
        "{}",
        metrics.prometheus_text
    );
}

#[tokio::test]
async fn a_raised_ceiling_lets_the_claim_through() {
    let mut config = common::test_config();
    config.scheduler.snap_max_priority = snarkd_engine::Priority::High;
    let mut d = common::start_with(config, common::StandInProver::new()).await;
    let snap = pb::SubmitProofRequest {
        priority: pb::Priority::High as i32,
        ..common::snap(1)
    };
    assert_eq!(
        submitted_priority(&mut d, snap).await,
        pb::Priority::High as i32
    );
}

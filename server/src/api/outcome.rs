//! Domain results → protobuf responses for SubmitProof, AwaitProof and Prove.

use std::time::Duration;

use snarkd_engine::{JobEnd, JobOutcome, Priority, ProofKind, Submitted};
use snarkd_proto::v1 as pb;

use pb::await_proof_response::Status as AwaitStatus;

pub fn submitted(s: Submitted) -> pb::SubmitProofResponse {
    pb::SubmitProofResponse {
        job_id: s.job_id,
        queue_position: s.queue_position,
        // The device is chosen when a partition reaches a worker, not at submit.
        assigned_gpu: String::new(),
    }
}

/// The answer to AwaitProof: how the job ended, or (`None`) that the wait ran out.
pub fn awaited(job_id: &str, outcome: Option<JobOutcome>) -> pb::AwaitProofResponse {
    let Some(outcome) = outcome else {
        return pb::AwaitProofResponse {
            job_id: job_id.to_string(),
            status: AwaitStatus::Timeout as i32,
            error_message: "the wait ran out; the job goes on: call AwaitProof again".into(),
            ..Default::default()
        };
    };
    let t = outcome.timings;
    let (status, proof, error_message) = match outcome.end {
        JobEnd::Completed(proof) => (AwaitStatus::Completed, proof, String::new()),
        // The message, with whose fault it is and what that means for a retry.
        JobEnd::Failed(failure) => (AwaitStatus::Failed, Vec::new(), failure.to_string()),
        JobEnd::Cancelled => (
            AwaitStatus::Cancelled,
            Vec::new(),
            "the job was cancelled".into(),
        ),
    };
    pb::AwaitProofResponse {
        job_id: outcome.job_id,
        status: status as i32,
        proof,
        error_message,
        queue_wait_ms: ms(t.queue_wait),
        srs_load_ms: ms(t.params_load),
        synthesis_ms: ms(t.synthesis),
        gpu_compute_ms: ms(t.device),
        total_ms: ms(t.total),
    }
}

pub fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

pub fn kind_to_pb(kind: ProofKind) -> pb::ProofKind {
    match kind {
        ProofKind::PorepSealCommit => pb::ProofKind::PorepSealCommit,
        ProofKind::SnapDealsUpdate => pb::ProofKind::SnapDealsUpdate,
        ProofKind::WindowPost => pb::ProofKind::WindowPostPartition,
        ProofKind::WinningPost => pb::ProofKind::WinningPost,
    }
}

pub fn priority_to_pb(priority: Priority) -> pb::Priority {
    match priority {
        Priority::Low => pb::Priority::Low,
        Priority::Normal => pb::Priority::Normal,
        Priority::High => pb::Priority::High,
        Priority::Critical => pb::Priority::Critical,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use snarkd_engine::{FailureClass, FailureStage, JobFailure, Timings};

    #[test]
    fn outcomes_map_to_await_statuses_with_timings() {
        let timings = Timings {
            queue_wait: Duration::from_millis(5),
            params_load: Duration::from_millis(6),
            synthesis: Duration::from_millis(7),
            device: Duration::from_millis(8),
            total: Duration::from_millis(30),
        };
        let table = [
            (
                JobEnd::Completed(vec![9; 192]),
                AwaitStatus::Completed,
                192,
                "",
            ),
            (
                JobEnd::Failed(JobFailure::new(
                    FailureClass::Input,
                    FailureStage::Finalize,
                    "proof did not verify",
                )),
                AwaitStatus::Failed,
                0,
                "proof did not verify [input: the request is wrong; sent again, it fails the same way]",
            ),
            (JobEnd::Cancelled, AwaitStatus::Cancelled, 0, "cancelled"),
        ];
        for (end, status, proof_len, msg) in table {
            let r = awaited(
                "j",
                Some(JobOutcome {
                    job_id: "j".into(),
                    end,
                    timings,
                }),
            );
            assert_eq!(r.status, status as i32);
            assert_eq!(r.proof.len(), proof_len);
            assert!(r.error_message.contains(msg), "{}", r.error_message);
            assert_eq!(
                (
                    r.queue_wait_ms,
                    r.srs_load_ms,
                    r.synthesis_ms,
                    r.gpu_compute_ms,
                    r.total_ms
                ),
                (5, 6, 7, 8, 30)
            );
        }
    }

    #[test]
    fn a_wait_that_runs_out_is_timeout_and_names_the_job() {
        let r = awaited("j", None);
        assert_eq!(r.status, AwaitStatus::Timeout as i32);
        assert_eq!(r.job_id, "j");
        assert!(
            r.error_message.contains("AwaitProof again"),
            "{}",
            r.error_message
        );
    }
}

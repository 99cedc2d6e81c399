//! Jobs recovered from the journal made jobs again, and jobs the journal could not record.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::transition::JobChange;
use super::{unix_ms, Machine};
use super::{JobOrigin, Part};
use crate::domain::{FailureClass, JobFailure, JobOutcome};
use crate::failures::FailureStage;
use crate::journal::RecoveredJob;
use crate::lifecycle::JobStep;
use crate::prover::{Planned, Prover};

impl<P: Prover> Machine<P> {
    /// Re-admits a recovered job under its original id, priority and sequence number, with the
    /// outcome channel its waiters already hold. Its recorded partition proofs make those
    /// partitions `done`: only the others are proved.
    pub(super) fn restore(
        &mut self,
        recovered: RecoveredJob,
        outcome: watch::Sender<Option<JobOutcome>>,
        plan: Planned<P::Plan>,
        params_bytes: u64,
    ) {
        self.note_params_estimate(&plan.circuit_id, params_bytes);
        let RecoveredJob { job, proofs, .. } = recovered;
        let origin = JobOrigin {
            request_id: job.request_id,
            kind: job.kind,
            priority: job.priority,
            digest: job.digest,
            input_bytes: job.input_bytes,
        };
        let mut parts: Vec<Part<P>> = (0..plan.partitions).map(|_| Part::pending()).collect();
        let mut proved = 0u32;
        for (index, bytes) in proofs {
            let Some(part) = parts.get_mut(index as usize) else {
                continue;
            };
            match self.prover.read_proof(&bytes) {
                Ok(proof) => {
                    *part = Part::proved(proof);
                    proved += 1;
                }
                // Only a damaged journal row could do this: the partition is proved again.
                Err(error) => tracing::warn!(job_id = %job.job_id, partition = index, %error,
                    "a recorded partition proof does not read; the partition is proved again"),
            }
        }
        let now = crate::clock::now();
        let age = Duration::from_millis(unix_ms().saturating_sub(job.submitted_unix_ms));
        let submitted = now.checked_sub(age).unwrap_or(now);
        tracing::info!(job_id = %job.job_id, request_id = %origin.logged_request_id(), kind = %origin.kind, priority = ?origin.priority,
            partitions = parts.len(), proved, "job recovered from the journal");
        let seq = job.seq;
        self.insert_job(
            seq,
            job.job_id,
            origin,
            plan,
            parts,
            submitted,
            job.submitted_unix_ms,
            outcome,
        );
        if self.jobs[&seq].phase.step() == JobStep::Unrecorded {
            self.job_event(seq, JobChange::Recorded);
        }
        if proved > 0 {
            self.job_event(seq, JobChange::Start);
        }
        self.next_seq = self.next_seq.max(seq + 1);
    }

    /// Starts the history from what the journal recorded of the hour before a restart.
    pub(crate) fn remember(&mut self, past: crate::history::Past) {
        Arc::make_mut(&mut self.history).restore(past);
    }

    /// The journal has the job's acceptance on disk: it may be admitted now.
    pub(super) fn recorded(&mut self, job_id: &str) {
        let Some(&seq) = self.job_ids.get(job_id) else {
            return;
        };
        // A job cancelled or failed before its record reached the disk stays as it ended.
        if self.jobs[&seq].phase.step() == JobStep::Unrecorded {
            self.job_event(seq, JobChange::Recorded);
        }
    }

    /// The journal could not record the job's acceptance (its submit got the error): it fails.
    pub(super) fn journal_failed(&mut self, job_id: &str, message: &str) {
        let Some(&seq) = self.job_ids.get(job_id) else {
            return;
        };
        if !self.jobs[&seq].is_finished() {
            self.fail_job(
                seq,
                JobFailure::new(
                    FailureClass::Resource,
                    FailureStage::Journal,
                    format!("the job journal could not record it: {message}"),
                ),
            );
        }
    }
}

//! The only code that changes partition and worker state. Each change is checked against the
//! edge table in `crate::state`; a worker is released only by a result for the very partition it
//! is proving, so a late event for a partition the worker has left cannot touch it.

use tokio::time::Instant;

use super::Machine;
use crate::state::{next_partition_state, PartitionEvent, PartitionState, WorkerState};
use crate::status::JobState;

/// A change to one partition (and, for device steps, to its worker).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    Admit,
    Synthesized,
    Dispatch {
        worker: u32,
    },
    /// The device phase on `worker` returned, successfully or not.
    DeviceReturned {
        worker: u32,
        ok: bool,
    },
    /// The device phase on `worker` failed and the partition will run again from synthesis.
    DeviceRetry {
        worker: u32,
    },
    Fail,
    Cancel,
}

impl Machine {
    /// Applies `change` to partition `index` of job `job`; returns false when the change is
    /// illegal in the current state, leaving everything as it was. An illegal edge is logged at
    /// warn, except a late result for a cancelled partition, which is routine.
    pub(super) fn transition(&mut self, job: u64, index: u32, change: Change) -> bool {
        let now = Instant::now();
        match change {
            Change::DeviceReturned { worker, ok } => {
                self.release_worker(worker, job, index, ok, now)
            }
            Change::DeviceRetry { worker } => self.release_worker(worker, job, index, false, now),
            _ => {}
        }
        let Some(j) = self.jobs.get_mut(&job) else {
            tracing::debug!(
                job,
                partition = index,
                ?change,
                "event for a job no longer held"
            );
            return false;
        };
        let Some(part) = j.parts.get_mut(index as usize) else {
            tracing::error!(job_id = %j.id, partition = index, ?change, "event for a partition the job does not have");
            return false;
        };
        let event = match change {
            Change::Admit => PartitionEvent::Admit,
            Change::Synthesized => PartitionEvent::Synthesized,
            Change::Dispatch { .. } => PartitionEvent::Dispatch,
            Change::DeviceReturned { ok: true, .. } => PartitionEvent::Proved,
            Change::DeviceRetry { .. } => PartitionEvent::Retry,
            Change::DeviceReturned { ok: false, .. } | Change::Fail => PartitionEvent::Fail,
            Change::Cancel => PartitionEvent::Cancel,
        };
        let Some(next) = next_partition_state(part.state, event) else {
            if part.state == PartitionState::Cancelled {
                // A step that was running when its job was cancelled or failed came back.
                tracing::debug!(job_id = %j.id, partition = index, ?change, "late result for a cancelled partition dropped");
            } else {
                tracing::warn!(job_id = %j.id, partition = index, from = part.state.as_str(), ?change, "illegal transition rejected");
            }
            return false;
        };
        if let Change::Dispatch { worker } = change {
            let w = &mut self.workers[worker as usize];
            if w.state != WorkerState::Idle {
                tracing::error!(worker, job_id = %j.id, partition = index, "dispatch to a busy worker rejected");
                return false;
            }
            w.state = WorkerState::Proving {
                job_id: j.id.clone(),
                partition: index,
            };
            w.job_seq = Some(job);
            w.busy_since = Some(now);
            part.worker = Some(worker);
        }
        if next == PartitionState::Synthesizing && j.state == JobState::Queued {
            j.state = JobState::Running;
            j.first_admitted = Some(now);
        }
        if matches!(next, PartitionState::Synthesizing | PartitionState::Gpu) {
            part.step_started = Some(now);
        }
        #[cfg(test)]
        self.edges.push((job, index, part.state, next));
        part.state = next;
        self.changed();
        true
    }

    /// Frees `worker` if, and only if, it is proving partition `index` of job `job`.
    fn release_worker(&mut self, worker: u32, job: u64, index: u32, ok: bool, now: Instant) {
        let Some(w) = self.workers.get_mut(worker as usize) else {
            return;
        };
        let proving_this = matches!(&w.state, WorkerState::Proving { partition, .. } if *partition == index)
            && w.job_seq == Some(job);
        if !proving_this {
            tracing::warn!(
                worker,
                job,
                partition = index,
                "late device result for a partition the worker has left; worker unchanged"
            );
            return;
        }
        if let Some(since) = w.busy_since.take() {
            w.busy += now - since;
        }
        if ok {
            w.proofs_done += 1;
        }
        w.state = WorkerState::Idle;
        w.job_seq = None;
        self.changed();
    }
}

//! The only code that changes partition, job and worker state. Each partition change is checked
//! against the edge table in `crate::state` and builds the partition's next [`Stage`] with the
//! data that stage owns; the stage it leaves is handed back to the caller (so a dispatch takes
//! the synthesized partition and its memory out of `SynthDone`, and a rejected change drops what
//! it carried). Job state moves only through [`Machine::job_event`] and its edge table. A worker
//! is released only by a result for the very partition it is proving, so a late event for a
//! partition the worker has left cannot touch it.

use std::sync::Arc;

use tokio::time::Instant;

use super::types::{Effect, Moment, Stage};
use super::Machine;
use crate::budget::{Meter, Reservation};
use crate::history::Stint;
use crate::journal::record::Record;
use crate::prover::Prover;
use crate::state::{
    next_job_state, next_partition_state, JobEvent, PartitionEvent, PartitionState, WorkerState,
};
use crate::status::JobState;

/// A change to one partition (and, for device steps, to its worker), with the data its next
/// stage holds.
pub(crate) enum Change<P: Prover> {
    /// Memory reserved (the synthesis thread holds it), synthesis started.
    Admit {
        reserved: Meter,
    },
    Synthesized {
        synthesized: P::Partition,
        reservation: Reservation,
    },
    /// To `worker`: idle, or (`preempt`) busy with a partition that pauses under this one.
    Dispatch {
        worker: u32,
        preempt: bool,
    },
    /// The device phase on `worker` returned a proof, or (`None`) failed for good.
    DeviceReturned {
        worker: u32,
        proof: Option<Vec<u8>>,
    },
    /// The device phase on `worker` failed and the partition will run again from synthesis.
    DeviceRetry {
        worker: u32,
    },
    Fail,
    Cancel,
}

impl<P: Prover> Change<P> {
    fn event(&self) -> PartitionEvent {
        match self {
            Change::Admit { .. } => PartitionEvent::Admit,
            Change::Synthesized { .. } => PartitionEvent::Synthesized,
            Change::Dispatch { .. } => PartitionEvent::Dispatch,
            Change::DeviceReturned { proof: Some(_), .. } => PartitionEvent::Proved,
            Change::DeviceRetry { .. } => PartitionEvent::Retry,
            Change::DeviceReturned { proof: None, .. } | Change::Fail => PartitionEvent::Fail,
            Change::Cancel => PartitionEvent::Cancel,
        }
    }
}

impl<P: Prover> std::fmt::Debug for Change<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Dispatch { worker, .. } | Change::DeviceRetry { worker } => {
                write!(f, "{:?} on worker {worker}", self.event())
            }
            Change::DeviceReturned { worker, .. } => {
                write!(f, "{:?} from worker {worker}", self.event())
            }
            _ => write!(f, "{:?}", self.event()),
        }
    }
}

impl<P: Prover> Machine<P> {
    /// Applies `change` to partition `index` of job `job` and returns the stage it left; `None`
    /// when the change is illegal in the current state, leaving everything as it was (and
    /// dropping what the change carried). An illegal edge is logged at warn, except a late
    /// result for a cancelled partition, which is routine.
    pub(super) fn transition(
        &mut self,
        job: u64,
        index: u32,
        change: Change<P>,
    ) -> Option<Stage<P>> {
        let now = Instant::now();
        match change {
            Change::DeviceReturned { worker, .. } | Change::DeviceRetry { worker } => {
                let ok = matches!(change, Change::DeviceReturned { proof: Some(_), .. });
                self.release_worker(worker, job, index, ok, now)
            }
            _ => {}
        }
        let Some(j) = self.jobs.get_mut(&job) else {
            tracing::debug!(
                job,
                partition = index,
                ?change,
                "event for a job no longer held"
            );
            return None;
        };
        let Some(part) = j.parts.get_mut(index as usize) else {
            tracing::error!(job_id = %j.id, partition = index, ?change, "event for a partition the job does not have");
            return None;
        };
        let from = part.state();
        let Some(next) = next_partition_state(from, change.event()) else {
            if from == PartitionState::Cancelled {
                // A step that was running when its job was cancelled or failed came back.
                tracing::debug!(job_id = %j.id, partition = index, ?change, "late result for a cancelled partition dropped");
            } else {
                tracing::warn!(job_id = %j.id, partition = index, from = from.as_str(), ?change, "illegal transition rejected");
            }
            return None;
        };
        tracing::debug!(job_id = %j.id, partition = index, from = from.as_str(), to = next.as_str(), "partition state");
        let stage = match change {
            Change::Admit { reserved } => Stage::Synthesizing {
                since: now,
                reserved,
            },
            Change::Synthesized {
                synthesized,
                reservation,
            } => Stage::SynthDone {
                synthesized,
                reservation,
            },
            Change::Dispatch { worker, preempt } => {
                let w = &mut self.workers[worker as usize];
                match (&w.state, preempt, w.paused, w.job_seq) {
                    (WorkerState::Idle, false, _, _) => {}
                    (WorkerState::Proving { partition, .. }, true, None, Some(seq)) => {
                        w.paused = Some((seq, *partition));
                    }
                    _ => {
                        tracing::error!(worker, preempt, job_id = %j.id, partition = index, "dispatch to a worker that cannot take it rejected");
                        return None;
                    }
                }
                w.state = WorkerState::Proving {
                    job_id: j.id.clone(),
                    partition: index,
                };
                w.job_seq = Some(job);
                w.busy_since.get_or_insert(Moment::now());
                part.worker = Some(worker);
                let reserved = match &part.stage {
                    Stage::SynthDone { reservation, .. } => reservation.meter(),
                    _ => Meter::default(),
                };
                Stage::Gpu {
                    since: now,
                    reserved,
                }
            }
            Change::DeviceReturned {
                proof: Some(proof), ..
            } => Stage::Done { proof },
            Change::DeviceRetry { .. } => Stage::Pending,
            Change::DeviceReturned { proof: None, .. } | Change::Fail => Stage::Failed,
            Change::Cancel => Stage::Cancelled,
        };
        debug_assert_eq!(
            stage.state(),
            next,
            "the stage built is the table's next state"
        );
        #[cfg(test)]
        self.edges.push((job, index, from, next));
        let left = std::mem::replace(&mut part.stage, stage);
        if next == PartitionState::Synthesizing && j.state == JobState::Queued {
            self.job_event(job, JobEvent::Start);
        }
        self.changed();
        Some(left)
    }

    /// Moves job `job` along its edge table; false (and nothing changed) when the event is
    /// illegal in its state.
    pub(super) fn job_event(&mut self, job: u64, event: JobEvent) -> bool {
        let Some(j) = self.jobs.get_mut(&job) else {
            return false;
        };
        let Some(next) = next_job_state(j.state, event) else {
            tracing::warn!(job_id = %j.id, from = ?j.state, ?event, "illegal job transition rejected");
            return false;
        };
        if event == JobEvent::Start {
            j.first_admitted = Some(Instant::now());
        }
        j.state = next;
        self.changed();
        true
    }

    /// Frees `worker` if, and only if, it is proving partition `index` of job `job`; a partition
    /// it paused for that one is shown proving again. A result for the paused partition itself
    /// (it ended before reaching a step boundary) only clears the pause.
    fn release_worker(&mut self, worker: u32, job: u64, index: u32, ok: bool, now: Instant) {
        let Some(w) = self.workers.get_mut(worker as usize) else {
            return;
        };
        let proving_this = matches!(&w.state, WorkerState::Proving { partition, .. } if *partition == index)
            && w.job_seq == Some(job);
        if !proving_this && w.paused == Some((job, index)) {
            w.paused = None;
            if ok {
                w.proofs_done += 1;
            }
            self.changed();
            return;
        }
        if !proving_this {
            tracing::warn!(
                worker,
                job,
                partition = index,
                "late device result for a partition the worker has left; worker unchanged"
            );
            return;
        }
        if ok {
            w.proofs_done += 1;
        }
        if let Some((seq, partition)) = w.paused.take() {
            // Back to the paused phase, which goes on from its step boundary.
            let job_id = self
                .jobs
                .get(&seq)
                .map_or_else(String::new, |j| j.id.clone());
            let w = &mut self.workers[worker as usize];
            w.state = WorkerState::Proving { job_id, partition };
            w.job_seq = Some(seq);
            self.changed();
            return;
        }
        if let Some(since) = w.busy_since.take() {
            w.busy += now - since.at;
            let stint = Stint {
                from_unix_ms: since.unix_ms,
                to_unix_ms: since.unix_ms + (now - since.at).as_millis() as u64,
            };
            Arc::make_mut(&mut self.history).stint_ended(stint);
            (self.effects).push(Effect::Record(Record::Stint(stint), None));
        }
        w.state = WorkerState::Idle;
        w.job_seq = None;
        self.changed();
    }
}

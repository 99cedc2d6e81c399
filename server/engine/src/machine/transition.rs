//! The only code that changes partition, job and worker state. Each partition change is checked
//! against the edge table in `crate::lifecycle` and builds the partition's next [`Stage`] with the
//! data that stage owns; the stage it leaves is handed back to the caller (so a dispatch takes
//! the synthesized partition and its memory out of `SynthDone`, and a rejected change drops what
//! it carried). Job state moves only through [`Machine::job_event`] and its edge table. A worker
//! is released only by a result for the very partition it is proving, so a late event for a
//! partition the worker has left cannot touch it.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::records::{Ran, Reached};
use super::Machine;
use super::{Duty, Effect, JobPhase, Moment, Stage, Task, Worker};
use crate::budget::{Meter, Reservation};
use crate::domain::JobEnd;
use crate::history::Stint;
use crate::journal::record::Record;
use crate::lifecycle::{
    next_job_step, next_partition_state, next_worker_step, JobEvent, JobStep, PartitionEvent,
    PartitionState, WorkerEvent, WorkerStep,
};
use crate::prover::Prover;
use crate::schedule::order_key;

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
        took: Duration,
    },
    /// To `worker`: idle, or (`preempt`) busy with a partition that pauses under this one.
    Dispatch {
        worker: u32,
        preempt: bool,
    },
    /// The device phase on `worker` returned the partition's proof.
    DeviceProved {
        worker: u32,
        proof: P::Proof,
        took: Duration,
    },
    /// The device phase on `worker` failed for good.
    DeviceFailed {
        worker: u32,
        took: Duration,
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
            Change::DeviceProved { .. } => PartitionEvent::Proved,
            Change::DeviceRetry { .. } => PartitionEvent::Retry,
            Change::DeviceFailed { .. } | Change::Fail => PartitionEvent::Fail,
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
            Change::DeviceProved { worker, .. } | Change::DeviceFailed { worker, .. } => {
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
        let now = crate::clock::now();
        match change {
            Change::DeviceProved { worker, .. }
            | Change::DeviceFailed { worker, .. }
            | Change::DeviceRetry { worker } => {
                let ok = matches!(change, Change::DeviceProved { .. });
                self.release_worker(worker, job, index, ok, now)
            }
            _ => {}
        }
        let Some(mut guard) = self.jobs.get_mut(&job) else {
            tracing::debug!(
                job,
                partition = index,
                ?change,
                "event for a job no longer held"
            );
            return None;
        };
        let j = &mut *guard;
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
        let dispatch = match change {
            Change::Dispatch { worker, preempt } => Some((worker, preempt)),
            _ => None,
        };
        let stage = match enter(next, &part.stage, change, now) {
            Ok(stage) => stage,
            Err(change) => {
                tracing::error!(job_id = %j.id, partition = index, from = from.as_str(), ?change, "a change without the data of its next stage rejected");
                return None;
            }
        };
        // The worker takes the partition once its stage is built: either both change or neither.
        if let Some((worker, preempt)) = dispatch {
            let task = Task {
                job,
                partition: index,
                job_id: j.id.clone(),
            };
            let change = match preempt {
                false => WorkerChange::Dispatch(task),
                true => WorkerChange::Preempt(task),
            };
            if let Err(change) = step_worker(&mut self.workers[worker as usize], change, now) {
                tracing::error!(worker, ?change, job_id = %j.id, partition = index, "dispatch to a worker that cannot take it rejected");
                return None;
            }
        }
        #[cfg(test)]
        self.edges.push((job, index, from, next));
        let key = order_key(j.origin.priority, job, index);
        self.stages.moved((key, job, index), Some(from), next);
        let left = std::mem::replace(&mut part.stage, stage);
        let starts = next == PartitionState::Synthesizing && j.phase.step() == JobStep::Queued;
        drop(guard);
        if starts {
            self.job_event(job, JobChange::Start);
        }
        self.changed();
        Some(left)
    }

    /// Moves job `job` along its edge table, building its next phase from the one it leaves;
    /// false (and nothing changed) when the change is illegal in its phase.
    pub(super) fn job_event(&mut self, job: u64, change: JobChange) -> bool {
        let Some(mut guard) = self.jobs.get_mut(&job) else {
            return false;
        };
        let j = &mut *guard;
        let (from, event) = (j.phase.step(), change.event());
        let Some(next) = next_job_step(from, event) else {
            tracing::warn!(job_id = %j.id, ?from, ?event, "illegal job transition rejected");
            return false;
        };
        let left = std::mem::replace(
            &mut j.phase,
            JobPhase::Ended {
                at: Moment::now(),
                end: JobEnd::Cancelled,
            },
        );
        // Each arm builds the phase of the table's `next` step, from the data of the phase left.
        j.phase = match (next, left, change) {
            (JobStep::Queued, JobPhase::Unrecorded { input }, JobChange::Recorded) => {
                JobPhase::Queued { input }
            }
            (JobStep::Running, JobPhase::Queued { input }, JobChange::Start) => JobPhase::Running {
                input,
                admitted: crate::clock::now(),
            },
            (JobStep::Finalizing, JobPhase::Running { input, admitted }, JobChange::Finalize) => {
                JobPhase::Finalizing { input, admitted }
            }
            // The input's charge goes with the phase left.
            (JobStep::Completed, _, JobChange::End(end @ JobEnd::Completed(_)))
            | (JobStep::Failed, _, JobChange::End(end @ JobEnd::Failed(_)))
            | (JobStep::Cancelled, _, JobChange::End(end @ JobEnd::Cancelled)) => JobPhase::Ended {
                at: Moment::now(),
                end,
            },
            (_, left, change) => {
                tracing::error!(job_id = %j.id, ?from, ?change, "a job phase without the data of its step; change rejected");
                j.phase = left;
                return false;
            }
        };
        drop(guard);
        self.changed();
        true
    }

    /// Frees `worker` if, and only if, it is proving partition `index` of job `job`; a partition
    /// it paused for that one is shown proving again. A result for the paused partition itself
    /// (it ended before reaching a step boundary) only clears the pause. A result for a
    /// partition the worker has left changes nothing.
    fn release_worker(&mut self, worker: u32, job: u64, index: u32, ok: bool, now: Instant) {
        let Some(w) = self.workers.get_mut(worker as usize) else {
            return;
        };
        let change = match w.duty.event_for(job, index) {
            Some(WorkerEvent::Returned) => WorkerChange::Returned,
            Some(WorkerEvent::PausedReturned) => WorkerChange::PausedReturned,
            _ => {
                tracing::warn!(
                    worker,
                    job,
                    partition = index,
                    "late device result for a partition the worker has left; worker unchanged"
                );
                return;
            }
        };
        match step_worker(w, change, now) {
            Ok(ended) => {
                if ok {
                    w.proofs_done += 1;
                }
                if let Some(stint) = ended {
                    Arc::make_mut(&mut self.history).stint_ended(stint);
                    (self.effects).push(Effect::Record(Record::Stint(stint), None));
                }
            }
            Err(change) => {
                tracing::error!(
                    worker,
                    ?change,
                    "worker change its duty did not allow rejected"
                );
            }
        }
        self.changed();
    }
}

/// The stage of the table's `next` state, built from the stage left and the change's data: each
/// arm builds the variant of its state, so no other can be made. The change comes back when it
/// lacks the data `next` needs (a table and a change out of step: a bug).
pub(super) fn enter<P: Prover>(
    next: PartitionState,
    left: &Stage<P>,
    change: Change<P>,
    now: Instant,
) -> Result<Stage<P>, Change<P>> {
    use PartitionState as S;
    let ms = |took: Duration| took.as_millis() as u64;
    let reached = left.reached();
    Ok(match (next, change) {
        (S::Pending, Change::DeviceRetry { .. }) => Stage::Pending,
        (S::Synthesizing, Change::Admit { reserved }) => Stage::Synthesizing {
            since: now,
            reserved,
        },
        (
            S::SynthDone,
            Change::Synthesized {
                synthesized,
                reservation,
                took,
            },
        ) => Stage::SynthDone {
            synthesized,
            reservation,
            synth_ms: ms(took),
        },
        (S::Gpu, change @ Change::Dispatch { worker, .. }) => match left {
            Stage::SynthDone {
                reservation,
                synth_ms,
                ..
            } => Stage::Gpu {
                since: now,
                reserved: reservation.meter(),
                worker,
                synth_ms: *synth_ms,
            },
            _ => return Err(change),
        },
        (S::Done, change @ Change::DeviceProved { .. }) => match (reached, change) {
            (Reached::OnDevice { synth_ms, worker }, Change::DeviceProved { proof, took, .. }) => {
                Stage::Done {
                    proof,
                    ran: Some(Ran {
                        synth_ms,
                        worker,
                        gpu_ms: ms(took),
                    }),
                }
            }
            (_, change) => return Err(change),
        },
        (S::Failed, Change::DeviceFailed { took, .. }) => Stage::Failed {
            reached: match reached {
                Reached::OnDevice { synth_ms, worker } => Reached::Returned(Ran {
                    synth_ms,
                    worker,
                    gpu_ms: ms(took),
                }),
                other => other,
            },
        },
        (S::Failed, Change::Fail) => Stage::Failed { reached },
        (S::Cancelled, Change::Cancel) => Stage::Cancelled { reached },
        (_, change) => return Err(change),
    })
}

/// A change to a job, with the data its next phase holds.
#[derive(Debug)]
pub(crate) enum JobChange {
    Recorded,
    Start,
    Finalize,
    End(JobEnd),
}

impl JobChange {
    fn event(&self) -> JobEvent {
        match self {
            JobChange::Recorded => JobEvent::Recorded,
            JobChange::Start => JobEvent::Start,
            JobChange::Finalize => JobEvent::Finalize,
            JobChange::End(JobEnd::Completed(_)) => JobEvent::Complete,
            JobChange::End(JobEnd::Failed(_)) => JobEvent::Fail,
            JobChange::End(JobEnd::Cancelled) => JobEvent::Cancel,
        }
    }
}

/// A change to a worker, with the partition it is handed.
#[derive(Debug)]
pub(crate) enum WorkerChange {
    Dispatch(Task),
    Preempt(Task),
    Returned,
    PausedReturned,
}

impl WorkerChange {
    fn event(&self) -> WorkerEvent {
        match self {
            WorkerChange::Dispatch(_) => WorkerEvent::Dispatch,
            WorkerChange::Preempt(_) => WorkerEvent::Preempt,
            WorkerChange::Returned => WorkerEvent::Returned,
            WorkerChange::PausedReturned => WorkerEvent::PausedReturned,
        }
    }
}

/// Moves `w` along the worker edge table, building its next duty from the one it leaves, and
/// returns the stint of device phases that ended (when it goes idle). The change comes back
/// (and nothing changed) when it is illegal for the worker's duty.
fn step_worker(
    w: &mut Worker,
    change: WorkerChange,
    now: Instant,
) -> Result<Option<Stint>, WorkerChange> {
    let Some(next) = next_worker_step(w.duty.step(), change.event()) else {
        return Err(change);
    };
    let mut ended = None;
    // Each arm builds the duty of the table's `next` step (one variant per step).
    w.duty = match (next, std::mem::replace(&mut w.duty, Duty::Idle), change) {
        (WorkerStep::Proving, Duty::Idle, WorkerChange::Dispatch(task)) => Duty::Proving {
            task,
            stint: Moment::now(),
        },
        (
            WorkerStep::ProvingOverPaused,
            Duty::Proving {
                task: running,
                stint,
            },
            WorkerChange::Preempt(task),
        ) => Duty::ProvingOverPaused {
            task,
            paused: running,
            stint,
        },
        (WorkerStep::Idle, Duty::Proving { stint, .. }, WorkerChange::Returned) => {
            let took = now.saturating_duration_since(stint.at);
            w.busy += took;
            ended = Some(Stint {
                from_unix_ms: stint.unix_ms,
                to_unix_ms: stint.unix_ms + took.as_millis() as u64,
            });
            Duty::Idle
        }
        // Back to the paused phase, which goes on from its step boundary.
        (
            WorkerStep::Proving,
            Duty::ProvingOverPaused { paused, stint, .. },
            WorkerChange::Returned,
        ) => Duty::Proving {
            task: paused,
            stint,
        },
        (
            WorkerStep::Proving,
            Duty::ProvingOverPaused { task, stint, .. },
            WorkerChange::PausedReturned,
        ) => Duty::Proving { task, stint },
        (_, left, change) => {
            w.duty = left;
            return Err(change);
        }
    };
    Ok(ended)
}

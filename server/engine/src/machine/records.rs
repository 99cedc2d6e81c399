//! The machine's records of jobs, partitions, workers and params, each with the data of the
//! step it is in.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

use super::JobOrigin;
use crate::budget::{Meter, Reservation};
use crate::domain::{JobEnd, JobFailure, JobOutcome, Preloaded, ProofKind, Timings};
use crate::error::EngineError;
use crate::lifecycle::{JobStep, PartitionState, WorkerEvent, WorkerState, WorkerStep};
use crate::prover::{DeviceInfo, FastPath, PartitionMemory, Prover};
use crate::status::JobState;

pub(crate) struct Job<P: Prover> {
    pub seq: u64,
    pub id: String,
    pub origin: JobOrigin,
    pub plan: Arc<P::Plan>,
    pub circuit_id: String,
    pub memory: PartitionMemory,
    pub fast_path: Option<FastPath>,
    pub submitted: Instant,
    pub submitted_unix_ms: u64,
    pub phase: JobPhase,
    pub parts: Vec<Part<P>>,
    pub timings: Timings,
    pub outcome: watch::Sender<Option<JobOutcome>>,
}

impl<P: Prover> Job<P> {
    pub fn is_finished(&self) -> bool {
        self.phase.step().is_ended()
    }

    /// True while the job needs its params loaded: from a partition's admission until it
    /// leaves the device, and while the job waits for or runs its finalization. A job whose
    /// partitions only wait for admission pins nothing, so idle params of queued jobs can always
    /// be evicted to make room (see `Machine::try_admit`).
    pub fn uses_params(&self) -> bool {
        match self.phase.step() {
            JobStep::Finalizing => true,
            JobStep::Running | JobStep::Queued => {
                self.parts.iter().all(|p| p.state() == PartitionState::Done)
                    || self.parts.iter().any(|p| {
                        matches!(
                            p.state(),
                            PartitionState::Synthesizing
                                | PartitionState::SynthDone
                                | PartitionState::Gpu
                        )
                    })
            }
            _ => false,
        }
    }
}

/// Where a job is, with what it holds there: the budget's charge for its input until it ends,
/// when its first partition was admitted, how it ended. Its edges are `lifecycle::next_job_step`.
pub(crate) enum JobPhase {
    Unrecorded {
        input: Reservation,
    },
    Queued {
        input: Reservation,
    },
    Running {
        input: Reservation,
        admitted: Instant,
    },
    Finalizing {
        // Held, never read: ending the job drops it, which returns the input's charge.
        #[allow(dead_code)]
        input: Reservation,
        admitted: Instant,
    },
    Ended {
        at: Moment,
        end: JobEnd,
    },
}

impl JobPhase {
    pub fn step(&self) -> JobStep {
        match self {
            JobPhase::Unrecorded { .. } => JobStep::Unrecorded,
            JobPhase::Queued { .. } => JobStep::Queued,
            JobPhase::Running { .. } => JobStep::Running,
            JobPhase::Finalizing { .. } => JobStep::Finalizing,
            JobPhase::Ended { end, .. } => match end {
                JobEnd::Completed(_) => JobStep::Completed,
                JobEnd::Failed(_) => JobStep::Failed,
                JobEnd::Cancelled => JobStep::Cancelled,
            },
        }
    }

    pub fn state(&self) -> JobState {
        self.step().state()
    }

    /// When its first partition was admitted, while it runs.
    pub fn admitted(&self) -> Option<Instant> {
        match self {
            JobPhase::Running { admitted, .. } | JobPhase::Finalizing { admitted, .. } => {
                Some(*admitted)
            }
            _ => None,
        }
    }

    pub fn ended_at(&self) -> Option<Moment> {
        match self {
            JobPhase::Ended { at, .. } => Some(*at),
            _ => None,
        }
    }

    pub fn failure(&self) -> Option<&JobFailure> {
        match self {
            JobPhase::Ended {
                end: JobEnd::Failed(failure),
                ..
            } => Some(failure),
            _ => None,
        }
    }
}

/// Where a partition is in the pipeline, with what it holds there: the synthesized partition
/// and its memory travel with the stage that owns them, so no state can be without its data.
pub(crate) enum Stage<P: Prover> {
    Pending,
    /// Synthesis runs on a thread, which holds the reservation.
    Synthesizing {
        since: Instant,
        reserved: Meter,
    },
    /// Synthesized and waiting for a worker; the machine holds the partition and its memory.
    SynthDone {
        synthesized: P::Partition,
        reservation: Reservation,
        synth_ms: u64,
    },
    /// The device phase runs on `worker`, whose thread holds the reservation.
    Gpu {
        since: Instant,
        reserved: Meter,
        worker: u32,
        synth_ms: u64,
    },
    Done {
        proof: P::Proof,
        /// How it was proved; `None` for a proof recorded before a restart.
        ran: Option<Ran>,
    },
    Failed {
        reached: Reached,
    },
    Cancelled {
        reached: Reached,
    },
}

/// How a partition's proof was made: its synthesis, the worker of its device phase and that
/// phase's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ran {
    pub synth_ms: u64,
    pub worker: u32,
    pub gpu_ms: u64,
}

/// How far a partition's steps got: carried into a failed or cancelled stage and shown in its
/// view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reached {
    /// No step finished (or its proof was recorded before a restart).
    Nothing,
    Synthesized {
        synth_ms: u64,
    },
    /// Handed to `worker`, whose device phase has not returned.
    OnDevice {
        synth_ms: u64,
        worker: u32,
    },
    /// Its device phase returned.
    Returned(Ran),
}

impl Reached {
    pub fn synth_ms(self) -> Option<u64> {
        match self {
            Reached::Nothing => None,
            Reached::Synthesized { synth_ms } | Reached::OnDevice { synth_ms, .. } => {
                Some(synth_ms)
            }
            Reached::Returned(ran) => Some(ran.synth_ms),
        }
    }

    pub fn worker(self) -> Option<u32> {
        match self {
            Reached::Nothing | Reached::Synthesized { .. } => None,
            Reached::OnDevice { worker, .. } => Some(worker),
            Reached::Returned(ran) => Some(ran.worker),
        }
    }

    pub fn gpu_ms(self) -> Option<u64> {
        match self {
            Reached::Returned(ran) => Some(ran.gpu_ms),
            _ => None,
        }
    }
}

impl<P: Prover> Stage<P> {
    pub fn state(&self) -> PartitionState {
        match self {
            Stage::Pending => PartitionState::Pending,
            Stage::Synthesizing { .. } => PartitionState::Synthesizing,
            Stage::SynthDone { .. } => PartitionState::SynthDone,
            Stage::Gpu { .. } => PartitionState::Gpu,
            Stage::Done { .. } => PartitionState::Done,
            Stage::Failed { .. } => PartitionState::Failed,
            Stage::Cancelled { .. } => PartitionState::Cancelled,
        }
    }

    /// How far its steps got, from the data of the stage.
    pub fn reached(&self) -> Reached {
        match self {
            Stage::Pending | Stage::Synthesizing { .. } => Reached::Nothing,
            Stage::SynthDone { synth_ms, .. } => Reached::Synthesized {
                synth_ms: *synth_ms,
            },
            Stage::Gpu {
                synth_ms, worker, ..
            } => Reached::OnDevice {
                synth_ms: *synth_ms,
                worker: *worker,
            },
            Stage::Done { ran, .. } => ran.map_or(Reached::Nothing, Reached::Returned),
            Stage::Failed { reached } | Stage::Cancelled { reached } => *reached,
        }
    }

    /// Bytes reserved for the partition right now, read from the live reservation.
    pub fn reserved_bytes(&self) -> u64 {
        match self {
            Stage::Synthesizing { reserved, .. } | Stage::Gpu { reserved, .. } => reserved.bytes(),
            Stage::SynthDone { reservation, .. } => reservation.bytes(),
            _ => 0,
        }
    }

    /// When the running step (synthesis or device phase) started, on the machine's clock.
    pub fn step_started(&self) -> Option<Instant> {
        match self {
            Stage::Synthesizing { since, .. } | Stage::Gpu { since, .. } => Some(*since),
            _ => None,
        }
    }
}

pub(crate) struct Part<P: Prover> {
    pub stage: Stage<P>,
    /// Device phases that failed and were retried from synthesis.
    pub retries: u32,
}

impl<P: Prover> Part<P> {
    pub fn pending() -> Part<P> {
        Part {
            stage: Stage::Pending,
            retries: 0,
        }
    }

    /// A partition whose proof was recorded before a restart.
    pub fn proved(proof: P::Proof) -> Part<P> {
        Part {
            stage: Stage::Done { proof, ran: None },
            retries: 0,
        }
    }

    pub fn state(&self) -> PartitionState {
        self.stage.state()
    }

    /// Time since the running step started (zero if none runs).
    pub fn step_elapsed(&self, now: Instant) -> Duration {
        self.stage
            .step_started()
            .map_or(Duration::ZERO, |since| now - since)
    }
}

pub(crate) struct Worker {
    pub id: u32,
    pub device: DeviceInfo,
    pub duty: Duty,
    /// Device-phase time of finished stints.
    pub busy: Duration,
    pub proofs_done: u64,
}

impl Worker {
    pub fn new(id: u32, device: DeviceInfo) -> Worker {
        Worker {
            id,
            device,
            duty: Duty::Idle,
            busy: Duration::ZERO,
            proofs_done: 0,
        }
    }
}

/// One partition a worker runs the device phase of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Task {
    pub job: u64,
    pub partition: u32,
    /// The job's id, for the status (the job may be gone before its phase returns).
    pub job_id: String,
}

/// What a worker is doing, with which partitions. Its edges are `lifecycle::next_worker_step`.
/// One variant per step of the table.
pub(crate) enum Duty {
    Idle,
    Proving {
        /// The phase running now.
        task: Task,
        /// When the worker's current stint of device phases began.
        stint: Moment,
    },
    ProvingOverPaused {
        task: Task,
        /// The phase the deadline partition `task` preempted: it waits at its next step
        /// boundary and goes on when `task` is done.
        paused: Task,
        stint: Moment,
    },
}

impl Duty {
    pub fn step(&self) -> WorkerStep {
        match self {
            Duty::Idle => WorkerStep::Idle,
            Duty::Proving { .. } => WorkerStep::Proving,
            Duty::ProvingOverPaused { .. } => WorkerStep::ProvingOverPaused,
        }
    }

    /// The phase running now.
    pub fn running(&self) -> Option<&Task> {
        match self {
            Duty::Proving { task, .. } | Duty::ProvingOverPaused { task, .. } => Some(task),
            Duty::Idle => None,
        }
    }

    pub fn paused(&self) -> Option<&Task> {
        match self {
            Duty::ProvingOverPaused { paused, .. } => Some(paused),
            _ => None,
        }
    }

    /// What a device result for partition `partition` of job `job` is to this worker: the
    /// running phase's or the paused one's return, or nothing (a late result for a partition it
    /// has left, which must not change it).
    pub fn event_for(&self, job: u64, partition: u32) -> Option<WorkerEvent> {
        let is = |t: &Task| t.job == job && t.partition == partition;
        match (self.running(), self.paused()) {
            (Some(task), _) if is(task) => Some(WorkerEvent::Returned),
            (_, Some(paused)) if is(paused) => Some(WorkerEvent::PausedReturned),
            _ => None,
        }
    }

    /// The status of it: the phase running now.
    pub fn state(&self) -> WorkerState {
        match self.running() {
            None => WorkerState::Idle,
            Some(task) => WorkerState::Proving {
                job_id: task.job_id.clone(),
                partition: task.partition,
            },
        }
    }

    pub fn stint(&self) -> Option<Moment> {
        match self {
            Duty::Proving { stint, .. } | Duty::ProvingOverPaused { stint, .. } => Some(*stint),
            Duty::Idle => None,
        }
    }
}

/// A point in time on both clocks: the monotonic one the machine measures with, and the wall
/// clock a snapshot shows (read once, so two snapshots of the same state are equal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Moment {
    pub at: Instant,
    pub unix_ms: u64,
}

impl Moment {
    pub fn now() -> Moment {
        Moment {
            at: crate::clock::now(),
            unix_ms: crate::clock::unix_ms(),
        }
    }
}

pub(crate) enum ParamsSlot<P: Prover> {
    Loading {
        waiters: Vec<oneshot::Sender<Result<Preloaded, EngineError>>>,
        since: Instant,
    },
    Ready {
        params: Arc<P::Params>,
        /// The part of the entry's bytes that is the circuit's pre-compiled matrices.
        precompiled_bytes: u64,
    },
}

pub(crate) struct ParamsEntry<P: Prover> {
    pub slot: ParamsSlot<P>,
    /// The budget's charge for the params: the estimate while they load, then what they
    /// measured (when that is less).
    pub reservation: Reservation,
    pub last_used: Moment,
}

impl<P: Prover> ParamsEntry<P> {
    /// Bytes the params take, as the budget counts them.
    pub fn bytes(&self) -> u64 {
        self.reservation.bytes()
    }

    pub fn ready(&self) -> Option<&Arc<P::Params>> {
        match &self.slot {
            ParamsSlot::Ready { params, .. } => Some(params),
            ParamsSlot::Loading { .. } => None,
        }
    }
}

/// Totals since start.
#[derive(Default)]
pub(crate) struct Tally {
    pub completed: Vec<(ProofKind, u64)>,
    pub failed: Vec<(ProofKind, u64)>,
    pub cancelled: u64,
}

impl Tally {
    pub fn add(list: &mut Vec<(ProofKind, u64)>, kind: ProofKind) {
        match list.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => {
                list.push((kind, 1));
                list.sort();
            }
        }
    }

    pub fn total(list: &[(ProofKind, u64)]) -> u64 {
        list.iter().map(|(_, n)| n).sum()
    }
}

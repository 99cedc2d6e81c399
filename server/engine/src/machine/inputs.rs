//! What the machine takes and asks for: inputs (requests from the API, steps finished on
//! threads) and effects (work the driver starts), with the job facts a submit brings.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, watch};

use crate::budget::Reservation;
use crate::domain::{Evicted, JobOutcome, Preloaded, Priority, ProofKind, Submitted};
use crate::error::EngineError;
use crate::journal::record::{Ack, FromJournal, Record};
use crate::journal::InputDigest;
use crate::prover::{LoadedParams, Planned, Prover, StepError};

pub(crate) use super::intake_slots::IntakeSlot;

/// Something that happened: a request from the API, or a step finished on a worker thread.
/// Steps carry no durations: the machine times them from its own clock, from the input that
/// started them to the one that reports them, so a job's timings all share one clock.
pub(crate) enum Input<P: Prover> {
    /// A request from the API that carries nothing of the prover's, with its place in the
    /// writer's queue.
    Api(Request, ApiSlot),
    /// The devices' latest readings (from the telemetry thread).
    Devices(Vec<crate::prover::DeviceTelemetry>),
    Submit {
        /// Chosen by the handle, which has already written the input file under this id.
        job_id: String,
        origin: JobOrigin,
        plan: Planned<P::Plan>,
        /// The prover's estimate of the plan's params, made on the planning thread.
        params_bytes: u64,
        /// The encoded input, for the journal row, when it is not a file.
        inline_input: Option<Vec<u8>>,
        /// Its place under the limits, taken by its [`Request::Intake`].
        slot: IntakeSlot,
        reply: oneshot::Sender<Result<Submitted, EngineError>>,
    },
    SynthDone {
        job: u64,
        index: u32,
        result: Result<P::Partition, StepError>,
        reservation: Reservation,
    },
    /// The device phase returned the a/b/c share of the partition's reservation.
    AbcReleased { job: u64, index: u32 },
    DeviceDone {
        worker: u32,
        job: u64,
        index: u32,
        result: Result<P::Proof, StepError>,
        reservation: Reservation,
    },
    ParamsLoaded {
        circuit_id: String,
        result: Result<LoadedParams<P::Params>, EngineError>,
    },
    Finalized {
        job: u64,
        result: Result<Vec<u8>, StepError>,
        elapsed: Duration,
    },
    /// Whether the journal has the job's acceptance on disk (it may start) or could not write
    /// it (it fails: its submit was refused).
    Journal(FromJournal),
    /// Recovery planned a job read back from the journal again, or could not.
    Replanned {
        seq: u64,
        result: super::Replanned<P::Plan>,
    },
    /// A reservation was returned somewhere; admission may proceed.
    MemoryFreed,
    /// Housekeeping: retention of finished jobs.
    Tick,
}

/// An API request's place in the writer's queue: the handle lets at most
/// [`crate::handle::API_INPUTS`] requests wait for the writer (a caller past them waits for a
/// place: backpressure), and the place is given back when the writer has applied the request.
/// Inputs from the engine's own threads take none: each running step sends one result.
#[derive(Debug, Default)]
pub(crate) struct ApiSlot(#[allow(dead_code)] Option<tokio::sync::OwnedSemaphorePermit>);

impl ApiSlot {
    pub fn held(permit: tokio::sync::OwnedSemaphorePermit) -> ApiSlot {
        ApiSlot(Some(permit))
    }
}

impl<P: Prover> Input<P> {
    /// `request` without a place in the queue (tests, the simulation and the engine's own
    /// requests).
    pub fn api(request: Request) -> Input<P> {
        Input::Api(request, ApiSlot::default())
    }

    /// Whether applying this can tell anyone anything (a reply, a job's end, a preload's
    /// answer): if not, its change may wait for the publish of a later input's.
    pub fn answers_a_client(&self) -> bool {
        !matches!(
            self,
            Input::SynthDone { result: Ok(_), .. }
                | Input::DeviceDone { result: Ok(_), .. }
                | Input::AbcReleased { .. }
                | Input::Devices(_)
                | Input::MemoryFreed
                | Input::Tick
        )
    }
}

/// What the API asks of the writer, apart from submits (which carry the prover's plan).
pub(crate) enum Request {
    /// A request the API refused at submit, for the failure log.
    Refused(crate::failures::Failure),
    /// A submit, hashed but not decoded: intake open, a live job of the same request (by
    /// index), its priority's `[limits]`. Decoded and planned only once granted a place.
    Intake {
        origin: JobOrigin,
        reply: oneshot::Sender<Result<Intake, EngineError>>,
    },
    Watch {
        job_id: String,
        reply: oneshot::Sender<Option<watch::Receiver<Option<JobOutcome>>>>,
    },
    Cancel {
        job_id: String,
        reply: oneshot::Sender<Result<bool, EngineError>>,
    },
    Preload {
        circuit_id: String,
        /// The prover's estimate of its params, made on a blocking thread.
        params_bytes: u64,
        reply: oneshot::Sender<Result<Preloaded, EngineError>>,
    },
    Evict {
        circuit_id: String,
        reply: oneshot::Sender<Result<Evicted, EngineError>>,
    },
    Drain,
    Idle {
        reply: oneshot::Sender<bool>,
    },
    /// Answered once the journal has everything recorded so far on disk.
    FlushJournal {
        reply: oneshot::Sender<()>,
    },
}

/// Work the driver must start on its own threads.
pub(crate) enum Effect<P: Prover> {
    Synthesize {
        job: u64,
        index: u32,
        /// The job's priority: below HIGH the thread runs at a lower OS priority.
        priority: Priority,
        plan: Arc<P::Plan>,
        /// The job's params if already loaded (they may still be loading).
        params: Option<Arc<P::Params>>,
        reservation: Reservation,
    },
    Prove {
        worker: u32,
        task: DeviceTask<P>,
    },
    LoadParams {
        circuit_id: String,
    },
    Finalize {
        job: u64,
        plan: Arc<P::Plan>,
        proofs: Vec<P::Proof>,
        params: Arc<P::Params>,
    },
    /// Hand a record to the journal (in order); `ack` answers a submit once it is on disk.
    Record(Record, Option<Ack>),
    /// Answer once every record handed over so far is on disk.
    FlushJournal(oneshot::Sender<()>),
    /// An answer to whoever asked, sent once the snapshot that shows what it answers is
    /// published: a client told something finds it in the status when it looks.
    Answer(Answer),
}

/// A reply or a job's outcome, held back until the snapshot showing it is published.
pub(crate) struct Answer(Box<dyn FnOnce() + Send>);

impl Answer {
    pub fn reply<T: Send + 'static>(reply: oneshot::Sender<T>, value: T) -> Self {
        Answer(Box::new(move || {
            let _ = reply.send(value);
        }))
    }

    pub fn outcome(to: watch::Sender<Option<JobOutcome>>, outcome: JobOutcome) -> Self {
        Answer(Box::new(move || {
            to.send_replace(Some(outcome));
        }))
    }

    pub fn send(self) {
        (self.0)()
    }
}

/// One partition's device phase, handed to a worker.
/// Set by the machine when the job of a partition whose device phase runs ends (cancelled, or
/// failed in another partition): the phase stops at its next step boundary and frees its device.
#[derive(Debug, Clone, Default)]
pub(crate) struct StopSignal(Arc<AtomicBool>);

impl StopSignal {
    pub fn stop(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

pub(crate) struct DeviceTask<P: Prover> {
    pub job: u64,
    pub index: u32,
    /// The job's priority: below HIGH the device phase runs at a lower OS priority.
    pub priority: Priority,
    /// The a/b/c share of `reservation`, returned as soon as the prover has consumed it.
    pub abc_bytes: u64,
    pub partition: P::Partition,
    pub params: Arc<P::Params>,
    pub reservation: Reservation,
    /// Asks the phase to stop at its next step boundary.
    pub stop: StopSignal,
}

/// The request-side facts of a job, checked by the API layer and the prover's `plan`.
#[derive(Debug, Clone)]
pub(crate) struct JobOrigin {
    pub request_id: String,
    pub kind: ProofKind,
    pub priority: Priority,
    /// What identifies the input, with `request_id` and `kind`, for idempotency.
    pub digest: InputDigest,
    /// The request's input bytes, counted against `[limits] queued_input_bytes` until the job
    /// ends.
    pub input_bytes: u64,
}

impl JobOrigin {
    /// The `request_id` as log lines carry it, beside the job id, so they join with Curio's.
    pub fn logged_request_id(&self) -> std::borrow::Cow<'_, str> {
        snarkd_types::logged_request_id(&self.request_id)
    }

    pub fn key(&self) -> RequestKey {
        RequestKey {
            request_id: self.request_id.clone(),
            kind: self.kind,
            digest: self.digest,
        }
    }
}

/// What the writer decides on a submit before it is decoded.
#[derive(Debug)]
pub(crate) enum Intake {
    /// The live job of the same request, kind and input.
    Existing(Submitted),
    /// A place under the limits: plan it, then submit it with the place.
    Granted(IntakeSlot),
}

/// A submit as it is known before its input is hashed: its identity, priority and size. With
/// the input's digest it becomes the job's origin.
#[derive(Debug, Clone)]
pub(crate) struct Ticket {
    pub request_id: String,
    pub kind: ProofKind,
    pub priority: Priority,
    pub input_bytes: u64,
}

impl Ticket {
    pub fn with_digest(self, digest: InputDigest) -> JobOrigin {
        JobOrigin {
            request_id: self.request_id,
            kind: self.kind,
            priority: self.priority,
            digest,
            input_bytes: self.input_bytes,
        }
    }
}

/// What makes two submits the same job: the same `request_id`, kind and input.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct RequestKey {
    pub request_id: String,
    pub kind: ProofKind,
    pub digest: InputDigest,
}

//! Requests and results in the engine's own terms (the API layer converts protobuf to these).
//! The request, its kind and its priority are `snarkd-types`'s, shared with the prover.

use std::fmt;
use std::time::Duration;

pub use crate::failures::FailureStage;
pub use snarkd_types::{
    FailureClass, PoRepInput, PostInput, Priority, ProofInput, ProofKind, ProofRequest, Registered,
    SnapInput, StoredInput,
};

/// The answer to a submit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    /// The full job id.
    pub job_id: String,
    /// Jobs ahead of this one when it was queued.
    pub queue_position: u32,
    /// True when the request id matched an existing job, which is returned instead.
    pub existing: bool,
}

/// How a job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobEnd {
    /// The verified proof: 192 bytes per partition, in partition order.
    Completed(Vec<u8>),
    Failed(JobFailure),
    Cancelled,
}

/// Why a job failed: whose fault it is, at which stage, and what went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobFailure {
    pub class: FailureClass,
    pub stage: FailureStage,
    /// What went wrong and what to do, in the failing step's words.
    pub message: String,
}

impl JobFailure {
    pub fn new(class: FailureClass, stage: FailureStage, message: impl Into<String>) -> JobFailure {
        JobFailure {
            class,
            stage,
            message: message.into(),
        }
    }
}

/// The text a client gets: the message, then the class and what it means for a retry.
impl fmt::Display for JobFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} [{}: {}]",
            self.message,
            self.class,
            self.class.meaning()
        )
    }
}

/// Where a job's time went. Partition steps are summed over partitions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timings {
    pub queue_wait: Duration,
    pub params_load: Duration,
    pub synthesis: Duration,
    pub device: Duration,
    pub total: Duration,
}

/// The result of waiting for a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobOutcome {
    pub job_id: String,
    pub end: JobEnd,
    pub timings: Timings,
}

/// The result of a params preload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preloaded {
    pub already_loaded: bool,
    pub load_time: Duration,
}

/// The result of a params eviction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Evicted {
    pub was_loaded: bool,
    pub freed_bytes: u64,
}

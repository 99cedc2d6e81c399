//! The partition and worker state machines. Every change goes through [`transition`]; it rejects
//! illegal edges and guards worker updates by the partition the worker is actually proving.

/// Where a partition is in the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PartitionState {
    Pending,
    Synthesizing,
    SynthDone,
    Gpu,
    Done,
    Failed,
    Cancelled,
}

/// What a device worker is doing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum WorkerState {
    Idle,
    Proving { job_id: String, partition: u32 },
}

//! The real engine in simulated time, for sizing a box before it exists: the [`Machine`]
//! (admission under the budget, lookahead, dispatch, preemption, params loads and evictions)
//! takes every input as it does in the daemon, while each step's effect takes the time and holds
//! the memory of a cost table instead of running (`run.rs`). An hour of a busy box runs in
//! seconds, the same for the same inputs.
//!
//! Layout:
//! - `costs`: what each step costs (CPU work at measured thread counts, device seconds, memory).
//! - `cpu`: the cores shared out by OS weight.
//! - `prover`: the prover the machine is built with (devices and backend name only).
//! - `run`: the driver in simulated time.
//! - `report`: what a run measured.
//!
//! [`Machine`]: crate::machine

mod costs;
mod cpu;
mod prover;
mod report;
mod run;
#[cfg(test)]
mod tests;

use std::time::Duration;

pub use costs::{CpuWork, DeviceCost, KindCosts};
pub use report::{KindReport, Report, Sample};
pub use run::simulate;

use crate::config::EngineConfig;
use crate::domain::ProofKind;

/// The box and the engine on it.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The engine's settings as the daemon would make them on the box (its memory budget,
    /// synthesis threads, lookahead, background nice).
    pub config: EngineConfig,
    pub cores: f64,
    /// GPUs, each a device with its workers; 0: the CPU backend (one device: the cores).
    pub gpus: u32,
    pub gpu_memory_bytes: u64,
    /// Workers on each device, as the daemon would run them there.
    pub workers_per_device: usize,
    /// One row per kind the workload has.
    pub costs: Vec<KindCosts>,
}

/// What arrives, and for how long.
#[derive(Debug, Clone)]
pub struct Workload {
    pub duration: Duration,
    /// Proofs that end before this are not counted (the box filling up, params loading).
    pub warmup: Duration,
    /// Requests arriving at given times.
    pub arrivals: Vec<(Duration, ProofKind)>,
    /// Kinds kept at this many jobs at all times (Curio's `MaxPending`): each that ends is
    /// followed by the next.
    pub in_flight: Vec<(ProofKind, u32)>,
    /// How often the load is sampled for the timeline.
    pub sample_every: Duration,
}

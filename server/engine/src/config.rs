//! The engine's settings, filled by the daemon from its config file, environment and flags.

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Memory every reservation (partitions and params) is taken from.
    pub memory_budget_bytes: u64,
    /// The daemon's own memory (its resident set after startup), charged to the budget for the
    /// engine's life.
    pub baseline_bytes: u64,
    /// Most partition syntheses at once (CPU threads); the budget may allow fewer.
    pub synthesis_threads: usize,
    /// Device workers per device.
    pub workers_per_device: usize,
    /// How long finished jobs stay visible and awaitable.
    pub retention: Duration,
    /// Times a partition whose device phase failed is synthesized and proved again before its
    /// job fails (a device fault, or a partition proof that did not verify).
    pub partition_retries: u32,
    /// Most partitions below HIGH synthesizing or synthesized and waiting for a device at once.
    /// A limit keeps synthesized partitions (each holding its whole reservation) from piling up
    /// in RAM ahead of slower devices, at the cost of idle synthesis threads. HIGH and CRITICAL
    /// partitions are never held back by it.
    pub synthesis_lookahead: Lookahead,
    /// How much unfinished work each priority may hold (so a flood of one priority never
    /// refuses another's).
    pub limits: IntakeLimits,
    /// Nice steps below the process's priority for the threads of NORMAL and LOW partitions
    /// (synthesis and device phase); 0 runs everything at the process's priority.
    pub background_nice: i32,
    /// A deadline partition that finds every worker busy with work below HIGH starts on one at
    /// once (the running phase pauses at its next step boundary); false makes it wait for a
    /// worker to be free.
    pub preempt: bool,
    /// How often the devices are asked for their readings (`Prover::read_devices`); zero never.
    pub device_telemetry_interval: Duration,
    pub version: String,
    pub build_id: String,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            memory_budget_bytes: 16 << 30,
            baseline_bytes: 0,
            synthesis_threads: 1,
            workers_per_device: 1,
            retention: Duration::from_secs(30),
            partition_retries: 1,
            synthesis_lookahead: Lookahead::Limit(0),
            limits: IntakeLimits::default(),
            background_nice: 19,
            preempt: true,
            device_telemetry_interval: Duration::from_secs(5),
            version: String::new(),
            build_id: String::new(),
        }
    }
}

/// How many partitions below HIGH may be synthesizing or waiting for a device at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookahead {
    /// The synthesis threads plus two per device worker: every thread keeps working while about
    /// two partitions wait for each worker.
    Auto,
    /// This many; 0 means no limit beyond the threads and the memory budget.
    Limit(usize),
}

impl Lookahead {
    /// The limit (0: none) for `threads` synthesis threads and `workers` device workers.
    pub fn resolve(self, threads: usize, workers: usize) -> usize {
        match self {
            Lookahead::Auto => threads + 2 * workers,
            Lookahead::Limit(n) => n,
        }
    }
}

/// Limits on accepted, unfinished jobs, applied to each priority on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntakeLimits {
    /// Unfinished (queued or running) jobs of one priority.
    pub queued_jobs: usize,
    /// Input bytes of the unfinished jobs of one priority.
    pub queued_input_bytes: u64,
}

impl Default for IntakeLimits {
    fn default() -> Self {
        IntakeLimits {
            queued_jobs: 256,
            queued_input_bytes: 4 << 30,
        }
    }
}

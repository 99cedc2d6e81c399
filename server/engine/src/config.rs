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

/// Syntheses the automatic lookahead allows at once: each runs on every core of its pool, so
/// two keep the cores busy across one's start and end.
const AUTO_SYNTHESES: usize = 2;

/// How many partitions below HIGH may be synthesizing or waiting for a device at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookahead {
    /// Two partitions synthesizing (each on every core of its pool) and two waiting per device
    /// (however many workers it runs: a second worker overlaps a device's work with its own,
    /// and two waiting keep it fed either way), fewer syntheses where fewer threads are allowed: what keeps the devices and the
    /// cores busy at production size without holding synthesized partitions in memory for
    /// nothing (`snarkd-bench plan`, BENCHMARKS.md "Sizing a box": at 32 GiB more than that
    /// proves no more an hour on 16 or 96 cores and only holds more memory).
    Auto,
    /// This many; 0 means no limit beyond the threads and the memory budget.
    Limit(usize),
}

impl Lookahead {
    /// The limit (0: none) for `threads` synthesis threads and `devices` devices.
    pub fn resolve(self, threads: usize, devices: usize) -> usize {
        match self {
            Lookahead::Auto => threads.min(AUTO_SYNTHESES) + 2 * devices,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_automatic_lookahead_is_two_syntheses_and_two_a_device_whatever_the_cores() {
        assert_eq!(Lookahead::Auto.resolve(1, 1), 3);
        assert_eq!(Lookahead::Auto.resolve(2, 1), 4);
        assert_eq!(Lookahead::Auto.resolve(96, 1), 4);
        assert_eq!(Lookahead::Auto.resolve(16, 2), 6);
        assert_eq!(Lookahead::Limit(7).resolve(96, 1), 7);
    }
}

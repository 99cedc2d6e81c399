//! The proving engine: turns proof requests into verified proofs through a per-partition pipeline
//! (admission under a memory budget → CPU synthesis → device phase → finalize and verify), with
//! priorities, a params cache and a live status feed. It works on domain types only; the API
//! layer converts protobuf to and from them.
//!
//! Layout:
//! - `domain`: requests, priorities and results in the engine's terms.
//! - `error`: the engine's error enum (one gRPC code each, mapped by the API layer).
//! - `lifecycle`: the partition, job and worker states and their edge tables (applied in
//!   `machine/transition.rs`).
//! - `status`: the immutable snapshots readers get.
//! - `failures`: the log of failed jobs and refused requests that snapshots carry.
//! - `history`: jobs ended and worker stints of the last hour (rates, percentiles, utilisation).
//! - `budget`: the memory budget and its RAII reservations.
//! - `clock`: the machine's clocks (tokio's, or a simulation's) and wall-clock milliseconds.
//! - `chunked`: a queue in shared chunks, cheap to copy (the history's).
//! - `chunked_map`: a map in shared chunks, cheap to copy (the snapshots' job views).
//! - `os_priority`: lower OS thread priority for work that has no deadline.
//! - `schedule`: the scheduling order and the synthesis allowance, as pure functions.
//! - `machine`: the engine's state and its single writer (inputs in, effects out).
//! - `driver`: runs the machine and carries out its effects on threads.
//! - `worker`: a device worker's thread, with the preemption at step boundaries.
//! - `steps`: the threads steps run on, and a panic in one caught as its error.
//! - `prover`: the traits a prover implements for the engine (plan, params, synthesis, device phase).
//! - `config`: the engine's settings.
//! - `handle`: `Engine`, the handle the API layer calls.
//! - `journal`: the job journal (SQLite + input files) that makes accepted jobs durable.
//! - `replan`: recovery in the background (the journal's unfinished jobs planned again).
//! - `sim`: the machine in simulated time, its steps' costs from a table (sizing a box).

pub mod budget;
mod chunked;
mod chunked_map;
mod clock;
pub mod domain;
mod driver;
pub mod error;
pub mod failures;
pub mod history;
pub mod journal;
pub mod lifecycle;
mod machine;
pub mod os_priority;
pub mod replan;
pub mod schedule;
pub mod sim;
pub mod status;
mod steps;
mod worker;

pub use domain::*;
pub use error::{EngineError, FailureClass};
pub use status::StatusSnapshot;
pub mod config;
pub mod handle;
#[cfg(test)]
mod handle_tests;
pub mod prover;
#[cfg(any(test, feature = "test-hooks"))]
pub mod test_prover;

pub use config::{EngineConfig, IntakeLimits, Lookahead};
pub use handle::Engine;
pub use journal::{Journal, JournalSettings};

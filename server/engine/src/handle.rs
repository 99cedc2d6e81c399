//! `Engine`: the cheap-to-clone handle the API layer calls. (Being written: signatures are final.)

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::config::EngineConfig;
use crate::domain::{Evicted, JobOutcome, Preloaded, ProofRequest, Submitted};
use crate::error::EngineError;
use crate::prover::Prover;
use crate::status::StatusSnapshot;

#[derive(Clone)]
pub struct Engine {
    status: watch::Receiver<Arc<StatusSnapshot>>,
}

impl Engine {
    /// Starts the engine's threads (synthesis pool, one thread per device worker, the state writer).
    /// Must be called inside a tokio runtime.
    pub fn start(config: EngineConfig, prover: Arc<dyn Prover>) -> Engine {
        todo!("{config:?} {}", prover.backend_name())
    }

    /// Queues a proof. Returns the existing job when `request_id` was seen before.
    pub async fn submit(&self, request: ProofRequest) -> Result<Submitted, EngineError> {
        todo!("{request:?}")
    }

    /// Waits for a job to end, at most `timeout` (`None` waits until it ends).
    pub async fn await_job(
        &self,
        job_id: &str,
        timeout: Option<Duration>,
    ) -> Result<JobOutcome, EngineError> {
        todo!("{job_id} {timeout:?}")
    }

    /// Cancels a job and frees what it holds; returns whether any partition had started.
    pub fn cancel(&self, job_id: &str) -> Result<bool, EngineError> {
        todo!("{job_id}")
    }

    /// The latest state.
    pub fn snapshot(&self) -> Arc<StatusSnapshot> {
        self.status.borrow().clone()
    }

    /// A receiver that sees every new snapshot (intermediate ones may be skipped).
    pub fn subscribe(&self) -> watch::Receiver<Arc<StatusSnapshot>> {
        self.status.clone()
    }

    /// Loads a circuit's params ahead of use.
    pub async fn preload_params(&self, circuit_id: &str) -> Result<Preloaded, EngineError> {
        todo!("{circuit_id}")
    }

    /// Drops a circuit's params if no job holds them.
    pub fn evict_params(&self, circuit_id: &str) -> Result<Evicted, EngineError> {
        todo!("{circuit_id}")
    }

    /// Stops intake: later submits fail with `ShuttingDown`; running jobs go on.
    pub fn begin_drain(&self) {
        todo!()
    }

    /// Resolves when no job is queued or running.
    pub async fn idle(&self) {
        todo!()
    }
}

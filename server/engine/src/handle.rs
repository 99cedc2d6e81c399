//! `Engine`: the cheap-to-clone handle the API layer calls. Every request becomes an input to the
//! single writer (see `machine`); answers come back on oneshot channels. The writer task is
//! supervised: if it ever ends (a panic in it is a bug), `stopped` resolves with the reason and
//! every later request fails with `ShuttingDown`.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch, Notify};

use crate::budget::Budget;
use crate::config::EngineConfig;
use crate::domain::{Evicted, JobEnd, JobOutcome, Preloaded, ProofRequest, Submitted, Timings};
use crate::error::EngineError;
use crate::machine::{Input, JobOrigin, Machine};
use crate::prover::Prover;
use crate::status::StatusSnapshot;

#[derive(Clone)]
pub struct Engine {
    inputs: mpsc::UnboundedSender<Input>,
    status: watch::Receiver<Arc<StatusSnapshot>>,
    prover: Arc<dyn Prover>,
    /// `Some(reason)` once the writer task has ended.
    stopped: watch::Receiver<Option<Arc<str>>>,
    panic_hook: Arc<Notify>,
}

impl Engine {
    /// Starts the engine's writer task and device worker threads. Must be called inside a tokio
    /// runtime; the engine runs until the runtime shuts down.
    pub fn start(config: EngineConfig, prover: Arc<dyn Prover>) -> Engine {
        let (tx, rx) = mpsc::unbounded_channel();
        let wake = tx.clone();
        let budget = Budget::new(config.memory_budget_bytes, move || {
            let _ = wake.send(Input::MemoryFreed);
        });
        let machine = Machine::new(config, prover.clone(), budget);
        let (status_tx, status_rx) = watch::channel(Arc::new(machine.snapshot()));
        let panic_hook = Arc::new(Notify::new());
        let writer = tokio::spawn(crate::driver::run(
            machine,
            rx,
            tx.clone(),
            status_tx,
            prover.clone(),
            panic_hook.clone(),
        ));
        let (stopped_tx, stopped) = watch::channel(None);
        tokio::spawn(async move {
            let reason: Arc<str> = match writer.await {
                Ok(()) => "the writer task returned".into(),
                Err(err) if err.is_panic() => format!(
                    "the writer task panicked: {}",
                    crate::driver::panic_message(&*err.into_panic())
                )
                .into(),
                Err(_) => "the writer task was cancelled".into(),
            };
            tracing::error!(%reason, "the engine stopped: no request can be served any more");
            let _ = stopped_tx.send(Some(reason));
        });
        Engine {
            inputs: tx,
            status: status_rx,
            prover,
            stopped,
            panic_hook,
        }
    }

    /// Why the engine stopped, once its writer task has ended; `None` while it runs.
    pub fn stopped_reason(&self) -> Option<Arc<str>> {
        self.stopped.borrow().clone()
    }

    /// Resolves when the engine's writer task has ended, with the reason.
    pub async fn stopped(&self) -> Arc<str> {
        let mut stopped = self.stopped.clone();
        let reason = match stopped.wait_for(Option::is_some).await {
            Ok(reason) => reason.clone().expect("waited for Some"),
            Err(_) => "the runtime is shutting down".into(),
        };
        reason
    }

    /// Test hook: makes the writer task panic, as a bug in it would.
    pub fn panic_writer_for_test(&self) {
        self.panic_hook.notify_one();
    }

    /// Queues a proof. Returns the existing job when `request_id` was seen before. The request is
    /// decoded once, on a blocking thread; decoding errors are `InvalidRequest`.
    pub async fn submit(&self, request: ProofRequest) -> Result<Submitted, EngineError> {
        let kind = request
            .kind
            .ok_or_else(|| EngineError::InvalidRequest("proof_kind is required: set one of POREP_SEAL_COMMIT, SNAP_DEALS_UPDATE, WINDOW_POST_PARTITION, WINNING_POST".into()))?;
        if !request.request_id.is_empty() {
            let request_id = request.request_id.clone();
            if let Some(existing) = self
                .ask(|reply| Input::FindRequest { request_id, reply })
                .await?
            {
                return Ok(existing);
            }
        }
        let origin = JobOrigin {
            request_id: request.request_id.clone(),
            kind,
            priority: request.priority.unwrap_or_else(|| kind.default_priority()),
            input_bytes: request.input_bytes(),
        };
        let prover = self.prover.clone();
        let plan = tokio::task::spawn_blocking(move || prover.plan(request))
            .await
            .map_err(|e| {
                EngineError::Prover(format!("internal error while decoding the request: {e}"))
            })??;
        self.ask(|reply| Input::Submit {
            origin,
            plan,
            reply,
        })
        .await?
    }

    /// Waits for a job to end, at most `timeout` (`None` waits until it ends). A wait that runs
    /// out returns `JobEnd::TimedOut`; the job goes on.
    pub async fn await_job(
        &self,
        job_id: &str,
        timeout: Option<Duration>,
    ) -> Result<JobOutcome, EngineError> {
        let id = job_id.to_string();
        let mut outcome = self
            .ask(|reply| Input::Watch { job_id: id, reply })
            .await?
            .ok_or_else(|| EngineError::UnknownJob(job_id.to_string()))?;
        let ended = async {
            match outcome.wait_for(Option::is_some).await {
                Ok(done) => done.clone(),
                Err(_) => None,
            }
        };
        let result = match timeout {
            Some(limit) => tokio::time::timeout(limit, ended).await.ok().flatten(),
            None => ended.await,
        };
        Ok(result.unwrap_or_else(|| JobOutcome {
            job_id: job_id.to_string(),
            end: JobEnd::TimedOut,
            timings: Timings::default(),
        }))
    }

    /// Cancels a job and frees what it holds; returns whether any partition had started.
    pub async fn cancel(&self, job_id: &str) -> Result<bool, EngineError> {
        let job_id = job_id.to_string();
        self.ask(|reply| Input::Cancel { job_id, reply }).await?
    }

    /// The latest state.
    pub fn snapshot(&self) -> Arc<StatusSnapshot> {
        self.status.borrow().clone()
    }

    /// A receiver that sees every new snapshot (intermediate ones may be skipped).
    pub fn subscribe(&self) -> watch::Receiver<Arc<StatusSnapshot>> {
        self.status.clone()
    }

    /// Loads a circuit's params ahead of use; resolves when they are loaded.
    pub async fn preload_params(&self, circuit_id: &str) -> Result<Preloaded, EngineError> {
        let circuit_id = circuit_id.to_string();
        self.ask(|reply| Input::Preload { circuit_id, reply })
            .await?
    }

    /// Drops a circuit's params if no job holds them.
    pub async fn evict_params(&self, circuit_id: &str) -> Result<Evicted, EngineError> {
        let circuit_id = circuit_id.to_string();
        self.ask(|reply| Input::Evict { circuit_id, reply }).await?
    }

    /// Stops intake: later submits fail with `ShuttingDown`; queued and running jobs go on.
    pub fn begin_drain(&self) {
        let _ = self.inputs.send(Input::Drain);
    }

    /// Resolves when no job is queued or running.
    pub async fn idle(&self) {
        let mut changes = self.subscribe();
        loop {
            match self.ask(|reply| Input::Idle { reply }).await {
                Ok(true) | Err(_) => return,
                Ok(false) => {
                    if changes.changed().await.is_err() {
                        return;
                    }
                }
            }
        }
    }

    async fn ask<T>(
        &self,
        input: impl FnOnce(oneshot::Sender<T>) -> Input,
    ) -> Result<T, EngineError> {
        let (reply, answer) = oneshot::channel();
        self.inputs
            .send(input(reply))
            .map_err(|_| EngineError::ShuttingDown)?;
        answer.await.map_err(|_| EngineError::ShuttingDown)
    }
}

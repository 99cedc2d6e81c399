//! `Engine`: the cheap-to-clone handle the API layer calls. Every request becomes an input to the
//! single writer (see `machine`); answers come back on oneshot channels. The writer task is
//! supervised: if it ever ends (a panic in it is a bug), `stopped` resolves with the reason and
//! every later request fails with `ShuttingDown`.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch, Notify, Semaphore};

use crate::budget::Budget;
use crate::config::EngineConfig;
use crate::domain::{Evicted, JobOutcome, Preloaded, ProofRequest, Submitted};
use crate::error::EngineError;
use crate::journal::{
    encode_input, InputDigest, Journal, JournalError, JournalReader, JournalThread, Recovery,
    Unplanned, INLINE_INPUT_BYTES,
};
use crate::machine::{ApiSlot, Input, Intake, IntakeSlot, JobOrigin, Machine, Request, Ticket};
use crate::prover::Prover;
use crate::status::StatusSnapshot;

/// The engine as the API layer holds it, whatever its prover: the prover's types stay behind
/// [`Writer`].
#[derive(Clone)]
pub struct Engine {
    writer: Arc<dyn Writer>,
    status: watch::Receiver<Arc<StatusSnapshot>>,
    /// Results of finished jobs and the input files (when the engine runs on a journal).
    journal: Option<Arc<JournalReader>>,
    /// `Some(reason)` once the writer task has ended.
    stopped: watch::Receiver<Option<Arc<str>>>,
    /// Places for API requests in the writer's queue ([`API_INPUTS`]).
    pub(crate) api_slots: Arc<Semaphore>,
    #[cfg_attr(not(feature = "test-hooks"), allow(dead_code))]
    panic_hook: Arc<Notify>,
}

/// API requests that may wait for the writer at once; a caller past them waits for a place.
pub(crate) const API_INPUTS: usize = 1024;

/// The single writer as the handle sees it.
trait Writer: Send + Sync {
    /// Hands `request`, with its place in the queue, to the writer; false once it has stopped.
    fn send(&self, request: Request, slot: ApiSlot) -> bool;
    /// Decodes `request` with the prover (on the calling thread, a blocking one).
    fn plan(&self, request: ProofRequest) -> Result<PlannedJob, EngineError>;
    /// The prover's estimate of a circuit's params (it may read files: a blocking thread's).
    fn params_size_estimate(&self, circuit_id: &str) -> u64;
}

/// A planned request, ready to become a job: it holds the prover's plan, typed, and hands it to
/// the writer with the job's id and facts; false once the writer has stopped.
struct PlannedJob(Box<dyn FnOnce(NewJob) -> bool + Send>);

/// What a submit adds to a plan to make it a job.
struct NewJob {
    job_id: String,
    origin: JobOrigin,
    inline_input: Option<Vec<u8>>,
    slot: IntakeSlot,
    reply: oneshot::Sender<Result<Submitted, EngineError>>,
}

/// [`Writer`] for a prover `P`: its input channel, and the prover that plans.
struct Inbox<P: Prover> {
    inputs: mpsc::UnboundedSender<Input<P>>,
    prover: Arc<P>,
}

impl<P: Prover> Writer for Inbox<P> {
    fn send(&self, request: Request, slot: ApiSlot) -> bool {
        self.inputs.send(Input::Api(request, slot)).is_ok()
    }

    fn plan(&self, request: ProofRequest) -> Result<PlannedJob, EngineError> {
        let plan = self.prover.plan(request)?;
        let params_bytes = self.prover.params_size_estimate(&plan.circuit_id);
        let inputs = self.inputs.clone();
        Ok(PlannedJob(Box::new(move |job: NewJob| {
            let submit = Input::Submit {
                job_id: job.job_id,
                origin: job.origin,
                plan,
                params_bytes,
                inline_input: job.inline_input,
                slot: job.slot,
                reply: job.reply,
            };
            inputs.send(submit).is_ok()
        })))
    }

    fn params_size_estimate(&self, circuit_id: &str) -> u64 {
        self.prover.params_size_estimate(circuit_id)
    }
}

impl Engine {
    /// Starts the engine's writer task and device worker threads, with no journal: jobs live in
    /// memory only. Must be called inside a tokio runtime; the engine runs until the runtime
    /// shuts down.
    pub fn start<P: Prover>(config: EngineConfig, prover: Arc<P>) -> Engine {
        Engine::launch(config, prover, None, Restored::default())
    }

    /// Starts the engine on a job journal: the unfinished jobs recorded in it are read back
    /// (their records, not their inputs) and shown as queued before this returns, then planned
    /// again and re-admitted in the background (`crate::replan`) with their ids, priorities and
    /// order, without proving the partitions the journal has proofs for. Meanwhile the engine
    /// serves: a retry of a recovering job attaches to it. Every job accepted from now on is
    /// recorded in the journal.
    pub async fn open<P: Prover>(
        config: EngineConfig,
        prover: Arc<P>,
        journal: Journal,
    ) -> Result<Engine, JournalError> {
        let started = std::time::Instant::now();
        let (journal, restored) = tokio::task::spawn_blocking(move || read_back(journal))
            .await
            .map_err(|e| JournalError::Recovery(e.to_string()))??;
        let jobs = restored.jobs.len();
        let recovery = journal.recovery()?;
        let engine = Engine::launch(
            config,
            prover,
            Some((journal.into_parts()?, recovery)),
            restored,
        );
        tracing::info!(
            jobs,
            ms = started.elapsed().as_millis() as u64,
            "job journal recovered"
        );
        Ok(engine)
    }

    fn launch<P: Prover>(
        config: EngineConfig,
        prover: Arc<P>,
        journal: Option<((Arc<JournalReader>, JournalThread), Recovery)>,
        restored: Restored,
    ) -> Engine {
        let (tx, rx) = mpsc::unbounded_channel();
        let wake = tx.clone();
        let budget = Budget::new(config.memory_budget_bytes, move || {
            let _ = wake.send(Input::MemoryFreed);
        });
        let config_interval = config.device_telemetry_interval;
        let mut machine = Machine::new(config, prover.clone(), budget);
        let (reader, records, recovery) = match journal {
            Some(((reader, thread), recovery)) => {
                machine.resume_numbering(restored.next_seq);
                machine.use_journal();
                let (records, incoming) = std::sync::mpsc::channel();
                let engine = tx.clone();
                let report = move |acceptance| {
                    let _ = engine.send(Input::Journal(acceptance));
                };
                std::thread::Builder::new()
                    .name("snarkd-journal".into())
                    .spawn(move || thread.run(incoming, report))
                    .expect("the OS refused to start a thread");
                (Some(reader), Some(records), Some(recovery))
            }
            None => (None, None, None),
        };
        machine.remember(restored.past);
        machine.await_recovery(restored.jobs.iter().map(|u| u.job.clone()).collect());
        if let Some(recovery) = recovery {
            crate::replan::spawn(recovery, restored.jobs, prover.clone(), tx.clone());
        }
        start_device_readings(prover.clone(), config_interval, tx.clone());
        let (status_tx, status_rx) = watch::channel(Arc::new(machine.snapshot()));
        let panic_hook = Arc::new(Notify::new());
        let writer = tokio::spawn(crate::driver::run(
            machine,
            rx,
            tx.clone(),
            status_tx,
            prover.clone(),
            records,
            panic_hook.clone(),
        ));
        let (stopped_tx, stopped) = watch::channel(None);
        tokio::spawn(async move {
            let reason: Arc<str> = match writer.await {
                Ok(()) => "the writer task returned".into(),
                Err(err) if err.is_panic() => format!(
                    "the writer task panicked: {}",
                    snarkd_types::panic_message(&*err.into_panic())
                )
                .into(),
                Err(_) => "the writer task was cancelled".into(),
            };
            tracing::error!(%reason, "the engine stopped: no request can be served any more");
            let _ = stopped_tx.send(Some(reason));
        });
        Engine {
            writer: Arc::new(Inbox { inputs: tx, prover }),
            status: status_rx,
            journal: reader,
            stopped,
            api_slots: Arc::new(Semaphore::new(API_INPUTS)),
            panic_hook,
        }
    }

    /// Resolves once recovery has planned again every job read back from the journal, or
    /// ended it, or left it waiting for its params (at once without a journal).
    pub async fn recovered(&self) {
        let mut changes = self.subscribe();
        let _ = changes.wait_for(|s| s.daemon.recovering_jobs == 0).await;
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
    #[cfg(feature = "test-hooks")]
    pub fn panic_writer_for_test(&self) {
        self.panic_hook.notify_one();
    }

    /// With the `test-hooks` feature (the daemon's integration tests), `SNARKD_TEST_PANIC_ENGINE`
    /// set makes the writer task panic now; without it (every build that ships) this does
    /// nothing and the binary reads no such variable.
    pub fn follow_test_hooks(&self) {
        #[cfg(feature = "test-hooks")]
        if std::env::var_os("SNARKD_TEST_PANIC_ENGINE").is_some() {
            tracing::warn!(
                "SNARKD_TEST_PANIC_ENGINE is set: making the engine's writer task panic"
            );
            self.panic_writer_for_test();
        }
    }

    /// Queues a proof. Returns the live job of the same `request_id`, kind and input when there
    /// is one (queued, running or completed); a failed or cancelled one gets a new attempt. A
    /// blocking step hashes the request and looks for a completed job of it in the journal; one
    /// writer input decides on it before it is decoded (intake open, a live job of it by index,
    /// the limits: a refused or repeated submit is never decoded); a second blocking step writes
    /// it once in the journal's format and decodes it (errors are `InvalidRequest`); a second
    /// writer input makes it a job. With a journal, the answer comes once the job is on disk.
    pub async fn submit(&self, request: ProofRequest) -> Result<Submitted, EngineError> {
        self.submit_holding(request, ()).await
    }

    /// [`Engine::submit`], keeping `held` (the API's decoding slot) until the submit returns or,
    /// when its caller goes away first, until the blocking work already begun for it (hashing,
    /// writing, decoding) has ended: what `held` stands for is never freed while that work
    /// still runs. Work not yet begun is not begun.
    pub async fn submit_holding<T: Send + 'static>(
        &self,
        request: ProofRequest,
        held: T,
    ) -> Result<Submitted, EngineError> {
        let kind = request.kind();
        let ticket = Ticket {
            request_id: request.request_id.clone(),
            kind,
            priority: request.priority.unwrap_or_else(|| kind.default_priority()),
            input_bytes: request.input_bytes(),
        };
        let journal = self.journal.clone();
        let (request, digest, completed, held) = blocking(move || {
            let digest = InputDigest::of(&request);
            // A completed job that has left memory is answered from the journal.
            let completed = match (&journal, request.request_id.is_empty()) {
                (Some(journal), false) => journal.completed(&request.request_id, kind, &digest)?,
                _ => None,
            };
            Ok((request, digest, completed, held))
        })
        .await?;
        if let Some(job_id) = completed {
            return Ok(Submitted {
                job_id,
                queue_position: 0,
                existing: true,
            });
        }
        let origin = ticket.with_digest(digest);
        let asked = origin.clone();
        let slot = match self
            .ask(|reply| Request::Intake {
                origin: asked,
                reply,
            })
            .await??
        {
            Intake::Existing(existing) => return Ok(existing),
            Intake::Granted(slot) => slot,
        };
        let job_id = uuid::Uuid::new_v4().to_string();
        let (writer, journal, id) = (self.writer.clone(), self.journal.clone(), job_id.clone());
        // The place under the limits goes with the work, like `held`: a caller that goes away
        // does not free it while the input is still being written and decoded.
        let (plan, inline_input, input, held, slot) = blocking(move || {
            let unwritten =
                |e: std::io::Error| EngineError::Journal(format!("cannot write the input: {e}"));
            // A small input goes into the journal row (one flush with the record); a large one
            // is a file, written while the request is still whole.
            let (inline, pending) = match &journal {
                Some(_) if request.input_bytes() <= INLINE_INPUT_BYTES => {
                    (Some(encode_input(&request)), None)
                }
                Some(journal) => {
                    let pending = journal.inputs.write_pending(&id, &request);
                    (None, Some(pending.map_err(unwritten)?))
                }
                None => (None, None),
            };
            let plan = writer.plan(request)?;
            let input = pending.map(|p| p.commit()).transpose().map_err(unwritten)?;
            Ok((plan, inline, input, held, slot))
        })
        .await?;
        let (reply, answer) = oneshot::channel();
        let job = NewJob {
            job_id,
            origin,
            inline_input,
            slot,
            reply,
        };
        if !(plan.0)(job) {
            return Err(EngineError::ShuttingDown);
        }
        let submitted = answer.await.map_err(|_| EngineError::ShuttingDown)??;
        if let (false, Some(input)) = (submitted.existing, input) {
            input.keep();
        }
        drop(held);
        Ok(submitted)
    }

    /// Waits for a job to end.
    pub async fn await_job(&self, job_id: &str) -> Result<JobOutcome, EngineError> {
        let outcome = self.await_job_within(job_id, None).await?;
        Ok(outcome.expect("a wait without a limit ends only with the job"))
    }

    /// Waits for a job to end, at most `limit` (`None`: until it ends). `None` back means the
    /// wait ran out; the job goes on.
    pub async fn await_job_within(
        &self,
        job_id: &str,
        limit: Option<Duration>,
    ) -> Result<Option<JobOutcome>, EngineError> {
        let id = job_id.to_string();
        let watched = self
            .ask(|reply| Request::Watch { job_id: id, reply })
            .await?;
        let Some(mut outcome) = watched else {
            return self.stored_result(job_id).await.map(Some);
        };
        let ended = async {
            match outcome.wait_for(Option::is_some).await {
                Ok(done) => done.clone(),
                // The writer dropped the job's channel: it stopped.
                Err(_) => None,
            }
        };
        let ended = match limit {
            Some(limit) => match tokio::time::timeout(limit, ended).await {
                Ok(ended) => ended,
                Err(_) => return Ok(None),
            },
            None => ended.await,
        };
        ended.map(Some).ok_or(EngineError::ShuttingDown)
    }

    /// A finished job's outcome from the journal, for a job no longer in memory.
    async fn stored_result(&self, job_id: &str) -> Result<JobOutcome, EngineError> {
        let unknown = || EngineError::UnknownJob(job_id.to_string());
        let Some(journal) = self.journal.clone() else {
            return Err(unknown());
        };
        let id = job_id.to_string();
        blocking(move || journal.result(&id))
            .await?
            .ok_or_else(unknown)
    }

    /// Resolves once everything recorded so far is on disk (at once without a journal).
    pub async fn flush_journal(&self) {
        let _ = self.ask(|reply| Request::FlushJournal { reply }).await;
    }

    /// Cancels a job and frees what it holds; returns whether any partition had started.
    pub async fn cancel(&self, job_id: &str) -> Result<bool, EngineError> {
        let job_id = job_id.to_string();
        self.ask(|reply| Request::Cancel { job_id, reply }).await?
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
        let (writer, id) = (self.writer.clone(), circuit_id.to_string());
        let params_bytes = blocking(move || Ok(writer.params_size_estimate(&id))).await?;
        let circuit_id = circuit_id.to_string();
        self.ask(|reply| Request::Preload {
            circuit_id,
            params_bytes,
            reply,
        })
        .await?
    }

    /// Drops a circuit's params if no job holds them.
    pub async fn evict_params(&self, circuit_id: &str) -> Result<Evicted, EngineError> {
        let circuit_id = circuit_id.to_string();
        self.ask(|reply| Request::Evict { circuit_id, reply })
            .await?
    }

    /// Logs a request the API refused at submit (it never became a job), so that snapshots show
    /// it in their failure log.
    pub fn note_refusal(&self, failure: crate::failures::Failure) {
        // A flood of refusals waits for no place: past the queue's places, one is not logged.
        match self.api_slots.clone().try_acquire_owned() {
            Ok(permit) => {
                self.writer
                    .send(Request::Refused(failure), ApiSlot::held(permit));
            }
            Err(_) => {
                tracing::debug!("a refusal not added to the failure log: the writer is behind")
            }
        }
    }

    /// Stops intake: later submits fail with `ShuttingDown`; queued and running jobs go on.
    pub fn begin_drain(&self) {
        self.writer.send(Request::Drain, ApiSlot::default());
    }

    /// Resolves when no job is queued or running.
    pub async fn idle(&self) {
        let mut changes = self.subscribe();
        loop {
            match self.ask(|reply| Request::Idle { reply }).await {
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
        request: impl FnOnce(oneshot::Sender<T>) -> Request,
    ) -> Result<T, EngineError> {
        // Waits here while API_INPUTS requests wait for the writer.
        let permit = (self.api_slots.clone().acquire_owned().await)
            .map_err(|_| EngineError::ShuttingDown)?;
        let (reply, answer) = oneshot::channel();
        if !self.writer.send(request(reply), ApiSlot::held(permit)) {
            return Err(EngineError::ShuttingDown);
        }
        answer.await.map_err(|_| EngineError::ShuttingDown)
    }
}

/// Runs `f` on the blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, EngineError> + Send + 'static,
) -> Result<T, EngineError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| EngineError::Internal(format!("a blocking step of the intake failed: {e}")))?
}

/// What the journal hands the engine at startup: the unfinished jobs (to be planned again in
/// the background), the next free submit sequence number and the last hour's history.
#[derive(Default)]
struct Restored {
    jobs: Vec<Unplanned>,
    next_seq: u64,
    past: crate::history::Past,
}

/// Reads the unfinished jobs' records and the last hour back (not the jobs' inputs).
fn read_back(mut journal: Journal) -> Result<(Journal, Restored), JournalError> {
    let (jobs, next_seq) = journal.recover()?;
    let past = journal.recent_past(crate::clock::unix_ms())?;
    Ok((
        journal,
        Restored {
            jobs,
            next_seq,
            past,
        },
    ))
}

/// Asks the prover for its devices' readings every `interval` on a thread of its own (a driver
/// call may block), until the engine is gone; not at all for a zero interval or a prover whose
/// first answer is empty.
fn start_device_readings<P: Prover>(
    prover: Arc<P>,
    interval: Duration,
    engine: mpsc::UnboundedSender<Input<P>>,
) {
    if interval.is_zero() {
        return;
    }
    std::thread::Builder::new()
        .name("snarkd-devices".into())
        .spawn(move || {
            let mut readings = prover.read_devices();
            if readings.is_empty() {
                return;
            }
            while engine.send(Input::Devices(readings)).is_ok() {
                std::thread::sleep(interval);
                readings = prover.read_devices();
            }
        })
        .expect("the OS refused to start a thread");
}

//! The engine's state and its single writer. `Machine::apply` takes one [`Input`] (a request from
//! the API or a finished step from a worker thread), changes state only through
//! `Machine::transition`, and returns the [`Effect`]s the driver must start. It never blocks and
//! never does heavy work, so it runs on the async runtime; everything heavy is an effect.
//!
//! Layout:
//! - `inputs`: inputs, requests and effects.
//! - `intake_slots`: a submit's place under the limits while it is planned.
//! - `jobs`: the jobs with the indexes inputs read and the views snapshots show.
//! - `records`: the per-job, partition, worker and params records.
//! - `transition`: the one function that changes partition and worker state.
//! - `intake`: submit, cancel, preload, evict and retention.
//! - `progress`: finished synthesis, device and finalize steps.
//! - `admit`: admission under the budget, params loading and eviction, dispatch to workers.
//! - `restore`: jobs recovered from the journal made jobs again, and journal failures.
//! - `recovering`: recovered jobs waiting for their plan (recovery runs in the background).
//! - `snapshot`: the read-only status snapshot.
//! - `stages`: the partitions of unfinished jobs by stage, in scheduling order.

mod admit;
mod inputs;
mod intake;
mod intake_slots;
mod jobs;
mod progress;
mod records;
mod recovering;
mod restore;
mod snapshot;
mod stages;
mod transition;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::budget::Budget;
use crate::config::EngineConfig;
use crate::journal::record::FromJournal;
use crate::lifecycle::WorkerStep;
use crate::prover::{DeviceInfo, Prover};

pub(crate) use inputs::{
    Answer, ApiSlot, DeviceTask, Effect, Input, Intake, IntakeSlot, JobOrigin, Request, RequestKey,
    StopSignal, Ticket,
};
#[cfg(test)]
pub(crate) use jobs::WriterWork;
use records::{
    Duty, Job, JobPhase, Moment, ParamsEntry, ParamsSlot, Part, Stage, Tally, Task, Worker,
};
use recovering::Recovering;
pub(crate) use recovering::Replanned;

/// The whole mutable state of the engine, owned by one writer.
pub(crate) struct Machine<P: Prover> {
    config: EngineConfig,
    prover: Arc<P>,
    budget: Budget,
    /// The daemon's own memory, charged to the budget for the machine's life.
    _baseline: crate::budget::Reservation,
    started_unix_ms: u64,
    /// Jobs by submit sequence number (which is also their age order).
    jobs: jobs::Jobs<P>,
    job_ids: HashMap<String, u64>,
    /// The live (not failed or cancelled) job of each request id, kind and input.
    request_ids: HashMap<RequestKey, u64>,
    next_seq: u64,
    /// Jobs read back from the journal, by sequence number, until recovery plans them again.
    recovering: BTreeMap<u64, Recovering>,
    workers: Vec<Worker>,
    params: HashMap<String, ParamsEntry<P>>,
    /// Estimated bytes of each circuit's params, from the planning threads (the writer never
    /// reads a file): used while they are not loaded.
    params_estimates: HashMap<String, u64>,
    /// Partitions of unfinished jobs by stage, in scheduling order.
    stages: stages::Stages,
    /// The device phases running (by job and partition), each to be told to stop if its job
    /// ends first.
    device_phases: HashMap<(u64, u32), StopSignal>,
    /// The prover's backend, as the status names it.
    backend: String,
    /// A GPU was asked for and the CPU proves instead.
    gpu_fallback: bool,
    synth_active: usize,
    draining: bool,
    /// Why the journal cannot be written, while it cannot: no new work is taken, and no ended
    /// job leaves memory (its end may not be on disk yet).
    journal_unwritable: Option<String>,
    /// Jobs are recorded in a journal: they start once their acceptance is on disk.
    journaled: bool,
    counters: Tally,
    /// Submits granted a place under the limits and being planned.
    intake_slots: Arc<intake_slots::IntakeSlots>,
    /// Failed jobs and refused requests, for the snapshots.
    failures: crate::failures::FailureLog,
    /// Jobs ended and worker stints of the last hour, shared with the snapshots.
    history: Arc<crate::history::History>,
    /// The devices' latest readings, by ordinal.
    devices: Vec<crate::prover::DeviceTelemetry>,
    /// Bumped by every change a reader could see.
    sequence: u64,
    /// Effects requested while applying the current input.
    effects: Vec<Effect<P>>,
    /// Every partition edge taken, for the invariant tests.
    #[cfg(test)]
    edges: Vec<(
        u64,
        u32,
        crate::lifecycle::PartitionState,
        crate::lifecycle::PartitionState,
    )>,
}

impl<P: Prover> Machine<P> {
    pub(crate) fn new(config: EngineConfig, prover: Arc<P>, budget: Budget) -> Machine<P> {
        let mut workers = Vec::new();
        for device in prover.devices() {
            for _ in 0..device.workers.max(1) {
                let id = workers.len() as u32;
                workers.push(Worker::new(id, device.clone()));
            }
        }
        let _baseline = budget.charge_held(crate::budget::Holder::Baseline, config.baseline_bytes);
        if let Some(spare) = prover.spare_memory() {
            budget.keep_spare(spare);
        }
        let backend = prover.backend_name();
        let gpu_fallback = prover.gpu_fallback();
        Machine {
            config,
            prover,
            budget,
            _baseline,
            started_unix_ms: unix_ms(),
            jobs: Default::default(),
            job_ids: HashMap::new(),
            request_ids: HashMap::new(),
            next_seq: 0,
            recovering: BTreeMap::new(),
            workers,
            params: HashMap::new(),
            params_estimates: HashMap::new(),
            stages: Default::default(),
            device_phases: HashMap::new(),
            backend,
            gpu_fallback,
            synth_active: 0,
            draining: false,
            journal_unwritable: None,
            journaled: false,
            counters: Tally::default(),
            intake_slots: Default::default(),
            failures: Default::default(),
            history: Default::default(),
            devices: Vec::new(),
            sequence: 0,
            effects: Vec::new(),
            #[cfg(test)]
            edges: Vec::new(),
        }
    }

    /// The synthesis lookahead on this machine's threads and devices (0: no limit).
    /// Runs at every admission pass, so it counts without allocating: `new` makes the workers
    /// device by device, so a device begins wherever the ordinal changes.
    pub(super) fn lookahead(&self) -> usize {
        let changes = (self.workers.windows(2))
            .filter(|w| w[0].device.ordinal != w[1].device.ordinal)
            .count();
        let devices = usize::from(!self.workers.is_empty()) + changes;
        (self.config.synthesis_lookahead).resolve(self.config.synthesis_threads.max(1), devices)
    }

    /// From now on a job starts only once the journal reports it recorded.
    pub(crate) fn use_journal(&mut self) {
        self.journaled = true;
    }

    /// Makes the next submit's sequence number `next` (after recovery: past every recorded one).
    pub(crate) fn resume_numbering(&mut self, next: u64) {
        self.next_seq = self.next_seq.max(next);
    }

    /// Whether deadline partitions preempt work without a deadline (`[scheduler] preempt`).
    pub(crate) fn preempts(&self) -> bool {
        self.config.preempt
    }

    /// Nice steps below the process's priority for work without a deadline.
    pub(crate) fn background_nice(&self) -> i32 {
        self.config.background_nice
    }

    /// The devices of the workers, by worker id.
    pub(crate) fn worker_devices(&self) -> Vec<DeviceInfo> {
        self.workers.iter().map(|w| w.device.clone()).collect()
    }

    /// Applies one input and returns what must be started.
    pub(crate) fn apply(&mut self, input: Input<P>) -> Vec<Effect<P>> {
        match input {
            // The request's place in the queue is given back once it is applied.
            Input::Api(request, _slot) => self.request(request),
            Input::Submit {
                job_id,
                origin,
                plan,
                params_bytes,
                inline_input,
                slot,
                reply,
            } => {
                self.note_params_estimate(&plan.circuit_id, params_bytes);
                self.submit(job_id, origin, plan, inline_input, reply);
                // The job, if accepted, now counts itself under the limits.
                drop(slot);
            }
            Input::SynthDone {
                job,
                index,
                result,
                reservation,
            } => self.synth_done(job, index, result, reservation),
            Input::AbcReleased { job, index } => self.abc_released(job, index),
            Input::DeviceDone {
                worker,
                job,
                index,
                result,
                reservation,
            } => self.device_done(worker, job, index, result, reservation),
            Input::ParamsLoaded { circuit_id, result } => self.params_loaded(circuit_id, result),
            Input::Finalized {
                job,
                result,
                elapsed,
            } => self.finalized(job, result, elapsed),
            Input::Journal(FromJournal::Failed { job_id, message }) => {
                self.journal_failed(&job_id, &message)
            }
            Input::Journal(FromJournal::Recorded { job_id }) => self.recorded(&job_id),
            Input::Journal(FromJournal::Unwritable { message }) => {
                self.journal_unwritable = Some(message);
                self.changed();
            }
            Input::Journal(FromJournal::Writable) => {
                self.journal_unwritable = None;
                self.changed();
            }
            Input::Replanned { seq, result } => self.replanned(seq, result),
            Input::Devices(readings) => self.note_devices(readings),
            Input::MemoryFreed => {}
            Input::Tick => self.expire_finished(),
        }
        self.schedule();
        std::mem::take(&mut self.effects)
    }

    fn request(&mut self, request: Request) {
        match request {
            Request::Intake { origin, reply } => {
                let granted = self.intake(&origin);
                self.answer(reply, granted);
            }
            Request::Watch { job_id, reply } => {
                let rx = (self.job_ids.get(&job_id).and_then(|s| self.jobs.get(s)))
                    .map(|j| j.outcome.subscribe())
                    .or_else(|| self.watch_recovering(&job_id));
                self.answer(reply, rx);
            }
            Request::Cancel { job_id, reply } => {
                let cancelled = match self.cancel_recovering(&job_id) {
                    Some(cancelled) => Ok(cancelled),
                    None => self.cancel(&job_id),
                };
                self.answer(reply, cancelled);
            }
            Request::Preload {
                circuit_id,
                params_bytes,
                reply,
            } => self.preload(circuit_id, params_bytes, reply),
            Request::Evict { circuit_id, reply } => {
                let evicted = self.evict(&circuit_id);
                self.answer(reply, evicted);
            }
            Request::Drain => {
                self.draining = true;
                self.changed();
            }
            Request::Idle { reply } => {
                let idle = self.recovering_idle() && self.jobs.all_finished();
                self.answer(reply, idle);
            }
            Request::Refused(failure) => {
                self.failures.push(failure);
                self.changed();
            }
            Request::FlushJournal { reply } => self.effects.push(Effect::FlushJournal(reply)),
        }
    }

    /// Keeps the readings of this machine's devices; equal readings change nothing.
    fn note_devices(&mut self, mut readings: Vec<crate::prover::DeviceTelemetry>) {
        readings.retain(|r| self.workers.iter().any(|w| w.device.ordinal == r.ordinal));
        readings.sort_by_key(|r| r.ordinal);
        readings.dedup_by_key(|r| r.ordinal);
        if readings != self.devices {
            self.devices = readings;
            self.changed();
        }
    }

    fn changed(&mut self) {
        self.sequence += 1;
    }

    /// Answers `reply` once the snapshot after this input is published.
    fn answer<T: Send + 'static>(&mut self, reply: tokio::sync::oneshot::Sender<T>, value: T) {
        self.effects
            .push(Effect::Answer(Answer::reply(reply, value)));
    }

    /// Tells a job's watchers (`to`) how it ended, once the snapshot after this input is
    /// published.
    fn answer_outcome(
        &mut self,
        to: tokio::sync::watch::Sender<Option<crate::domain::JobOutcome>>,
        outcome: crate::domain::JobOutcome,
    ) {
        self.effects
            .push(Effect::Answer(Answer::outcome(to, outcome)));
    }

    /// What a snapshot would show has changed when this has: the count of changes, and the
    /// budget's use (reservations are returned on other threads).
    pub(crate) fn version(&self) -> (u64, u64) {
        (self.sequence, self.budget.used())
    }

    /// Records the estimated size of a circuit's params, made on a planning thread.
    fn note_params_estimate(&mut self, circuit_id: &str, bytes: u64) {
        if self.params_estimates.get(circuit_id) != Some(&bytes) {
            self.params_estimates.insert(circuit_id.to_string(), bytes);
        }
    }

    /// What the writer has done so far, counted.
    #[cfg(test)]
    pub(crate) fn work(&self) -> WriterWork {
        self.jobs.work()
    }

    /// The prover's plan of job `seq`, while the job is known.
    pub(crate) fn job_plan(&self, seq: u64) -> Option<&P::Plan> {
        self.jobs.get(&seq).map(|j| &*j.plan)
    }

    fn worker_is_idle(&self, id: u32) -> bool {
        self.workers[id as usize].duty.step() == WorkerStep::Idle
    }
}

pub(crate) use crate::clock::unix_ms;

#[cfg(test)]
mod tests;

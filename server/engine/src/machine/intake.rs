//! Requests from the API: submit, cancel, preload, evict; and the retention of finished jobs.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

use super::transition::Change;
use super::transition::JobChange;
use super::JobPhase;
use super::{unix_ms, Machine};
use super::{
    Effect, Intake, Job, JobOrigin, Moment, ParamsEntry, ParamsSlot, Part, RequestKey, Tally,
};
use crate::budget::Holder;
use crate::domain::Priority;
use crate::domain::{Evicted, JobEnd, JobFailure, JobOutcome, Preloaded, Submitted};
use crate::error::EngineError;
use crate::failures::{Failed, Failure};
use crate::history::Ended;
use crate::journal::record::{Accepted, Ack, Record};
use crate::prover::{Planned, Prover};
use crate::schedule::order_key;
use crate::status::JobState;

impl<P: Prover> Machine<P> {
    /// The live job of this request id, kind and input: queued, running or completed. A failed
    /// or cancelled one is not returned, so a retry makes a new attempt.
    pub(super) fn find_request(&self, key: &RequestKey) -> Option<Submitted> {
        if key.request_id.is_empty() {
            return None;
        }
        let Some(job) = self.request_ids.get(key).and_then(|seq| self.jobs.get(seq)) else {
            return self.find_recovering(key);
        };
        if matches!(job.phase.state(), JobState::Failed | JobState::Cancelled) {
            return None;
        }
        Some(Submitted {
            job_id: job.id.clone(),
            queue_position: self.jobs.ahead_of(job.seq),
            existing: true,
        })
    }

    /// Accepts a job (or returns the live one of the same request); the answer goes out once
    /// the journal has recorded it.
    pub(super) fn submit(
        &mut self,
        job_id: String,
        origin: JobOrigin,
        plan: Planned<P::Plan>,
        inline_input: Option<Vec<u8>>,
        reply: oneshot::Sender<Result<Submitted, EngineError>>,
    ) {
        match self.accept(job_id, origin, plan, inline_input) {
            Ok((submitted, Some(record))) => self.effects.push(Effect::Record(
                Record::Accepted(record),
                Some(Ack { reply, submitted }),
            )),
            Ok((submitted, None)) => self.answer(reply, Ok(submitted)),
            Err(e) => self.answer(reply, Err(e)),
        }
    }

    /// Decides on a submit before it is decoded: intake open, a live job of the same request
    /// found by index, its priority's `[limits]` (the only place they are checked: a granted
    /// place counts under them until its submit becomes a job).
    pub(super) fn intake(&self, origin: &JobOrigin) -> Result<Intake, EngineError> {
        self.check_intake_open()?;
        if let Some(existing) = self.find_request(&origin.key()) {
            return Ok(Intake::Existing(existing));
        }
        self.check_intake_limits(origin.priority, origin.input_bytes)?;
        let slot = (self.intake_slots).take(origin.priority, origin.input_bytes);
        Ok(Intake::Granted(slot))
    }

    fn accept(
        &mut self,
        id: String,
        origin: JobOrigin,
        plan: Planned<P::Plan>,
        inline_input: Option<Vec<u8>>,
    ) -> Result<(Submitted, Option<Accepted>), EngineError> {
        self.check_intake_open()?;
        // A submit of the same request granted beside this one may have become its job first.
        if let Some(existing) = self.find_request(&origin.key()) {
            return Ok((existing, None));
        }
        let (memory, circuit_id) = (plan.memory, plan.circuit_id.as_str());
        let params_bytes = self.params_bytes(circuit_id);
        // The most a job can ever have: the budget less the daemon's own memory.
        let (total, baseline) = (self.budget.total(), self.budget.held_by(Holder::Baseline));
        if memory.total_bytes + params_bytes > total.saturating_sub(baseline) {
            return Err(EngineError::TooLarge {
                needed: format!(
                    "{} ({} for the partition + {} for the {circuit_id} params)",
                    human(memory.total_bytes + params_bytes),
                    human(memory.total_bytes),
                    human(params_bytes)
                ),
                budget: format!(
                    "{}, {} of it snarkd's own memory",
                    human(total),
                    human(baseline)
                ),
            });
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        tracing::info!(job_id = %id, request_id = %origin.logged_request_id(), kind = %origin.kind, priority = ?origin.priority, partitions = plan.partitions, %circuit_id, "job queued");
        let submitted_unix_ms = unix_ms();
        let record = Accepted {
            seq,
            job_id: id.clone(),
            request_id: origin.request_id.clone(),
            kind: origin.kind,
            priority: origin.priority,
            digest: origin.digest,
            input_bytes: origin.input_bytes,
            partitions: plan.partitions,
            submitted_unix_ms,
            inline_input,
        };
        let parts = (0..plan.partitions).map(|_| Part::pending()).collect();
        self.insert_job(
            seq,
            id.clone(),
            origin,
            plan,
            parts,
            crate::clock::now(),
            submitted_unix_ms,
            watch::channel(None).0,
        );
        Ok((
            Submitted {
                job_id: id,
                queue_position: self.jobs.ahead_of(seq),
                existing: false,
            },
            Some(record),
        ))
    }

    /// Puts a new or recovered job in the tables.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn insert_job(
        &mut self,
        seq: u64,
        id: String,
        origin: JobOrigin,
        plan: Planned<P::Plan>,
        parts: Vec<Part<P>>,
        submitted: Instant,
        submitted_unix_ms: u64,
        outcome: watch::Sender<Option<JobOutcome>>,
    ) {
        if !origin.request_id.is_empty() {
            self.request_ids.insert(origin.key(), seq);
        }
        self.job_ids.insert(id.clone(), seq);
        let Planned {
            circuit_id,
            memory,
            fast_path,
            plan,
            ..
        } = plan;
        let input = self.budget.charge_held(Holder::Inputs, origin.input_bytes);
        for (index, part) in parts.iter().enumerate() {
            let key = order_key(origin.priority, seq, index as u32);
            self.stages
                .moved((key, seq, index as u32), None, part.state());
        }
        self.jobs.insert(Job {
            seq,
            id,
            origin,
            plan: Arc::new(plan),
            circuit_id,
            memory,
            fast_path,
            submitted,
            submitted_unix_ms,
            // Without a journal a job is on record once it is in memory.
            phase: match self.journaled {
                true => JobPhase::Unrecorded { input },
                false => JobPhase::Queued { input },
            },
            parts,
            timings: Default::default(),
            outcome,
        });
        self.changed();
    }

    /// Refuses new work while draining or while the journal cannot be written.
    fn check_intake_open(&self) -> Result<(), EngineError> {
        if self.draining {
            return Err(EngineError::ShuttingDown);
        }
        if let Some(why) = &self.journal_unwritable {
            return Err(EngineError::Journal(format!(
                "{why}; no new work is taken until the journal can be written again (check the disk under [jobs] dir)"
            )));
        }
        Ok(())
    }

    /// Refuses a job that would take its priority past `[limits]`: each priority counts only its
    /// own unfinished jobs, so a flood of LOW work never refuses a CRITICAL one.
    fn check_intake_limits(&self, priority: Priority, input_bytes: u64) -> Result<(), EngineError> {
        let limits = self.config.limits;
        // Recovering jobs and submits granted a place count: they are unfinished work of their
        // priority too.
        let (queued, queued_bytes) = self.jobs.unfinished_of(priority);
        let (granted, granted_bytes) = self.intake_slots.held(priority);
        let (jobs, bytes) = (self.recovering_inputs(priority)).fold(
            (queued + granted, queued_bytes + granted_bytes),
            |(n, b), bytes| (n + 1, b + bytes),
        );
        let name = format!("{priority:?}").to_uppercase();
        if jobs >= limits.queued_jobs {
            return Err(EngineError::LimitReached {
                limit: "queued_jobs",
                value: limits.queued_jobs.to_string(),
                detail: format!("{jobs} {name} jobs are queued or running"),
            });
        }
        if bytes + input_bytes > limits.queued_input_bytes {
            return Err(EngineError::LimitReached {
                limit: "queued_input_bytes",
                value: human(limits.queued_input_bytes),
                detail: format!(
                    "{name} jobs hold {} of input and this request brings {}",
                    human(bytes),
                    human(input_bytes)
                ),
            });
        }
        Ok(())
    }

    pub(super) fn cancel(&mut self, job_id: &str) -> Result<bool, EngineError> {
        let seq = *self
            .job_ids
            .get(job_id)
            .ok_or_else(|| EngineError::UnknownJob(job_id.to_string()))?;
        let job = &self.jobs[&seq];
        if job.is_finished() {
            return Ok(false);
        }
        let was_running = job.phase.state() == JobState::Running;
        tracing::info!(job_id, request_id = %job.origin.logged_request_id(), was_running, "job cancelled");
        self.finish_job(seq, JobEnd::Cancelled);
        Ok(was_running)
    }

    /// Ends a job as failed (`failure`'s text is what its client gets), and logs the failure
    /// for the snapshots.
    pub(super) fn fail_job(&mut self, seq: u64, failure: JobFailure) {
        let Some(j) = self.jobs.get(&seq) else {
            return;
        };
        let logged = Failure {
            at_unix_ms: unix_ms(),
            kind: Some(j.origin.kind),
            request_id: j.origin.request_id.clone(),
            what: Failed::Job {
                job_id: j.id.clone(),
                stage: failure.stage,
            },
            class: failure.class,
            message: failure.to_string(),
        };
        if self.finish_job(seq, JobEnd::Failed(failure)) {
            self.failures.push(logged);
        }
    }

    /// Ends a job: cancels its unfinished partitions (their memory returns now, or when their
    /// running step returns), releases its params and tells every waiter. False when the job
    /// had already ended (nothing changes then).
    pub(super) fn finish_job(&mut self, seq: u64, end: JobEnd) -> bool {
        let Some(admitted) = self.jobs.get(&seq).map(|j| j.phase.admitted()) else {
            return false;
        };
        if !self.job_event(seq, JobChange::End(end.clone())) {
            return false;
        }
        let parts = self.jobs.get(&seq).map_or(0, |j| j.parts.len() as u32);
        for index in 0..parts {
            if !self.jobs[&seq].parts[index as usize].state().is_terminal() {
                // A synthesized partition's buffers and memory go with the stage it leaves.
                self.transition(seq, index, Change::Cancel);
            }
            // A device phase still running for it stops at its next step boundary.
            if let Some(stop) = self.device_phases.get(&(seq, index)) {
                stop.stop();
            }
        }
        let mut job = self.jobs.get_mut(&seq).expect("job exists");
        let ended = job.phase.ended_at().expect("the job just ended");
        let now = ended.at;
        job.timings.total = now - job.submitted;
        job.timings.queue_wait = admitted.unwrap_or(now) - job.submitted;
        let kind = job.origin.kind;
        match &end {
            JobEnd::Completed(_) => {
                Tally::add(&mut self.counters.completed, kind);
                metrics::counter!("snarkd_proofs_completed_total", "kind" => kind.name())
                    .increment(1);
                metrics::histogram!("snarkd_proof_seconds", "kind" => kind.name())
                    .record(job.timings.total.as_secs_f64());
            }
            JobEnd::Failed(failure) => {
                Tally::add(&mut self.counters.failed, kind);
                count_failed(kind, failure.class);
                tracing::warn!(job_id = %job.id, request_id = %job.origin.logged_request_id(),
                    kind = %kind, class = %failure.class, stage = failure.stage.as_str(),
                    error = %failure.message, "job failed");
            }
            JobEnd::Cancelled => {
                self.counters.cancelled += 1;
                metrics::counter!("snarkd_proofs_cancelled_total", "kind" => kind.name())
                    .increment(1);
            }
        }
        let finished_unix_ms = ended.unix_ms;
        if let JobEnd::Completed(_) | JobEnd::Failed(_) = &end {
            let ended = Ended {
                at_unix_ms: finished_unix_ms,
                kind,
                total_ms: job.timings.total.as_millis() as u64,
                failed: matches!(end, JobEnd::Failed(_)),
            };
            Arc::make_mut(&mut self.history).job_ended(ended);
        }
        self.effects.push(Effect::Record(
            Record::Finished {
                job_id: job.id.clone(),
                end: end.clone(),
                timings: job.timings,
                finished_unix_ms,
            },
            None,
        ));
        let outcome = JobOutcome {
            job_id: job.id.clone(),
            end,
            timings: job.timings,
        };
        let (to, circuit_id) = (job.outcome.clone(), job.circuit_id.clone());
        drop(job);
        self.answer_outcome(to, outcome);
        if let Some(entry) = self.params.get_mut(&circuit_id) {
            entry.last_used = Moment::now();
        }
        self.changed();
        true
    }

    pub(super) fn preload(
        &mut self,
        circuit_id: String,
        params_bytes: u64,
        reply: oneshot::Sender<Result<Preloaded, EngineError>>,
    ) {
        if !self.prover.knows_circuit(&circuit_id) {
            self.answer(reply, Err(EngineError::UnknownCircuit(circuit_id)));
            return;
        }
        // Only known circuits are remembered: a client's made-up ids never grow the map.
        self.note_params_estimate(&circuit_id, params_bytes);
        if let Some(entry) = self.params.get_mut(&circuit_id) {
            match &mut entry.slot {
                ParamsSlot::Ready { .. } => {
                    entry.last_used = Moment::now();
                    self.answer(
                        reply,
                        Ok(Preloaded {
                            already_loaded: true,
                            load_time: Duration::ZERO,
                        }),
                    );
                }
                ParamsSlot::Loading { waiters, .. } => waiters.push(reply),
            }
            return;
        }
        match self.start_params_load(&circuit_id) {
            Ok(()) => {
                if let Some(ParamsSlot::Loading { waiters, .. }) =
                    self.params.get_mut(&circuit_id).map(|e| &mut e.slot)
                {
                    waiters.push(reply);
                }
            }
            Err(e) => self.answer(reply, Err(e)),
        }
    }

    /// Reserves memory for a circuit's params (evicting idle ones if needed) and asks for the load.
    pub(super) fn start_params_load(&mut self, circuit_id: &str) -> Result<(), EngineError> {
        let needed = self.params_bytes(circuit_id);
        let reservation = match self.reserve_evicting(Holder::Params, needed, circuit_id) {
            Some(r) => r,
            None => {
                return Err(EngineError::NoRoom {
                    circuit_id: circuit_id.to_string(),
                    needed: human(needed),
                    free: human(self.budget.available()),
                })
            }
        };
        tracing::info!(circuit_id, bytes = needed, "loading params");
        self.params.insert(
            circuit_id.to_string(),
            ParamsEntry {
                slot: ParamsSlot::Loading {
                    waiters: Vec::new(),
                    since: crate::clock::now(),
                },
                reservation,
                last_used: Moment::now(),
            },
        );
        self.effects.push(Effect::LoadParams {
            circuit_id: circuit_id.to_string(),
        });
        self.changed();
        Ok(())
    }

    pub(super) fn evict(&mut self, circuit_id: &str) -> Result<Evicted, EngineError> {
        if !self.prover.knows_circuit(circuit_id) {
            return Err(EngineError::UnknownCircuit(circuit_id.to_string()));
        }
        match self.params.get(circuit_id) {
            None => Ok(Evicted {
                was_loaded: false,
                freed_bytes: 0,
            }),
            Some(entry) if self.params_users(circuit_id) > 0 || entry.ready().is_none() => {
                Err(EngineError::ParamsInUse(circuit_id.to_string()))
            }
            Some(_) => {
                let entry = self.params.remove(circuit_id).expect("checked above");
                tracing::info!(circuit_id, bytes = entry.bytes(), "params evicted");
                self.changed();
                Ok(Evicted {
                    was_loaded: true,
                    freed_bytes: entry.bytes(),
                })
            }
        }
    }

    /// Bytes a circuit's params take: measured when loaded, else as estimated on the planning
    /// thread of a job or preload that needs them.
    pub(super) fn params_bytes(&self, circuit_id: &str) -> u64 {
        self.params.get(circuit_id).map_or_else(
            || self.params_estimates.get(circuit_id).copied().unwrap_or(0),
            |e| e.bytes(),
        )
    }

    /// Forgets jobs that finished longer than the retention ago.
    pub(super) fn expire_finished(&mut self) {
        // An ended job's record may still be waiting to be written: it stays readable here.
        if self.journal_unwritable.is_some() {
            return;
        }
        let now = crate::clock::now();
        let retention = self.config.retention;
        let expired = match now.checked_sub(retention) {
            Some(until) => self.jobs.ended_by(until),
            None => Vec::new(),
        };
        self.expire_recovering(now, retention);
        for seq in expired {
            let job = self.jobs.remove(seq).expect("listed above");
            self.job_ids.remove(&job.id);
            let key = job.origin.key();
            if self.request_ids.get(&key) == Some(&seq) {
                self.request_ids.remove(&key);
            }
            self.changed();
        }
    }
}

/// Sizes as people read them, e.g. `13.6 GiB`.
pub(crate) fn human(bytes: u64) -> String {
    bytesize::ByteSize::b(bytes).to_string_as(true)
}

/// One failed job in `snarkd_proofs_failed_total`, by its kind and whose fault it was.
pub(super) fn count_failed(kind: crate::domain::ProofKind, class: crate::domain::FailureClass) {
    metrics::counter!("snarkd_proofs_failed_total", "kind" => kind.name(), "class" => class.as_str())
        .increment(1);
}

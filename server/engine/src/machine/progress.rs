//! Finished steps coming back from the engine's threads: synthesis, the device phase, params
//! loads and finalization. Results for partitions that were cancelled meanwhile are dropped
//! (with their reservations) and change nothing else.

use std::time::Duration;

use tokio::time::Instant;

use super::transition::Change;
use super::types::{Effect, ParamsSlot, Part};
use super::Machine;
use crate::budget::Reservation;
use crate::domain::{JobEnd, Preloaded};
use crate::error::EngineError;
use crate::journal::record::Record;
use crate::prover::{Params, Synthesized};
use crate::state::PartitionState;
use crate::status::JobState;

impl Machine {
    pub(super) fn synth_done(
        &mut self,
        job: u64,
        index: u32,
        result: Result<Synthesized, String>,
        reservation: Reservation,
    ) {
        self.synth_active -= 1;
        self.changed();
        let elapsed = self.step_elapsed(job, index);
        match result {
            Ok(synthesized) => {
                if !self.transition(job, index, Change::Synthesized) {
                    return; // cancelled meanwhile: the buffers and reservation drop here
                }
                let j = self.jobs.get_mut(&job).expect("transition checked the job");
                j.timings.synthesis += elapsed;
                metrics::histogram!("snarkd_synthesis_seconds", "kind" => j.origin.kind.as_str())
                    .record(elapsed.as_secs_f64());
                let part = &mut j.parts[index as usize];
                part.synth_ms = Some(elapsed.as_millis() as u64);
                part.synthesized = Some(synthesized);
                part.reservation = Some(reservation);
            }
            Err(message) => {
                if self.transition(job, index, Change::Fail) {
                    self.finish_job(
                        job,
                        JobEnd::Failed(format!("partition {index} synthesis failed: {message}")),
                    );
                }
            }
        }
    }

    pub(super) fn abc_released(&mut self, job: u64, index: u32, bytes: u64) {
        if let Some(part) = self
            .jobs
            .get_mut(&job)
            .and_then(|j| j.parts.get_mut(index as usize))
        {
            part.reserved_bytes = part.reserved_bytes.saturating_sub(bytes);
            self.changed();
        }
    }

    pub(super) fn device_done(
        &mut self,
        worker: u32,
        job: u64,
        index: u32,
        result: Result<Vec<u8>, String>,
        reservation: Reservation,
    ) {
        let ok = result.is_ok();
        let elapsed = self.step_elapsed(job, index);
        let retries_left = self
            .part(job, index)
            .is_some_and(|p| p.retries < self.config.partition_retries);
        if let (Err(message), true) = (&result, retries_left) {
            // Synthesize and prove it again: the witness went into the failed device phase.
            if !self.transition(job, index, Change::DeviceRetry { worker }) {
                return;
            }
            drop(reservation);
            let j = self.jobs.get_mut(&job).expect("transition checked the job");
            tracing::warn!(job_id = %j.id, partition = index, worker, error = %message,
                "device phase failed; the partition is synthesized and proved again");
            metrics::counter!("snarkd_partition_retries_total", "kind" => j.origin.kind.as_str())
                .increment(1);
            let part = &mut j.parts[index as usize];
            part.retries += 1;
            part.reserved_bytes = 0;
            return;
        }
        if !self.transition(job, index, Change::DeviceReturned { worker, ok }) {
            return;
        }
        let j = self.jobs.get_mut(&job).expect("transition checked the job");
        j.timings.device += elapsed;
        metrics::histogram!("snarkd_device_seconds", "kind" => j.origin.kind.as_str())
            .record(elapsed.as_secs_f64());
        let part = &mut j.parts[index as usize];
        part.gpu_ms = Some(elapsed.as_millis() as u64);
        match result {
            Ok(proof) => {
                // The witness went into the MSMs: only the 192-byte proof is left to hold.
                drop(reservation);
                part.reserved_bytes = 0;
                let record = Record::PartitionProved {
                    job_id: j.id.clone(),
                    index,
                    proof: proof.clone(),
                };
                part.proof = Some(proof);
                self.effects.push(Effect::Record(record, None));
            }
            Err(message) => {
                drop(reservation);
                part.reserved_bytes = 0;
                self.finish_job(
                    job,
                    JobEnd::Failed(format!("partition {index} device phase failed: {message}")),
                );
            }
        }
    }

    pub(super) fn params_loaded(
        &mut self,
        circuit_id: String,
        result: Result<(Params, u64), String>,
    ) {
        let Some(entry) = self.params.get_mut(&circuit_id) else {
            return;
        };
        let ParamsSlot::Loading { waiters, since } = &mut entry.slot else {
            return;
        };
        let waiters = std::mem::take(waiters);
        let elapsed = since.elapsed();
        match result {
            Ok((params, bytes)) => {
                if let Some(reservation) = entry.reservation.as_mut() {
                    if bytes < reservation.bytes() {
                        reservation.shrink(reservation.bytes() - bytes);
                    } else if bytes > reservation.bytes() {
                        tracing::warn!(%circuit_id, estimated = reservation.bytes(), measured = bytes, "params larger than estimated; budget counts the estimate");
                    }
                }
                entry.bytes =
                    bytes.min(entry.reservation.as_ref().map_or(bytes, Reservation::bytes));
                entry.slot = ParamsSlot::Ready(params);
                entry.load_time = elapsed;
                entry.last_used = Instant::now();
                tracing::info!(%circuit_id, bytes, ms = elapsed.as_millis() as u64, "params loaded");
                for waiter in waiters {
                    let _ = waiter.send(Ok(Preloaded {
                        already_loaded: false,
                        load_time: elapsed,
                    }));
                }
                for j in self
                    .jobs
                    .values_mut()
                    .filter(|j| j.holds_params && j.circuit_id == circuit_id)
                {
                    j.timings.params_load = elapsed;
                }
            }
            Err(message) => {
                self.params.remove(&circuit_id);
                tracing::error!(%circuit_id, error = %message, "params load failed");
                for waiter in waiters {
                    let _ = waiter.send(Err(EngineError::Prover(message.clone())));
                }
                let users: Vec<u64> = self
                    .jobs
                    .values()
                    .filter(|j| {
                        j.holds_params && j.circuit_id == circuit_id && !j.state.is_finished()
                    })
                    .map(|j| j.seq)
                    .collect();
                for seq in users {
                    if let Some(j) = self.jobs.get_mut(&seq) {
                        j.holds_params = false; // the entry is gone
                    }
                    self.finish_job(
                        seq,
                        JobEnd::Failed(format!("params {circuit_id} failed to load: {message}")),
                    );
                }
            }
        }
        self.changed();
    }

    pub(super) fn finalized(
        &mut self,
        job: u64,
        result: Result<Vec<u8>, String>,
        elapsed: Duration,
    ) {
        let Some(j) = self.jobs.get_mut(&job) else {
            return;
        };
        j.finalizing = false;
        if j.state.is_finished() {
            return;
        }
        tracing::info!(job_id = %j.id, ok = result.is_ok(), ms = elapsed.as_millis() as u64, "job finalized");
        match result {
            Ok(proof) => self.finish_job(job, JobEnd::Completed(proof)),
            Err(message) => self.finish_job(
                job,
                JobEnd::Failed(format!("final proof rejected: {message}")),
            ),
        }
    }

    /// How long the running step of a partition has taken so far, on the machine's clock.
    fn step_elapsed(&self, job: u64, index: u32) -> Duration {
        self.part(job, index)
            .map_or(Duration::ZERO, |p| p.step_elapsed(Instant::now()))
    }

    /// Partition `index` of job `job`, if both still exist.
    fn part(&self, job: u64, index: u32) -> Option<&Part> {
        self.jobs.get(&job)?.parts.get(index as usize)
    }

    /// Starts finalization of every running job whose partitions are all proved.
    pub(super) fn finalize_ready_jobs(&mut self) {
        let ready: Vec<u64> = self
            .jobs
            .values()
            .filter(|j| j.state == JobState::Running && !j.finalizing)
            .filter(|j| j.parts.iter().all(|p| p.state == PartitionState::Done))
            .map(|j| j.seq)
            .collect();
        for seq in ready {
            let circuit_id = self.jobs[&seq].circuit_id.clone();
            let Some(params) = self
                .params
                .get(&circuit_id)
                .and_then(|e| e.ready())
                .cloned()
            else {
                // A job recovered with every partition proved never went through admission.
                self.ensure_params(seq);
                continue;
            };
            let j = self.jobs.get_mut(&seq).expect("listed above");
            j.finalizing = true;
            let proofs = j
                .parts
                .iter_mut()
                .map(|p| p.proof.take().unwrap_or_default())
                .collect();
            self.effects.push(Effect::Finalize {
                job: seq,
                plan: j.plan.clone(),
                proofs,
                params,
            });
        }
    }
}

//! Finished steps coming back from the engine's threads: synthesis, the device phase, params
//! loads and finalization. Results for partitions that were cancelled meanwhile are dropped
//! (with their reservations) and change nothing else.

use std::time::Duration;

use super::transition::Change;
use super::transition::JobChange;
use super::Machine;
use super::{Effect, Moment, ParamsSlot, Part, Stage};
use crate::budget::Reservation;
use crate::domain::{JobEnd, JobFailure, Preloaded};
use crate::error::EngineError;
use crate::failures::FailureStage;
use crate::journal::record::Record;
use crate::lifecycle::JobStep;
use crate::prover::{LoadedParams, Prover, StepError};

impl<P: Prover> Machine<P> {
    pub(super) fn synth_done(
        &mut self,
        job: u64,
        index: u32,
        result: Result<P::Partition, StepError>,
        reservation: Reservation,
    ) {
        self.synth_active -= 1;
        self.changed();
        let elapsed = self.step_elapsed(job, index);
        match result {
            Ok(synthesized) => {
                let change = Change::Synthesized {
                    synthesized,
                    reservation,
                    took: elapsed,
                };
                if self.transition(job, index, change).is_none() {
                    return; // cancelled meanwhile: the buffers and reservation dropped with it
                }
                let mut j = self.jobs.get_mut(&job).expect("transition checked the job");
                j.timings.synthesis += elapsed;
                metrics::histogram!("snarkd_synthesis_seconds", "kind" => j.origin.kind.name())
                    .record(elapsed.as_secs_f64());
            }
            Err(error) => {
                drop(reservation);
                if self.transition(job, index, Change::Fail).is_some() {
                    self.fail_job(
                        job,
                        JobFailure::new(
                            error.class(),
                            FailureStage::Synthesis,
                            format!("partition {index} synthesis failed: {error}"),
                        ),
                    );
                }
            }
        }
    }

    /// The device phase gave the a/b/c share back (its reservation, which the snapshot reads,
    /// has already shrunk): only readers need to hear of it.
    pub(super) fn abc_released(&mut self, job: u64, index: u32) {
        if self.part(job, index).is_some() {
            self.changed();
        }
    }

    pub(super) fn device_done(
        &mut self,
        worker: u32,
        job: u64,
        index: u32,
        result: Result<P::Proof, StepError>,
        reservation: Reservation,
    ) {
        // The witness went into the device phase: nothing of the partition is left to hold but
        // its proof.
        drop(reservation);
        self.device_phases.remove(&(job, index));
        let elapsed = self.step_elapsed(job, index);
        let retries_left = self
            .part(job, index)
            .is_some_and(|p| p.retries < self.config.partition_retries);
        let failure = match result {
            // A device fault may not happen again; an error the input causes would.
            Err(error) if error.is_retryable() && retries_left => {
                // Synthesize and prove it again: the witness went into the failed device phase.
                if self
                    .transition(job, index, Change::DeviceRetry { worker })
                    .is_none()
                {
                    return;
                }
                let mut j = self.jobs.get_mut(&job).expect("transition checked the job");
                tracing::warn!(job_id = %j.id, request_id = %j.origin.logged_request_id(),
                    partition = index, worker, %error,
                    "device phase failed; the partition is synthesized and proved again");
                metrics::counter!("snarkd_partition_retries_total", "kind" => j.origin.kind.name())
                    .increment(1);
                j.parts[index as usize].retries += 1;
                return;
            }
            Ok(proof) => {
                // Its bytes for the journal; the proof itself stays as the device made it.
                let record = self.prover.proof_bytes(&proof);
                if self
                    .transition(
                        job,
                        index,
                        Change::DeviceProved {
                            worker,
                            proof,
                            took: elapsed,
                        },
                    )
                    .is_none()
                {
                    return;
                }
                let job_id = self.jobs[&job].id.clone();
                let record = Record::PartitionProved {
                    job_id,
                    index,
                    proof: record,
                };
                self.effects.push(Effect::Record(record, None));
                None
            }
            Err(error) => {
                if self
                    .transition(
                        job,
                        index,
                        Change::DeviceFailed {
                            worker,
                            took: elapsed,
                        },
                    )
                    .is_none()
                {
                    return;
                }
                Some(error)
            }
        };
        let mut j = self.jobs.get_mut(&job).expect("transition checked the job");
        j.timings.device += elapsed;
        metrics::histogram!("snarkd_device_seconds", "kind" => j.origin.kind.name())
            .record(elapsed.as_secs_f64());
        drop(j);
        if let Some(error) = failure {
            self.fail_job(
                job,
                JobFailure::new(
                    error.class(),
                    FailureStage::Device,
                    format!("partition {index} device phase failed: {error}"),
                ),
            );
        }
    }

    pub(super) fn params_loaded(
        &mut self,
        circuit_id: String,
        result: Result<LoadedParams<P::Params>, EngineError>,
    ) {
        let Some(entry) = self.params.get_mut(&circuit_id) else {
            return;
        };
        let ParamsSlot::Loading { waiters, since } = &mut entry.slot else {
            return;
        };
        let waiters = std::mem::take(waiters);
        let elapsed = crate::clock::now().saturating_duration_since(*since);
        match result {
            Ok(LoadedParams {
                params,
                bytes,
                precompiled_bytes,
            }) => {
                let reserved = entry.reservation.bytes();
                if bytes < reserved {
                    entry.reservation.shrink(reserved - bytes);
                } else if bytes > reserved {
                    params_over_estimate(&circuit_id, reserved, bytes);
                }
                // Part of what the budget counts (the estimate, when that was less).
                entry.slot = ParamsSlot::Ready {
                    params,
                    precompiled_bytes: precompiled_bytes.min(entry.bytes()),
                };
                entry.last_used = Moment::now();
                tracing::info!(%circuit_id, bytes, precompiled_bytes, ms = elapsed.as_millis() as u64, "params loaded");
                for waiter in waiters {
                    let loaded = Preloaded {
                        already_loaded: false,
                        load_time: elapsed,
                    };
                    self.answer(waiter, Ok(loaded));
                }
                self.jobs.for_params_users(&circuit_id, |j| {
                    j.timings.params_load = elapsed;
                });
            }
            Err(error) => {
                self.params.remove(&circuit_id);
                tracing::error!(%circuit_id, %error, "params load failed");
                for waiter in waiters {
                    self.answer(waiter, Err(error.clone()));
                }
                let users: Vec<u64> = self
                    .jobs
                    .values()
                    .filter(|j| j.circuit_id == circuit_id && j.uses_params())
                    .map(|j| j.seq)
                    .collect();
                for seq in users {
                    self.fail_job(
                        seq,
                        JobFailure::new(
                            error.class(),
                            FailureStage::Params,
                            format!("params {circuit_id} failed to load: {error}"),
                        ),
                    );
                }
            }
        }
        self.changed();
    }

    pub(super) fn finalized(
        &mut self,
        job: u64,
        result: Result<Vec<u8>, StepError>,
        elapsed: Duration,
    ) {
        let Some(j) = self.jobs.get(&job) else {
            return;
        };
        if j.phase.step() != JobStep::Finalizing {
            return; // ended (cancelled, say) while it was being finalized
        }
        tracing::info!(job_id = %j.id, request_id = %j.origin.logged_request_id(),
            ok = result.is_ok(), ms = elapsed.as_millis() as u64, "job finalized");
        match result {
            Ok(proof) => {
                self.finish_job(job, JobEnd::Completed(proof));
            }
            Err(error) => self.fail_job(
                job,
                JobFailure::new(
                    error.class(),
                    FailureStage::Finalize,
                    format!("final proof rejected: {error}"),
                ),
            ),
        }
    }

    /// How long the running step of a partition has taken so far, on the machine's clock.
    fn step_elapsed(&self, job: u64, index: u32) -> Duration {
        self.part(job, index)
            .map_or(Duration::ZERO, |p| p.step_elapsed(crate::clock::now()))
    }

    /// Partition `index` of job `job`, if both still exist.
    fn part(&self, job: u64, index: u32) -> Option<&Part<P>> {
        self.jobs.get(&job)?.parts.get(index as usize)
    }

    /// Starts finalization of every running job whose partitions are all proved.
    pub(super) fn finalize_ready_jobs(&mut self) {
        for seq in self.jobs.ready_to_finalize() {
            let circuit_id = self.jobs[&seq].circuit_id.clone();
            let Some(params) = self
                .params
                .get(&circuit_id)
                .and_then(|e| e.ready())
                .cloned()
            else {
                // A job recovered with every partition proved never went through admission.
                if !self.params.contains_key(&circuit_id) {
                    let _ = self.start_params_load(&circuit_id);
                }
                continue;
            };
            self.job_event(seq, JobChange::Finalize);
            let j = &self.jobs[&seq];
            let proofs = j
                .parts
                .iter()
                .map(|p| match &p.stage {
                    Stage::Done { proof, .. } => proof.clone(),
                    _ => unreachable!("filtered on every partition done"),
                })
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

/// Loaded parameters larger than their estimate: the budget keeps counting the estimate, which
/// matters only when the difference does. A WARN past [`PARAMS_EXCESS_WARN_PERCENT`] % of the
/// estimate (a wrong estimate, or another circuit version's files); an INFO line for the usual
/// few kilobytes of file layout.
fn params_over_estimate(circuit_id: &str, estimated: u64, measured: u64) {
    if excess_matters(estimated, measured) {
        tracing::warn!(circuit_id, estimated, measured,
            "params much larger than estimated; the budget counts the estimate, so memory may run short");
    } else {
        tracing::info!(
            circuit_id,
            estimated,
            measured,
            "params slightly larger than estimated; the budget counts the estimate"
        );
    }
}

/// The excess over the estimate, in percent, above which loaded parameters log a WARN.
const PARAMS_EXCESS_WARN_PERCENT: u64 = 5;

fn excess_matters(estimated: u64, measured: u64) -> bool {
    let excess = measured.saturating_sub(estimated);
    excess.saturating_mul(100) > estimated.saturating_mul(PARAMS_EXCESS_WARN_PERCENT)
}

#[cfg(test)]
mod params_excess_tests {
    use super::excess_matters;

    #[test]
    fn only_an_excess_over_five_percent_of_the_estimate_matters() {
        // A 2 KiB WindowPoSt's files: 22 KB over a 54 MB estimate.
        assert!(!excess_matters(54_000_000, 54_022_000));
        assert!(!excess_matters(100, 105));
        assert!(excess_matters(100, 106));
        assert!(
            excess_matters(47 << 30, 50 << 30),
            "another circuit version's files"
        );
    }
}

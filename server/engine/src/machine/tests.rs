//! The machine driven by hand: the test plays the driver, completing effects in the order it
//! chooses, so every interleaving of partition events can be tried deterministically.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;

use super::*;
use crate::budget::Holder;
use crate::domain::{JobEnd, Priority, ProofKind, Submitted};
use crate::error::EngineError;
use crate::lifecycle::{next_partition_state, PartitionState, WorkerState};
use crate::status::JobState;
use crate::test_prover::{request, TestProver, PARAMS_BYTES, PRECOMPILED_BYTES};

type M = Machine<TestProver>;

struct Harness {
    machine: M,
    budget: Budget,
    prover: Arc<TestProver>,
    pending: Vec<Effect<TestProver>>,
    /// Every job id ever accepted, with its outcome channel.
    jobs: Vec<String>,
    /// Every record handed to the journal, in order.
    records: Vec<crate::journal::record::Record>,
}

impl Harness {
    fn new(budget_bytes: u64, devices: u32, threads: usize) -> Harness {
        let budget = Budget::new(budget_bytes, || {});
        let prover = TestProver::new(devices);
        let config = EngineConfig {
            memory_budget_bytes: budget_bytes,
            synthesis_threads: threads,
            ..Default::default()
        };
        let machine = Machine::new(config, prover.clone(), budget.clone());
        Harness {
            machine,
            budget,
            prover,
            pending: Vec::new(),
            jobs: Vec::new(),
            records: Vec::new(),
        }
    }

    /// Applies an input; journal records are kept (and submits acknowledged at once, as the
    /// driver does without a journal), other effects wait for the test to run them.
    fn apply(&mut self, input: Input<TestProver>) {
        for effect in self.machine.apply(input) {
            match effect {
                Effect::Record(record, ack) => {
                    if let Some(ack) = ack {
                        ack.send(Ok(()));
                    }
                    self.records.push(record);
                }
                Effect::FlushJournal(done) => {
                    let _ = done.send(());
                }
                Effect::Answer(answer) => answer.send(),
                other => self.pending.push(other),
            }
        }
    }

    fn submit(
        &mut self,
        kind: ProofKind,
        priority: Priority,
        partitions: u32,
        bytes: u64,
    ) -> Result<Submitted, EngineError> {
        self.submit_with_input(kind, priority, partitions, bytes, 0)
    }

    /// [`Harness::submit`] of a request with `input_bytes` of input.
    fn submit_with_input(
        &mut self,
        kind: ProofKind,
        priority: Priority,
        partitions: u32,
        bytes: u64,
        input_bytes: u64,
    ) -> Result<Submitted, EngineError> {
        let origin = JobOrigin {
            request_id: String::new(),
            kind,
            priority,
            digest: crate::journal::InputDigest([0; 32]),
            input_bytes,
        };
        self.submit_as(origin, partitions, bytes)
    }

    /// Submits a request of `origin` (its request id, kind, priority, digest and input size).
    fn submit_as(
        &mut self,
        origin: JobOrigin,
        partitions: u32,
        bytes: u64,
    ) -> Result<Submitted, EngineError> {
        // As the handle does: the writer's decision first, then the plan, then the job.
        let (reply, mut decided) = oneshot::channel();
        self.apply(Input::api(Request::Intake {
            origin: origin.clone(),
            reply,
        }));
        let slot = match decided.try_recv().expect("answered at once")? {
            Intake::Existing(existing) => return Ok(existing),
            Intake::Granted(slot) => slot,
        };
        let plan = self.prover.plan(request(origin.kind, partitions, bytes))?;
        let (reply, mut answer) = oneshot::channel();
        let params_bytes = self.prover.params_size_estimate(&plan.circuit_id);
        self.apply(Input::Submit {
            job_id: uuid::Uuid::new_v4().to_string(),
            inline_input: None,
            origin,
            plan,
            params_bytes,
            slot,
            reply,
        });
        let submitted = answer.try_recv().expect("answered at once");
        if let Ok(s) = &submitted {
            self.jobs.push(s.job_id.clone());
        }
        submitted
    }

    fn cancel(&mut self, job_id: &str) -> Result<bool, EngineError> {
        let (reply, mut answer) = oneshot::channel();
        self.apply(Input::api(Request::Cancel {
            job_id: job_id.to_string(),
            reply,
        }));
        answer.try_recv().expect("answered at once")
    }

    /// Runs the pending effect at `i` (successfully unless `fail`) as the driver would, and
    /// returns the inputs it reports, in order, without applying them. Device phases run through
    /// the worker's own `device_phase`.
    fn run(&mut self, i: usize, fail: bool) -> Vec<Input<TestProver>> {
        let input = match self.pending.remove(i) {
            Effect::Synthesize {
                job,
                index,
                plan,
                params,
                reservation,
                ..
            } => {
                let result = if fail {
                    Err(crate::prover::StepError::new(
                        crate::FailureClass::Input,
                        "synthetic failure",
                    ))
                } else {
                    self.prover.synthesize(&plan, index, params.as_deref())
                };
                Input::SynthDone {
                    job,
                    index,
                    result,
                    reservation,
                }
            }
            Effect::Prove { worker, task } => {
                let device = self.machine.workers[worker as usize].device.clone();
                let mut reported = Vec::new();
                self.prover.device_fault.store(fail, Ordering::SeqCst);
                let done = crate::worker::device_phase(
                    &*self.prover,
                    worker,
                    &device,
                    task,
                    &mut |input| reported.push(input),
                    &mut || {},
                    &|| false,
                );
                self.prover.device_fault.store(false, Ordering::SeqCst);
                reported.push(done);
                return reported;
            }
            Effect::LoadParams { circuit_id } => {
                let result = if fail {
                    Err(EngineError::Setup("params file damaged".into()))
                } else {
                    self.prover.load_params(&circuit_id)
                };
                Input::ParamsLoaded { circuit_id, result }
            }
            Effect::Finalize {
                job,
                plan,
                proofs,
                params,
            } => Input::Finalized {
                job,
                result: self.prover.finalize(&plan, proofs, &params),
                elapsed: Duration::ZERO,
            },
            Effect::Record(..) | Effect::FlushJournal(_) | Effect::Answer(_) => {
                unreachable!("kept by apply")
            }
        };
        vec![input]
    }

    /// Completes the pending effect at `i` (successfully unless `fail`), as the driver would.
    fn complete(&mut self, i: usize, fail: bool) {
        for input in self.run(i, fail) {
            self.apply(input);
        }
    }

    /// The index of the first pending effect `matches` accepts.
    fn find(&self, matches: impl Fn(&Effect<TestProver>) -> bool) -> usize {
        self.pending
            .iter()
            .position(matches)
            .expect("such an effect is pending")
    }

    /// Completes effects first-in first-out until none is left.
    fn drain(&mut self) {
        while !self.pending.is_empty() {
            self.complete(0, false);
        }
    }

    fn job(&self, id: &str) -> crate::status::JobStatus {
        self.machine
            .snapshot()
            .jobs
            .iter()
            .find(|j| j.job_id == id)
            .cloned()
            .expect("job visible")
    }

    fn outcome(&self, id: &str) -> Option<JobEnd> {
        let seq = self.machine.job_ids.get(id)?;
        self.machine.jobs[seq]
            .outcome
            .borrow()
            .as_ref()
            .map(|o| o.end.clone())
    }

    /// The invariants that must hold after every input.
    fn check_invariants(&self) {
        self.machine.jobs.check();
        // The stage index is what scanning every job would find, in scheduling order.
        for state in [
            PartitionState::Pending,
            PartitionState::Synthesizing,
            PartitionState::SynthDone,
            PartitionState::Gpu,
        ] {
            let mut scanned: Vec<_> = (self.machine.jobs.values())
                .filter(|j| !j.is_finished())
                .flat_map(|j| {
                    (j.parts.iter().enumerate())
                        .filter(move |(_, p)| p.state() == state)
                        .map(move |(i, _)| {
                            let key =
                                crate::schedule::order_key(j.origin.priority, j.seq, i as u32);
                            (key, j.seq, i as u32)
                        })
                })
                .collect();
            scanned.sort();
            assert_eq!(self.machine.partitions_in(state), scanned, "{state:?}");
        }
        let snap = self.machine.snapshot();
        assert!(
            snap.memory.used_bytes <= snap.memory.total_bytes,
            "budget overcommitted"
        );
        for job in &snap.jobs {
            for p in &job.partitions {
                if p.state == PartitionState::Gpu {
                    let w = p
                        .worker_id
                        .expect("a partition on the device names its worker");
                    let worker = &snap.workers[w as usize];
                    let paused = crate::status::PausedPartition {
                        job_id: job.job_id.clone(),
                        partition: p.index,
                    };
                    assert!(
                        worker.state
                            == WorkerState::Proving {
                                job_id: job.job_id.clone(),
                                partition: p.index
                            }
                            || worker.paused.as_ref() == Some(&paused),
                        "worker {w} must be shown proving (or pausing) the partition in gpu state"
                    );
                }
            }
        }
        for w in &snap.workers {
            if let WorkerState::Proving { job_id, partition } = &w.state {
                // The partition is on the device, or was cancelled/failed while it was there.
                if let Some(job) = snap.jobs.iter().find(|j| &j.job_id == job_id) {
                    let state = job.partitions[*partition as usize].state;
                    assert!(
                        matches!(
                            state,
                            PartitionState::Gpu
                                | PartitionState::Cancelled
                                | PartitionState::Failed
                        ),
                        "{state:?}"
                    );
                }
            }
        }
        let mut last: HashMap<(u64, u32), PartitionState> = HashMap::new();
        for &(job, index, from, to) in &self.machine.edges {
            let prev = last
                .insert((job, index), to)
                .unwrap_or(PartitionState::Pending);
            assert_eq!(prev, from, "partition {job}/{index} skipped a state");
            assert_eq!(next_partition_state(from, classify(from, to)), Some(to));
        }
        for j in self.machine.jobs.values().filter(|j| j.uses_params()) {
            assert!(
                self.machine.params.contains_key(&j.circuit_id),
                "params {} evicted while job {} uses them",
                j.circuit_id,
                j.id
            );
        }
        let finished = snap.jobs.iter().filter(|j| j.state.is_finished()).count() as u64;
        let c = &snap.counters;
        assert_eq!(
            c.total_completed + c.total_failed + c.total_cancelled,
            finished,
            "counters add up"
        );
        let active = snap
            .jobs
            .iter()
            .flat_map(|j| &j.partitions)
            .filter(|p| p.state == PartitionState::Synthesizing)
            .count();
        assert!(snap.synthesis.active as usize >= active);
    }
}

/// The event that leads from `from` to `to`.
fn classify(from: PartitionState, to: PartitionState) -> crate::lifecycle::PartitionEvent {
    use crate::lifecycle::PartitionEvent as E;
    use PartitionState as S;
    match (from, to) {
        (_, S::Synthesizing) => E::Admit,
        (_, S::SynthDone) => E::Synthesized,
        (_, S::Gpu) => E::Dispatch,
        (_, S::Done) => E::Proved,
        (_, S::Failed) => E::Fail,
        (S::Gpu, S::Pending) => E::Retry,
        _ => E::Cancel,
    }
}

#[test]
fn a_job_runs_through_every_state_and_completes() {
    let mut h = Harness::new(10_000, 1, 2);
    let job = h
        .submit(ProofKind::PorepSealCommit, Priority::Normal, 3, 1000)
        .unwrap()
        .job_id;
    h.drain();
    h.check_invariants();
    assert_eq!(
        h.outcome(&job),
        Some(JobEnd::Completed(vec![0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]))
    );
    let status = h.job(&job);
    assert!(status
        .partitions
        .iter()
        .all(|p| p.state == PartitionState::Done && p.worker_id == Some(0)));
    assert_eq!(
        h.budget.used(),
        PARAMS_BYTES,
        "only the (warm) params stay reserved"
    );
}

#[test]
fn critical_job_overtakes_a_queue_of_lower_priority_jobs() {
    let mut h = Harness::new(1_000_000, 1, 1);
    let porep: Vec<String> = (0..3)
        .map(|_| {
            h.submit(ProofKind::PorepSealCommit, Priority::Normal, 2, 1000)
                .unwrap()
                .job_id
        })
        .collect();
    let winning = h
        .submit(ProofKind::WinningPost, Priority::Critical, 1, 1000)
        .unwrap();
    assert_eq!(
        winning.queue_position, 0,
        "nothing runs before a critical job"
    );
    let mut finished_order = Vec::new();
    while !h.pending.is_empty() {
        h.complete(0, false);
        for id in std::iter::once(&winning.job_id).chain(&porep) {
            if h.outcome(id).is_some() && !finished_order.contains(id) {
                finished_order.push(id.clone());
            }
        }
    }
    assert_eq!(
        finished_order.first(),
        Some(&winning.job_id),
        "{finished_order:?}"
    );
    assert_eq!(finished_order.len(), 4);
}

#[test]
fn deadline_partitions_synthesize_beside_a_full_set_of_long_syntheses() {
    let mut h = Harness::new(1_000_000, 1, 2);
    for _ in 0..2 {
        h.submit(ProofKind::PorepSealCommit, Priority::Normal, 2, 1000)
            .unwrap();
    }
    let synthesizing = |h: &Harness| {
        h.pending
            .iter()
            .filter(|e| matches!(e, Effect::Synthesize { .. }))
            .count()
    };
    assert_eq!(synthesizing(&h), 2, "both threads busy with PoRep");
    // A HIGH job starts at once on one extra thread, a CRITICAL one on a second (never behind
    // the HIGH one); further deadline jobs wait for those.
    h.submit(ProofKind::WindowPost, Priority::High, 1, 1000)
        .unwrap();
    assert_eq!(synthesizing(&h), 3);
    h.submit(ProofKind::WindowPost, Priority::High, 1, 1000)
        .unwrap();
    assert_eq!(synthesizing(&h), 3, "one extra thread for HIGH");
    let winning = h
        .submit(ProofKind::WinningPost, Priority::Critical, 1, 1000)
        .unwrap();
    h.submit(ProofKind::WinningPost, Priority::Critical, 1, 1000)
        .unwrap();
    assert_eq!(synthesizing(&h), 4, "a second one for CRITICAL");
    assert_eq!(
        h.job(&winning.job_id).partitions[0].state,
        PartitionState::Synthesizing,
        "the first critical job is synthesizing"
    );
    h.check_invariants();
    while !h.pending.is_empty() {
        h.complete(0, false);
        h.check_invariants();
    }
    assert_eq!(h.machine.snapshot().counters.total_completed, 6);
}

/// Completes the pending effect that is a device phase, failing it when `fail`.
fn complete_device(h: &mut Harness, fail: bool) {
    let i = h.find(|e| matches!(e, Effect::Prove { .. }));
    h.complete(i, fail);
}

/// Totals since start, per kind.
mod counters;
/// Failures and late results of device phases: retries, fatal errors, workers that moved on.
mod device;
/// Jobs start once recorded, and fail when their acceptance could not be written.
mod journaled;
/// The `[limits]` intake checks, per priority.
mod limits;
/// Logging of illegal transitions.
mod logging;
/// The early a/b/c release, waiting for room in priority order, a job's timings, and what the
/// budget charges.
mod memory;
/// Params cache: reference counts, tiers, EvictSRS and LRU eviction.
mod params;
/// Random interleavings checked against the invariants above.
mod random;
/// Jobs read back from the journal with their partitions proved.
mod recovered;
/// Request ids: a failed job's retry, and expiry of the attempt before it.
mod request_ids;
/// Dispatch order, queue positions, the synthesis allowance and the lookahead.
mod scheduling;
/// A partition's next stage is always the one its edge table names, with the data it carries.
mod stages;
/// Queues per kind, the queue depth and memory per kind in the snapshot.
mod status;
/// The writer's work per input, counted, the same with ten jobs queued as with thousands.
mod writer_work;

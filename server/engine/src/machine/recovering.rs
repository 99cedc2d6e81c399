//! Jobs read back from the journal and not planned again yet. Recovery plans them in the
//! background (`crate::recovery`) while the daemon serves; until each one's plan arrives it is a
//! [`Recovering`] entry here: shown in the snapshots as a queued job, found by a retry of its
//! request (which attaches to it: nothing is proved twice), awaited and cancelled like any job.
//! Its plan makes it a job under its own id, sequence number and outcome channel
//! ([`Machine::restore`]); a plan that fails, or a cancel, ends it: it then stays readable
//! here for the retention of finished jobs, as a job would.

use tokio::sync::watch;
use tokio::time::Instant;

use super::{unix_ms, Machine, RequestKey};
use crate::domain::{JobEnd, JobFailure, JobOutcome, ProofKind, Submitted};
use crate::failures::{Failed, Failure};
use crate::journal::record::Record;
use crate::journal::RecoveredJob;
use crate::lifecycle::PartitionState;
use crate::prover::{Planned, Prover};
use crate::status::{JobState, JobStatus, PartitionStatus};

/// A recovered job waiting for its plan.
pub(crate) struct Recovering {
    pub job: RecoveredJob,
    /// The job's outcome channel: a waiter subscribed now keeps it once the job is restored.
    pub outcome: watch::Sender<Option<JobOutcome>>,
    /// Why its planning waits (its params are missing), while it does.
    pub waiting: Option<String>,
    /// How it ended before it was planned (cancelled, or it can never be), and when.
    pub ended: Option<(JobEnd, Instant, u64)>,
}

impl Recovering {
    fn live(&self) -> bool {
        self.ended.is_none()
    }
}

/// What recovery says of one job.
pub(crate) enum Replanned<T> {
    /// Planned again, with its params' estimated size: it becomes a job.
    Planned(Planned<T>, u64),
    /// It cannot be planned until this machine's setup changes (a params file is missing):
    /// planning is tried again later, and the job waits meanwhile.
    Waiting(String),
    /// It can never be planned; recovery has recorded its end (failed, or quarantined).
    Ended(JobFailure),
}

impl<P: Prover> Machine<P> {
    /// Takes the jobs read back from the journal, to be planned in the background.
    pub(crate) fn await_recovery(&mut self, jobs: Vec<RecoveredJob>) {
        for job in jobs {
            let seq = job.job.seq;
            self.next_seq = self.next_seq.max(seq + 1);
            let outcome = watch::channel(None).0;
            self.recovering.insert(
                seq,
                Recovering {
                    job,
                    outcome,
                    waiting: None,
                    ended: None,
                },
            );
        }
        self.changed();
    }

    /// Recovery's word on the job of `seq`. Nothing, when the job was cancelled meanwhile.
    pub(super) fn replanned(&mut self, seq: u64, result: Replanned<P::Plan>) {
        let Some(entry) = self.recovering.get_mut(&seq).filter(|r| r.live()) else {
            return;
        };
        match result {
            Replanned::Planned(plan, params_bytes) => {
                let entry = self.recovering.remove(&seq).expect("the entry is there");
                self.restore(entry.job, entry.outcome, plan, params_bytes);
            }
            Replanned::Waiting(reason) => {
                if entry.waiting.as_deref() != Some(&reason) {
                    entry.waiting = Some(reason);
                    self.changed();
                }
            }
            Replanned::Ended(failure) => {
                let job = &entry.job.job;
                self.failures.push(Failure {
                    at_unix_ms: unix_ms(),
                    kind: Some(job.kind),
                    request_id: job.request_id.clone(),
                    what: Failed::Job {
                        job_id: job.job_id.clone(),
                        stage: failure.stage,
                    },
                    class: failure.class,
                    message: failure.to_string(),
                });
                self.end_recovering(seq, JobEnd::Failed(failure));
            }
        }
    }

    /// The recovering job of a request id, kind and input.
    pub(super) fn find_recovering(&self, key: &RequestKey) -> Option<Submitted> {
        let (seq, entry) = self.recovering.iter().find(|(_, r)| {
            let job = &r.job.job;
            r.live()
                && job.request_id == key.request_id
                && job.kind == key.kind
                && job.digest == key.digest
        })?;
        Some(Submitted {
            job_id: entry.job.job.job_id.clone(),
            queue_position: self
                .recovering
                .range(..seq)
                .filter(|(_, r)| r.live())
                .count() as u32,
            existing: true,
        })
    }

    fn recovering_id(&self, job_id: &str) -> Option<u64> {
        (self.recovering.iter())
            .find(|(_, r)| r.job.job.job_id == job_id)
            .map(|(seq, _)| *seq)
    }

    /// The outcome channel of a recovering job.
    pub(super) fn watch_recovering(
        &self,
        job_id: &str,
    ) -> Option<watch::Receiver<Option<JobOutcome>>> {
        let seq = self.recovering_id(job_id)?;
        Some(self.recovering[&seq].outcome.subscribe())
    }

    /// Cancels a recovering job: it never runs, and its end is recorded. `None` when no
    /// recovering job has this id.
    pub(super) fn cancel_recovering(&mut self, job_id: &str) -> Option<bool> {
        let seq = self.recovering_id(job_id)?;
        let entry = &self.recovering[&seq];
        if !entry.live() {
            return Some(false);
        }
        tracing::info!(job_id, request_id = %entry.job.job.request_id, "job cancelled before recovery planned it");
        self.counters.cancelled += 1;
        self.effects.push(super::Effect::Record(
            Record::Finished {
                job_id: job_id.to_string(),
                end: JobEnd::Cancelled,
                timings: Default::default(),
                finished_unix_ms: unix_ms(),
            },
            None,
        ));
        self.end_recovering(seq, JobEnd::Cancelled);
        Some(false)
    }

    fn end_recovering(&mut self, seq: u64, end: JobEnd) {
        let entry = self.recovering.get_mut(&seq).expect("the entry is there");
        entry.ended = Some((end.clone(), crate::clock::now(), unix_ms()));
        let job_id = entry.job.job.job_id.clone();
        if let JobEnd::Failed(failure) = &end {
            let kind = entry.job.job.kind;
            super::Tally::add(&mut self.counters.failed, kind);
            super::intake::count_failed(kind, failure.class);
            tracing::warn!(%job_id, kind = %kind, class = %failure.class, error = %failure.message,
                "recovered job failed");
        }
        let outcome = JobOutcome {
            job_id,
            end,
            timings: Default::default(),
        };
        let to = self.recovering[&seq].outcome.clone();
        self.answer_outcome(to, outcome);
        self.changed();
    }

    /// Jobs still to be planned again, not counting those waiting for their params.
    pub(super) fn recovering_count(&self) -> usize {
        (self.recovering.values())
            .filter(|r| r.live() && r.waiting.is_none())
            .count()
    }

    /// Whether every recovering job has ended (or none is left).
    pub(super) fn recovering_idle(&self) -> bool {
        !self.recovering.values().any(Recovering::live)
    }

    /// Forgets recovering jobs that ended `retention` ago or more.
    pub(super) fn expire_recovering(&mut self, now: Instant, retention: std::time::Duration) {
        let before = self.recovering.len();
        (self.recovering)
            .retain(|_, r| (r.ended.as_ref()).is_none_or(|(_, at, _)| now - *at < retention));
        if self.recovering.len() != before {
            self.changed();
        }
    }

    /// The input sizes of the recovering jobs of `priority`.
    pub(super) fn recovering_inputs(
        &self,
        priority: crate::domain::Priority,
    ) -> impl Iterator<Item = u64> + '_ {
        (self.recovering.values())
            .filter(move |r| r.live() && r.job.job.priority == priority)
            .map(|r| r.job.job.input_bytes)
    }

    /// Recovering jobs of `kind`.
    pub(super) fn recovering_of(&self, kind: ProofKind) -> usize {
        (self.recovering.values())
            .filter(|r| r.live() && r.job.job.kind == kind)
            .count()
    }

    /// Recovering jobs as the snapshots show them: queued, their recorded partitions done.
    pub(super) fn recovering_statuses(&self) -> impl Iterator<Item = (u64, JobStatus)> + '_ {
        self.recovering.iter().map(|(&seq, r)| {
            let job = &r.job.job;
            let proved = |i: u32| r.job.proofs.iter().any(|(p, _)| *p == i);
            (
                seq,
                JobStatus {
                    job_id: job.job_id.clone(),
                    request_id: job.request_id.clone(),
                    kind: job.kind,
                    priority: job.priority,
                    circuit_id: String::new(),
                    submitted_at_unix_ms: job.submitted_unix_ms,
                    finished_at_unix_ms: r.ended.as_ref().map(|(_, _, unix_ms)| *unix_ms),
                    state: match &r.ended {
                        None => JobState::Queued,
                        Some((JobEnd::Cancelled, ..)) => JobState::Cancelled,
                        Some((JobEnd::Failed(_), ..)) => JobState::Failed,
                        Some((JobEnd::Completed(_), ..)) => JobState::Completed,
                    },
                    error: match &r.ended {
                        Some((JobEnd::Failed(failure), ..)) => Some(failure.to_string()),
                        _ => r.waiting.clone(),
                    },
                    partitions: (0..job.partitions)
                        .map(|index| PartitionStatus {
                            index,
                            state: match (proved(index), &r.ended) {
                                (true, _) => PartitionState::Done,
                                (false, None) => PartitionState::Pending,
                                (false, Some((JobEnd::Failed(_), ..))) => PartitionState::Failed,
                                (false, Some(_)) => PartitionState::Cancelled,
                            },
                            synth_ms: None,
                            gpu_ms: None,
                            worker_id: None,
                            reserved_bytes: 0,
                        })
                        .collect(),
                },
            )
        })
    }
}

//! The machine's jobs, with the indexes every input reads and the views the snapshots show.
//! The one way to change a job is [`Jobs::get_mut`], whose guard, when dropped, moves the job's
//! entries in every index and marks its view stale: so no input scans every job, and a snapshot
//! rebuilds only the views of the jobs that changed and shares the rest with the one before.
//! What the writer does is counted ([`WriterWork`]): the test that its work per input stays
//! the same from ten queued jobs to thousands reads it.

use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use tokio::time::Instant;

use super::records::Job;
use crate::domain::{JobFailure, Priority, ProofKind};
use crate::lifecycle::{JobStep, PartitionState};
use crate::prover::Prover;
use crate::status::{JobState, JobStatus, JobViews, PartitionStatus};

/// What the writer has done since it started, counted where it is done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct WriterWork {
    /// Job records read (by id, by sequence number, or in a scan).
    pub jobs_visited: u64,
    /// Job views built for a snapshot.
    pub views_rebuilt: u64,
}

/// What the indexes hold of one job, worked out again when its guard drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Standing {
    step: JobStep,
    uses_params: bool,
    /// Pending partitions of a job below HIGH (those a params load is worth waiting for).
    pending_low: u32,
    /// Running with every partition proved.
    ready_to_finalize: bool,
    /// A partition's reservation is held by a step's thread, which may resize it: the view
    /// shows its bytes live, so it is built again for every snapshot.
    metered: bool,
    ended: Option<Instant>,
}

impl Standing {
    fn of<P: Prover>(job: &Job<P>) -> Standing {
        let step = job.phase.step();
        let count = |state| job.parts.iter().filter(|p| p.state() == state).count() as u32;
        let done = count(PartitionState::Done) as usize == job.parts.len();
        Standing {
            step,
            uses_params: job.uses_params(),
            pending_low: match job.origin.priority < Priority::High && !step.is_ended() {
                true => count(PartitionState::Pending),
                false => 0,
            },
            ready_to_finalize: step == JobStep::Running && done,
            metered: (job.parts.iter()).any(|p| {
                matches!(
                    p.state(),
                    PartitionState::Synthesizing | PartitionState::Gpu
                )
            }),
            ended: job.phase.ended_at().map(|m| m.at),
        }
    }
}

/// Counts and sets over every job, kept by [`Index::account`] as jobs change.
#[derive(Debug, Default, PartialEq)]
struct Index {
    /// Unfinished jobs and their input bytes, by priority.
    unfinished: BTreeMap<Priority, (usize, u64)>,
    /// Unfinished jobs in scheduling order.
    order: BTreeSet<(Reverse<Priority>, u64)>,
    by_state: HashMap<(ProofKind, JobState), u32>,
    finalizing: usize,
    /// Jobs that need their circuit's params now, by circuit.
    params_users: HashMap<String, BTreeSet<u64>>,
    /// Pending partitions below HIGH, by circuit.
    pending_low: HashMap<String, u32>,
    to_finalize: BTreeSet<u64>,
    ended: BTreeSet<(Instant, u64)>,
    metered: BTreeSet<u64>,
}

/// Adds `n` (which may be negative) to `key`'s count; a count of zero is no entry.
fn bump<K: std::hash::Hash + Eq + std::borrow::Borrow<Q>, Q: std::hash::Hash + Eq + ?Sized>(
    map: &mut HashMap<K, u32>,
    key: &Q,
    n: i64,
    owned: impl FnOnce() -> K,
) {
    if n == 0 {
        return;
    }
    let count = match map.get_mut(key) {
        Some(count) => count,
        None => map.entry(owned()).or_default(),
    };
    *count = (*count as i64 + n) as u32;
    if *count == 0 {
        map.remove(key);
    }
}

fn toggle<T: Ord>(set: &mut BTreeSet<T>, item: T, on: bool, add: bool) {
    match (on, add) {
        (false, _) => {}
        (true, true) => {
            set.insert(item);
        }
        (true, false) => {
            set.remove(&item);
        }
    }
}

impl Index {
    /// Adds (`add`) or takes away what `job` in standing `s` contributes.
    fn account<P: Prover>(&mut self, job: &Job<P>, s: &Standing, add: bool) {
        let sign = if add { 1 } else { -1 };
        let (priority, kind, state) = (job.origin.priority, job.origin.kind, s.step.state());
        if !s.step.is_ended() {
            let (n, bytes) = self.unfinished.entry(priority).or_default();
            *n = (*n as i64 + sign) as usize;
            *bytes = (*bytes as i64 + sign * job.origin.input_bytes as i64) as u64;
            if *n == 0 {
                self.unfinished.remove(&priority);
            }
            toggle(&mut self.order, (Reverse(priority), job.seq), true, add);
        }
        bump(&mut self.by_state, &(kind, state), sign, || (kind, state));
        if s.step == JobStep::Finalizing {
            self.finalizing = (self.finalizing as i64 + sign) as usize;
        }
        let circuit = job.circuit_id.as_str();
        if s.uses_params {
            let users = match self.params_users.get_mut(circuit) {
                Some(users) => users,
                None => self.params_users.entry(circuit.to_string()).or_default(),
            };
            toggle(users, job.seq, true, add);
            if users.is_empty() {
                self.params_users.remove(circuit);
            }
        }
        let pending = sign * s.pending_low as i64;
        bump(&mut self.pending_low, circuit, pending, || {
            circuit.to_string()
        });
        toggle(&mut self.to_finalize, job.seq, s.ready_to_finalize, add);
        if let Some(at) = s.ended {
            toggle(&mut self.ended, (at, job.seq), true, add);
        }
        toggle(&mut self.metered, job.seq, s.metered, add);
    }
}

struct Entry<P: Prover> {
    job: Job<P>,
    standing: Standing,
}

/// The views of the last snapshot and the jobs whose views are out of date.
#[derive(Default)]
struct Views {
    views: JobViews,
    stale: BTreeSet<u64>,
}

/// Every job the machine holds, by sequence number.
pub(crate) struct Jobs<P: Prover> {
    map: BTreeMap<u64, Entry<P>>,
    index: Index,
    views: RefCell<Views>,
    work: Cell<WriterWork>,
}

impl<P: Prover> Default for Jobs<P> {
    fn default() -> Self {
        Jobs {
            map: BTreeMap::new(),
            index: Index::default(),
            views: Default::default(),
            work: Default::default(),
        }
    }
}

/// A job being changed: its indexes and view follow when this is dropped.
pub(crate) struct JobMut<'a, P: Prover> {
    entry: &'a mut Entry<P>,
    index: &'a mut Index,
}

impl<P: Prover> Deref for JobMut<'_, P> {
    type Target = Job<P>;
    fn deref(&self) -> &Job<P> {
        &self.entry.job
    }
}

impl<P: Prover> DerefMut for JobMut<'_, P> {
    fn deref_mut(&mut self) -> &mut Job<P> {
        &mut self.entry.job
    }
}

impl<P: Prover> Drop for JobMut<'_, P> {
    fn drop(&mut self) {
        let now = Standing::of(&self.entry.job);
        if now != self.entry.standing {
            self.index
                .account(&self.entry.job, &self.entry.standing, false);
            self.index.account(&self.entry.job, &now, true);
            self.entry.standing = now;
        }
    }
}

impl<P: Prover> Jobs<P> {
    fn visited(&self, n: usize) {
        let mut work = self.work.get();
        work.jobs_visited += n as u64;
        self.work.set(work);
    }

    #[cfg(test)]
    pub fn work(&self) -> WriterWork {
        self.work.get()
    }

    /// Adds a job under its sequence number, which is new (the machine counts them up).
    pub fn insert(&mut self, job: Job<P>) {
        let seq = job.seq;
        debug_assert!(!self.map.contains_key(&seq), "sequence number {seq} reused");
        let standing = Standing::of(&job);
        self.index.account(&job, &standing, true);
        self.views.get_mut().stale.insert(seq);
        self.map.insert(seq, Entry { job, standing });
    }

    pub fn remove(&mut self, seq: u64) -> Option<Job<P>> {
        let entry = self.map.remove(&seq)?;
        self.index.account(&entry.job, &entry.standing, false);
        self.views.get_mut().stale.insert(seq);
        Some(entry.job)
    }

    pub fn get(&self, seq: &u64) -> Option<&Job<P>> {
        self.visited(1);
        self.map.get(seq).map(|e| &e.job)
    }

    /// The job to change; its indexes and view follow when the guard is dropped.
    pub fn get_mut(&mut self, seq: &u64) -> Option<JobMut<'_, P>> {
        self.visited(1);
        let entry = self.map.get_mut(seq)?;
        self.views.get_mut().stale.insert(*seq);
        Some(JobMut {
            entry,
            index: &mut self.index,
        })
    }

    /// Every job in submit order, each counted as visited: for tests and the rare request
    /// that needs them all, never for an input's ordinary work.
    pub fn values(&self) -> impl Iterator<Item = &Job<P>> {
        self.map.values().map(|e| {
            self.visited(1);
            &e.job
        })
    }

    /// Unfinished jobs of `priority` and their input bytes.
    pub fn unfinished_of(&self, priority: Priority) -> (usize, u64) {
        self.index
            .unfinished
            .get(&priority)
            .copied()
            .unwrap_or_default()
    }

    pub fn all_finished(&self) -> bool {
        self.index.order.is_empty()
    }

    /// Jobs of `kind` in `state`.
    pub fn count(&self, kind: ProofKind, state: JobState) -> usize {
        self.index
            .by_state
            .get(&(kind, state))
            .copied()
            .unwrap_or(0) as usize
    }

    pub fn any_finalizing(&self) -> bool {
        self.index.finalizing > 0
    }

    /// Jobs that need `circuit_id`'s params loaded now ([`Job::uses_params`]).
    pub fn params_users(&self, circuit_id: &str) -> u32 {
        self.index
            .params_users
            .get(circuit_id)
            .map_or(0, |u| u.len() as u32)
    }

    /// Calls `f` with each job that needs `circuit_id`'s params now.
    pub fn for_params_users(&mut self, circuit_id: &str, mut f: impl FnMut(&mut Job<P>)) {
        let users: Vec<u64> = (self.index.params_users.get(circuit_id))
            .map_or_else(Vec::new, |u| u.iter().copied().collect());
        for seq in users {
            if let Some(mut job) = self.get_mut(&seq) {
                f(&mut job);
            }
        }
    }

    /// Pending partitions below HIGH of jobs of `circuit_id`.
    pub fn pending_low(&self, circuit_id: &str) -> u32 {
        self.index.pending_low.get(circuit_id).copied().unwrap_or(0)
    }

    /// Running jobs whose partitions are all proved.
    pub fn ready_to_finalize(&self) -> Vec<u64> {
        self.index.to_finalize.iter().copied().collect()
    }

    /// Jobs that ended at or before `until`, oldest end first.
    pub fn ended_by(&self, until: Instant) -> Vec<u64> {
        (self.index.ended.iter())
            .take_while(|(at, _)| *at <= until)
            .map(|(_, seq)| *seq)
            .collect()
    }

    /// Unfinished jobs that run before job `seq`: those of a higher priority, then those of
    /// its own submitted before it (counted one by one only when it is not the newest of its
    /// priority, as a retry of an older job is). 0 for a job that has ended, as for one
    /// answered from the journal.
    pub fn ahead_of(&self, seq: u64) -> u32 {
        use std::ops::Bound::{Excluded, Unbounded};
        let Some(entry) = self.map.get(&seq) else {
            return 0;
        };
        let priority = entry.job.origin.priority;
        let key = (Reverse(priority), seq);
        if !self.index.order.contains(&key) {
            return 0;
        }
        let higher: usize = (self.index.unfinished.range((Excluded(priority), Unbounded)))
            .map(|(_, (n, _))| n)
            .sum();
        let newest =
            (self.index.order.range(key..).nth(1)).is_none_or(|next| next.0 .0 != priority);
        let same = match newest {
            true => self.unfinished_of(priority).0 - 1,
            false => {
                let n = (self.index.order.range((Reverse(priority), 0)..key)).count();
                self.visited(n);
                n
            }
        };
        (higher + same) as u32
    }

    /// The jobs' views as of now: those of jobs changed since the last call built again, and
    /// those whose reservations a step's thread holds; the rest shared with the last views.
    pub fn views(&self) -> JobViews {
        let mut views = self.views.borrow_mut();
        let Views { views, stale } = &mut *views;
        let stale = std::mem::take(stale);
        let mut rebuilt = 0;
        for seq in stale.iter().chain(self.index.metered.difference(&stale)) {
            match self.map.get(seq) {
                Some(entry) => {
                    views.insert(*seq, Arc::new(view(&entry.job)));
                    rebuilt += 1;
                }
                None => views.remove(*seq),
            }
        }
        let mut work = self.work.get();
        work.views_rebuilt += rebuilt;
        self.work.set(work);
        views.clone()
    }

    /// Every view built from the jobs themselves, and the indexes worked out from a scan: what
    /// the kept ones must equal.
    #[cfg(test)]
    pub fn check(&self) {
        let fresh: JobViews = self.map.values().map(|e| view(&e.job)).collect();
        assert!(
            self.views().iter().eq(fresh.iter()),
            "kept views are the jobs' own"
        );
        let mut index = Index::default();
        for e in self.map.values() {
            assert_eq!(
                e.standing,
                Standing::of(&e.job),
                "job {} standing",
                e.job.id
            );
            index.account(&e.job, &e.standing, true);
        }
        assert_eq!(index, self.index, "kept indexes are a scan's");
    }
}

impl<P: Prover> std::ops::Index<&u64> for Jobs<P> {
    type Output = Job<P>;

    fn index(&self, seq: &u64) -> &Job<P> {
        self.get(seq).expect("a job the machine holds")
    }
}

/// What the snapshots show of `job`.
pub(super) fn view<P: Prover>(j: &Job<P>) -> JobStatus {
    JobStatus {
        job_id: j.id.clone(),
        request_id: j.origin.request_id.clone(),
        kind: j.origin.kind,
        priority: j.origin.priority,
        circuit_id: j.circuit_id.clone(),
        submitted_at_unix_ms: j.submitted_unix_ms,
        finished_at_unix_ms: j.phase.ended_at().map(|e| e.unix_ms),
        state: j.phase.state(),
        error: j.phase.failure().map(JobFailure::to_string),
        partitions: (j.parts.iter().enumerate())
            .map(|(i, p)| {
                let reached = p.stage.reached();
                PartitionStatus {
                    index: i as u32,
                    state: p.state(),
                    synth_ms: reached.synth_ms(),
                    gpu_ms: reached.gpu_ms(),
                    worker_id: reached.worker(),
                    reserved_bytes: p.stage.reserved_bytes(),
                }
            })
            .collect(),
    }
}

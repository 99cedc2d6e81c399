//! What the engine remembers of the last hour: every job that ended (when, its kind, how long it
//! took, whether it failed), every stint a device worker was busy, and its load (memory in use and
//! partitions in each place) at 10-second resolution. Snapshots share it (an `Arc`; when it
//! grows while a reader holds the old one, the copy shares the jobs' and stints' chunks and
//! copies only the chunk that grows, see `chunked.rs`); readers reckon rates,
//! latency percentiles and worker utilisation over a window as of the moment they show them, so
//! the snapshot itself holds no time that moves by itself.

use std::collections::VecDeque;

use crate::chunked::Chunked;
use crate::domain::ProofKind;

/// How far back the history reaches.
pub const HISTORY_MS: u64 = 60 * 60 * 1000;
/// At most this many ended jobs are kept (the oldest go first), whatever their age.
pub const MAX_ENDED: usize = 50_000;

/// Resolution of the load series.
pub const LOAD_BUCKET_MS: u64 = 10_000;

/// The engine's load: memory in use and where the partitions of unfinished jobs are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Load {
    pub memory_used_bytes: u64,
    pub waiting_for_admission: u32,
    pub synthesizing: u32,
    pub waiting_for_worker: u32,
    pub on_worker: u32,
}

impl Load {
    /// Each figure the larger of the two.
    fn max(self, other: Load) -> Load {
        Load {
            memory_used_bytes: self.memory_used_bytes.max(other.memory_used_bytes),
            waiting_for_admission: self.waiting_for_admission.max(other.waiting_for_admission),
            synthesizing: self.synthesizing.max(other.synthesizing),
            waiting_for_worker: self.waiting_for_worker.max(other.waiting_for_worker),
            on_worker: self.on_worker.max(other.on_worker),
        }
    }
}

/// The most load seen in a 10-second bucket, from its start until the next kept bucket (a
/// bucket is kept only when the load differs from the one before, so an idle daemon's history
/// stops changing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct LoadBucket {
    pub start_unix_ms: u64,
    pub peak: Load,
}

/// A job that completed or failed (cancelled jobs are not counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Ended {
    pub at_unix_ms: u64,
    pub kind: ProofKind,
    /// From submit to the end.
    pub total_ms: u64,
    pub failed: bool,
}

/// A time a worker spent proving, from the start of its first device phase to the end of its
/// last one with no idle moment between.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Stint {
    pub from_unix_ms: u64,
    pub to_unix_ms: u64,
}

/// What a journal recorded of the last hour, oldest first: where a restarted engine's history
/// starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Past {
    pub ended: Vec<Ended>,
    pub stints: Vec<Stint>,
    pub load: Vec<LoadBucket>,
}

/// Ended jobs and finished stints of the last hour, oldest first. (`Eq` lets `Arc` compare two
/// snapshots' histories by address first.)
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct History {
    /// Up to [`MAX_ENDED`] entries, in shared chunks: a snapshot's copy of the history costs
    /// no copy of them, and a job ending while readers hold one copies one chunk.
    ended: Chunked<Ended>,
    stints: Chunked<Stint>,
    /// At most one bucket per 10 s of the hour.
    load: VecDeque<LoadBucket>,
}

/// One bucket of [`History::buckets`]: its start and, for each kind with anything ended in it,
/// (kind, completed, failed).
pub type Bucket = (u64, Vec<(ProofKind, u32, u32)>);

/// What ended of one kind within a window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KindWindow {
    pub completed: u32,
    pub failed: u32,
    /// Nearest-rank latency percentiles of the completed jobs; None when none completed.
    pub p50_ms: Option<u64>,
    pub p99_ms: Option<u64>,
}

impl History {
    pub fn job_ended(&mut self, ended: Ended) {
        self.ended.push_back(ended);
        while self.ended.len() > MAX_ENDED {
            self.ended.pop_front();
        }
        let cutoff = ended.at_unix_ms.saturating_sub(HISTORY_MS);
        while self.ended.front().is_some_and(|e| e.at_unix_ms < cutoff) {
            self.ended.pop_front();
        }
    }

    pub fn stint_ended(&mut self, stint: Stint) {
        let cutoff = stint.to_unix_ms.saturating_sub(HISTORY_MS);
        self.stints.push_back(stint);
        while self.stints.front().is_some_and(|s| s.to_unix_ms < cutoff) {
            self.stints.pop_front();
        }
    }

    /// Whether noting `load` at `now_ms` would change the history (callers check first, so an
    /// unchanged history is never copied).
    pub fn load_changes(&self, now_ms: u64, load: Load) -> bool {
        let start = now_ms / LOAD_BUCKET_MS * LOAD_BUCKET_MS;
        match self.load.back() {
            Some(last) if last.start_unix_ms == start => last.peak.max(load) != last.peak,
            Some(last) => last.peak != load,
            None => true,
        }
    }

    /// Notes the load at `now_ms`: the bucket's peak grows, or a new bucket starts when the load
    /// differs from the last bucket's. Buckets older than the hour go, but for the last of them,
    /// which says what the load was when the hour began. Returns the bucket as it now stands,
    /// when it changed.
    pub fn note_load(&mut self, now_ms: u64, load: Load) -> Option<LoadBucket> {
        if !self.load_changes(now_ms, load) {
            return None;
        }
        let start = now_ms / LOAD_BUCKET_MS * LOAD_BUCKET_MS;
        match self.load.back_mut() {
            Some(last) if last.start_unix_ms == start => last.peak = last.peak.max(load),
            _ => self.load.push_back(LoadBucket {
                start_unix_ms: start,
                peak: load,
            }),
        }
        let cutoff = now_ms.saturating_sub(HISTORY_MS);
        while self.load.get(1).is_some_and(|b| b.start_unix_ms <= cutoff) {
            self.load.pop_front();
        }
        self.load.back().copied()
    }

    /// Adds what a journal recorded before a restart (each part oldest first, all older than
    /// anything noted since).
    pub fn restore(&mut self, past: Past) {
        for e in past.ended {
            self.job_ended(e);
        }
        for s in past.stints {
            self.stint_ended(s);
        }
        self.load.extend(past.load);
    }

    /// The load series, oldest first.
    pub fn load(&self) -> impl Iterator<Item = &LoadBucket> {
        self.load.iter()
    }

    /// The jobs of `kind` that ended in the `window_ms` before `now_ms`.
    pub fn window(&self, kind: ProofKind, now_ms: u64, window_ms: u64) -> KindWindow {
        let since = now_ms.saturating_sub(window_ms);
        let of_kind = self
            .ended
            .iter()
            .filter(|e| e.kind == kind && e.at_unix_ms > since && e.at_unix_ms <= now_ms);
        let mut latencies = Vec::new();
        let mut failed = 0;
        for e in of_kind {
            if e.failed {
                failed += 1;
            } else {
                latencies.push(e.total_ms);
            }
        }
        latencies.sort_unstable();
        let rank = |q: f64| nearest_rank(latencies.len(), q).map(|i| latencies[i]);
        KindWindow {
            completed: latencies.len() as u32,
            failed,
            p50_ms: rank(0.5),
            p99_ms: rank(0.99),
        }
    }

    /// Jobs of each kind completed and failed in each of `count` buckets of `bucket_ms` ending
    /// at `now_ms`, oldest first: (bucket start, [(kind, completed, failed)] for kinds with any).
    pub fn buckets(&self, now_ms: u64, bucket_ms: u64, count: u64) -> Vec<Bucket> {
        let start = now_ms.saturating_sub(bucket_ms * count);
        let mut out: Vec<Bucket> = (0..count)
            .map(|i| (start + i * bucket_ms, Vec::new()))
            .collect();
        for e in self
            .ended
            .iter()
            .filter(|e| e.at_unix_ms > start && e.at_unix_ms <= now_ms)
        {
            let i = (((e.at_unix_ms - start - 1) / bucket_ms) as usize).min(out.len() - 1);
            let counts = &mut out[i].1;
            let slot = match counts.iter().position(|c| c.0 == e.kind) {
                Some(slot) => slot,
                None => {
                    counts.push((e.kind, 0, 0));
                    counts.len() - 1
                }
            };
            if e.failed {
                counts[slot].2 += 1;
            } else {
                counts[slot].1 += 1;
            }
        }
        out
    }

    /// The share (0 to 1) of `workers` workers' time spent proving in the `window_ms` before
    /// `now_ms`, counting the stints still running (`busy_since`, one per busy worker).
    pub fn busy_share(
        &self,
        workers: usize,
        busy_since: &[u64],
        now_ms: u64,
        window_ms: u64,
    ) -> f64 {
        if workers == 0 || window_ms == 0 {
            return 0.0;
        }
        let since = now_ms.saturating_sub(window_ms);
        let overlap = |from: u64, to: u64| to.min(now_ms).saturating_sub(from.max(since));
        let busy: u64 = self
            .stints
            .iter()
            .map(|s| overlap(s.from_unix_ms, s.to_unix_ms))
            .chain(busy_since.iter().map(|&from| overlap(from, now_ms)))
            .sum();
        (busy as f64 / (window_ms * workers as u64) as f64).min(1.0)
    }
}

/// Where the nearest-rank `q` quantile (0 < q <= 1) lies among `len` values in ascending order:
/// the one definition the status, the simulation and the bench take percentiles by. None when
/// there are no values.
pub fn nearest_rank(len: usize, q: f64) -> Option<usize> {
    (len > 0).then(|| ((q * len as f64).ceil() as usize).clamp(1, len) - 1)
}
#[cfg(test)]
mod tests {
    use super::*;

    const MIN: u64 = 60_000;

    fn ended(at_min: u64, kind: ProofKind, total_ms: u64, failed: bool) -> Ended {
        Ended {
            at_unix_ms: HISTORY_MS + at_min * MIN,
            kind,
            total_ms,
            failed,
        }
    }

    #[test]
    fn windows_count_what_ended_of_a_kind_with_its_latency_percentiles() {
        let mut h = History::default();
        for (i, ms) in [100, 400, 200, 300].into_iter().enumerate() {
            h.job_ended(ended(i as u64, ProofKind::WindowPost, ms, false));
        }
        h.job_ended(ended(4, ProofKind::WindowPost, 9_000, true));
        h.job_ended(ended(4, ProofKind::WinningPost, 3_000, false));
        let now = HISTORY_MS + 5 * MIN;
        let hour = h.window(ProofKind::WindowPost, now, HISTORY_MS);
        assert_eq!((hour.completed, hour.failed), (4, 1));
        assert_eq!((hour.p50_ms, hour.p99_ms), (Some(200), Some(400)));
        // The last 2.5 minutes hold the jobs that ended at minutes 3 and 4.
        let recent = h.window(ProofKind::WindowPost, now, 5 * MIN / 2);
        assert_eq!(
            (recent.completed, recent.failed, recent.p50_ms),
            (1, 1, Some(300))
        );
        let none = h.window(ProofKind::PorepSealCommit, now, HISTORY_MS);
        assert_eq!(none, KindWindow::default());
    }

    #[test]
    fn the_history_forgets_what_is_older_than_an_hour() {
        let mut h = History::default();
        h.job_ended(ended(0, ProofKind::WinningPost, 1, false));
        h.job_ended(ended(61, ProofKind::WinningPost, 2, false));
        let now = HISTORY_MS + 61 * MIN;
        assert_eq!(
            h.window(ProofKind::WinningPost, now, 10 * HISTORY_MS)
                .completed,
            1
        );
    }

    #[test]
    fn buckets_split_the_last_minutes_by_kind() {
        let mut h = History::default();
        h.job_ended(ended(1, ProofKind::WindowPost, 1, false));
        h.job_ended(ended(1, ProofKind::WindowPost, 1, true));
        h.job_ended(ended(2, ProofKind::WinningPost, 1, false));
        let now = HISTORY_MS + 3 * MIN;
        let b = h.buckets(now, MIN, 3);
        assert_eq!(b.len(), 3);
        assert_eq!(b[0], (HISTORY_MS, vec![(ProofKind::WindowPost, 1, 1)]));
        assert_eq!(b[1].1, vec![(ProofKind::WinningPost, 1, 0)]);
        assert!(b[2].1.is_empty());
    }

    #[test]
    fn the_load_series_keeps_each_buckets_peak_and_only_changes() {
        let load = |synthesizing| Load {
            memory_used_bytes: 100 * u64::from(synthesizing),
            synthesizing,
            ..Load::default()
        };
        let mut h = History::default();
        h.note_load(1_000, load(1));
        h.note_load(5_000, load(3));
        assert!(!h.load_changes(9_000, load(2)), "below the bucket's peak");
        h.note_load(9_000, load(2));
        let peaks: Vec<_> = h.load().map(|b| (b.start_unix_ms, b.peak)).collect();
        assert_eq!(peaks, vec![(0, load(3))]);

        // The same load in the next buckets changes nothing: an idle daemon's history stays.
        assert!(!h.load_changes(12_000, load(3)));
        assert!(h.load_changes(25_000, load(0)));
        h.note_load(25_000, load(0));
        assert!(!h.load_changes(3_000_000, load(0)));
        let starts: Vec<_> = h.load().map(|b| b.start_unix_ms).collect();
        assert_eq!(starts, vec![0, 20_000]);

        // An hour on, only the last bucket before the hour is kept, as the starting level.
        h.note_load(HISTORY_MS + 30_000, load(4));
        let starts: Vec<_> = h.load().map(|b| b.start_unix_ms).collect();
        assert_eq!(starts, vec![20_000, HISTORY_MS + 30_000]);
    }

    #[test]
    fn busy_share_counts_finished_and_running_stints_within_the_window() {
        let mut h = History::default();
        h.stint_ended(Stint {
            from_unix_ms: 0,
            to_unix_ms: 30_000,
        });
        // Window 20 s..80 s: 10 s of the finished stint, 20 s of the running one (since 60 s).
        let share = h.busy_share(1, &[60_000], 80_000, 60_000);
        assert!((share - 0.5).abs() < 1e-9, "{share}");
        assert_eq!(h.busy_share(2, &[], 80_000, 60_000), 10_000.0 / 120_000.0);
        assert_eq!(h.busy_share(0, &[], 80_000, 60_000), 0.0);
    }
}

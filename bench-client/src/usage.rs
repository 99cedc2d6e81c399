//! How busy the daemon's device workers were during a run, read from its StreamStatus feed.
//!
//! Each snapshot's state is taken to hold from its `taken_at_unix_ms` until the next snapshot's,
//! so the shares are time-weighted. "Queued" time is when at least one partition sat synthesized
//! and waiting for a worker (`SYNTH_DONE`): a worker idle then is time a pipeline should not lose.

use serde_json::{json, Value};
use snarkd_proto::v1 as pb;
use tokio_stream::StreamExt;

use crate::client::Client;

/// Time-weighted worker occupancy over the snapshots observed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkerUsage {
    /// (taken_at_unix_ms, proving workers, all workers, a partition waiting) of the last snapshot.
    last: Option<(u64, u32, u32, bool)>,
    /// Worker-milliseconds available and spent proving, over the whole run.
    worker_ms: f64,
    busy_ms: f64,
    /// The same, only while a partition was waiting for a worker.
    queued_worker_ms: f64,
    queued_busy_ms: f64,
    queued_ms: f64,
    pub workers: u32,
}

impl WorkerUsage {
    /// Accounts the time since the previous snapshot to the previous snapshot's state.
    pub fn observe(&mut self, s: &pb::StatusSnapshot) {
        let proving = s
            .workers
            .iter()
            .filter(|w| w.state == pb::WorkerState::Proving as i32)
            .count() as u32;
        let all = s.workers.len() as u32;
        let waiting = s.jobs.iter().any(|j| {
            j.partitions
                .iter()
                .any(|p| p.state == pb::PartitionState::SynthDone as i32)
        });
        if let Some((at, busy, n, queued)) = self.last {
            let dt = s.taken_at_unix_ms.saturating_sub(at) as f64;
            self.worker_ms += dt * f64::from(n);
            self.busy_ms += dt * f64::from(busy);
            if queued {
                self.queued_ms += dt;
                self.queued_worker_ms += dt * f64::from(n);
                self.queued_busy_ms += dt * f64::from(busy);
            }
        }
        self.workers = self.workers.max(all);
        self.last = Some((s.taken_at_unix_ms, proving, all, waiting));
    }

    /// Share of worker time spent proving (0..=1); None before two snapshots.
    pub fn busy_share(&self) -> Option<f64> {
        (self.worker_ms > 0.0).then(|| self.busy_ms / self.worker_ms)
    }

    /// Share of worker time spent proving while a partition waited; None if none ever waited.
    pub fn busy_share_while_queued(&self) -> Option<f64> {
        (self.queued_worker_ms > 0.0).then(|| self.queued_busy_ms / self.queued_worker_ms)
    }

    pub fn json(&self) -> Value {
        json!({
            "workers": self.workers,
            "busy_share": self.busy_share(),
            "busy_share_while_queued": self.busy_share_while_queued(),
            "queued_seconds": self.queued_ms / 1e3,
        })
    }

    pub fn text(&self) -> String {
        let pct = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{:.1} %", v * 100.0));
        format!(
            "workers     {} busy {} of the time, {} while partitions waited ({:.1} s)",
            self.workers,
            pct(self.busy_share()),
            pct(self.busy_share_while_queued()),
            self.queued_ms / 1e3
        )
    }
}

/// Follows the daemon's StreamStatus until `stop` fires, then returns the usage seen.
pub async fn follow(
    mut client: Client,
    mut stop: tokio::sync::oneshot::Receiver<()>,
    mut each: impl FnMut(&pb::StatusSnapshot),
) -> anyhow::Result<WorkerUsage> {
    let mut stream = client
        .stream_status(pb::StreamStatusRequest {
            min_interval_ms: 20,
            job_ids: Vec::new(),
        })
        .await?
        .into_inner();
    let mut usage = WorkerUsage::default();
    loop {
        tokio::select! {
            _ = &mut stop => break,
            next = stream.next() => match next {
                Some(Ok(s)) => {
                    usage.observe(&s);
                    each(&s);
                }
                Some(Err(status)) => anyhow::bail!("status stream: {}", status.message()),
                None => break,
            },
        }
    }
    Ok(usage)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(at: u64, workers: &[bool], waiting: bool) -> pb::StatusSnapshot {
        let state = |busy: bool| {
            if busy {
                pb::WorkerState::Proving
            } else {
                pb::WorkerState::Idle
            }
        };
        let partition = pb::PartitionStatus {
            state: if waiting {
                pb::PartitionState::SynthDone
            } else {
                pb::PartitionState::Gpu
            } as i32,
            ..Default::default()
        };
        pb::StatusSnapshot {
            taken_at_unix_ms: at,
            workers: workers
                .iter()
                .map(|&b| pb::WorkerStatus {
                    state: state(b) as i32,
                    ..Default::default()
                })
                .collect(),
            jobs: vec![pb::JobStatus {
                partitions: vec![partition],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn shares_are_weighted_by_the_time_each_state_lasted() {
        let mut u = WorkerUsage::default();
        assert_eq!(u.busy_share(), None);
        u.observe(&snapshot(1_000, &[true, false], true)); // 1 of 2 busy, waiting: 100 ms
        u.observe(&snapshot(1_100, &[true, true], true)); // 2 of 2 busy, waiting: 300 ms
        u.observe(&snapshot(1_400, &[false, false], false)); // idle, nothing waits: 600 ms
        u.observe(&snapshot(2_000, &[false, false], false));
        assert_eq!(u.workers, 2);
        // Busy worker-ms: 100 + 600 = 700 of 2 × 1000.
        assert!((u.busy_share().unwrap() - 0.35).abs() < 1e-9);
        // While waiting: 700 of 2 × 400.
        assert!((u.busy_share_while_queued().unwrap() - 0.875).abs() < 1e-9);
        assert_eq!(u.json()["queued_seconds"], 0.4);
    }

    #[test]
    fn nothing_waited_means_no_queued_share() {
        let mut u = WorkerUsage::default();
        u.observe(&snapshot(0, &[true], false));
        u.observe(&snapshot(500, &[true], false));
        assert_eq!(u.busy_share(), Some(1.0));
        assert_eq!(u.busy_share_while_queued(), None);
        assert!(u.text().contains("n/a"), "{}", u.text());
    }
}

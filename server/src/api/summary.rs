//! The summary and history parts of a StatusSnapshot message, reckoned as of the message's own
//! time (to the second) from the engine snapshot's jobs and its last hour of history: per kind,
//! where the partitions of unfinished jobs are and what ended over 5 minutes and an hour; jobs
//! ended per minute; the workers' busy share. Streams share it through the message encoded once
//! per snapshot and second (`encoded.rs`).

use snarkd_engine::history::HISTORY_MS;
use snarkd_engine::lifecycle::PartitionState;
use snarkd_engine::{ProofKind, StatusSnapshot};
use snarkd_proto::v1 as pb;

use super::outcome::kind_to_pb;

const FIVE_MINUTES_MS: u64 = 5 * 60 * 1000;
const MINUTE_MS: u64 = 60 * 1000;

/// The reckoned parts of one message.
#[derive(Debug, Clone, PartialEq)]
pub struct Reckoned {
    pub kinds: Vec<pb::KindSummary>,
    pub minutes: Vec<pb::HistoryBucket>,
    /// Over the last 5 minutes and the last hour.
    pub busy_shares: (f64, f64),
}

impl Reckoned {
    /// The parts for `s` as of the second `now_ms` is in.
    pub fn at(s: &StatusSnapshot, now_ms: u64) -> Reckoned {
        let at = now_ms / 1000 * 1000;
        Reckoned {
            kinds: kinds(s, at),
            minutes: minutes(s, at),
            busy_shares: busy_shares(s, at),
        }
    }
}

/// One row per proof kind.
fn kinds(s: &StatusSnapshot, now_ms: u64) -> Vec<pb::KindSummary> {
    ProofKind::ALL
        .iter()
        .map(|&kind| {
            let mut row = pb::KindSummary {
                proof_kind: kind_to_pb(kind) as i32,
                ..Default::default()
            };
            let partitions = s
                .jobs
                .iter()
                .filter(|j| j.kind == kind)
                .flat_map(|j| &j.partitions);
            for p in partitions {
                match p.state {
                    PartitionState::Pending => row.waiting_for_admission += 1,
                    PartitionState::Synthesizing => row.synthesizing += 1,
                    PartitionState::SynthDone => row.waiting_for_worker += 1,
                    PartitionState::Gpu => row.on_worker += 1,
                    _ => {}
                }
            }
            let hour = s.history.window(kind, now_ms, HISTORY_MS);
            row.completed_5m = s.history.window(kind, now_ms, FIVE_MINUTES_MS).completed;
            row.completed_1h = hour.completed;
            row.failed_1h = hour.failed;
            row.p50_ms_1h = hour.p50_ms.unwrap_or(0);
            row.p99_ms_1h = hour.p99_ms.unwrap_or(0);
            row
        })
        .collect()
}

/// Jobs ended in each minute of the last hour, oldest first.
fn minutes(s: &StatusSnapshot, now_ms: u64) -> Vec<pb::HistoryBucket> {
    s.history
        .buckets(now_ms, MINUTE_MS, HISTORY_MS / MINUTE_MS)
        .into_iter()
        .map(|(start, ended)| pb::HistoryBucket {
            start_unix_ms: start,
            ended: ended
                .into_iter()
                .map(|(kind, completed, failed)| pb::KindEnded {
                    proof_kind: kind_to_pb(kind) as i32,
                    completed,
                    failed,
                })
                .collect(),
        })
        .collect()
}

/// The workers' busy share over the last 5 minutes and the last hour.
fn busy_shares(s: &StatusSnapshot, now_ms: u64) -> (f64, f64) {
    let running: Vec<u64> = s
        .workers
        .iter()
        .filter_map(|w| w.busy_since_unix_ms)
        .collect();
    let share = |window| {
        s.history
            .busy_share(s.workers.len(), &running, now_ms, window)
    };
    (share(FIVE_MINUTES_MS), share(HISTORY_MS))
}

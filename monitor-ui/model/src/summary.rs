//! The summary strip at the top of a daemon's panel ("is this box keeping up?"): per proof kind,
//! where its partitions are (waiting for admission, synthesizing, waiting for a worker, on a
//! worker), proofs per minute over 5 minutes and an hour, p50/p99 latency over the hour and the
//! failures; the workers' busy share; and a bar per minute of the last hour. All of it is what
//! the daemon's message says, only put into words.

use snarkd_proto::v1::{HistoryBucket, KindSummary, ProofKind, StatusSnapshot};

use crate::load::LoadCharts;
use crate::{format, labels};

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Summary {
    /// Kinds with something waiting, running or ended in the last hour.
    pub rows: Vec<SummaryRow>,
    /// "37 %" over the last 5 minutes and the last hour.
    pub busy_5m: String,
    pub busy_1h: String,
    /// One bar per minute of the last hour, oldest first.
    pub minutes: Vec<MinuteBar>,
    /// Jobs ended in the busiest minute (the chart's scale).
    pub busiest: u32,
    /// Memory and partitions over the hour.
    pub load: LoadCharts,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SummaryRow {
    pub kind: &'static str,
    pub waiting_for_admission: u32,
    pub synthesizing: u32,
    pub waiting_for_worker: u32,
    pub on_worker: u32,
    /// Proofs per minute: "2.4" over 5 minutes and over the hour.
    pub per_min_5m: String,
    pub per_min_1h: String,
    /// "3.1 s / 5.2 s", or "–" with nothing completed in the hour.
    pub latency_1h: String,
    pub failed_1h: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MinuteBar {
    pub completed: u32,
    pub failed: u32,
    /// CSS heights of the completed and failed parts, against the busiest minute.
    pub completed_height: String,
    pub failed_height: String,
    /// The hover text: the minute's age and its counts by kind.
    pub title: String,
}

pub fn summary(s: &StatusSnapshot) -> Summary {
    let busiest = s
        .history
        .iter()
        .map(|b| b.ended.iter().map(|e| e.completed + e.failed).sum::<u32>())
        .max()
        .unwrap_or(0);
    let newest = s.history.last().map_or(0, |b| b.start_unix_ms);
    Summary {
        rows: s.summary.iter().filter(|k| active(k)).map(row).collect(),
        busy_5m: percent(s.worker_busy_share_5m),
        busy_1h: percent(s.worker_busy_share_1h),
        minutes: s.history.iter().map(|b| bar(b, busiest, newest)).collect(),
        busiest,
        load: crate::load::charts(s),
    }
}

fn active(k: &KindSummary) -> bool {
    k.waiting_for_admission + k.synthesizing + k.waiting_for_worker + k.on_worker > 0
        || k.completed_1h + k.failed_1h > 0
}

fn row(k: &KindSummary) -> SummaryRow {
    let rate = |n: u32, minutes: f64| format!("{:.1}", f64::from(n) / minutes);
    SummaryRow {
        kind: labels::kind(k.proof_kind()),
        waiting_for_admission: k.waiting_for_admission,
        synthesizing: k.synthesizing,
        waiting_for_worker: k.waiting_for_worker,
        on_worker: k.on_worker,
        per_min_5m: rate(k.completed_5m, 5.0),
        per_min_1h: rate(k.completed_1h, 60.0),
        latency_1h: if k.completed_1h == 0 {
            "–".to_string()
        } else {
            format!(
                "{} / {}",
                format::duration_ms(k.p50_ms_1h),
                format::duration_ms(k.p99_ms_1h)
            )
        },
        failed_1h: k.failed_1h,
    }
}

fn percent(share: f64) -> String {
    let share = if share.is_finite() {
        share.clamp(0.0, 1.0)
    } else {
        0.0
    };
    if share > 0.0 && share < 0.005 {
        // Busy at all is not "0 %".
        return "<1 %".to_string();
    }
    format!("{:.0} %", share * 100.0)
}

fn bar(b: &HistoryBucket, busiest: u32, newest: u64) -> MinuteBar {
    let completed: u32 = b.ended.iter().map(|e| e.completed).sum();
    let failed: u32 = b.ended.iter().map(|e| e.failed).sum();
    let height = |n: u32| {
        format!(
            "{:.1}%",
            format::percent(u64::from(n), u64::from(busiest.max(1)))
        )
    };
    let counts: Vec<String> = b
        .ended
        .iter()
        .map(|e| {
            let kind = match e.proof_kind() {
                ProofKind::Unspecified => "unknown",
                kind => labels::kind(kind),
            };
            match e.failed {
                0 => format!("{kind} {}", e.completed),
                failed => format!("{kind} {} (+{failed} failed)", e.completed),
            }
        })
        .collect();
    let age_min = newest.saturating_sub(b.start_unix_ms) / 60_000;
    let when = match age_min {
        0 => "this minute".to_string(),
        n => format!("{n} min ago"),
    };
    MinuteBar {
        completed,
        failed,
        completed_height: height(completed),
        failed_height: height(failed),
        title: if counts.is_empty() {
            format!("{when}: nothing ended")
        } else {
            format!("{when}: {}", counts.join(", "))
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use snarkd_proto::v1::KindEnded;

    #[test]
    fn the_strip_lists_active_kinds_with_rates_latency_and_a_bar_per_minute() {
        let s = StatusSnapshot {
            summary: vec![
                KindSummary {
                    proof_kind: ProofKind::WindowPostPartition as i32,
                    synthesizing: 1,
                    waiting_for_worker: 2,
                    completed_5m: 12,
                    completed_1h: 30,
                    failed_1h: 1,
                    p50_ms_1h: 900,
                    p99_ms_1h: 4_400,
                    ..Default::default()
                },
                KindSummary {
                    proof_kind: ProofKind::PorepSealCommit as i32,
                    ..Default::default()
                },
            ],
            history: vec![
                HistoryBucket {
                    start_unix_ms: 0,
                    ended: vec![KindEnded {
                        proof_kind: ProofKind::WindowPostPartition as i32,
                        completed: 3,
                        failed: 1,
                    }],
                },
                HistoryBucket {
                    start_unix_ms: 60_000,
                    ended: vec![],
                },
            ],
            worker_busy_share_5m: 0.374,
            worker_busy_share_1h: 1.7,
            ..Default::default()
        };
        let sum = summary(&s);
        assert_eq!(
            sum.rows.len(),
            1,
            "an idle kind with no history is left out"
        );
        let r = &sum.rows[0];
        assert_eq!(
            (r.kind, r.synthesizing, r.waiting_for_worker),
            ("window-post", 1, 2)
        );
        assert_eq!(
            (r.per_min_5m.as_str(), r.per_min_1h.as_str()),
            ("2.4", "0.5")
        );
        assert_eq!(r.latency_1h, "900 ms / 4.4 s");
        assert_eq!(
            (sum.busy_5m.as_str(), sum.busy_1h.as_str()),
            ("37 %", "100 %")
        );
        assert_eq!(sum.busiest, 4);
        assert_eq!(
            [0.0, 0.001, 0.006].map(percent),
            ["0 %", "<1 %", "1 %"],
            "a worker busy at all is never shown 0 % busy"
        );
        assert_eq!(sum.minutes[0].completed_height, "75.0%");
        assert_eq!(sum.minutes[0].title, "1 min ago: window-post 3 (+1 failed)");
        assert_eq!(sum.minutes[1].title, "this minute: nothing ended");
    }
}

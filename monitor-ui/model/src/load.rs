//! The load charts of the summary strip: memory in use against its peak, and partitions
//! waiting (for admission or a worker) and running (synthesizing or on a worker), over the last
//! hour at the daemon's 10-second resolution. The daemon sends a bucket only when the load
//! changed, each holding until the next; here each of the hour's 360 columns takes the bucket in
//! effect at its start, drawn as an SVG polyline (one attribute per line, so the page stays light
//! without a charting library).

use snarkd_proto::v1::{LoadSample, StatusSnapshot};

use crate::format;

/// Resolution of the daemon's load series.
const BUCKET_MS: u64 = 10_000;
/// Columns over the hour.
pub const COLUMNS: u64 = 360;
/// Height of the charts' view box.
pub const HEIGHT: f64 = 40.0;

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct LoadCharts {
    /// Polyline points ("x,y …", x a column, y down from the top of a [`HEIGHT`] box); empty
    /// with no samples.
    pub memory: String,
    pub waiting: String,
    pub running: String,
    /// "peak 3.2 GiB of 45 GiB".
    pub memory_label: String,
    /// The most partitions waiting or running at once (the chart's scale).
    pub busiest: u32,
}

pub fn charts(s: &StatusSnapshot) -> LoadCharts {
    let end = s.taken_at_unix_ms / BUCKET_MS * BUCKET_MS;
    let first = end.saturating_sub((COLUMNS - 1) * BUCKET_MS);
    // The sample in effect at each column's start, from the first column any sample covers.
    let mut columns: Vec<(u64, &LoadSample)> = Vec::new();
    let mut next = s.load.iter().peekable();
    let mut current: Option<&LoadSample> = None;
    for i in 0..COLUMNS {
        let at = first + i * BUCKET_MS;
        while let Some(sample) = next.next_if(|b| b.start_unix_ms <= at) {
            current = Some(sample);
        }
        if let Some(sample) = current {
            columns.push((i, sample));
        }
    }
    let waiting = |b: &LoadSample| b.waiting_for_admission + b.waiting_for_worker;
    let running = |b: &LoadSample| b.synthesizing + b.on_worker;
    let busiest = columns
        .iter()
        .map(|(_, b)| waiting(b).max(running(b)))
        .max()
        .unwrap_or(0);
    let total = s.memory.as_ref().map_or(0, |m| m.total_bytes);
    let peak = columns
        .iter()
        .map(|(_, b)| b.memory_used_bytes)
        .max()
        .unwrap_or(0);
    let line = |value: &dyn Fn(&LoadSample) -> u64, scale: u64| {
        columns
            .iter()
            .map(|(i, b)| {
                let y = HEIGHT - HEIGHT * format::percent(value(b), scale.max(1)) / 100.0;
                format!("{i},{y:.1}")
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    LoadCharts {
        // Against its own peak, so its shape shows when the budget is far larger.
        memory: line(&|b| b.memory_used_bytes, peak),
        waiting: line(&|b| u64::from(waiting(b)), u64::from(busiest)),
        running: line(&|b| u64::from(running(b)), u64::from(busiest)),
        memory_label: format!("peak {} of {}", format::bytes(peak), format::bytes(total)),
        busiest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use snarkd_proto::v1::MemoryStatus;

    #[test]
    fn each_column_takes_the_bucket_in_effect_and_the_last_holds_until_now() {
        let hour_ago = 1_000 * BUCKET_MS;
        let now = hour_ago + (COLUMNS - 1) * BUCKET_MS + 3_000;
        let s = StatusSnapshot {
            taken_at_unix_ms: now,
            memory: Some(MemoryStatus {
                total_bytes: 1 << 30,
                ..Default::default()
            }),
            load: vec![
                // Before the hour: the level the hour starts with.
                LoadSample {
                    start_unix_ms: hour_ago - 5 * BUCKET_MS,
                    memory_used_bytes: 1 << 28,
                    waiting_for_admission: 2,
                    ..Default::default()
                },
                LoadSample {
                    start_unix_ms: hour_ago + 2 * BUCKET_MS,
                    memory_used_bytes: 1 << 29,
                    waiting_for_worker: 1,
                    synthesizing: 4,
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let c = charts(&s);
        let points: Vec<&str> = c.running.split(' ').collect();
        assert_eq!(points.len(), COLUMNS as usize, "every column has a value");
        assert_eq!(c.busiest, 4);
        assert_eq!(&points[..3], ["0,40.0", "1,40.0", "2,0.0"]);
        assert_eq!(points[359], "359,0.0", "the last level holds until now");
        let waiting: Vec<&str> = c.waiting.split(' ').collect();
        assert_eq!(&waiting[..3], ["0,20.0", "1,20.0", "2,30.0"]);
        let memory: Vec<&str> = c.memory.split(' ').collect();
        assert_eq!(
            &memory[..3],
            ["0,20.0", "1,20.0", "2,0.0"],
            "against the peak"
        );
        assert_eq!(c.memory_label, "peak 512 MiB of 1.00 GiB");
    }

    #[test]
    fn no_samples_draw_no_line() {
        let c = charts(&StatusSnapshot {
            taken_at_unix_ms: 5_000_000,
            ..Default::default()
        });
        assert_eq!((c.memory.as_str(), c.busiest), ("", 0));
    }
}

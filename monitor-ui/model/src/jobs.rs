//! One row per job: its order on the page, how far a finished job has faded, and one cell per
//! partition with the hover text that carries its timings.

use snarkd_proto::v1::{JobState, JobStatus, PartitionStatus};

use crate::{format, labels};

/// How long a finished job takes to fade to its faintest: the daemon's default retention, after
/// which the daemon drops the job from its snapshots anyway.
pub const FADE_MS: u64 = 30_000;
/// The opacity (in percent) a finished job fades to; it stays readable until it goes.
pub const FADED_OPACITY_PCT: u8 = 35;

/// What the page shows for one job.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct JobRow {
    /// The full job id, never shortened.
    pub job_id: String,
    pub request_id: String,
    pub kind: &'static str,
    pub priority: &'static str,
    pub state: &'static str,
    pub circuit_id: String,
    /// Time since submission; for a finished job, the time it took.
    pub age: String,
    /// What `age` is, for its hover text.
    pub age_title: &'static str,
    /// The partitions' synthesis and device-phase times summed ("–" before any ended).
    pub synthesis: String,
    pub device: String,
    pub finished: bool,
    /// 100 while the job runs, down to [`FADED_OPACITY_PCT`] over [`FADE_MS`] once it ended.
    pub opacity_pct: u8,
    pub done: usize,
    pub cells: Vec<PartitionCell>,
    pub error_message: String,
}

/// One square of a job's partition grid.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PartitionCell {
    pub index: u32,
    /// The state word (`pending`, `gpu`, `done`, ...), also its CSS class suffix.
    pub state: &'static str,
    /// The hover text: state, timings, worker and reservation.
    pub title: String,
}

/// The rows for `jobs` as of `now_ms` (the daemon's clock), in page order: unfinished jobs in
/// scheduling order (priority, then age, as the daemon schedules them), then finished jobs, the
/// most recent first.
pub fn job_rows(jobs: &[JobStatus], now_ms: u64) -> Vec<JobRow> {
    let mut order: Vec<&JobStatus> = jobs.iter().collect();
    order.sort_by(|a, b| sort_key(a).cmp(&sort_key(b)));
    order.into_iter().map(|j| job_row(j, now_ms)).collect()
}

/// A job's place on the page (smaller first).
fn sort_key(job: &JobStatus) -> (bool, std::cmp::Reverse<i32>, u64, &str) {
    if is_finished(job) {
        let recent_first = u64::MAX - job.finished_at_unix_ms;
        (true, std::cmp::Reverse(0), recent_first, &job.job_id)
    } else {
        (
            false,
            std::cmp::Reverse(job.priority),
            job.submitted_at_unix_ms,
            &job.job_id,
        )
    }
}

fn is_finished(job: &JobStatus) -> bool {
    matches!(
        job.state(),
        JobState::Completed | JobState::Failed | JobState::Cancelled
    ) || job.finished_at_unix_ms != 0
}

fn job_row(job: &JobStatus, now_ms: u64) -> JobRow {
    let finished = is_finished(job);
    let end = if finished && job.finished_at_unix_ms != 0 {
        job.finished_at_unix_ms
    } else {
        now_ms
    };
    let opacity_pct = if finished {
        fade(now_ms.saturating_sub(end))
    } else {
        100
    };
    JobRow {
        job_id: job.job_id.clone(),
        request_id: job.request_id.clone(),
        kind: labels::kind(job.proof_kind()),
        priority: labels::priority(job.priority()),
        state: labels::job_state(job.state()),
        circuit_id: job.circuit_id.clone(),
        age: format::duration_ms(end.saturating_sub(job.submitted_at_unix_ms)),
        age_title: if finished {
            "how long it took, submit to end"
        } else {
            "time since submit"
        },
        synthesis: total_ms(job.partitions.iter().map(|p| p.synth_ms)),
        device: total_ms(job.partitions.iter().map(|p| p.gpu_ms)),
        finished,
        opacity_pct,
        done: job
            .partitions
            .iter()
            .filter(|p| labels::partition_state(p.state()) == "done")
            .count(),
        cells: job.partitions.iter().map(cell).collect(),
        error_message: job.error_message.clone(),
    }
}

/// Whether `row` passes the page's filters: `state` is `all`, `active` (queued or running) or a
/// job state word; `kind` is `all` or a kind's label.
pub fn shown(row: &JobRow, state: &str, kind: &str) -> bool {
    let state_ok = match state {
        "all" => true,
        "active" => !row.finished,
        word => row.state == word,
    };
    state_ok && (kind == "all" || row.kind == kind)
}

/// The sum of the step times that have ended, or "–" when none has.
fn total_ms(times: impl Iterator<Item = Option<u64>>) -> String {
    let ended: Vec<u64> = times.flatten().collect();
    if ended.is_empty() {
        "–".to_string()
    } else {
        format::duration_ms(ended.iter().sum())
    }
}

/// Opacity after `since_ms` since the job ended: linear from 100 to the faded floor.
fn fade(since_ms: u64) -> u8 {
    let span = u64::from(100 - FADED_OPACITY_PCT);
    let lost = span * since_ms.min(FADE_MS) / FADE_MS;
    100 - lost as u8
}

fn cell(p: &PartitionStatus) -> PartitionCell {
    let state = labels::partition_state(p.state());
    let mut title = format!("partition {} · {state}", p.index);
    if let Some(ms) = p.synth_ms {
        title.push_str(&format!("\nsynthesis {}", format::duration_ms(ms)));
    }
    if let Some(ms) = p.gpu_ms {
        title.push_str(&format!("\ndevice phase {}", format::duration_ms(ms)));
    }
    if let Some(worker) = p.worker_id {
        title.push_str(&format!("\nworker {worker}"));
    }
    if p.reserved_bytes > 0 {
        title.push_str(&format!("\nreserved {}", format::bytes(p.reserved_bytes)));
    }
    PartitionCell {
        index: p.index,
        state,
        title,
    }
}

#[cfg(test)]
mod tests;

//! Where a proof stands while `single` waits on its `Prove` (minutes at 32 GiB): the job is
//! followed on the daemon's status stream by its request id and said on stderr whenever it
//! changes (queued, synthesizing, in the device phase, finalizing), with the time since the
//! call. On a terminal it is one bar redrawn in place (partitions proved of all); otherwise a
//! plain line per change, for logs. A `batch` is said the same way, its jobs counted by where
//! they stand.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use snarkd_proto::v1 as pb;
use tokio_stream::StreamExt;

use crate::client::connect;

/// Where one job stands, in words, and its partitions proved of all.
pub fn stage(job: &pb::JobStatus) -> (String, usize, usize) {
    use pb::PartitionState as P;
    let count = |s: P| {
        job.partitions
            .iter()
            .filter(|p| p.state == s as i32)
            .count()
    };
    let (total, done) = (job.partitions.len(), count(P::Done));
    let text = match pb::JobState::try_from(job.state).unwrap_or(pb::JobState::Unspecified) {
        pb::JobState::Completed => "completed".to_string(),
        pb::JobState::Failed => "failed".to_string(),
        pb::JobState::Cancelled => "cancelled".to_string(),
        _ if total > 0 && done == total => "finalizing (assembling and verifying)".to_string(),
        _ => {
            let parts: Vec<String> = [
                (count(P::Synthesizing), "synthesizing"),
                (count(P::SynthDone), "waiting for a device"),
                (count(P::Gpu), "in the device phase"),
            ]
            .into_iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| format!("{n} {what}"))
            .collect();
            match parts.is_empty() {
                true => "queued".to_string(),
                false => parts.join(", "),
            }
        }
    };
    (text, done, total)
}

/// Where the jobs of a batch stand, in words: how many are queued, synthesizing, with a device
/// (waiting for one or in the device phase), finalizing (each job counted once, by the furthest
/// of its partitions).
pub fn batch_stage<'a>(jobs: impl Iterator<Item = &'a pb::JobStatus>) -> String {
    use pb::PartitionState as P;
    let mut counts = [0usize; 4];
    for job in jobs {
        let has = |s: P| job.partitions.iter().any(|p| p.state == s as i32);
        let all_done = !job.partitions.is_empty()
            && (job.partitions.iter()).all(|p| p.state == P::Done as i32);
        let place = match pb::JobState::try_from(job.state).unwrap_or(pb::JobState::Unspecified) {
            pb::JobState::Completed | pb::JobState::Failed | pb::JobState::Cancelled => continue,
            _ if all_done => 3,
            _ if has(P::Gpu) || has(P::SynthDone) => 2,
            _ if has(P::Synthesizing) => 1,
            _ => 0,
        };
        counts[place] += 1;
    }
    let words = ["queued", "synthesizing", "with a device", "finalizing"];
    let said: Vec<String> = (counts.iter().zip(words))
        .filter(|(n, _)| **n > 0)
        .map(|(n, w)| format!("{n} {w}"))
        .collect();
    said.join(", ")
}

/// Says where a batch's jobs (request ids starting with `prefix`) stand, from each status
/// snapshot it is given: the bar's message on a terminal, otherwise a line on stderr whenever
/// it changes, with the time since `started`.
pub fn batch(
    bar: &ProgressBar,
    prefix: String,
    started: Instant,
) -> impl FnMut(&pb::StatusSnapshot) + Send + 'static {
    let bar = bar.clone();
    let terminal = std::io::stderr().is_terminal();
    let mut said = String::new();
    move |s| {
        let jobs = s.jobs.iter().filter(|j| j.request_id.starts_with(&prefix));
        let now = batch_stage(jobs);
        if said == now {
            return;
        }
        if terminal {
            bar.set_message(now.clone());
        } else if !now.is_empty() {
            eprintln!("[{:>6.1} s] batch: {now}", started.elapsed().as_secs_f64());
        }
        said = now;
    }
}

/// Follows the job whose request id is `request_id` on `addr` until the caller stops polling
/// this future; what it cannot read (no stream, the daemon gone) it leaves unsaid.
pub async fn follow(addr: &str, request_id: &str) {
    let started = Instant::now();
    let Ok(mut client) = connect(addr).await else {
        return;
    };
    let Ok(stream) = client
        .stream_status(pb::StreamStatusRequest {
            min_interval_ms: 500,
            job_ids: Vec::new(),
        })
        .await
    else {
        return;
    };
    let mut stream = stream.into_inner();
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} partitions  {msg}")
                .expect("a valid template")
                .progress_chars("=> "),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    });
    let mut said = String::new();
    while let Some(Ok(snapshot)) = stream.next().await {
        let Some(job) = snapshot.jobs.iter().find(|j| j.request_id == request_id) else {
            continue;
        };
        let (text, done, total) = stage(job);
        match &bar {
            Some(bar) => {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
                bar.set_message(text.clone());
            }
            None if text != said => eprintln!(
                "[{:>6.1} s] {} {}: {text} ({done}/{total} partitions proved)",
                started.elapsed().as_secs_f64(),
                job.circuit_id,
                job.job_id
            ),
            None => {}
        }
        said = text;
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pb::PartitionState as P;

    fn job(state: pb::JobState, parts: &[P]) -> pb::JobStatus {
        pb::JobStatus {
            state: state as i32,
            partitions: (parts.iter())
                .map(|s| pb::PartitionStatus {
                    state: *s as i32,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_batch_is_said_by_where_its_jobs_are() {
        let jobs = [
            job(pb::JobState::Queued, &[P::Pending, P::Pending]),
            job(pb::JobState::Running, &[P::Synthesizing, P::Pending]),
            job(pb::JobState::Running, &[P::Done, P::Gpu]),
            job(pb::JobState::Running, &[P::Done, P::SynthDone]),
            job(pb::JobState::Running, &[P::Done, P::Done]),
            job(pb::JobState::Completed, &[P::Done, P::Done]),
        ];
        assert_eq!(
            batch_stage(jobs.iter()),
            "1 queued, 1 synthesizing, 2 with a device, 1 finalizing"
        );
        assert_eq!(batch_stage(jobs[5..].iter()), "");
    }

    #[test]
    fn a_job_is_said_by_where_its_partitions_are() {
        let said = |state, parts: &[P]| stage(&job(state, parts));
        assert_eq!(
            said(pb::JobState::Queued, &[P::Pending, P::Pending]),
            ("queued".into(), 0, 2)
        );
        assert_eq!(
            said(
                pb::JobState::Running,
                &[
                    P::Synthesizing,
                    P::Synthesizing,
                    P::SynthDone,
                    P::Gpu,
                    P::Done
                ]
            ),
            (
                "2 synthesizing, 1 waiting for a device, 1 in the device phase".into(),
                1,
                5
            )
        );
        assert_eq!(
            said(pb::JobState::Running, &[P::Done, P::Done]),
            ("finalizing (assembling and verifying)".into(), 2, 2)
        );
        assert_eq!(
            said(pb::JobState::Completed, &[P::Done]),
            ("completed".into(), 1, 1)
        );
    }
}

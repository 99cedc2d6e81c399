//! `snarkd-bench watch`: a live terminal view of the daemon's StreamStatus feed. Redraws in place
//! on a terminal; prints one frame after another otherwise (logs, pipes). Reconnects when the
//! daemon goes away.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use anyhow::Result;
use bytesize::ByteSize;
use snarkd_proto::v1 as pb;
use tokio_stream::StreamExt;

use crate::client::connect;

/// Jobs drawn per frame; the rest are counted.
const MAX_JOBS: usize = 30;

/// Follows the daemon until `count` frames were drawn (forever when None).
pub async fn watch(addr: &str, interval: Duration, count: Option<usize>) -> Result<()> {
    let tty = std::io::stdout().is_terminal();
    let mut drawn = 0usize;
    let mut backoff = Duration::from_millis(500);
    loop {
        let result = async {
            let mut stream = connect(addr)
                .await?
                .stream_status(pb::StreamStatusRequest {
                    min_interval_ms: interval.as_millis().clamp(1, u32::MAX as u128) as u32,
                    job_ids: Vec::new(),
                })
                .await?
                .into_inner();
            while let Some(snapshot) = stream.next().await {
                let frame = render(&snapshot?);
                let mut out = std::io::stdout().lock();
                if tty {
                    write!(out, "\x1b[H\x1b[2J")?;
                }
                writeln!(out, "{frame}")?;
                out.flush()?;
                drawn += 1;
                if count.is_some_and(|c| drawn >= c) {
                    return Ok(true);
                }
            }
            anyhow::Ok(false)
        }
        .await;
        match result {
            Ok(true) => return Ok(()),
            Ok(false) => eprintln!("the daemon ended the status stream; reconnecting"),
            Err(e) if count.is_some() && drawn == 0 => return Err(e),
            Err(e) => eprintln!("disconnected: {e:#}; retrying in {backoff:?}"),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}

/// One character per partition state.
pub fn state_char(state: i32) -> char {
    match pb::PartitionState::try_from(state) {
        Ok(pb::PartitionState::Pending) => '.',
        Ok(pb::PartitionState::Synthesizing) => 's',
        Ok(pb::PartitionState::SynthDone) => 'r',
        Ok(pb::PartitionState::Gpu) => 'G',
        Ok(pb::PartitionState::Done) => '#',
        Ok(pb::PartitionState::Failed) => 'x',
        Ok(pb::PartitionState::Cancelled) => '-',
        _ => '?',
    }
}

/// Seconds as `1h02m`, `3m05s` or `12.3s`.
pub fn short_duration(secs: f64) -> String {
    let whole = secs.max(0.0) as u64;
    match whole {
        0..60 => format!("{:.1}s", secs.max(0.0)),
        60..3600 => format!("{}m{:02}s", whole / 60, whole % 60),
        _ => format!("{}h{:02}m", whole / 3600, whole % 3600 / 60),
    }
}

/// A wire enum value by its lower-case name (the number when unknown).
fn name<E: TryFrom<i32>>(v: i32, f: impl Fn(&E) -> &'static str) -> String {
    E::try_from(v).map_or_else(|_| v.to_string(), |e| f(&e).to_lowercase())
}

fn kind_name(k: i32) -> String {
    name(k, pb::ProofKind::as_str_name)
}

/// The frame for one snapshot.
pub fn render(s: &pb::StatusSnapshot) -> String {
    let mut out = Vec::new();
    let d = s.daemon.clone().unwrap_or_default();
    out.push(format!(
        "snarkd {} ({}) · backend {} · up {}{}",
        d.version,
        d.build_id,
        d.backend,
        short_duration(d.uptime_seconds as f64),
        if d.draining { " · DRAINING" } else { "" }
    ));
    let m = s.memory.clone().unwrap_or_default();
    let by_kind: Vec<String> = m
        .reserved_by_kind
        .iter()
        .map(|k| format!("{} {}", kind_name(k.proof_kind), ByteSize(k.bytes)))
        .collect();
    out.push(format!(
        "memory    {} of {} used (params {}{}{})",
        ByteSize(m.used_bytes),
        ByteSize(m.total_bytes),
        ByteSize(m.params_bytes),
        if by_kind.is_empty() { "" } else { "; " },
        by_kind.join(", ")
    ));
    let y = s.synthesis.unwrap_or_default();
    out.push(format!(
        "synthesis {} active, {} allowed now by the budget (at most {})",
        y.active, y.max_allowed_now, y.max_configured
    ));
    out.push(format!("workers   ({})", s.workers.len()));
    for w in &s.workers {
        let doing = match &w.current_partition {
            Some(p) if !w.current_job_id.is_empty() => {
                format!("proving  {} p{p}", w.current_job_id)
            }
            _ => "idle".to_string(),
        };
        out.push(format!(
            "  #{:<2} {:<20} {doing:<58} busy {}, {} proofs",
            w.worker_id,
            w.device_name,
            short_duration(w.busy_seconds),
            w.proofs_done
        ));
    }
    let mut jobs: Vec<&pb::JobStatus> = s.jobs.iter().collect();
    // Live jobs first (oldest first), then finished ones (latest first).
    jobs.sort_by_key(|j| {
        let live = j.finished_at_unix_ms == 0;
        (
            !live,
            if live {
                j.submitted_at_unix_ms
            } else {
                u64::MAX - j.finished_at_unix_ms
            },
        )
    });
    out.push(format!(
        "jobs      ({})   partitions: . pending  s synthesizing  r ready  G device  # done  x failed  - cancelled",
        jobs.len()
    ));
    for j in jobs.iter().take(MAX_JOBS) {
        let end = if j.finished_at_unix_ms == 0 {
            s.taken_at_unix_ms
        } else {
            j.finished_at_unix_ms
        };
        let age = end.saturating_sub(j.submitted_at_unix_ms) as f64 / 1e3;
        let grid: String = j.partitions.iter().map(|p| state_char(p.state)).collect();
        out.push(format!(
            "  {}  {:<18} {:<8} {:<9} {:>7}  [{grid}]{}",
            j.job_id,
            kind_name(j.proof_kind),
            name(j.priority, pb::Priority::as_str_name),
            name(j.state, pb::JobState::as_str_name).trim_start_matches("job_state_"),
            short_duration(age),
            if j.error_message.is_empty() {
                String::new()
            } else {
                format!("  {}", j.error_message)
            }
        ));
    }
    if jobs.len() > MAX_JOBS {
        out.push(format!("  … and {} more", jobs.len() - MAX_JOBS));
    }
    let c = s.counters.clone().unwrap_or_default();
    out.push(format!(
        "counters  {} completed, {} failed, {} cancelled · queue depth {}",
        c.total_completed, c.total_failed, c.total_cancelled, c.queue_depth
    ));
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_at_a_glance() {
        assert_eq!(short_duration(0.25), "0.2s");
        assert_eq!(short_duration(59.9), "59.9s");
        assert_eq!(short_duration(185.0), "3m05s");
        assert_eq!(short_duration(3_725.0), "1h02m");
        assert_eq!(short_duration(-3.0), "0.0s");
    }

    #[test]
    fn a_frame_shows_full_job_ids_worker_work_and_partition_states() {
        let long_id = "0f9d6c1e-3a7b-4c2d-9e8f-112233445566-long-job-id";
        let part = |index, state: pb::PartitionState| pb::PartitionStatus {
            index,
            state: state as i32,
            ..Default::default()
        };
        let s = pb::StatusSnapshot {
            daemon: Some(pb::DaemonInfo {
                version: "1.2.3".into(),
                build_id: "abc1234".into(),
                backend: "cpu".into(),
                uptime_seconds: 65,
                draining: true,
                ..Default::default()
            }),
            workers: vec![pb::WorkerStatus {
                worker_id: 0,
                device_name: "cpu".into(),
                state: pb::WorkerState::Proving as i32,
                current_job_id: long_id.into(),
                current_partition: Some(1),
                busy_seconds: 12.5,
                proofs_done: 3,
                ..Default::default()
            }],
            jobs: vec![
                pb::JobStatus {
                    job_id: "finished".into(),
                    submitted_at_unix_ms: 1_000,
                    finished_at_unix_ms: 2_000,
                    state: pb::JobState::Completed as i32,
                    partitions: vec![part(0, pb::PartitionState::Done)],
                    ..Default::default()
                },
                pb::JobStatus {
                    job_id: long_id.into(),
                    proof_kind: pb::ProofKind::PorepSealCommit as i32,
                    priority: pb::Priority::High as i32,
                    submitted_at_unix_ms: 5_000,
                    state: pb::JobState::Running as i32,
                    partitions: vec![
                        part(0, pb::PartitionState::Done),
                        part(1, pb::PartitionState::Gpu),
                        part(2, pb::PartitionState::SynthDone),
                        part(3, pb::PartitionState::Synthesizing),
                        part(4, pb::PartitionState::Pending),
                    ],
                    ..Default::default()
                },
            ],
            taken_at_unix_ms: 17_000,
            ..Default::default()
        };
        let frame = render(&s);
        assert!(frame.contains("snarkd 1.2.3 (abc1234)") && frame.contains("DRAINING"));
        assert!(frame.contains(&format!("proving  {long_id} p1")), "{frame}");
        assert!(frame.contains("[#Grs.]"), "{frame}");
        assert!(frame.contains("porep_seal_commit") && frame.contains("high"));
        assert!(frame.contains("12.0s"), "age of the running job: {frame}");
        // The running job is listed before the finished one.
        let running = frame.find(&format!("  {long_id}  ")).unwrap();
        assert!(running < frame.find("  finished  ").unwrap(), "{frame}");
    }
}

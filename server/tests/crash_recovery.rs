//! The crash test: a mixed batch of real 2 KiB proofs, the daemon killed with SIGKILL again and
//! again (mid-synthesis, mid-device-phase and mid-finalize among the kill points) and restarted
//! on the same job journal each time. Every accepted job must end exactly once with a proof that
//! verifies, no job may be duplicated, no recorded partition may be proved again, and once the
//! results' retention has passed the journal must be back to the size of an empty one.

mod common;
#[path = "common/real.rs"]
mod real;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use common::process::{spawn, Serving, SNARKD};
use real::{assert_verifies, ensure_params, env, wire};
use snarkd_proto::v1 as pb;
use snarkd_prover::ProofKind;

use pb::await_proof_response::Status as Ended;

/// Kill points at least (each moment below aimed at twice); more are taken until each moment was
/// hit.
const KILLS: usize = 6;
/// Kill points at most, so a run that never hits a moment fails instead of looping.
const MOST_KILLS: usize = 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Moment {
    Synthesis,
    Device,
    Finalize,
}

const MOMENTS: [Moment; 3] = [Moment::Synthesis, Moment::Device, Moment::Finalize];

fn settings(jobs: &Path, retention: &str) -> Vec<(&'static str, String)> {
    vec![
        ("SNARKD_PARAMS_DIR", env().params_dir.display().to_string()),
        ("SNARKD_JOBS_DIR", jobs.display().to_string()),
        ("SNARKD_JOBS_RESULT_RETENTION", retention.into()),
        ("SNARKD_GPUS_BACKEND", "cpu".into()),
        ("SNARKD_MEMORY_BUDGET", "8GiB".into()),
        ("SNARKD_DAEMON_RETENTION", "10m".into()),
        ("RUST_LOG", "info,snarkd_engine::journal=debug".into()),
    ]
}

fn start(jobs: &Path) -> Serving {
    spawn(Path::new(SNARKD), settings(jobs, "1h")).serving()
}

/// The jobs of one batch: request id → (kind, job id).
type Batch = BTreeMap<String, (ProofKind, String)>;

/// Submits one mixed batch (request ids numbered from `first`) and returns it, acknowledged.
async fn submit_batch(client: &mut common::Client, first: usize) -> Batch {
    let kinds = [
        ProofKind::PorepSealCommit,
        ProofKind::SnapDealsUpdate,
        ProofKind::WindowPost,
        ProofKind::WinningPost,
        ProofKind::PorepSealCommit,
        ProofKind::SnapDealsUpdate,
        ProofKind::WindowPost,
        ProofKind::PorepSealCommit,
    ];
    let mut batch = Batch::new();
    for (n, kind) in kinds.into_iter().enumerate() {
        let request_id = format!("{kind:?}-1000-{}", first + n).to_lowercase();
        let job_id = client
            .submit_proof(pb::SubmitProofRequest {
                request_id: request_id.clone(),
                ..wire(&env().fixtures.request(kind), pb::Priority::Unspecified)
            })
            .await
            .expect("submit")
            .into_inner()
            .job_id;
        batch.insert(request_id, (kind, job_id));
    }
    batch
}

/// A job of a slow kind (PoRep, SnapDeals: seconds per step at 2 KiB) at `moment`.
fn at(s: &pb::StatusSnapshot, moment: Moment) -> Option<String> {
    use pb::PartitionState as P;
    let slow = |j: &&pb::JobStatus| {
        j.proof_kind == pb::ProofKind::PorepSealCommit as i32
            || j.proof_kind == pb::ProofKind::SnapDealsUpdate as i32
    };
    let running = |j: &&pb::JobStatus| j.state == pb::JobState::Running as i32;
    let found = match moment {
        Moment::Synthesis => s.jobs.iter().filter(slow).find(|j| {
            j.partitions
                .iter()
                .any(|p| p.state == P::Synthesizing as i32)
        }),
        Moment::Device => s
            .jobs
            .iter()
            .filter(slow)
            .find(|j| j.partitions.iter().any(|p| p.state == P::Gpu as i32)),
        Moment::Finalize => s.jobs.iter().filter(running).find(|j| {
            !j.partitions.is_empty() && j.partitions.iter().all(|p| p.state == P::Done as i32)
        }),
    };
    found.map(|j| j.job_id.clone())
}

/// How long the batch may go without any job or partition changing state.
const STALL: Duration = Duration::from_secs(120);

/// The first status with a slow job at `moment`, or with the batch finished. Fails only when the
/// batch stops making progress (no job or partition changes state for [`STALL`]), however long
/// a loaded machine takes to get there.
async fn wait_for_moment(client: &mut common::Client, moment: Moment) -> pb::StatusSnapshot {
    let mut stream = common::status_stream(client).await;
    let progress = |s: &pb::StatusSnapshot| -> Vec<(String, i32, Vec<i32>)> {
        (s.jobs.iter())
            .map(|j| {
                let parts = j.partitions.iter().map(|p| p.state).collect();
                (j.job_id.clone(), j.state, parts)
            })
            .collect()
    };
    let mut last = None;
    loop {
        let snapshot = tokio::time::timeout(STALL, async {
            loop {
                let s = (stream.message().await)
                    .expect("status stream")
                    .expect("the status stream ended");
                if Some(progress(&s)) != last {
                    return s;
                }
            }
        })
        .await
        .unwrap_or_else(|_| {
            panic!("the batch makes no progress between kills: nothing changed for {STALL:?}; last: {last:?}")
        });
        if at(&snapshot, moment).is_some() || !unfinished(&snapshot) {
            return snapshot;
        }
        last = Some(progress(&snapshot));
    }
}

fn unfinished(s: &pb::StatusSnapshot) -> bool {
    s.jobs
        .iter()
        .any(|j| j.state == pb::JobState::Queued as i32 || j.state == pb::JobState::Running as i32)
}

/// `(job id, partition)` of every "partition proof recorded" line in `log`, and the job ids of
/// every "job recorded" and "job end recorded" line.
fn records(log: &[String]) -> (Vec<(String, u64)>, Vec<String>, Vec<String>) {
    let events: Vec<serde_json::Value> = log
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let ids = |message: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["message"] == message)
            .map(|e| e["job_id"].as_str().unwrap().to_string())
            .collect()
    };
    let partitions = events
        .iter()
        .filter(|e| e["message"] == "partition proof recorded")
        .map(|e| {
            (
                e["job_id"].as_str().unwrap().to_string(),
                e["partition"].as_u64().unwrap(),
            )
        })
        .collect();
    (partitions, ids("job recorded"), ids("job end recorded"))
}

/// The journal's size on disk (database and write-ahead log; a clean stop empties the log).
fn journal_bytes(jobs: &Path) -> u64 {
    ["journal.sqlite", "journal.sqlite-wal"]
        .iter()
        .map(|f| std::fs::metadata(jobs.join(f)).map_or(0, |m| m.len()))
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_at_random_moments_every_job_ends_once_and_nothing_is_proved_twice() {
    ensure_params(&ProofKind::ALL);
    // The size of a journal that has never held a job.
    let empty = tempfile::tempdir().unwrap();
    start(empty.path()).stop();
    let empty_bytes = journal_bytes(empty.path());

    let jobs = tempfile::tempdir().unwrap();
    let mut daemon = start(jobs.path());
    let mut client = common::connect(daemon.grpc).await;
    let mut accepted = submit_batch(&mut client, 0).await;
    let mut logs: Vec<Vec<String>> = Vec::new();
    let mut hit: BTreeMap<Moment, usize> = BTreeMap::new();
    let mut kills = 0;
    while kills < KILLS || hit.len() < MOMENTS.len() {
        assert!(
            kills < MOST_KILLS,
            "moments hit after {kills} kills: {hit:?}"
        );
        // Aim at the moments hit least so far.
        let moment = *MOMENTS
            .iter()
            .min_by_key(|m| (hit.get(m).copied().unwrap_or(0), **m))
            .unwrap();
        let seen = wait_for_moment(&mut client, moment).await;
        let Some(target) = at(&seen, moment) else {
            // The batch finished first: give the next kills more work.
            let more = submit_batch(&mut client, accepted.len()).await;
            accepted.extend(more);
            continue;
        };
        if moment == Moment::Finalize {
            // Kill once the partitions are on disk, while the job is being finalized.
            for _ in 0..2000 {
                if !daemon.events("partition proof recorded").is_empty()
                    && daemon
                        .events("partition proof recorded")
                        .iter()
                        .any(|e| e["job_id"] == target.as_str())
                {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let log = daemon.kill();
        kills += 1;
        let (proved, _, ended) = records(&log);
        let counts = match moment {
            // Mid-finalize: its partitions recorded, its end not.
            Moment::Finalize => {
                proved.iter().any(|(job, _)| *job == target) && !ended.contains(&target)
            }
            // Mid-step: the partition's proof not recorded yet.
            Moment::Synthesis | Moment::Device => !proved.iter().any(|(job, _)| *job == target),
        };
        if counts {
            *hit.entry(moment).or_default() += 1;
        }
        logs.push(log);
        daemon = start(jobs.path());
        client = common::connect(daemon.grpc).await;
    }

    // Every accepted job ends with a proof that verifies, under the id it was accepted with; the
    // same request again gets the same job.
    for (request_id, (kind, job_id)) in &accepted {
        let result = common::await_job(&mut client, job_id, 0)
            .await
            .expect("await");
        assert_eq!(
            result.status,
            Ended::Completed as i32,
            "{request_id}: {}",
            result.error_message
        );
        assert_verifies(&env().fixtures.request(*kind), &result.proof);
        let again = client
            .submit_proof(pb::SubmitProofRequest {
                request_id: request_id.clone(),
                ..wire(&env().fixtures.request(*kind), pb::Priority::Unspecified)
            })
            .await
            .unwrap()
            .into_inner()
            .job_id;
        assert_eq!(&again, job_id, "{request_id} is one job");
    }
    logs.push(daemon.stop());

    let (mut proved, mut recorded, mut ended) = (Vec::new(), Vec::new(), Vec::new());
    for log in &logs {
        let (p, r, e) = records(log);
        proved.extend(p);
        recorded.extend(r);
        ended.extend(e);
    }
    let ids: BTreeSet<String> = accepted.values().map(|(_, id)| id.clone()).collect();
    let counted = |list: &[String]| {
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        list.iter()
            .for_each(|id| *counts.entry(id.clone()).or_default() += 1);
        counts
    };
    // A job is recorded before its submit is answered, so each has its line, exactly once.
    let accepts = counted(&recorded);
    assert!(
        accepts.values().all(|&n| n == 1),
        "accepted twice: {accepts:?}"
    );
    assert_eq!(accepts.keys().cloned().collect::<BTreeSet<_>>(), ids);
    // Each ended (completed, above) and no job ended twice. (A kill between an end's commit and
    // its log line loses the line, never the end: such a job is not recovered again.)
    let ends = counted(&ended);
    assert!(ends.values().all(|&n| n == 1), "ended twice: {ends:?}");
    // No finished job comes back: nothing a life recovers had ended in an earlier life.
    let mut ended_before = BTreeSet::new();
    for log in &logs {
        let events: Vec<serde_json::Value> = log
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        for e in events
            .iter()
            .filter(|e| e["message"] == "job recovered from the journal")
        {
            let id = e["job_id"].as_str().unwrap();
            assert!(
                !ended_before.contains(id),
                "job {id} recovered after it ended"
            );
        }
        ended_before.extend(records(log).2);
    }
    let mut partitions: BTreeMap<&(String, u64), usize> = BTreeMap::new();
    proved
        .iter()
        .for_each(|p| *partitions.entry(p).or_default() += 1);
    assert!(
        partitions.values().all(|&n| n == 1),
        "partitions proved again: {:?}",
        partitions
            .iter()
            .filter(|(_, &n)| n > 1)
            .collect::<Vec<_>>()
    );
    // Every job's (single, at 2 KiB) partition was recorded: its log line is there, or a kill
    // fell between the commit and the line and the next life recovered the job as proved.
    let recovered_proved: BTreeSet<String> = logs
        .iter()
        .flatten()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["message"] == "job recovered from the journal" && e["proved"] == 1)
        .map(|e| e["job_id"].as_str().unwrap().to_string())
        .collect();
    for id in &ids {
        assert!(
            proved.iter().any(|(job, _)| job == id) || recovered_proved.contains(id),
            "job {id}: no partition proof recorded"
        );
    }
    eprintln!(
        "crash test: {} jobs, {kills} kills, moments hit {hit:?}, {} partition proofs recorded",
        accepted.len(),
        partitions.len()
    );

    // Past the results' retention the journal holds nothing and is back to its empty size.
    std::thread::sleep(Duration::from_millis(1100));
    let last = spawn(Path::new(SNARKD), settings(jobs.path(), "1s")).serving();
    let mut pruned = false;
    for _ in 0..100 {
        if snarkd_engine::journal::journal_counts(jobs.path()).ok() == Some((0, 0, 0)) {
            pruned = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    last.stop();
    assert!(
        pruned,
        "{:?}",
        snarkd_engine::journal::journal_counts(jobs.path())
    );
    assert_eq!(
        std::fs::read_dir(jobs.path().join("inputs"))
            .unwrap()
            .count(),
        0
    );
    assert_eq!(
        journal_bytes(jobs.path()),
        empty_bytes,
        "journal back to its empty size"
    );
}

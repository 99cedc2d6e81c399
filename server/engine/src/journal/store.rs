//! The journal's SQLite database: its schema and every statement run on it. One connection
//! writes (the journal thread, and recovery before the engine starts); another reads results.

use std::path::Path;
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, Transaction};

use super::record::Accepted;
use super::JournalError;
use crate::domain::{
    FailureClass, FailureStage, JobEnd, JobFailure, JobOutcome, Priority, ProofKind, Timings,
};
use crate::history::Ended;
use crate::journal::InputDigest;

use super::migrate::SCHEMA_VERSION;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    request_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    priority TEXT NOT NULL,
    digest BLOB NOT NULL,
    input_bytes INTEGER NOT NULL,
    partitions INTEGER NOT NULL,
    submitted_unix_ms INTEGER NOT NULL,
    input BLOB,
    outcome TEXT,
    proof BLOB,
    error TEXT,
    failure_class TEXT,
    failure_stage TEXT,
    finished_unix_ms INTEGER,
    queue_wait_ms INTEGER, params_load_ms INTEGER, synthesis_ms INTEGER,
    device_ms INTEGER, total_ms INTEGER
);
CREATE INDEX IF NOT EXISTS jobs_by_request ON jobs (request_id, kind, digest);
CREATE INDEX IF NOT EXISTS jobs_by_finish ON jobs (finished_unix_ms);
CREATE TABLE IF NOT EXISTS partitions (
    job_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    proof BLOB NOT NULL,
    PRIMARY KEY (job_id, idx)
);
CREATE TABLE IF NOT EXISTS quarantine (
    job_id TEXT NOT NULL,
    reason TEXT NOT NULL,
    at_unix_ms INTEGER NOT NULL,
    row TEXT NOT NULL,
    input BLOB
);
";

/// Opens (creating if need be) the database at `path`: WAL mode, every commit flushed to disk,
/// freed pages returned to the file system.
pub(crate) fn open(path: &Path) -> Result<Connection, JournalError> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    // A newer schema's journal is refused before anything here writes to it; an older one is
    // upgraded once the tables are there.
    let has_meta: bool = conn.query_row(
        "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
        [],
        |r| r.get(0),
    )?;
    let mut older = None;
    if has_meta {
        let version: Option<String> = conn
            .query_row("SELECT value FROM meta WHERE key = 'schema'", [], |r| {
                r.get(0)
            })
            .optional()?;
        if let Some(found) = version {
            match found.parse::<u32>() {
                Ok(v) if v == SCHEMA_VERSION => {}
                Ok(v) if (1..SCHEMA_VERSION).contains(&v) => older = Some(v),
                _ => {
                    return Err(JournalError::OtherSchema {
                        db: path.to_path_buf(),
                        found,
                        ours: SCHEMA_VERSION,
                    })
                }
            }
        }
    }
    // auto_vacuum only takes effect before the first table is created.
    conn.pragma_update(None, "auto_vacuum", "FULL")?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    // The quick form: page structure, not every index entry (startup reads the whole file).
    let integrity: String = conn.query_row("PRAGMA quick_check(1)", [], |r| r.get(0))?;
    if integrity != "ok" {
        return Err(JournalError::Damaged(integrity));
    }
    conn.execute_batch(SCHEMA)?;
    conn.execute_batch(super::activity::SCHEMA)?;
    if let Some(from) = older {
        let inputs = path.with_file_name("inputs");
        super::migrate::run(&conn, from, &inputs)?;
    }
    // A journal of a newer schema was refused above: a new one gets ours.
    conn.execute(
        "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', ?1)",
        [SCHEMA_VERSION.to_string()],
    )?;
    Ok(conn)
}

/// A write of nothing that matters (the time of the last try in `meta`): whether the journal can
/// be written at all.
pub(crate) fn probe(conn: &Connection, now_unix_ms: u64) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('written_unix_ms', ?1)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [now_unix_ms.to_string()],
    )
    .map(drop)
}

/// A second connection for reading results while the journal thread writes.
pub(crate) fn open_reader(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    Ok(conn)
}

pub(crate) fn insert_job(tx: &Transaction, job: &Accepted) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO jobs (job_id, seq, request_id, kind, priority, digest, input_bytes, partitions, submitted_unix_ms, input)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            job.job_id,
            job.seq as i64,
            job.request_id,
            job.kind.as_str(),
            job.priority.as_str(),
            &job.digest.0[..],
            job.input_bytes as i64,
            job.partitions,
            job.submitted_unix_ms as i64,
            job.inline_input,
        ],
    )?;
    Ok(())
}

pub(crate) fn insert_partition(
    tx: &Transaction,
    job_id: &str,
    index: u32,
    proof: &[u8],
) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT OR REPLACE INTO partitions (job_id, idx, proof) VALUES (?1, ?2, ?3)",
        params![job_id, index, proof],
    )?;
    Ok(())
}

/// Records how a job ended; its partition proofs are no longer needed.
pub(crate) fn finish(
    tx: &Transaction,
    job_id: &str,
    end: &JobEnd,
    timings: &Timings,
    finished_unix_ms: u64,
) -> rusqlite::Result<()> {
    let (outcome, proof, failure) = match end {
        JobEnd::Completed(proof) => ("completed", Some(proof.as_slice()), None),
        JobEnd::Failed(failure) => ("failed", None, Some(failure)),
        JobEnd::Cancelled => ("cancelled", None, None),
    };
    let ms = |d: Duration| d.as_millis() as i64;
    tx.execute(
        "UPDATE jobs SET input = NULL, outcome = ?2, proof = ?3, error = ?4, finished_unix_ms = ?5,
             queue_wait_ms = ?6, params_load_ms = ?7, synthesis_ms = ?8, device_ms = ?9, total_ms = ?10,
             failure_class = ?11, failure_stage = ?12
         WHERE job_id = ?1",
        params![
            job_id,
            outcome,
            proof,
            failure.map(|f| f.message.as_str()),
            finished_unix_ms as i64,
            ms(timings.queue_wait),
            ms(timings.params_load),
            ms(timings.synthesis),
            ms(timings.device),
            ms(timings.total),
            failure.map(|f| f.class.as_str()),
            failure.map(|f| f.stage.as_str()),
        ],
    )?;
    tx.execute("DELETE FROM partitions WHERE job_id = ?1", [job_id])?;
    Ok(())
}

/// One unfinished job as stored, not yet checked.
pub(crate) struct UnfinishedRow {
    pub job_id: String,
    pub seq: i64,
    pub request_id: String,
    pub kind: String,
    pub priority: String,
    pub digest: Vec<u8>,
    pub input_bytes: i64,
    pub partitions: i64,
    pub submitted_unix_ms: i64,
    pub proofs: Vec<(i64, Vec<u8>)>,
}

impl UnfinishedRow {
    pub fn kind(&self) -> Option<ProofKind> {
        ProofKind::ALL.into_iter().find(|k| k.as_str() == self.kind)
    }

    pub fn priority(&self) -> Option<Priority> {
        Priority::ALL
            .into_iter()
            .find(|p| p.as_str() == self.priority)
    }

    pub fn digest(&self) -> Option<InputDigest> {
        self.digest.as_slice().try_into().ok().map(InputDigest)
    }

    /// The row as text, kept in the quarantine table.
    pub fn describe(&self) -> String {
        format!(
            "seq={} request_id={:?} kind={:?} priority={:?} partitions={} proved={} submitted_unix_ms={}",
            self.seq,
            self.request_id,
            self.kind,
            self.priority,
            self.partitions,
            self.proofs.len(),
            self.submitted_unix_ms
        )
    }
}

/// Every unfinished job, in submit order, with its recorded partition proofs.
pub(crate) fn unfinished(conn: &Connection) -> rusqlite::Result<Vec<UnfinishedRow>> {
    let mut rows = conn
        .prepare(
            "SELECT job_id, seq, request_id, kind, priority, digest, input_bytes, partitions, submitted_unix_ms
             FROM jobs WHERE outcome IS NULL ORDER BY seq",
        )?
        .query_map([], |r| {
            Ok(UnfinishedRow {
                job_id: r.get(0)?,
                seq: r.get(1)?,
                request_id: r.get(2)?,
                kind: r.get(3)?,
                priority: r.get(4)?,
                digest: r.get(5)?,
                input_bytes: r.get(6)?,
                partitions: r.get(7)?,
                submitted_unix_ms: r.get(8)?,
                proofs: Vec::new(),
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut proofs =
        conn.prepare("SELECT idx, proof FROM partitions WHERE job_id = ?1 ORDER BY idx")?;
    for row in &mut rows {
        row.proofs = proofs
            .query_map([&row.job_id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
    }
    Ok(rows)
}

/// The highest submit sequence number ever recorded (finished jobs included).
pub(crate) fn max_seq(conn: &Connection) -> rusqlite::Result<Option<u64>> {
    conn.query_row("SELECT MAX(seq) FROM jobs", [], |r| {
        r.get::<_, Option<i64>>(0)
    })
    .map(|s| s.map(|s| s as u64))
}

/// Moves a job's row (with its input, when kept in the row) into the quarantine table and
/// drops its partition proofs.
/// An unfinished job's input, when it is kept in its row rather than as a file (read when
/// recovery comes to the job, so startup reads no input).
pub(crate) fn row_input(conn: &Connection, job_id: &str) -> rusqlite::Result<Option<Vec<u8>>> {
    conn.query_row("SELECT input FROM jobs WHERE job_id = ?1", [job_id], |r| {
        r.get(0)
    })
}

pub(crate) fn quarantine(
    conn: &mut Connection,
    job_id: &str,
    reason: &str,
    row: &UnfinishedRow,
    now_unix_ms: u64,
) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    // The row's input (when it is kept there) goes along inside SQLite, never through memory.
    tx.execute(
        "INSERT INTO quarantine (job_id, reason, at_unix_ms, row, input)
         SELECT ?1, ?2, ?3, ?4, input FROM jobs WHERE job_id = ?1",
        params![job_id, reason, now_unix_ms as i64, row.describe()],
    )?;
    tx.execute("DELETE FROM partitions WHERE job_id = ?1", [job_id])?;
    tx.execute("DELETE FROM jobs WHERE job_id = ?1", [job_id])?;
    tx.commit()
}

/// A failure as stored. Every failed row has its class and stage (schema 3 writes them, and the
/// upgrade to it reads them from the words older builds wrote); a value this build does not know
/// reads as a bug's, at the journal's stage, rather than failing the read.
fn stored_failure(class: Option<&str>, stage: Option<&str>, message: String) -> JobFailure {
    JobFailure {
        class: class
            .and_then(FailureClass::from_name)
            .unwrap_or(FailureClass::Bug),
        stage: stage
            .and_then(FailureStage::from_name)
            .unwrap_or(FailureStage::Journal),
        message,
    }
}

/// How a finished job ended, if the journal still has it.
pub(crate) fn find_result(conn: &Connection, job_id: &str) -> rusqlite::Result<Option<JobOutcome>> {
    conn.query_row(
        "SELECT outcome, proof, error, queue_wait_ms, params_load_ms, synthesis_ms, device_ms, total_ms,
             failure_class, failure_stage
         FROM jobs WHERE job_id = ?1 AND outcome IS NOT NULL",
        [job_id],
        |r| {
            let outcome: String = r.get(0)?;
            let ms = |i: usize| -> rusqlite::Result<Duration> {
                Ok(Duration::from_millis(r.get::<_, Option<i64>>(i)?.unwrap_or(0).max(0) as u64))
            };
            let end = match outcome.as_str() {
                "completed" => JobEnd::Completed(r.get::<_, Option<Vec<u8>>>(1)?.unwrap_or_default()),
                "failed" => JobEnd::Failed(stored_failure(
                    r.get::<_, Option<String>>(8)?.as_deref(),
                    r.get::<_, Option<String>>(9)?.as_deref(),
                    r.get::<_, Option<String>>(2)?.unwrap_or_default(),
                )),
                _ => JobEnd::Cancelled,
            };
            Ok(JobOutcome {
                job_id: job_id.to_string(),
                end,
                timings: Timings {
                    queue_wait: ms(3)?,
                    params_load: ms(4)?,
                    synthesis: ms(5)?,
                    device: ms(6)?,
                    total: ms(7)?,
                },
            })
        },
    )
    .optional()
}

/// The newest job that completed with a proof for this request id, kind and input.
pub(crate) fn find_completed(
    conn: &Connection,
    request_id: &str,
    kind: ProofKind,
    digest: &InputDigest,
) -> rusqlite::Result<Option<String>> {
    conn.query_row(
        "SELECT job_id FROM jobs WHERE request_id = ?1 AND kind = ?2 AND digest = ?3
             AND outcome = 'completed' ORDER BY seq DESC LIMIT 1",
        params![request_id, kind.as_str(), &digest.0[..]],
        |r| r.get(0),
    )
    .optional()
}

/// The jobs that completed or failed after `since_unix_ms`, oldest first, as the history
/// counts them (rows of an unknown kind are skipped).
pub(crate) fn ended_since(conn: &Connection, since_unix_ms: u64) -> rusqlite::Result<Vec<Ended>> {
    let mut rows = conn.prepare(
        "SELECT kind, finished_unix_ms, total_ms, outcome FROM jobs
         WHERE outcome IN ('completed', 'failed') AND finished_unix_ms > ?1
         ORDER BY finished_unix_ms",
    )?;
    let rows = rows.query_map([since_unix_ms as i64], |r| {
        let kind: String = r.get(0)?;
        let finished: i64 = r.get(1)?;
        let total: Option<i64> = r.get(2)?;
        let outcome: String = r.get(3)?;
        Ok(ProofKind::ALL
            .into_iter()
            .find(|k| k.as_str() == kind)
            .map(|kind| Ended {
                at_unix_ms: finished.max(0) as u64,
                kind,
                total_ms: total.unwrap_or(0).max(0) as u64,
                failed: outcome == "failed",
            }))
    })?;
    rows.filter_map(|r| r.transpose()).collect()
}

/// Deletes finished jobs older than `retention` and, beyond that, the oldest finished jobs over
/// `max_results`. Returns how many were deleted.
pub(crate) fn prune(
    conn: &Connection,
    now_unix_ms: u64,
    retention: Duration,
    max_results: u64,
) -> rusqlite::Result<usize> {
    let cutoff = now_unix_ms.saturating_sub(retention.as_millis() as u64) as i64;
    let old = conn.execute(
        "DELETE FROM jobs WHERE outcome IS NOT NULL AND finished_unix_ms <= ?1",
        [cutoff],
    )?;
    let over = conn.execute(
        "DELETE FROM jobs WHERE job_id IN (
             SELECT job_id FROM jobs WHERE outcome IS NOT NULL
             ORDER BY finished_unix_ms DESC LIMIT -1 OFFSET ?1)",
        [max_results as i64],
    )?;
    if old + over > 0 {
        // Give the freed pages and the write-ahead log back to the file system.
        checkpoint(conn)?;
    }
    Ok(old + over)
}

/// Copies the write-ahead log into the database and empties it.
pub(crate) fn checkpoint(conn: &Connection) -> rusqlite::Result<()> {
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
}

/// Rows in the journal: (unfinished jobs, finished jobs, partition proofs).
#[cfg(any(test, feature = "test-hooks"))]
pub(crate) fn counts(conn: &Connection) -> rusqlite::Result<(u64, u64, u64)> {
    conn.query_row(
        "SELECT (SELECT COUNT(*) FROM jobs WHERE outcome IS NULL),
                (SELECT COUNT(*) FROM jobs WHERE outcome IS NOT NULL),
                (SELECT COUNT(*) FROM partitions)",
        [],
        |r| {
            Ok((
                r.get::<_, i64>(0)? as u64,
                r.get::<_, i64>(1)? as u64,
                r.get::<_, i64>(2)? as u64,
            ))
        },
    )
}

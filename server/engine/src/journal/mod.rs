//! The job journal: what makes accepted work survive a crash, a restart or a drain that runs out
//! of time. It is a SQLite database in WAL mode (`journal.sqlite`) plus one input file per
//! unfinished job (`inputs/<job id>.req`), under `[jobs] dir`.
//!
//! - A submit is acknowledged only once its input file is flushed and renamed into place and its
//!   `Accepted` row is committed (`synchronous = FULL`: the commit reaches the disk).
//! - The engine's single writer (the machine) decides every record: accepted, partition proved,
//!   finished (proof, error or cancellation). The journal thread applies them in that order, a
//!   batch per transaction, and acknowledges submits after the commit.
//! - At startup [`Journal::recover`] reads the unfinished jobs' records back with their recorded
//!   partition proofs; the engine then serves while recovery (`recovery`, `crate::replan`) reads
//!   each input back in turn, plans the job again and re-admits it with its id, priority and
//!   order, proving only the partitions without a recorded proof. A record that cannot be read (a row
//!   that does not parse, an input file that is missing, damaged or does not match its digest)
//!   is moved to the `quarantine` table (and its file to `quarantine/`) with an error log line
//!   naming it; startup goes on. A database that SQLite cannot open is renamed aside whole,
//!   with its WAL, and its jobs named in the log; a missing or empty one where jobs were kept,
//!   or one of another schema, stops startup untouched (`dir`). The directory is private (0700)
//!   and must be this user's and not writable by every user.
//! - Finished jobs keep their proof or error for `result_retention` (and at most `max_results`
//!   of them), so a client coming back after a restart still gets its answer.
//!
//! Layout: `dir` (the directory and database file before SQLite opens them), `store` (schema
//! and statements), `migrate` (upgrades of older schemas in place), `input` (input files and
//! digests), `record` (what the machine sends), `writer` (the journal thread), `recovery`
//! (inputs read back and quarantine, for recovery in the background).

mod activity;
mod dir;
mod error;
mod input;
mod migrate;
pub(crate) mod record;
mod recovery;
mod store;
mod writer;

use std::fs::{File, OpenOptions};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rusqlite::Connection;

pub use input::{
    encode as encode_input, CommittedInput, InputDigest, InputStore, PendingInput,
    INLINE_INPUT_BYTES,
};
pub(crate) use recovery::{Recovery, Unplanned};
pub(crate) use writer::JournalThread;

use crate::domain::{JobOutcome, ProofKind};
use crate::error::EngineError;
pub use error::JournalError;
use record::Accepted;

/// Where the journal lives and how long it keeps results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalSettings {
    pub dir: PathBuf,
    /// How long a finished job's proof or error stays readable.
    pub result_retention: Duration,
    /// Most finished jobs kept; the oldest go first beyond it.
    pub max_results: u64,
}

/// An open journal, before the engine starts with it.
pub struct Journal {
    settings: JournalSettings,
    conn: Connection,
    inputs: InputStore,
    lock: File,
    db_path: PathBuf,
}

/// An unfinished job read back from the journal, to be planned and re-admitted.
#[derive(Debug, Clone)]
pub(crate) struct RecoveredJob {
    /// The job's record as it was accepted (its input is read back when it is planned).
    pub job: Accepted,
    pub proofs: Vec<(u32, Vec<u8>)>,
}

impl Journal {
    /// Opens the journal under `settings.dir`, creating it if need be. Fails when another
    /// snarkd holds it or the directory cannot be written.
    pub fn open(settings: JournalSettings) -> Result<Journal, JournalError> {
        let dir = &settings.dir;
        dir::make_private(dir)?;
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join("lock"))
            .map_err(JournalError::io(dir.join("lock")))?;
        // The OS drops the lock with the process, however it ends.
        lock.try_lock()
            .map_err(|_| JournalError::Locked { dir: dir.clone() })?;
        let db_path = dir.join("journal.sqlite");
        let inputs_dir = dir.join("inputs");
        dir::refuse_lost_database(&db_path, &inputs_dir)?;
        let kept = dir::KeptWal::of(&db_path);
        let conn = match store::open(&db_path) {
            Ok(conn) => conn,
            // Another snarkd's journal, or one this one cannot safely start over: untouched.
            Err(
                err @ (JournalError::OtherSchema { .. }
                | JournalError::Io { .. }
                | JournalError::Migration(_)),
            ) => return Err(err),
            Err(err) => {
                dir::set_aside(&db_path, kept, &inputs_dir, &err);
                store::open(&db_path)?
            }
        };
        let inputs = InputStore::open(inputs_dir.clone()).map_err(JournalError::io(inputs_dir))?;
        Ok(Journal {
            settings,
            conn,
            inputs,
            lock,
            db_path,
        })
    }

    /// The hour before `now_unix_ms` as recorded: the jobs that completed or failed, the
    /// workers' stints and the load series, oldest first. What the engine's history starts from
    /// after a restart.
    pub(crate) fn recent_past(
        &self,
        now_unix_ms: u64,
    ) -> Result<crate::history::Past, JournalError> {
        let since = now_unix_ms.saturating_sub(crate::history::HISTORY_MS);
        Ok(crate::history::Past {
            ended: store::ended_since(&self.conn, since)?,
            stints: activity::stints_since(&self.conn, since)?,
            load: activity::load_since(&self.conn, since)?,
        })
    }

    /// Reads every unfinished job's record back, in submit order, moving unreadable ones to
    /// quarantine; their inputs are read later, one at a time, by [`Recovery::request`]. Also
    /// returns the next free submit sequence number.
    pub(crate) fn recover(&mut self) -> Result<(Vec<Unplanned>, u64), JournalError> {
        let rows = store::unfinished(&self.conn)?;
        let next_seq = store::max_seq(&self.conn)?.map_or(0, |s| s + 1);
        let mut jobs = Vec::with_capacity(rows.len());
        for row in rows {
            match check(&row) {
                Ok(job) => jobs.push(Unplanned { job, row }),
                Err(reason) => recovery::quarantine(
                    &mut self.conn,
                    &self.inputs,
                    &self.settings.dir,
                    &row,
                    &reason.to_string(),
                ),
            }
        }
        Ok((jobs, next_seq))
    }

    /// What recovery in the background reads and writes, on a connection of its own.
    pub(crate) fn recovery(&self) -> Result<Recovery, JournalError> {
        Recovery::open(
            &self.db_path,
            self.inputs.clone(),
            self.settings.dir.clone(),
        )
    }

    /// Splits the journal into what the engine's handle reads and the journal thread.
    pub(crate) fn into_parts(self) -> Result<(Arc<JournalReader>, JournalThread), JournalError> {
        let reader = store::open_reader(&self.db_path)?;
        let reader = Arc::new(JournalReader {
            conn: Mutex::new(reader),
            inputs: self.inputs.clone(),
        });
        let thread = JournalThread {
            conn: self.conn,
            inputs: self.inputs,
            settings: self.settings,
            lock: self.lock,
            kept: Vec::new(),
            failing: false,
        };
        Ok((reader, thread))
    }
}

/// A row's record checked (its input is read later): what recovery re-admits.
fn check(row: &store::UnfinishedRow) -> Result<RecoveredJob, JournalError> {
    let bad = JournalError::BadRecord;
    let kind = row
        .kind()
        .ok_or_else(|| bad(format!("unknown proof kind {:?}", row.kind)))?;
    let priority = row
        .priority()
        .ok_or_else(|| bad(format!("unknown priority {:?}", row.priority)))?;
    let digest = row
        .digest()
        .ok_or_else(|| bad("the input digest is not 32 bytes".into()))?;
    if row.seq < 0 || row.partitions < 1 {
        return Err(bad(format!(
            "bad sequence number {} or partition count {}",
            row.seq, row.partitions
        )));
    }
    let proofs = row
        .proofs
        .iter()
        .filter(|(index, _)| (0..row.partitions).contains(index))
        .map(|(index, proof)| (*index as u32, proof.clone()))
        .collect();
    Ok(RecoveredJob {
        job: Accepted {
            seq: row.seq as u64,
            job_id: row.job_id.clone(),
            request_id: row.request_id.clone(),
            kind,
            priority,
            digest,
            input_bytes: row.input_bytes.max(0) as u64,
            partitions: row.partitions as u32,
            submitted_unix_ms: row.submitted_unix_ms.max(0) as u64,
            inline_input: None,
        },
        proofs,
    })
}

/// What the engine's handle reads from the journal while it runs: results of jobs no longer
/// in memory, and the input files it writes before a submit.
pub(crate) struct JournalReader {
    conn: Mutex<Connection>,
    pub inputs: InputStore,
}

impl JournalReader {
    pub fn result(&self, job_id: &str) -> Result<Option<JobOutcome>, EngineError> {
        store::find_result(&self.conn.lock(), job_id).map_err(journal_error)
    }

    pub fn completed(
        &self,
        request_id: &str,
        kind: ProofKind,
        digest: &InputDigest,
    ) -> Result<Option<String>, EngineError> {
        store::find_completed(&self.conn.lock(), request_id, kind, digest).map_err(journal_error)
    }
}

fn journal_error(e: rusqlite::Error) -> EngineError {
    EngineError::Journal(e.to_string())
}

/// Makes every insert into and update of every table of the journal in `dir` fail, as on a
/// failing disk (triggers, from a connection of its own), or heals it. For tests (the
/// `test-hooks` feature).
#[cfg(any(test, feature = "test-hooks"))]
pub fn inject_write_fault(dir: &std::path::Path, on: bool) {
    let conn = Connection::open(dir.join("journal.sqlite")).expect("the journal opens");
    conn.busy_timeout(Duration::from_secs(5))
        .expect("a busy timeout");
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .expect("the journal's tables");
    for table in tables {
        for op in ["INSERT", "UPDATE"] {
            let sql = match on {
                true => format!(
                    "CREATE TRIGGER fault_{op}_{table} BEFORE {op} ON {table} \
                     BEGIN SELECT RAISE(FAIL, 'injected write fault'); END;"
                ),
                false => format!("DROP TRIGGER fault_{op}_{table};"),
            };
            conn.execute_batch(&sql).expect("the fault's trigger");
        }
    }
}

/// Rows of a journal on disk: (unfinished jobs, finished jobs, partition proofs). For tests (the
/// `test-hooks` feature); opens the database read-only beside a running daemon.
#[cfg(any(test, feature = "test-hooks"))]
pub fn journal_counts(dir: &std::path::Path) -> Result<(u64, u64, u64), JournalError> {
    let conn = Connection::open_with_flags(
        dir.join("journal.sqlite"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )?;
    Ok(store::counts(&conn)?)
}

#[cfg(test)]
mod dir_tests;
#[cfg(test)]
mod input_files_tests;
#[cfg(test)]
mod migrate_tests;
#[cfg(test)]
mod recovery_tests;
#[cfg(test)]
mod store_tests;
#[cfg(test)]
mod tests;

//! Journal upgrades in place. Each schema version opens the one before it: [`run`] applies the
//! steps from the version found to this snarkd's, in one transaction for the database (files
//! are rewritten before it commits, each whole or not at all, and read in any format, so an
//! upgrade cut short leaves a journal the next start upgrades again). A journal of a newer
//! schema is refused before anything touches it (`store::open`).
//!
//! - 1 → 2: inputs rewritten from format 2 (bincode, fields by position) to format 3 (CBOR,
//!   fields by name), in the rows and in `inputs/`; jobs, results and proved partitions are
//!   kept as they are.
//! - 2 → 3: a failed job's class and stage in columns of their own (`failure_class`,
//!   `failure_stage`); for the failures already recorded, read from the words the engine began
//!   each stage's message with (the class is the one that stage's failures had then).

use std::path::Path;

use rusqlite::{params, Connection};

use super::input;
use super::JournalError;

/// This build's schema version.
pub(crate) const SCHEMA_VERSION: u32 = 3;

/// Upgrades the journal in `conn` (its input files in `inputs_dir`) from schema `from` to
/// [`SCHEMA_VERSION`]. Any failure is [`JournalError::Migration`]: the journal is left as it
/// was, never set aside.
pub(crate) fn run(conn: &Connection, from: u32, inputs_dir: &Path) -> Result<(), JournalError> {
    steps(conn, from, inputs_dir).map_err(|e| match e {
        JournalError::Migration(_) => e,
        other => JournalError::Migration(format!("from schema {from}: {other}")),
    })
}

fn steps(conn: &Connection, from: u32, inputs_dir: &Path) -> Result<(), JournalError> {
    let failed = |step: &str, e: &dyn std::fmt::Display| {
        JournalError::Migration(format!("upgrading schema {step}: {e}"))
    };
    let tx = conn.unchecked_transaction()?;
    for version in from..SCHEMA_VERSION {
        match version {
            1 => rewrite_inputs(&tx, inputs_dir).map_err(|e| failed("1 to 2", &e))?,
            2 => classify_failures(&tx).map_err(|e| failed("2 to 3", &e))?,
            other => return Err(failed(&format!("{other}"), &"no upgrade from it")),
        }
    }
    tx.execute(
        "UPDATE meta SET value = ?1 WHERE key = 'schema'",
        [SCHEMA_VERSION.to_string()],
    )?;
    tx.commit()?;
    tracing::info!(from, to = SCHEMA_VERSION, "job journal upgraded");
    Ok(())
}

/// Schema 3's failure columns, filled for the failed jobs already recorded. Before schema 3 the
/// engine began a failure's message with its stage's words; a device phase's failure was the
/// device's after its retries, a synthesis or finalize failure the input's, a parameter load's
/// the setup's, an unrecordable job the journal's disk's.
fn classify_failures(conn: &Connection) -> Result<(), JournalError> {
    let columns: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('jobs')")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    for column in ["failure_class", "failure_stage"] {
        if !columns.iter().any(|c| c == column) {
            conn.execute_batch(&format!("ALTER TABLE jobs ADD COLUMN {column} TEXT"))?;
        }
    }
    conn.execute_batch(
        "UPDATE jobs SET
           failure_stage = CASE
             WHEN error LIKE 'params % failed to load:%' THEN 'params'
             WHEN error LIKE 'partition % synthesis failed:%' THEN 'synthesis'
             WHEN error LIKE 'partition % device phase failed:%' THEN 'device'
             WHEN error LIKE 'final proof rejected:%' THEN 'finalize'
             ELSE 'journal' END,
           failure_class = CASE
             WHEN error LIKE 'params % failed to load:%' THEN 'setup'
             WHEN error LIKE 'partition % synthesis failed:%' THEN 'input'
             WHEN error LIKE 'partition % device phase failed:%' THEN 'device'
             WHEN error LIKE 'final proof rejected:%' THEN 'input'
             WHEN error LIKE 'after a restart: invalid request%' THEN 'input'
             WHEN error LIKE 'after a restart: internal error%' THEN 'bug'
             WHEN error LIKE 'after a restart:%' THEN 'setup'
             ELSE 'resource' END
         WHERE outcome = 'failed' AND failure_class IS NULL",
    )?;
    Ok(())
}

/// Every stored input in today's format. An input that does not decode is left as it is:
/// recovery quarantines its job, as it would have.
fn rewrite_inputs(conn: &Connection, inputs_dir: &Path) -> Result<(), JournalError> {
    let rows: Vec<(String, Vec<u8>)> = conn
        .prepare("SELECT job_id, input FROM jobs WHERE input IS NOT NULL")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    for (job_id, bytes) in rows {
        if let Some(now) = reencoded(&bytes, &format!("the input of job {job_id}")) {
            conn.execute(
                "UPDATE jobs SET input = ?1 WHERE job_id = ?2",
                params![now, job_id],
            )?;
        }
    }
    let Ok(entries) = std::fs::read_dir(inputs_dir) else {
        return Ok(()); // no input files yet
    };
    for entry in entries {
        let path = entry.map_err(JournalError::io(inputs_dir))?.path();
        if path.extension().is_none_or(|e| e != "req") {
            continue;
        }
        let bytes = std::fs::read(&path).map_err(JournalError::io(&path))?;
        if let Some(now) = reencoded(&bytes, &path.display().to_string()) {
            replace_file(&path, &now)?;
        }
    }
    Ok(())
}

/// `bytes` in today's input format, None when it is already in it or does not decode.
fn reencoded(bytes: &[u8], what: &str) -> Option<Vec<u8>> {
    if input::format_of(bytes) == Some(input::VERSION) {
        return None;
    }
    match input::decode_stored(bytes, bytes.len() as u64, what) {
        Ok(stored) => Some(stored.encode()),
        Err(err) => {
            tracing::warn!(error = %err, "an input the upgrade cannot read is left as it is");
            None
        }
    }
}

/// Writes `bytes` over `path` through a flushed temporary file renamed into place.
fn replace_file(path: &Path, bytes: &[u8]) -> Result<(), JournalError> {
    use std::io::Write;
    let tmp = path.with_extension("upgrade");
    let io = JournalError::io(&tmp);
    let mut file = std::fs::File::create(&tmp).map_err(JournalError::io(&tmp))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(io)?;
    std::fs::rename(&tmp, path).map_err(JournalError::io(path))?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(JournalError::io(dir))?;
    }
    Ok(())
}

//! The journal's side of recovery in the background: each unfinished job's input read back
//! when recovery comes to it (never all at once) and checked against its record, on a
//! connection of its own beside the journal thread's. An input that cannot be read back moves
//! the job to quarantine; a job that can never be planned has its failure recorded here.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::input::{self, InputStore};
use super::{store, JournalError, RecoveredJob};
use crate::clock::unix_ms;
use crate::domain::{JobEnd, JobFailure, ProofRequest};

/// One unfinished job as read back at startup: its record, checked, and its row as stored (for
/// quarantine). Its input is not read until recovery comes to it.
pub(crate) struct Unplanned {
    pub job: RecoveredJob,
    pub(super) row: store::UnfinishedRow,
}

/// A recovered job whose input could not be read back or did not match its record: moved to
/// quarantine, and its job ends with this.
#[derive(Debug, thiserror::Error)]
#[error("its journal record cannot be recovered (moved to quarantine): {0}")]
pub(crate) struct Quarantined(pub JournalError);

/// What recovery in the background needs of the journal.
pub(crate) struct Recovery {
    conn: Connection,
    inputs: InputStore,
    dir: PathBuf,
}

impl Recovery {
    pub(super) fn open(
        db: &Path,
        inputs: InputStore,
        dir: PathBuf,
    ) -> Result<Recovery, JournalError> {
        Ok(Recovery {
            conn: store::open_reader(db)?,
            inputs,
            dir,
        })
    }

    /// The journal's directory (where the tests' recovery hold lives).
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The job's input, read back and checked against what was recorded with it. When it
    /// cannot be, the job is moved to quarantine and the error says why.
    pub fn request(&mut self, job: &Unplanned) -> Result<ProofRequest, Quarantined> {
        let in_row = store::row_input(&self.conn, &job.row.job_id).map_err(JournalError::from);
        let read = in_row.and_then(|bytes| match bytes {
            Some(bytes) => {
                input::decode_stored(&bytes[..], bytes.len() as u64, "the input in the row")
            }
            None => self.inputs.read(&job.row.job_id),
        });
        let checked = read.and_then(|stored| {
            let recorded = &job.job.job;
            match stored.kind() == recorded.kind && stored.digest() == recorded.digest {
                true => stored.into_request("the input"),
                false => Err(JournalError::BadRecord(
                    "the input does not match the kind and digest recorded with it".into(),
                )),
            }
        });
        checked.map_err(|reason| {
            quarantine(
                &mut self.conn,
                &self.inputs,
                &self.dir,
                &job.row,
                &reason.to_string(),
            );
            Quarantined(reason)
        })
    }

    /// Whether the job is still unfinished in the journal (not cancelled meanwhile).
    pub fn unfinished(&self, job_id: &str) -> bool {
        self.conn
            .query_row(
                "SELECT count(*) > 0 FROM jobs WHERE job_id = ?1 AND outcome IS NULL",
                [job_id],
                |r| r.get(0),
            )
            .unwrap_or(true)
    }

    /// Ends a recovered job that can never be planned (its error is recorded; a retry of its
    /// request makes a new attempt).
    pub fn fail(&mut self, job_id: &str, failure: &JobFailure) {
        let result = self.conn.transaction().and_then(|tx| {
            let end = JobEnd::Failed(failure.clone());
            store::finish(&tx, job_id, &end, &Default::default(), unix_ms())?;
            tx.commit()
        });
        if let Err(e) = result {
            tracing::error!(job_id, error = %e, "cannot record the failure of a recovered job");
        }
        self.inputs.remove(job_id);
    }
}

/// Moves a job's row and input aside, saying so in the log.
pub(super) fn quarantine(
    conn: &mut Connection,
    inputs: &InputStore,
    dir: &Path,
    row: &store::UnfinishedRow,
    reason: &str,
) {
    let job_id = row.job_id.as_str();
    let file = inputs.quarantine(job_id, &dir.join("quarantine"));
    let stored = store::quarantine(conn, job_id, reason, row, unix_ms());
    tracing::error!(job_id, reason, input = ?file.as_ref().map(|p| p.display().to_string()),
        stored = stored.is_ok(), "a journal record cannot be recovered; moved to quarantine");
}

//! What can go wrong with the job journal, typed by what the operator does about it.

use std::path::PathBuf;

/// A failure of the job journal. Each message names the file or directory and what to do.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// Another snarkd holds the jobs directory.
    #[error("another snarkd uses the jobs dir {}: give each daemon its own [jobs] dir", dir.display())]
    Locked { dir: PathBuf },
    /// A file or directory of the journal cannot be created, opened, read or written.
    #[error("cannot use {}: {source}; check the disk and the permissions under [jobs] dir", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The jobs directory is not safely ours.
    #[error("the jobs dir {} is not safe to keep jobs in: {reason}; give snarkd a directory of its own that only its user can write ([jobs] dir)", dir.display())]
    Unsafe { dir: PathBuf, reason: String },
    /// The database is missing or empty where jobs were kept: starting afresh would lose them.
    #[error("the job journal {} is missing or empty, but the jobs dir has been used ({} input files: {jobs:?}): starting a new journal would lose acknowledged jobs; restore the file from a backup, or move the jobs dir aside to start afresh", db.display(), jobs.len())]
    Lost { db: PathBuf, jobs: Vec<String> },
    /// The database was written by a snarkd with a newer (or unknown) schema: left as it is.
    #[error("the job journal {} has schema version {found}, and this snarkd reads versions 1 to {ours} (older ones are upgraded in place): run the snarkd that wrote it (or a newer one), or move the jobs dir aside; the journal was left untouched", db.display())]
    OtherSchema {
        db: PathBuf,
        found: String,
        ours: u32,
    },
    /// Upgrading an older journal failed: left as it was (the upgrade is one transaction).
    #[error("the job journal could not be upgraded ({0}); it was left as it was: check the disk and start again, or run the snarkd that wrote it")]
    Migration(String),
    /// The database refused a statement.
    #[error("the job journal's database: {0}")]
    Database(#[from] rusqlite::Error),
    /// The database failed its integrity check.
    #[error("the job journal's database is damaged (integrity check: {0})")]
    Damaged(String),
    /// A recorded job cannot be used: its row or its input is damaged, of an unknown kind or
    /// of another input format. The job is quarantined, the others recover.
    #[error("{0}")]
    BadRecord(String),
    /// Recovery itself broke (a panic on its thread): a bug.
    #[error("recovery from the job journal failed: {0}")]
    Recovery(String),
}

impl JournalError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> JournalError {
        let path = path.into();
        move |source| JournalError::Io { path, source }
    }
}

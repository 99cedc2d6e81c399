//! The journal's directory and database file before SQLite opens them: a directory that is ours
//! and private (anyone who can write it could plant a "completed" proof that a retried Prove
//! returns), a database that is not quietly started afresh over acknowledged jobs, and a
//! damaged one moved aside whole (with its WAL, which holds committed jobs), its jobs named.

use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::JournalError;
use crate::clock::unix_ms;

/// Creates `dir` private (0700) if it is missing; refuses one that another user owns or that
/// every user may write; makes one of ours private if it is not (its files hold clients'
/// inputs and proofs).
pub(super) fn make_private(dir: &Path) -> Result<(), JournalError> {
    if !dir.exists() {
        if let Some(parent) = dir.parent() {
            fs::create_dir_all(parent).map_err(JournalError::io(parent))?;
        }
        fs::DirBuilder::new()
            .mode(0o700)
            .create(dir)
            .or_else(|e| if dir.is_dir() { Ok(()) } else { Err(e) })
            .map_err(JournalError::io(dir))?;
    }
    let meta = fs::metadata(dir).map_err(JournalError::io(dir))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let unsafe_because = if meta.uid() != me {
        Some(format!(
            "it belongs to user id {}, not to this snarkd's ({me})",
            meta.uid()
        ))
    } else if meta.mode() & 0o002 != 0 {
        Some(format!(
            "every user may write it (mode {:o})",
            meta.mode() & 0o7777
        ))
    } else {
        None
    };
    if let Some(reason) = unsafe_because {
        return Err(JournalError::Unsafe {
            dir: dir.to_path_buf(),
            reason,
        });
    }
    if meta.mode() & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .map_err(JournalError::io(dir))?;
        tracing::info!(dir = %dir.display(), "the jobs dir is now private (mode 700)");
    }
    Ok(())
}

/// Refuses to start a new database where jobs were kept before: `db` missing or empty while the
/// input directory exists (the journal was used) and no WAL holds the database's pages (a new
/// database's first pages live in its WAL until a checkpoint, so an empty file beside a WAL is
/// normal).
pub(super) fn refuse_lost_database(db: &Path, inputs: &Path) -> Result<(), JournalError> {
    let size = |path: &Path| fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if size(db) > 0 || size(&sibling(db, "-wal")) > 0 || !inputs.is_dir() {
        return Ok(());
    }
    let jobs = input_job_ids(inputs);
    Err(JournalError::Lost {
        db: db.to_path_buf(),
        jobs,
    })
}

/// The WAL beside a database (it holds committed transactions not yet in the file), kept by a
/// second link while SQLite first opens the database: SQLite deletes the WAL of a file it finds
/// is no database, which would lose those transactions before the file could be set aside.
/// Dropping it removes the extra links.
pub(super) struct KeptWal {
    links: Vec<(&'static str, PathBuf)>,
}

const WAL_FILES: [&str; 2] = ["-wal", "-shm"];

impl KeptWal {
    pub(super) fn of(db: &Path) -> KeptWal {
        let links = WAL_FILES
            .into_iter()
            .filter_map(|suffix| {
                let link = sibling(db, &format!("{suffix}.kept"));
                let _ = fs::remove_file(&link);
                fs::hard_link(sibling(db, suffix), &link).ok()?;
                Some((suffix, link))
            })
            .collect();
        KeptWal { links }
    }
}

impl Drop for KeptWal {
    fn drop(&mut self) {
        for (_, link) in &self.links {
            let _ = fs::remove_file(link);
        }
    }
}

/// Renames a database SQLite cannot use out of the way together with its WAL, as `kept` holds
/// it, and logs the jobs it held as far as they can be told: unfinished ones by their input
/// files, any by a read of the moved copy.
pub(super) fn set_aside(db: &Path, kept: KeptWal, inputs: &Path, error: &JournalError) -> PathBuf {
    let aside = db.with_extension(format!("sqlite.damaged-{}", unix_ms()));
    let moved = fs::rename(db, &aside);
    for (suffix, link) in &kept.links {
        let _ = fs::rename(link, sibling(&aside, suffix));
    }
    for suffix in WAL_FILES {
        let _ = fs::remove_file(sibling(db, suffix));
    }
    drop(kept);
    let recorded = jobs_in(&aside).unwrap_or_default();
    let with_inputs = input_job_ids(inputs);
    tracing::error!(path = %db.display(), moved_to = %aside.display(), moved = moved.is_ok(),
        %error, ?recorded, ?with_inputs,
        "the job journal cannot be read; it was moved aside with its WAL and a new one started: \
         the jobs listed are in the moved copy");
    aside
}

/// `path` with `suffix` appended to its file name (`journal.sqlite-wal`).
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The job ids of the input files in `inputs` (`<job id>.req`): readable without SQLite.
fn input_job_ids(inputs: &Path) -> Vec<String> {
    let mut ids: Vec<String> = fs::read_dir(inputs)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            name.strip_suffix(".req").map(str::to_string)
        })
        .collect();
    ids.sort();
    ids
}

/// The job ids recorded in a database, read-only, if SQLite can still read that much.
pub(super) fn jobs_in(db: &Path) -> rusqlite::Result<Vec<String>> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut statement = conn.prepare("SELECT job_id FROM jobs ORDER BY seq")?;
    let ids = statement.query_map([], |row| row.get(0))?;
    ids.collect()
}

//! The journal's directory and database file before the engine starts: damaged, empty, of
//! another schema, or in a directory that is not safely snarkd's; one daemon per journal.

use std::path::Path;

use super::input_files_tests::file_names;
use super::tests::settings;
use super::*;

#[test]
fn a_damaged_database_is_set_aside_and_a_new_one_started() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("journal.sqlite"), vec![0x5a; 8192]).unwrap();
    let journal = Journal::open(settings(dir.path())).unwrap();
    drop(journal);
    let aside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains("damaged"))
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(journal_counts(dir.path()).ok(), Some((0, 0, 0)));
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_damaged_database_goes_aside_with_its_wal_and_shm() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.sqlite");
    std::fs::write(&db, vec![0x5a; 8192]).unwrap();
    std::fs::write(dir.path().join("journal.sqlite-wal"), b"committed frames").unwrap();
    std::fs::write(dir.path().join("journal.sqlite-shm"), b"index").unwrap();
    drop(Journal::open(settings(dir.path())).unwrap());
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let aside = names
        .iter()
        .find(|n| n.contains("damaged") && !n.ends_with("wal") && !n.ends_with("shm"))
        .unwrap_or_else(|| panic!("{names:?}"));
    let wal = dir.path().join(format!("{aside}-wal"));
    assert_eq!(std::fs::read(&wal).unwrap(), b"committed frames");
    // The shared-memory index is SQLite's own (rebuilt from the WAL); it moves along.
    assert!(
        dir.path().join(format!("{aside}-shm")).exists(),
        "{names:?}"
    );
    assert_eq!(
        std::fs::read(dir.path().join(aside)).unwrap(),
        vec![0x5a; 8192]
    );
}

#[test]
fn an_empty_database_where_jobs_were_kept_stops_startup_untouched() {
    let dir = tempfile::tempdir().unwrap();
    drop(Journal::open(settings(dir.path())).unwrap());
    let db = dir.path().join("journal.sqlite");
    std::fs::File::create(&db).unwrap(); // truncated to 0 bytes
    std::fs::write(dir.path().join("inputs/4d1c-job.req"), b"an input").unwrap();
    let err = Journal::open(settings(dir.path())).err().unwrap();
    assert!(matches!(err, JournalError::Lost { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("4d1c-job") && message.contains("move the jobs dir aside"),
        "{message}"
    );
    assert_eq!(std::fs::metadata(&db).unwrap().len(), 0, "left as it was");
    // A new jobs dir, or an empty database beside a WAL (a new journal before its first
    // checkpoint), opens as before.
    let fresh = tempfile::tempdir().unwrap();
    drop(Journal::open(settings(fresh.path())).unwrap());
}

#[test]
fn a_journal_of_a_newer_schema_is_refused_naming_both_versions_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    drop(Journal::open(settings(dir.path())).unwrap());
    let db = dir.path().join("journal.sqlite");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute("UPDATE meta SET value = '4' WHERE key = 'schema'", [])
        .unwrap();
    let before = std::fs::read(&db).unwrap();
    let err = Journal::open(settings(dir.path())).err().unwrap();
    assert!(matches!(err, JournalError::OtherSchema { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("has schema version 4, and this snarkd reads versions 1 to 3"),
        "{err}"
    );
    assert_eq!(std::fs::read(&db).unwrap(), before, "not a byte changed");
    let names = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(names, 3, "nothing moved aside (journal, inputs, lock)");
}

#[test]
fn the_jobs_dir_is_private_and_one_every_user_may_write_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let new = root.path().join("state/snarkd/jobs");
    drop(Journal::open(settings(&new)).unwrap());
    assert_eq!(mode(&new), 0o700, "created private");

    let loose = root.path().join("loose");
    std::fs::create_dir(&loose).unwrap();
    set_mode(&loose, 0o755);
    drop(Journal::open(settings(&loose)).unwrap());
    assert_eq!(mode(&loose), 0o700, "made private");

    let open_to_all = root.path().join("tmp-like");
    std::fs::create_dir(&open_to_all).unwrap();
    set_mode(&open_to_all, 0o777);
    let err = Journal::open(settings(&open_to_all)).err().unwrap();
    assert!(matches!(err, JournalError::Unsafe { .. }), "{err}");
    assert!(err.to_string().contains("every user may write it"), "{err}");
    assert_eq!(
        std::fs::read_dir(&open_to_all).unwrap().count(),
        0,
        "nothing written there"
    );

    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let theirs = root.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), None).unwrap();
        let err = Journal::open(settings(&theirs)).err().unwrap();
        assert!(
            err.to_string().contains("belongs to user id 65534"),
            "{err}"
        );
    }
}

#[test]
fn one_daemon_per_journal() {
    let dir = tempfile::tempdir().unwrap();
    let _first = Journal::open(settings(dir.path())).unwrap();
    let err = Journal::open(settings(dir.path())).err().unwrap();
    assert!(matches!(err, JournalError::Locked { .. }), "{err}");
    assert!(err.to_string().contains("another snarkd"), "{err}");
}

#[test]
fn the_jobs_dir_is_only_ever_narrowed() {
    // An owner-only directory (here without write for its owner) is left as its owner set it:
    // snarkd takes permissions away from group and others, it never adds any.
    let root = tempfile::tempdir().unwrap();
    let kept = root.path().join("owner-only");
    std::fs::create_dir(&kept).unwrap();
    set_mode(&kept, 0o500);
    dir::make_private(&kept).unwrap();
    assert_eq!(mode(&kept), 0o500);
}

#[test]
fn an_empty_database_beside_its_wal_is_a_new_journal_not_a_lost_one() {
    // A new database's first pages live in its WAL until a checkpoint: an empty file beside a
    // WAL that holds them is not a journal that lost its jobs.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.sqlite");
    let inputs = dir.path().join("inputs");
    std::fs::create_dir(&inputs).unwrap();
    std::fs::write(inputs.join("4d1c-job.req"), b"an input").unwrap();
    std::fs::File::create(&db).unwrap();
    std::fs::write(dir.path().join("journal.sqlite-wal"), b"the first pages").unwrap();
    assert!(dir::refuse_lost_database(&db, &inputs).is_ok());
    std::fs::File::create(dir.path().join("journal.sqlite-wal")).unwrap();
    assert!(matches!(
        dir::refuse_lost_database(&db, &inputs),
        Err(JournalError::Lost { .. })
    ));
}

#[test]
fn the_wal_kept_while_the_database_opens_leaves_no_link_behind() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.sqlite");
    for suffix in ["-wal", "-shm"] {
        std::fs::write(dir.path().join(format!("journal.sqlite{suffix}")), b"pages").unwrap();
    }
    let links = |dir: &Path| {
        let mut names = file_names(dir);
        names.retain(|n| n.ends_with(".kept"));
        names
    };
    let kept = dir::KeptWal::of(&db);
    assert_eq!(
        links(dir.path()),
        ["journal.sqlite-shm.kept", "journal.sqlite-wal.kept"]
    );
    drop(kept);
    assert!(links(dir.path()).is_empty(), "{:?}", links(dir.path()));
    assert_eq!(
        std::fs::read(dir.path().join("journal.sqlite-wal")).unwrap(),
        b"pages",
        "the WAL itself stays"
    );
}

#[test]
fn the_job_ids_of_a_database_set_aside_are_read_in_submit_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE jobs (seq INTEGER, job_id TEXT);
         INSERT INTO jobs VALUES (2, 'second'), (1, 'first');",
    )
    .unwrap();
    drop(conn);
    assert_eq!(dir::jobs_in(&db).unwrap(), ["first", "second"]);
}

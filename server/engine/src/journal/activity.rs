//! The history's worker stints and load series in the journal, so that the busy share and the
//! load charts, like the jobs ended, survive a restart. Neither is an acknowledged fact (no
//! client waits for them), and a crash loses at most the stint running then. The journal thread writes them like any record (each
//! batch of records is one commit); a load bucket is written when it starts and when its peak
//! grows, at most a few times in its 10 seconds.

use rusqlite::{params, Connection, Transaction};

use crate::history::{Load, LoadBucket, Stint};

/// Tables added to the journal's schema (new tables only, so journals of older builds open as
/// they are and start these empty).
pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS stints (
    from_unix_ms INTEGER NOT NULL,
    to_unix_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS stints_by_end ON stints (to_unix_ms);
CREATE TABLE IF NOT EXISTS load (
    start_unix_ms INTEGER PRIMARY KEY,
    memory_used_bytes INTEGER NOT NULL,
    waiting_for_admission INTEGER NOT NULL,
    synthesizing INTEGER NOT NULL,
    waiting_for_worker INTEGER NOT NULL,
    on_worker INTEGER NOT NULL
);
";

pub(crate) fn insert_stint(tx: &Transaction, stint: &Stint) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO stints (from_unix_ms, to_unix_ms) VALUES (?1, ?2)",
        params![stint.from_unix_ms as i64, stint.to_unix_ms as i64],
    )?;
    Ok(())
}

/// Writes a bucket as it stands now (its peak only grows while it is the newest).
pub(crate) fn put_load(tx: &Transaction, bucket: &LoadBucket) -> rusqlite::Result<()> {
    let p = &bucket.peak;
    tx.execute(
        "INSERT OR REPLACE INTO load (start_unix_ms, memory_used_bytes, waiting_for_admission,
             synthesizing, waiting_for_worker, on_worker) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            bucket.start_unix_ms as i64,
            p.memory_used_bytes as i64,
            p.waiting_for_admission,
            p.synthesizing,
            p.waiting_for_worker,
            p.on_worker
        ],
    )?;
    Ok(())
}

/// The stints that ended after `since`, oldest first.
pub(crate) fn stints_since(conn: &Connection, since: u64) -> rusqlite::Result<Vec<Stint>> {
    let mut rows = conn.prepare(
        "SELECT from_unix_ms, to_unix_ms FROM stints WHERE to_unix_ms > ?1 ORDER BY to_unix_ms",
    )?;
    let rows = rows.query_map([since as i64], |r| {
        Ok(Stint {
            from_unix_ms: r.get::<_, i64>(0)?.max(0) as u64,
            to_unix_ms: r.get::<_, i64>(1)?.max(0) as u64,
        })
    })?;
    rows.collect()
}

/// The load buckets from the last one that started at or before `since` on, oldest first.
pub(crate) fn load_since(conn: &Connection, since: u64) -> rusqlite::Result<Vec<LoadBucket>> {
    let mut rows = conn.prepare(
        "SELECT start_unix_ms, memory_used_bytes, waiting_for_admission, synthesizing,
                waiting_for_worker, on_worker FROM load
         WHERE start_unix_ms >= IFNULL((SELECT MAX(start_unix_ms) FROM load
                                        WHERE start_unix_ms <= ?1), 0)
         ORDER BY start_unix_ms",
    )?;
    let rows = rows.query_map([since as i64], |r| {
        Ok(LoadBucket {
            start_unix_ms: r.get::<_, i64>(0)?.max(0) as u64,
            peak: Load {
                memory_used_bytes: r.get::<_, i64>(1)?.max(0) as u64,
                waiting_for_admission: r.get(2)?,
                synthesizing: r.get(3)?,
                waiting_for_worker: r.get(4)?,
                on_worker: r.get(5)?,
            },
        })
    })?;
    rows.collect()
}

/// Deletes what is older than `since` (keeping the load bucket in effect then). Returns the rows
/// deleted.
pub(crate) fn prune(conn: &Connection, since: u64) -> rusqlite::Result<usize> {
    let stints = conn.execute("DELETE FROM stints WHERE to_unix_ms <= ?1", [since as i64])?;
    let load = conn.execute(
        "DELETE FROM load WHERE start_unix_ms < (SELECT MAX(start_unix_ms) FROM load
                                                  WHERE start_unix_ms <= ?1)",
        [since as i64],
    )?;
    Ok(stints + load)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pruning_keeps_the_hour_and_the_load_bucket_in_effect_when_it_began() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = super::super::store::open(&dir.path().join("j.sqlite")).unwrap();
        let bucket = |start, on_worker| LoadBucket {
            start_unix_ms: start,
            peak: Load {
                on_worker,
                ..Load::default()
            },
        };
        let tx = conn.transaction().unwrap();
        for (from, to) in [(0, 5), (10, 20), (30, 40)] {
            insert_stint(
                &tx,
                &Stint {
                    from_unix_ms: from,
                    to_unix_ms: to,
                },
            )
            .unwrap();
        }
        for b in [bucket(0, 1), bucket(10, 2), bucket(20, 3)] {
            put_load(&tx, &b).unwrap();
        }
        // A bucket written again as its peak grows replaces itself.
        put_load(&tx, &bucket(20, 4)).unwrap();
        tx.commit().unwrap();
        assert_eq!(load_since(&conn, 0).unwrap().len(), 3);

        assert_eq!(prune(&conn, 15).unwrap(), 2, "one stint and one bucket");
        let stints = stints_since(&conn, 0).unwrap();
        assert_eq!(
            stints.iter().map(|s| s.to_unix_ms).collect::<Vec<_>>(),
            [20, 40]
        );
        // The bucket from 10 on was in effect at 15: it stays, and says how the window began.
        assert_eq!(
            load_since(&conn, 15).unwrap(),
            [bucket(10, 2), bucket(20, 4)]
        );
        assert_eq!(load_since(&conn, 25).unwrap(), [bucket(20, 4)]);
    }
}

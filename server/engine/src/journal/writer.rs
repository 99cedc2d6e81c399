//! The journal thread: applies the records the engine's single writer sends, in order, one
//! transaction per batch (so a burst of submits shares one flush to disk), then acknowledges the
//! submits in it. It also prunes finished jobs past their retention.

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::input::InputStore;
use super::record::{Ack, FromJournal, Record, ToJournal};
use super::{store, JournalSettings};
use crate::clock::unix_ms;
use crate::error::EngineError;

/// Most records committed in one transaction.
const BATCH: usize = 1024;
/// How soon records whose write failed are written again.
const RETRY: Duration = Duration::from_secs(1);

pub(crate) struct JournalThread {
    pub conn: Connection,
    pub inputs: InputStore,
    pub settings: JournalSettings,
    /// Held for the life of the thread: one daemon per journal.
    pub lock: std::fs::File,
    /// Records whose write failed, written again ahead of anything newer.
    pub kept: Vec<(Record, Option<Ack>)>,
    /// The last write failed.
    pub failing: bool,
}

impl JournalThread {
    /// Records until every sender of `records` is gone, telling `engine` whether each job's
    /// acceptance is on disk.
    pub fn run(mut self, records: Receiver<ToJournal>, engine: impl Fn(FromJournal)) {
        let prune_every = (self.settings.result_retention / 2)
            .clamp(Duration::from_secs(1), Duration::from_secs(60));
        let mut next_prune = Instant::now();
        loop {
            let mut wait = next_prune.saturating_duration_since(Instant::now());
            if self.failing {
                wait = wait.min(RETRY);
            }
            let mut batch = Vec::new();
            match records.recv_timeout(wait) {
                Ok(first) => batch.push(first),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            batch.extend(records.try_iter().take(BATCH));
            if !batch.is_empty() || !self.kept.is_empty() {
                self.commit(batch, &engine);
            } else if self.failing {
                self.probe(&engine);
            }
            if Instant::now() >= next_prune {
                self.prune();
                next_prune = Instant::now() + prune_every;
            }
        }
        if !self.kept.is_empty() {
            let jobs: Vec<&str> = self.kept.iter().filter_map(|(r, _)| r.job_id()).collect();
            tracing::error!(records = self.kept.len(), ?jobs,
                "the job journal could not write these records before the end: those jobs resume from their last recorded step");
        }
        let _ = &self.lock;
    }

    /// Writes the kept records and then `batch`'s in one transaction. If it fails, an
    /// acceptance fails its job (the submit gets the error) and every other record is kept for
    /// the next try; the engine hears when writes start and stop failing.
    fn commit(&mut self, batch: Vec<ToJournal>, engine: &impl Fn(FromJournal)) {
        let mut records = std::mem::take(&mut self.kept);
        let mut flushes = Vec::new();
        for message in batch {
            match message {
                ToJournal::Record(record, ack) => records.push((record, ack)),
                ToJournal::Flush(done) => flushes.push(done),
            }
        }
        let written = (|| {
            let tx = self.conn.transaction()?;
            for (record, _) in &records {
                apply(&tx, record)?;
            }
            tx.commit()
        })();
        match written {
            Ok(()) => {
                for (record, ack) in records {
                    self.recorded(&record);
                    if let Record::Accepted(job) = &record {
                        let job_id = job.job_id.clone();
                        engine(FromJournal::Recorded { job_id });
                    }
                    if let Some(ack) = ack {
                        ack.send(Ok(()));
                    }
                }
                // A commit that wrote nothing (an update of no row) proves nothing about the
                // disk: the probe's real write decides.
                if self.failing {
                    self.probe(engine);
                }
            }
            Err(e) => {
                let message = e.to_string();
                tracing::error!(error = %message, records = records.len(),
                    "the job journal could not be written: its records are kept and written again, no new work is taken meanwhile");
                if !std::mem::replace(&mut self.failing, true) {
                    engine(FromJournal::Unwritable {
                        message: message.clone(),
                    });
                }
                for (record, ack) in records {
                    match record {
                        Record::Accepted(job) => {
                            engine(FromJournal::Failed {
                                job_id: job.job_id.clone(),
                                message: message.clone(),
                            });
                            if let Some(ack) = ack {
                                ack.send(Err(EngineError::Journal(message.clone())));
                            }
                        }
                        // A stint or a load bucket is the history's: a crash may lose it too,
                        // and keeping them would grow without bound on a disk that stays bad.
                        Record::Stint(_) | Record::Load(_) => {}
                        other => self.kept.push((other, ack)),
                    }
                }
            }
        }
        for done in flushes {
            // Asked for at shutdown: fold the write-ahead log into the database too.
            if let Err(e) = store::checkpoint(&self.conn) {
                tracing::warn!(error = %e, "checkpointing the job journal failed");
            }
            let _ = done.send(());
        }
    }

    /// With nothing to write while writes fail (new work is refused meanwhile), a small write
    /// tells whether they succeed again.
    fn probe(&mut self, engine: &impl Fn(FromJournal)) {
        if store::probe(&self.conn, unix_ms()).is_ok() {
            self.failing = false;
            tracing::warn!("the job journal is written again: new work is taken");
            engine(FromJournal::Writable);
        }
    }

    /// What follows a record once it is on disk.
    fn recorded(&self, record: &Record) {
        match record {
            Record::Accepted(job) => {
                tracing::debug!(job_id = %job.job_id, "job recorded")
            }
            Record::PartitionProved { job_id, index, .. } => {
                tracing::debug!(job_id = %job_id, partition = index, "partition proof recorded")
            }
            Record::Finished { job_id, .. } => {
                self.inputs.remove(job_id);
                tracing::debug!(job_id = %job_id, "job end recorded")
            }
            Record::Stint(_) | Record::Load(_) => {}
        }
    }

    fn prune(&mut self) {
        let s = &self.settings;
        match store::prune(&self.conn, unix_ms(), s.result_retention, s.max_results) {
            Ok(0) => {}
            Ok(n) => tracing::debug!(jobs = n, "finished jobs pruned from the journal"),
            Err(e) => tracing::warn!(error = %e, "pruning the job journal failed"),
        }
        let hour_ago = unix_ms().saturating_sub(crate::history::HISTORY_MS);
        if let Err(e) = super::activity::prune(&self.conn, hour_ago) {
            tracing::warn!(error = %e, "pruning the journal's stints and load failed");
        }
    }
}

fn apply(tx: &rusqlite::Transaction, record: &Record) -> rusqlite::Result<()> {
    match record {
        Record::Accepted(job) => store::insert_job(tx, job),
        Record::PartitionProved {
            job_id,
            index,
            proof,
        } => store::insert_partition(tx, job_id, *index, proof),
        Record::Finished {
            job_id,
            end,
            timings,
            finished_unix_ms,
        } => store::finish(tx, job_id, end, timings, *finished_unix_ms),
        Record::Stint(stint) => super::activity::insert_stint(tx, stint),
        Record::Load(bucket) => super::activity::put_load(tx, bucket),
    }
}

//! The journal thread: applies the records the engine's single writer sends, in order, one
//! transaction per batch (so a burst of submits shares one flush to disk), then acknowledges the
//! submits in it. It also prunes finished jobs past their retention.

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::input::InputStore;
use super::record::{Acceptance, Record, ToJournal};
use super::{store, JournalSettings};
use crate::clock::unix_ms;
use crate::error::EngineError;

/// Most records committed in one transaction.
const BATCH: usize = 1024;

pub(crate) struct JournalThread {
    pub conn: Connection,
    pub inputs: InputStore,
    pub settings: JournalSettings,
    /// Held for the life of the thread: one daemon per journal.
    pub lock: std::fs::File,
}

impl JournalThread {
    /// Records until every sender of `records` is gone, telling `engine` whether each job's
    /// acceptance is on disk.
    pub fn run(mut self, records: Receiver<ToJournal>, engine: impl Fn(Acceptance)) {
        let prune_every = (self.settings.result_retention / 2)
            .clamp(Duration::from_secs(1), Duration::from_secs(60));
        let mut next_prune = Instant::now();
        loop {
            let wait = next_prune.saturating_duration_since(Instant::now());
            let mut batch = Vec::new();
            match records.recv_timeout(wait) {
                Ok(first) => batch.push(first),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            batch.extend(records.try_iter().take(BATCH));
            if !batch.is_empty() {
                self.commit(batch, &engine);
            }
            if Instant::now() >= next_prune {
                self.prune();
                next_prune = Instant::now() + prune_every;
            }
        }
        let _ = &self.lock;
    }

    fn commit(&mut self, batch: Vec<ToJournal>, engine: &impl Fn(Acceptance)) {
        let written = (|| {
            let tx = self.conn.transaction()?;
            for message in &batch {
                if let ToJournal::Record(record, _) = message {
                    apply(&tx, record)?;
                }
            }
            tx.commit()
        })();
        let failure = written.err().map(|e| {
            tracing::error!(error = %e, records = batch.len(), "the job journal could not be written");
            EngineError::Journal(e.to_string())
        });
        for message in batch {
            match message {
                ToJournal::Flush(done) => {
                    // Asked for at shutdown: fold the write-ahead log into the database too.
                    if let Err(e) = store::checkpoint(&self.conn) {
                        tracing::warn!(error = %e, "checkpointing the job journal failed");
                    }
                    let _ = done.send(());
                }
                ToJournal::Record(record, ack) => {
                    match &failure {
                        None => {
                            self.recorded(&record);
                            if let Record::Accepted(job) = &record {
                                let job_id = job.job_id.clone();
                                engine(Acceptance::Recorded { job_id });
                            }
                        }
                        Some(err) => {
                            if let Record::Accepted(job) = &record {
                                engine(Acceptance::Failed {
                                    job_id: job.job_id.clone(),
                                    message: err.to_string(),
                                });
                            }
                        }
                    }
                    if let Some(ack) = ack {
                        ack.send(failure.clone().map_or(Ok(()), Err));
                    }
                }
            }
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

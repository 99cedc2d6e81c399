//! What the engine's single writer asks the journal to record, in the order it happened.

use tokio::sync::oneshot;

use crate::domain::{JobEnd, Priority, ProofKind, Submitted, Timings};
use crate::error::EngineError;
use crate::journal::InputDigest;

/// A change that matters for recovery.
#[derive(Debug)]
pub(crate) enum Record {
    /// A job was accepted; its input file is already in place.
    Accepted(Accepted),
    /// One partition's proof came back from the device phase (and passed the prover's check).
    PartitionProved {
        job_id: String,
        index: u32,
        proof: Vec<u8>,
    },
    /// The job ended: proof, error or cancellation. Its input file goes.
    Finished {
        job_id: String,
        end: JobEnd,
        timings: Timings,
        finished_unix_ms: u64,
    },
    /// A worker's stint of device phases ended (for the busy share after a restart).
    Stint(crate::history::Stint),
    /// A load bucket started or its peak grew (for the load series after a restart).
    Load(crate::history::LoadBucket),
}

impl Record {
    /// The job the record is of, if any.
    pub fn job_id(&self) -> Option<&str> {
        match self {
            Record::Accepted(job) => Some(&job.job_id),
            Record::PartitionProved { job_id, .. } | Record::Finished { job_id, .. } => {
                Some(job_id)
            }
            Record::Stint(_) | Record::Load(_) => None,
        }
    }
}

/// What the journal thread tells the engine: whether a job's acceptance reached the disk, and
/// whether writes fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FromJournal {
    /// On disk: the job may start.
    Recorded { job_id: String },
    /// The write failed: the job fails (its submit got the error).
    Failed { job_id: String, message: String },
    /// A write failed. A job's records but its acceptance are kept and written again, in
    /// order, until they succeed; new work is refused meanwhile.
    Unwritable { message: String },
    /// Writes succeed again: every kept record is on disk.
    Writable,
}

/// The facts of an accepted job that recovery needs besides its input.
#[derive(Debug, Clone)]
pub(crate) struct Accepted {
    pub seq: u64,
    pub job_id: String,
    pub request_id: String,
    pub kind: ProofKind,
    pub priority: Priority,
    pub digest: InputDigest,
    pub input_bytes: u64,
    pub partitions: u32,
    pub submitted_unix_ms: u64,
    /// The encoded input when it is kept in the row (see `INLINE_INPUT_BYTES`); `None` when it
    /// is a file.
    pub inline_input: Option<Vec<u8>>,
}

/// The answer to a submit, sent once its `Accepted` record is on disk.
pub(crate) struct Ack {
    pub reply: oneshot::Sender<Result<Submitted, EngineError>>,
    pub submitted: Submitted,
}

impl Ack {
    pub fn send(self, result: Result<(), EngineError>) {
        let _ = self.reply.send(result.map(|()| self.submitted));
    }
}

/// What the journal thread receives.
pub(crate) enum ToJournal {
    Record(Record, Option<Ack>),
    /// Answered once everything sent before it is on disk (and in the database file itself, the
    /// write-ahead log emptied).
    Flush(oneshot::Sender<()>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_names_its_job_for_the_lines_that_list_unwritten_records() {
        let proved = Record::PartitionProved {
            job_id: "j-1".into(),
            index: 0,
            proof: vec![],
        };
        let finished = Record::Finished {
            job_id: "j-2".into(),
            end: JobEnd::Cancelled,
            timings: Timings::default(),
            finished_unix_ms: 0,
        };
        assert_eq!(proved.job_id(), Some("j-1"));
        assert_eq!(finished.job_id(), Some("j-2"));
    }
}

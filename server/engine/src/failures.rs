//! The failure log: the last [`FAILURE_LOG_LEN`] jobs that failed and requests refused at submit,
//! newest first. The engine keeps it so that a failure stays visible (in every snapshot) after
//! its job has left the job list, and so that a request that never became a job is seen at all.

use std::collections::VecDeque;
use std::sync::Arc;

use snarkd_types::{FailureClass, ProofKind};

/// How many failures the log keeps; the oldest goes when a new one comes.
pub const FAILURE_LOG_LEN: usize = 50;

/// Where a job failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureStage {
    /// The job's parameters could not be loaded.
    Params,
    Synthesis,
    /// The device phase, after its retries.
    Device,
    /// The assembled proof did not verify.
    Finalize,
    /// The job journal could not record the job.
    Journal,
}

impl FailureStage {
    pub const ALL: [FailureStage; 5] = [
        FailureStage::Params,
        FailureStage::Synthesis,
        FailureStage::Device,
        FailureStage::Finalize,
        FailureStage::Journal,
    ];

    /// The stage of name `name` ([`FailureStage::as_str`]).
    pub fn from_name(name: &str) -> Option<FailureStage> {
        FailureStage::ALL.into_iter().find(|s| s.as_str() == name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FailureStage::Params => "params",
            FailureStage::Synthesis => "synthesis",
            FailureStage::Device => "device",
            FailureStage::Finalize => "finalize",
            FailureStage::Journal => "journal",
        }
    }
}

/// One failed job or refused request.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Failure {
    pub at_unix_ms: u64,
    /// None for a refused request whose kind could not be read.
    pub kind: Option<ProofKind>,
    /// The request's id as sent (empty when it had none: an id is optional).
    pub request_id: String,
    pub what: Failed,
    /// Whose fault it is.
    pub class: FailureClass,
    /// The whole message the client got.
    pub message: String,
}

/// What failed: a job, or a request that never became one.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Failed {
    /// A job, at `stage`.
    Job { job_id: String, stage: FailureStage },
    /// A request refused at submit, with the answer's gRPC code as the API names it (e.g.
    /// `INVALID_ARGUMENT`).
    Refused { code: String },
}

impl Failed {
    /// The stage's name, `refused` for a request refused at submit.
    pub fn stage_name(&self) -> &'static str {
        match self {
            Failed::Job { stage, .. } => stage.as_str(),
            Failed::Refused { .. } => "refused",
        }
    }

    /// The failed job's id; none for a refused request.
    pub fn job_id(&self) -> Option<&str> {
        match self {
            Failed::Job { job_id, .. } => Some(job_id),
            Failed::Refused { .. } => None,
        }
    }

    /// The refusal's gRPC code; none for a failed job.
    pub fn code(&self) -> Option<&str> {
        match self {
            Failed::Refused { code } => Some(code),
            Failed::Job { .. } => None,
        }
    }
}

/// The log itself; snapshots share its current contents without copying them.
#[derive(Debug, Default)]
pub(crate) struct FailureLog {
    entries: VecDeque<Failure>,
    newest_first: Arc<[Failure]>,
}

impl FailureLog {
    pub(crate) fn push(&mut self, failure: Failure) {
        if self.entries.len() == FAILURE_LOG_LEN {
            self.entries.pop_back();
        }
        self.entries.push_front(failure);
        self.newest_first = self.entries.iter().cloned().collect();
    }

    pub(crate) fn newest_first(&self) -> Arc<[Failure]> {
        self.newest_first.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(n: u64) -> Failure {
        Failure {
            at_unix_ms: n,
            kind: Some(ProofKind::WinningPost),
            request_id: format!("r{n}"),
            what: Failed::Refused {
                code: "INVALID_ARGUMENT".into(),
            },
            class: FailureClass::Input,
            message: "bad".into(),
        }
    }

    #[test]
    fn the_log_keeps_the_newest_first_and_drops_the_oldest_past_its_length() {
        let mut log = FailureLog::default();
        assert!(log.newest_first().is_empty());
        for n in 0..(FAILURE_LOG_LEN as u64 + 3) {
            log.push(failure(n));
        }
        let kept = log.newest_first();
        assert_eq!(kept.len(), FAILURE_LOG_LEN);
        assert_eq!(kept[0].at_unix_ms, FAILURE_LOG_LEN as u64 + 2);
        assert_eq!(kept[FAILURE_LOG_LEN - 1].at_unix_ms, 3);
    }
}

//! `[jobs]`: the job journal. With it, an accepted job survives a crash, a restart or a drain
//! that runs out of time, and a finished job's proof or error stays readable for
//! `result_retention`.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use snarkd_engine::JournalSettings;

/// `[jobs]`: where accepted jobs and their results are kept.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct JobsSection {
    /// Keep jobs in the journal; `false` keeps them in memory only (a restart forgets them).
    pub journal: bool,
    /// The journal's directory (`journal.sqlite`, `inputs/`, `quarantine/`); one daemon each.
    pub dir: PathBuf,
    /// How long a finished job's proof or error can still be read (AwaitProof, or a `Prove`
    /// retried with the same request).
    #[serde(with = "humantime_serde")]
    pub result_retention: Duration,
    /// Most finished jobs kept; beyond it the oldest are pruned first.
    pub max_results: u64,
}

impl Default for JobsSection {
    fn default() -> Self {
        JobsSection {
            journal: true,
            dir: super::paths::state_dir().join("jobs"),
            result_retention: Duration::from_secs(24 * 3600),
            max_results: 100_000,
        }
    }
}

impl JobsSection {
    /// The journal's settings, or `None` when jobs are kept in memory only.
    pub fn journal_settings(&self) -> Option<JournalSettings> {
        self.journal.then(|| JournalSettings {
            dir: self.dir.clone(),
            result_retention: self.result_retention,
            max_results: self.max_results,
        })
    }

    pub(super) fn validate(&self) -> Result<(), (String, String)> {
        if self.journal && self.dir.as_os_str().is_empty() {
            return Err((
                "jobs.dir".into(),
                "must name a directory (or set jobs.journal = false to keep jobs in memory only)"
                    .into(),
            ));
        }
        if self.max_results == 0 {
            return Err((
                "jobs.max_results".into(),
                "must be at least 1: a finished job's result must be readable at least once".into(),
            ));
        }
        Ok(())
    }
}

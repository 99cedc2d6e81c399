//! Proof kinds, priorities and states as the words and CSS classes the page shows. Each state
//! has one class (`state-<name>`); the stylesheet gives every class its colour, so a state always
//! looks the same wherever it appears (partition cell, legend, worker chip).

use snarkd_proto::v1::{JobState, PartitionState, Priority, ProofKind, WorkerState};

/// A kind by the one name every surface shows (`winning-post`: the daemon's
/// [`snarkd_types::ProofKind::name`], as in its metrics and `/status`).
pub fn kind(kind: ProofKind) -> &'static str {
    domain_kind(kind).map_or("unknown", snarkd_types::ProofKind::name)
}

/// The kinds the job list filters by, in wire order.
pub fn kinds() -> [&'static str; 4] {
    snarkd_types::ProofKind::ALL.map(snarkd_types::ProofKind::name)
}

/// The wire's kind as the daemon's one definition of it (none when unspecified).
pub fn domain_kind(kind: ProofKind) -> Option<snarkd_types::ProofKind> {
    use snarkd_types::ProofKind as Kind;
    match kind {
        ProofKind::PorepSealCommit => Some(Kind::PorepSealCommit),
        ProofKind::SnapDealsUpdate => Some(Kind::SnapDealsUpdate),
        ProofKind::WindowPostPartition => Some(Kind::WindowPost),
        ProofKind::WinningPost => Some(Kind::WinningPost),
        ProofKind::Unspecified => None,
    }
}

/// A priority in lower case; unspecified reads as `default` (the kind's usual one).
pub fn priority(priority: Priority) -> &'static str {
    match priority {
        Priority::Low => "low",
        Priority::Normal => "normal",
        Priority::High => "high",
        Priority::Critical => "critical",
        Priority::Unspecified => "default",
    }
}

/// A partition's state in the words of the original `/status` JSON.
pub fn partition_state(state: PartitionState) -> &'static str {
    match state {
        PartitionState::Pending => "pending",
        PartitionState::Synthesizing => "synthesizing",
        PartitionState::SynthDone => "synth_done",
        PartitionState::Gpu => "gpu",
        PartitionState::Done => "done",
        PartitionState::Failed => "failed",
        PartitionState::Cancelled => "cancelled",
        PartitionState::Unspecified => "unknown",
    }
}

/// Every partition state in pipeline order, for the legend.
pub const PARTITION_STATES: [PartitionState; 7] = [
    PartitionState::Pending,
    PartitionState::Synthesizing,
    PartitionState::SynthDone,
    PartitionState::Gpu,
    PartitionState::Done,
    PartitionState::Failed,
    PartitionState::Cancelled,
];

/// A job's state.
pub fn job_state(state: JobState) -> &'static str {
    match state {
        JobState::Queued => "queued",
        JobState::Running => "running",
        JobState::Completed => "completed",
        JobState::Failed => "failed",
        JobState::Cancelled => "cancelled",
        JobState::Unspecified => "unknown",
    }
}

/// A worker's state.
pub fn worker_state(state: WorkerState) -> &'static str {
    match state {
        WorkerState::Idle => "idle",
        WorkerState::Proving => "proving",
        WorkerState::Unspecified => "unknown",
    }
}

/// The CSS class that colours a state word from the functions above.
pub fn state_class(state: &str) -> String {
    format!("state-{state}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_states_use_the_original_status_words_and_distinct_classes() {
        let words: Vec<&str> = PARTITION_STATES
            .iter()
            .map(|s| partition_state(*s))
            .collect();
        assert_eq!(
            words,
            [
                "pending",
                "synthesizing",
                "synth_done",
                "gpu",
                "done",
                "failed",
                "cancelled"
            ]
        );
        let mut classes: Vec<String> = words.iter().map(|w| state_class(w)).collect();
        classes.sort();
        classes.dedup();
        assert_eq!(
            classes.len(),
            PARTITION_STATES.len(),
            "one colour per state"
        );
        assert_eq!(state_class("gpu"), "state-gpu");
    }

    #[test]
    fn kinds_priorities_and_states_have_names() {
        assert_eq!(kind(ProofKind::WindowPostPartition), "window-post");
        assert_eq!(kind(ProofKind::PorepSealCommit), "porep-c2");
        assert_eq!(kind(ProofKind::Unspecified), "unknown");
        assert_eq!(
            kinds(),
            ["porep-c2", "snap-update", "window-post", "winning-post"]
        );
        assert_eq!(priority(Priority::Critical), "critical");
        assert_eq!(priority(Priority::Unspecified), "default");
        assert_eq!(job_state(JobState::Completed), "completed");
        assert_eq!(worker_state(WorkerState::Proving), "proving");
        assert_eq!(worker_state(WorkerState::Idle), "idle");
    }
}

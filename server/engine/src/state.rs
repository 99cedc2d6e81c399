//! The partition, job and worker state machines. [`next_partition_state`] and
//! [`next_job_state`] are the tables of legal edges; `Machine::transition` and
//! `Machine::job_event` (in `machine/transition.rs`) are the one place that applies them.

use crate::status::JobState;

/// Where a partition is in the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PartitionState {
    Pending,
    Synthesizing,
    SynthDone,
    Gpu,
    Done,
    Failed,
    Cancelled,
}

impl PartitionState {
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            PartitionState::Done | PartitionState::Failed | PartitionState::Cancelled
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            PartitionState::Pending => "pending",
            PartitionState::Synthesizing => "synthesizing",
            PartitionState::SynthDone => "synth_done",
            PartitionState::Gpu => "gpu",
            PartitionState::Done => "done",
            PartitionState::Failed => "failed",
            PartitionState::Cancelled => "cancelled",
        }
    }
}

/// What happens to a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionEvent {
    /// Memory reserved, synthesis started.
    Admit,
    /// Synthesis finished.
    Synthesized,
    /// Handed to a device worker.
    Dispatch,
    /// The device phase returned a partition proof.
    Proved,
    /// The device phase failed; the partition goes back to be synthesized again.
    Retry,
    /// A step failed.
    Fail,
    /// The job was cancelled or failed elsewhere.
    Cancel,
}

/// The partition edge table: the next state, or `None` when the event is illegal in `from`.
pub fn next_partition_state(from: PartitionState, event: PartitionEvent) -> Option<PartitionState> {
    use PartitionEvent as E;
    use PartitionState as S;
    match (from, event) {
        (S::Pending, E::Admit) => Some(S::Synthesizing),
        (S::Synthesizing, E::Synthesized) => Some(S::SynthDone),
        (S::SynthDone, E::Dispatch) => Some(S::Gpu),
        (S::Gpu, E::Proved) => Some(S::Done),
        (S::Gpu, E::Retry) => Some(S::Pending),
        (S::Synthesizing | S::SynthDone | S::Gpu, E::Fail) => Some(S::Failed),
        (S::Pending | S::Synthesizing | S::SynthDone | S::Gpu, E::Cancel) => Some(S::Cancelled),
        _ => None,
    }
}

/// What happens to a whole job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobEvent {
    /// Its first partition was admitted.
    Start,
    /// Its final proof verified.
    Complete,
    Fail,
    Cancel,
}

/// The job edge table: the next state, or `None` when the event is illegal in `from`.
pub fn next_job_state(from: JobState, event: JobEvent) -> Option<JobState> {
    use JobEvent as E;
    use JobState as S;
    match (from, event) {
        (S::Queued, E::Start) => Some(S::Running),
        (S::Running, E::Complete) => Some(S::Completed),
        (S::Queued | S::Running, E::Fail) => Some(S::Failed),
        (S::Queued | S::Running, E::Cancel) => Some(S::Cancelled),
        _ => None,
    }
}

/// What a device worker is doing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum WorkerState {
    Idle,
    Proving { job_id: String, partition: u32 },
}

#[cfg(test)]
mod tests {
    use super::*;
    use PartitionEvent as E;
    use PartitionState as S;

    const STATES: [S; 7] = [
        S::Pending,
        S::Synthesizing,
        S::SynthDone,
        S::Gpu,
        S::Done,
        S::Failed,
        S::Cancelled,
    ];
    const EVENTS: [E; 7] = [
        E::Admit,
        E::Synthesized,
        E::Dispatch,
        E::Proved,
        E::Retry,
        E::Fail,
        E::Cancel,
    ];

    #[test]
    fn every_edge_of_the_table() {
        let legal = [
            (S::Pending, E::Admit, S::Synthesizing),
            (S::Synthesizing, E::Synthesized, S::SynthDone),
            (S::SynthDone, E::Dispatch, S::Gpu),
            (S::Gpu, E::Proved, S::Done),
            (S::Gpu, E::Retry, S::Pending),
            (S::Synthesizing, E::Fail, S::Failed),
            (S::SynthDone, E::Fail, S::Failed),
            (S::Gpu, E::Fail, S::Failed),
            (S::Pending, E::Cancel, S::Cancelled),
            (S::Synthesizing, E::Cancel, S::Cancelled),
            (S::SynthDone, E::Cancel, S::Cancelled),
            (S::Gpu, E::Cancel, S::Cancelled),
        ];
        for from in STATES {
            for event in EVENTS {
                let expected = legal
                    .iter()
                    .find(|(f, e, _)| *f == from && *e == event)
                    .map(|l| l.2);
                assert_eq!(
                    next_partition_state(from, event),
                    expected,
                    "{from:?} --{event:?}-->"
                );
            }
        }
    }

    #[test]
    fn job_edges() {
        use JobEvent as JE;
        use JobState as JS;
        let states = [
            JS::Queued,
            JS::Running,
            JS::Completed,
            JS::Failed,
            JS::Cancelled,
        ];
        let events = [JE::Start, JE::Complete, JE::Fail, JE::Cancel];
        let legal = [
            (JS::Queued, JE::Start, JS::Running),
            (JS::Running, JE::Complete, JS::Completed),
            (JS::Queued, JE::Fail, JS::Failed),
            (JS::Running, JE::Fail, JS::Failed),
            (JS::Queued, JE::Cancel, JS::Cancelled),
            (JS::Running, JE::Cancel, JS::Cancelled),
        ];
        for from in states {
            for event in events {
                let expected = legal
                    .iter()
                    .find(|(f, e, _)| *f == from && *e == event)
                    .map(|l| l.2);
                assert_eq!(
                    next_job_state(from, event),
                    expected,
                    "{from:?} --{event:?}-->"
                );
            }
        }
    }

    #[test]
    fn terminal_states_accept_nothing() {
        for from in STATES.into_iter().filter(|s| s.is_terminal()) {
            assert!(EVENTS
                .iter()
                .all(|e| next_partition_state(from, *e).is_none()));
        }
    }
}

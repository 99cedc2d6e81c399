//! The partition, job and worker state machines. [`next_partition_state`], [`next_job_step`]
//! and [`next_worker_step`] are the tables of legal edges; `Machine::transition` and
//! `Machine::job_event` (in `machine/transition.rs`, a worker's steps through its `step_worker`)
//! are the one place that applies them, and each record's data lives in the variant of the step it belongs
//! to (`machine/records.rs`).

/// Lifecycle of a whole job, as the status shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    Queued,
    Running,
    Completed,
    Failed,
    Cancelled,
}

impl JobState {
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            JobState::Completed | JobState::Failed | JobState::Cancelled
        )
    }
}

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
    pub const ALL: [PartitionState; 7] = [
        PartitionState::Pending,
        PartitionState::Synthesizing,
        PartitionState::SynthDone,
        PartitionState::Gpu,
        PartitionState::Done,
        PartitionState::Failed,
        PartitionState::Cancelled,
    ];

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

impl PartitionEvent {
    pub const ALL: [PartitionEvent; 7] = [
        PartitionEvent::Admit,
        PartitionEvent::Synthesized,
        PartitionEvent::Dispatch,
        PartitionEvent::Proved,
        PartitionEvent::Retry,
        PartitionEvent::Fail,
        PartitionEvent::Cancel,
    ];
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

/// Where a job is, as its edge table knows it; the machine's job record carries what each step
/// holds (`machine/records.rs`, `JobPhase`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobStep {
    /// Accepted; no work starts until the journal has it on disk (at once without a journal).
    Unrecorded,
    Queued,
    /// At least one partition was admitted.
    Running,
    /// Every partition is proved: the proof is being assembled and verified.
    Finalizing,
    Completed,
    Failed,
    Cancelled,
}

impl JobStep {
    /// The state the status shows: a job not on disk yet is queued, one finalizing is running.
    pub fn state(self) -> JobState {
        match self {
            JobStep::Unrecorded | JobStep::Queued => JobState::Queued,
            JobStep::Running | JobStep::Finalizing => JobState::Running,
            JobStep::Completed => JobState::Completed,
            JobStep::Failed => JobState::Failed,
            JobStep::Cancelled => JobState::Cancelled,
        }
    }

    pub fn is_ended(self) -> bool {
        self.state().is_finished()
    }
}

/// What happens to a whole job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobEvent {
    /// The journal has its acceptance on disk.
    Recorded,
    /// Its first partition was admitted.
    Start,
    /// Its last partition was proved.
    Finalize,
    /// Its final proof verified.
    Complete,
    Fail,
    Cancel,
}

/// The job edge table: the next step, or `None` when the event is illegal in `from`.
pub fn next_job_step(from: JobStep, event: JobEvent) -> Option<JobStep> {
    use JobEvent as E;
    use JobStep as S;
    let live = !from.is_ended();
    match (from, event) {
        (S::Unrecorded, E::Recorded) => Some(S::Queued),
        (S::Queued, E::Start) => Some(S::Running),
        (S::Running, E::Finalize) => Some(S::Finalizing),
        (S::Finalizing, E::Complete) => Some(S::Completed),
        (_, E::Fail) if live => Some(S::Failed),
        (_, E::Cancel) if live => Some(S::Cancelled),
        _ => None,
    }
}

/// What a device worker is doing, as its edge table knows it; the machine's worker record
/// carries which partitions (`machine/records.rs`, `Duty`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WorkerStep {
    Idle,
    /// Running one device phase.
    Proving,
    /// Running a deadline partition's device phase while the phase it preempted waits at its
    /// next step boundary.
    ProvingOverPaused,
}

/// What happens to a device worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerEvent {
    /// A partition is handed to an idle worker.
    Dispatch,
    /// A deadline partition is handed to a worker proving one without a deadline.
    Preempt,
    /// The phase the worker runs now returned (a paused one, if any, goes on).
    Returned,
    /// The paused phase returned (it ended before reaching its step boundary).
    PausedReturned,
}

/// The worker edge table. A result for a partition the worker neither runs nor has paused is
/// no event at all: the worker stays as it is (`Duty::event_for`).
pub fn next_worker_step(from: WorkerStep, event: WorkerEvent) -> Option<WorkerStep> {
    use WorkerEvent as E;
    use WorkerStep as S;
    match (from, event) {
        (S::Idle, E::Dispatch) => Some(S::Proving),
        (S::Proving, E::Preempt) => Some(S::ProvingOverPaused),
        (S::Proving, E::Returned) => Some(S::Idle),
        (S::ProvingOverPaused, E::Returned | E::PausedReturned) => Some(S::Proving),
        _ => None,
    }
}

/// What a device worker is doing, as the status shows it.
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
        for from in S::ALL {
            for event in E::ALL {
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

    /// Every (step, event) pair against the list of legal edges.
    fn check_table<S: Copy + std::fmt::Debug + PartialEq, E: Copy + std::fmt::Debug>(
        states: &[S],
        events: &[E],
        legal: &[(S, E, S)],
        next: fn(S, E) -> Option<S>,
        same_event: fn(&E, &E) -> bool,
    ) {
        for &from in states {
            for &event in events {
                let expected = legal
                    .iter()
                    .find(|(f, e, _)| *f == from && same_event(e, &event))
                    .map(|l| l.2);
                assert_eq!(next(from, event), expected, "{from:?} --{event:?}-->");
            }
        }
    }

    #[test]
    fn every_job_edge() {
        use JobEvent as JE;
        use JobStep as JS;
        let states = [
            JS::Unrecorded,
            JS::Queued,
            JS::Running,
            JS::Finalizing,
            JS::Completed,
            JS::Failed,
            JS::Cancelled,
        ];
        let events = [
            JE::Recorded,
            JE::Start,
            JE::Finalize,
            JE::Complete,
            JE::Fail,
            JE::Cancel,
        ];
        let mut legal = vec![
            (JS::Unrecorded, JE::Recorded, JS::Queued),
            (JS::Queued, JE::Start, JS::Running),
            (JS::Running, JE::Finalize, JS::Finalizing),
            (JS::Finalizing, JE::Complete, JS::Completed),
        ];
        for live in [JS::Unrecorded, JS::Queued, JS::Running, JS::Finalizing] {
            legal.push((live, JE::Fail, JS::Failed));
            legal.push((live, JE::Cancel, JS::Cancelled));
        }
        check_table(&states, &events, &legal, next_job_step, |a, b| a == b);
        // Only the three ends are ended, and the status shows each step as one state.
        let ended: Vec<_> = states.iter().filter(|s| s.is_ended()).collect();
        assert_eq!(ended, [&JS::Completed, &JS::Failed, &JS::Cancelled]);
        assert_eq!(JS::Unrecorded.state(), JobState::Queued);
        assert_eq!(JS::Finalizing.state(), JobState::Running);
    }

    #[test]
    fn every_worker_edge() {
        use WorkerEvent as WE;
        use WorkerStep as WS;
        let states = [WS::Idle, WS::Proving, WS::ProvingOverPaused];
        let events = [WE::Dispatch, WE::Preempt, WE::Returned, WE::PausedReturned];
        let legal = [
            (WS::Idle, WE::Dispatch, WS::Proving),
            (WS::Proving, WE::Preempt, WS::ProvingOverPaused),
            (WS::Proving, WE::Returned, WS::Idle),
            (WS::ProvingOverPaused, WE::Returned, WS::Proving),
            (WS::ProvingOverPaused, WE::PausedReturned, WS::Proving),
        ];
        check_table(&states, &events, &legal, next_worker_step, |a, b| a == b);
    }

    #[test]
    fn terminal_states_accept_nothing() {
        for from in S::ALL.into_iter().filter(|s| s.is_terminal()) {
            assert!(E::ALL
                .iter()
                .all(|e| next_partition_state(from, *e).is_none()));
        }
    }
}

//! Builds the read-only [`StatusSnapshot`] from the machine's records.

use super::Machine;
use super::{Effect, ParamsSlot, Tally};
use crate::budget::Holder;
use crate::domain::Priority;
use crate::domain::ProofKind;
use crate::history::Load;
use crate::journal::record::Record;
use crate::lifecycle::PartitionState;
use crate::prover::Prover;
use crate::schedule::synthesis_allowed_now;
use crate::status::*;

impl<P: Prover> Machine<P> {
    /// Notes the current load in the history's series (the history changes, and a snapshot with
    /// it, only when the load does: see [`crate::history::History::note_load`]). A changed
    /// bucket comes back as the record that keeps it in the journal.
    pub(crate) fn note_load(&mut self, now_ms: u64) -> Option<Effect<P>> {
        let load = self.load();
        if !self.history.load_changes(now_ms, load) {
            return None;
        }
        self.changed();
        let bucket = std::sync::Arc::make_mut(&mut self.history).note_load(now_ms, load)?;
        Some(Effect::Record(Record::Load(bucket), None))
    }

    /// Memory in use and where the partitions of unfinished jobs are, now.
    pub(crate) fn load(&self) -> Load {
        let count = |state| self.stages.count(state) as u32;
        Load {
            memory_used_bytes: self.budget.used(),
            waiting_for_admission: count(PartitionState::Pending),
            synthesizing: count(PartitionState::Synthesizing),
            waiting_for_worker: count(PartitionState::SynthDone),
            on_worker: count(PartitionState::Gpu),
        }
    }

    /// The state as of now. Nothing in it moves with the clock alone (times are instants, not
    /// ages), so two snapshots of the same state are equal.
    pub(crate) fn snapshot(&self) -> StatusSnapshot {
        let waiting_for_device = self.stages.count(PartitionState::SynthDone);
        let queue_depth = (self.stages.count(PartitionState::Pending) + waiting_for_device) as u32;
        StatusSnapshot {
            daemon: DaemonInfo {
                version: self.config.version.clone(),
                build_id: self.config.build_id.clone(),
                backend: self.backend.clone(),
                gpu_fallback: self.gpu_fallback,
                started_at_unix_ms: self.started_unix_ms,
                draining: self.draining,
                journal_unwritable: self.journal_unwritable.clone(),
                recovering_jobs: self.recovering_count() as u32,
            },
            memory: self.memory_status(),
            synthesis: self.synthesis_status(),
            jobs: self.job_statuses(),
            workers: self.worker_statuses(),
            params: self.params_statuses(),
            counters: Counters {
                total_completed: Tally::total(&self.counters.completed),
                total_failed: Tally::total(&self.counters.failed),
                total_cancelled: self.counters.cancelled,
                completed_by_kind: self.counters.completed.clone(),
                failed_by_kind: self.counters.failed.clone(),
                queue_depth,
            },
            queues: self.queue_statuses(),
            failures: self.failures.newest_first(),
            history: self.history.clone(),
            devices: self.devices.clone(),
            sequence: self.sequence,
        }
    }

    /// Every job with its partitions, the recovered ones still being planned among them: the
    /// views of the jobs that changed are built again, the others shared with the last snapshot.
    fn job_statuses(&self) -> crate::status::JobViews {
        let mut views = self.jobs.views();
        for (seq, status) in self.recovering_statuses() {
            views.insert(seq, std::sync::Arc::new(status));
        }
        views
    }

    fn worker_statuses(&self) -> Vec<WorkerStatus> {
        self.workers
            .iter()
            .map(|w| WorkerStatus {
                worker_id: w.id,
                device_ordinal: w.device.ordinal,
                device_name: w.device.name.clone(),
                device_memory_bytes: w.device.memory_bytes,
                state: w.duty.state(),
                paused: w.duty.paused().map(|task| PausedPartition {
                    job_id: task.job_id.clone(),
                    partition: task.partition,
                }),
                busy_secs_done: w.busy.as_secs_f64(),
                busy_since_unix_ms: w.duty.stint().map(|m| m.unix_ms),
                proofs_done: w.proofs_done,
            })
            .collect()
    }

    /// Each circuit's parameters in memory or loading, by circuit id.
    fn params_statuses(&self) -> Vec<ParamsStatus> {
        let mut params: Vec<ParamsStatus> = self
            .params
            .iter()
            .map(|(id, e)| (id, e, self.params_users(id)))
            .map(|(id, e, users)| ParamsStatus {
                circuit_id: id.clone(),
                tier: match (&e.slot, users) {
                    (ParamsSlot::Loading { .. }, _) => ParamsTier::Cold,
                    (ParamsSlot::Ready { .. }, 0) => ParamsTier::Warm,
                    (ParamsSlot::Ready { .. }, _) => ParamsTier::Hot,
                },
                bytes: e.bytes(),
                precompiled_bytes: match e.slot {
                    ParamsSlot::Ready {
                        precompiled_bytes, ..
                    } => precompiled_bytes,
                    ParamsSlot::Loading { .. } => 0,
                },
                ref_count: users,
                last_used_unix_ms: e.last_used.unix_ms,
            })
            .collect();
        params.sort_by(|a, b| a.circuit_id.cmp(&b.circuit_id));
        params
    }

    /// Jobs queued and running of each kind.
    fn queue_statuses(&self) -> Vec<QueueStatus> {
        ProofKind::ALL
            .iter()
            .map(|&kind| QueueStatus {
                kind,
                pending: (self.jobs.count(kind, JobState::Queued) + self.recovering_of(kind))
                    as u32,
                in_progress: self.jobs.count(kind, JobState::Running) as u32,
            })
            .collect()
    }

    fn memory_status(&self) -> MemoryStatus {
        MemoryStatus {
            total_bytes: self.budget.total(),
            used_bytes: self.budget.used(),
            params_bytes: self.budget.held_by(Holder::Params),
            baseline_bytes: self.budget.held_by(Holder::Baseline),
            input_bytes: self.budget.held_by(Holder::Inputs),
            spare_bytes: self.budget.held_by(Holder::Spare),
            reserved_by_kind: ProofKind::ALL
                .iter()
                .map(|&k| (k, self.budget.held_by(Holder::Partition(k))))
                .filter(|(_, b)| *b > 0)
                .collect(),
        }
    }

    /// Syntheses running, and how many the next pending partition would find room for now.
    fn synthesis_status(&self) -> SynthesisStatus {
        let (next_priority, next_partition_bytes) = self
            .stages
            .of(PartitionState::Pending)
            .next()
            .map_or((Priority::Normal, 0), |(_, seq, _)| {
                let j = &self.jobs[seq];
                (j.origin.priority, j.memory.total_bytes)
            });
        SynthesisStatus {
            active: self.synth_active as u32,
            max_allowed_now: synthesis_allowed_now(
                next_priority,
                self.synth_active,
                self.synthesis_room(),
                self.budget.free_or_kept(),
                next_partition_bytes,
            ) as u32,
            max_configured: self.config.synthesis_threads as u32,
        }
    }
}

//! Scheduling passes run after every input: admission of pending partitions under the memory
//! budget (loading params first, evicting idle ones when room is needed), dispatch of synthesized
//! partitions to idle workers, and finalization of fully proved jobs.

use super::records::ParamsSlot;
use super::transition::Change;
use super::Machine;
use super::{DeviceTask, Effect, Stage, StopSignal};
use crate::budget::{Holder, Reservation};
use crate::domain::Priority;
use crate::lifecycle::{JobStep, PartitionState, WorkerStep};
use crate::prover::Prover;
use crate::schedule::{lookahead_allows, may_start_synthesis, OrderKey, SynthesisRoom};

impl<P: Prover> Machine<P> {
    pub(super) fn schedule(&mut self) {
        self.finalize_ready_jobs();
        // Kept buffers a synthesis took again are its reservation's now: counted once.
        if self.budget.settle_spare() > 0 {
            self.changed();
        }
        self.admit();
        self.dispatch();
    }

    /// Partitions in `state` of unfinished jobs, in scheduling order.
    pub(super) fn partitions_in(&self, state: PartitionState) -> Vec<(OrderKey, u64, u32)> {
        self.stages.of(state).copied().collect()
    }

    /// Admits pending partitions in scheduling order while synthesis threads, memory and the
    /// synthesis lookahead allow. A deadline partition ignores the lookahead and may use threads
    /// beyond the configured count, HIGH (WindowPoSt) one, CRITICAL (WinningPoSt) two: neither
    /// waits for a long PoRep synthesis to finish, and a WinningPoSt never waits for a WindowPoSt.
    fn admit(&mut self) {
        let room = self.synthesis_room();
        // One partition at a time, in order: most inputs admit none or few of many pending.
        let mut after = None;
        // Each circuit's wait-for-parameters answer, reckoned once per pass (it counts the
        // circuit's pending partitions, which would otherwise be counted for each of them).
        let mut waits: Vec<(String, bool)> = Vec::new();
        while let Some(entry) = self.stages.next_after(PartitionState::Pending, after) {
            after = Some(entry);
            let (_, seq, index) = entry;
            if self.jobs[&seq].phase.step() == JobStep::Unrecorded {
                continue; // not on disk yet: a crash could still lose it
            }
            let priority = self.jobs[&seq].origin.priority;
            if !may_start_synthesis(priority, self.synth_active, room) {
                return;
            }
            if self.waits_for_params(seq, &mut waits) {
                continue;
            }
            let admitted = self.try_admit(seq, index);
            // Wait for room in priority order, unless nothing runs that could ever free it.
            if !admitted && !self.nothing_in_flight() {
                return;
            }
        }
    }

    /// The threads and lookahead room admission works within now.
    pub(super) fn synthesis_room(&self) -> SynthesisRoom {
        SynthesisRoom {
            threads: self.config.synthesis_threads.max(1),
            lookahead: lookahead_allows(
                self.lookahead(),
                self.stages.count(PartitionState::SynthDone),
            ),
        }
    }

    /// Whether a pending partition of job `seq` waits for its circuit's parameters instead of
    /// being synthesized now without them: never a deadline partition (HIGH and above); others
    /// while the load's expected rest costs less than the extra work every waiting partition of
    /// the circuit would do without it ([`crate::prover::FastPath::worth_waiting`]). A load not begun yet is
    /// begun here, without the partition, when its params fit. `pass` holds the answers this
    /// admission pass has reckoned, by circuit.
    fn waits_for_params(&mut self, seq: u64, pass: &mut Vec<(String, bool)>) -> bool {
        let j = &self.jobs[&seq];
        let Some(fast_path) = j.fast_path else {
            return false;
        };
        if j.origin.priority >= Priority::High {
            return false;
        }
        if let Some((_, waits)) = pass.iter().find(|(c, _)| *c == j.circuit_id) {
            return *waits;
        }
        let circuit_id = j.circuit_id.clone();
        let waits = self.circuit_waits(&circuit_id, fast_path);
        pass.push((circuit_id, waits));
        waits
    }

    /// [`Machine::waits_for_params`] for a circuit, reckoned: its pending partitions below HIGH
    /// counted, its load begun when it is worth waiting for and none has begun.
    fn circuit_waits(&mut self, circuit_id: &str, fast_path: crate::prover::FastPath) -> bool {
        let loading_for = match self.params.get(circuit_id).map(|e| &e.slot) {
            Some(ParamsSlot::Ready { .. }) => return false,
            Some(ParamsSlot::Loading { since, .. }) => {
                Some(crate::clock::now().saturating_duration_since(*since))
            }
            None => None,
        };
        let waiting = self.jobs.pending_low(circuit_id);
        if !fast_path.worth_waiting(loading_for.unwrap_or_default(), waiting) {
            return false;
        }
        if loading_for.is_none() {
            let needed = self.params_bytes(circuit_id);
            let room = self.room(circuit_id);
            if room < needed || self.start_params_load(circuit_id).is_err() {
                return false;
            }
        }
        true
    }

    /// Admits the partition if its reservation fits, together with its job's params when they
    /// are not loaded: both or neither, so params are only ever pinned by work that runs. Idle
    /// params of other circuits are evicted (least recently used first) to make room.
    fn try_admit(&mut self, seq: u64, index: u32) -> bool {
        let (kind, bytes, circuit_id) = {
            let j = &self.jobs[&seq];
            (j.origin.kind, j.memory.total_bytes, j.circuit_id.clone())
        };
        let params_needed = if self.params.contains_key(&circuit_id) {
            0
        } else {
            self.params_bytes(&circuit_id)
        };
        let room = self.room(&circuit_id);
        if room < params_needed + bytes {
            return false;
        }
        if params_needed > 0 && self.start_params_load(&circuit_id).is_err() {
            return false;
        }
        let Some(reservation) = self.reserve_evicting(Holder::Partition(kind), bytes, &circuit_id)
        else {
            return false;
        };
        let reserved = reservation.meter();
        if self
            .transition(seq, index, Change::Admit { reserved })
            .is_none()
        {
            return false;
        }
        let j = &self.jobs[&seq];
        let params = self
            .params
            .get(&circuit_id)
            .and_then(|e| e.ready().cloned());
        self.synth_active += 1;
        self.effects.push(Effect::Synthesize {
            job: seq,
            index,
            priority: j.origin.priority,
            plan: j.plan.clone(),
            params,
            reservation,
        });
        true
    }

    /// Unfinished jobs that need `circuit_id`'s params loaded now ([`Job::uses_params`]).
    pub(super) fn params_users(&self, circuit_id: &str) -> u32 {
        self.jobs.params_users(circuit_id)
    }

    /// Loaded params no job uses, other than `keep`'s, least recently used first.
    fn idle_params(&self, keep: &str) -> Vec<(String, u64)> {
        let mut idle: Vec<_> = self
            .params
            .iter()
            .filter(|(id, e)| id.as_str() != keep && e.ready().is_some())
            .filter(|(id, _)| self.params_users(id) == 0)
            .map(|(id, e)| (e.last_used, id.clone(), e.bytes()))
            .collect();
        idle.sort();
        idle.into_iter().map(|(_, id, bytes)| (id, bytes)).collect()
    }

    fn evictable_bytes(&self, keep: &str) -> u64 {
        self.idle_params(keep).iter().map(|(_, bytes)| bytes).sum()
    }

    /// Bytes a reservation could have now: free, kept buffers, and idle params other than
    /// `keep`'s.
    fn room(&self, keep: &str) -> u64 {
        self.budget.free_or_kept() + self.evictable_bytes(keep)
    }

    /// Reserves `bytes`, freeing kept buffers ([`crate::prover::SpareMemory`]) and then evicting
    /// idle params other than `keep` (least recently used first) while that helps.
    pub(super) fn reserve_evicting(
        &mut self,
        holder: Holder,
        bytes: u64,
        keep: &str,
    ) -> Option<Reservation> {
        loop {
            if let Some(reservation) = self.budget.try_reserve(holder, bytes) {
                return Some(reservation);
            }
            // Kept buffers go first: they cost nothing to give up but their reuse.
            let short = bytes.saturating_sub(self.budget.available());
            if self.budget.release_spare(short) > 0 {
                self.changed();
                continue;
            }
            let (victim, _) = self.idle_params(keep).into_iter().next()?;
            let entry = self.params.remove(&victim).expect("just found");
            tracing::info!(circuit_id = %victim, bytes = entry.bytes(), "evicting idle params to make room");
            self.changed();
        }
    }

    /// A busy worker whose running device phase has no deadline (below HIGH) and pauses
    /// nothing yet, not already `taken` in this pass.
    fn preemptible_worker(&self, taken: &[(u32, u64, u32, bool)]) -> Option<u32> {
        self.workers
            .iter()
            .filter(|w| w.duty.step() == WorkerStep::Proving && !taken.iter().any(|t| t.0 == w.id))
            .find(|w| {
                w.duty
                    .running()
                    .and_then(|task| self.jobs.get(&task.job))
                    .is_some_and(|j| j.origin.priority < Priority::High)
            })
            .map(|w| w.id)
    }

    /// True when no step runs, or is about to, that could return memory later. A synthesized
    /// partition counts: admission runs before dispatch, so one that a worker takes in this very
    /// pass is still waiting here.
    fn nothing_in_flight(&self) -> bool {
        self.synth_active == 0
            && self.stages.count(PartitionState::SynthDone) == 0
            && self
                .workers
                .iter()
                .all(|w| w.duty.step() == WorkerStep::Idle)
            && !self.jobs.any_finalizing()
            && self.params.values().all(|e| e.ready().is_some())
    }

    fn dispatch(&mut self) {
        let ready = self.partitions_in(PartitionState::SynthDone);
        let mut ready = ready.into_iter().filter(|(_, seq, _)| {
            let circuit_id = &self.jobs[seq].circuit_id;
            self.params
                .get(circuit_id)
                .is_some_and(|e| e.ready().is_some())
        });
        let idle: Vec<u32> = (0..self.workers.len() as u32)
            .filter(|w| self.worker_is_idle(*w))
            .collect();
        let mut chosen = Vec::new();
        for worker in idle {
            let Some((_, seq, index)) = ready.next() else {
                break;
            };
            chosen.push((worker, seq, index, false));
        }
        // Deadline partitions (HIGH and CRITICAL, first in the order) that found no idle worker
        // preempt one running work without a deadline: they start at once, it pauses at its next step boundary.
        for (_, seq, index) in ready {
            if !self.config.preempt || self.jobs[&seq].origin.priority < Priority::High {
                break;
            }
            let Some(worker) = self.preemptible_worker(&chosen) else {
                break;
            };
            chosen.push((worker, seq, index, true));
        }
        for (worker, seq, index, preempt) in chosen {
            // The edge table lets a dispatch leave only `SynthDone`, which holds both.
            let Some(Stage::SynthDone {
                synthesized,
                reservation,
                ..
            }) = self.transition(seq, index, Change::Dispatch { worker, preempt })
            else {
                continue;
            };
            if preempt {
                let j = &self.jobs[&seq];
                tracing::info!(job_id = %j.id, request_id = %j.origin.logged_request_id(),
                    partition = index, worker, "deadline partition preempts the device phase running on its worker");
                metrics::counter!("snarkd_preemptions_total", "kind" => j.origin.kind.name())
                    .increment(1);
            }
            let j = &self.jobs[&seq];
            let params = self.params[&j.circuit_id]
                .ready()
                .expect("filtered on ready")
                .clone();
            let stop = StopSignal::default();
            self.device_phases.insert((seq, index), stop.clone());
            self.effects.push(Effect::Prove {
                worker,
                task: DeviceTask {
                    job: seq,
                    index,
                    priority: j.origin.priority,
                    abc_bytes: j.memory.abc_bytes,
                    partition: synthesized,
                    params,
                    reservation,
                    stop,
                },
            });
        }
    }
}

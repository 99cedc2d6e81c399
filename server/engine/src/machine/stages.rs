//! The partitions of unfinished jobs by stage, in scheduling order: what admission, dispatch,
//! the load series and the snapshot read after every input. The transition function keeps it as
//! partitions move, so nothing is sorted from every job per input.

use std::collections::BTreeSet;

use crate::lifecycle::PartitionState;
use crate::schedule::OrderKey;

/// A partition in scheduling order: its key, its job's sequence number, its index.
pub(crate) type Staged = (OrderKey, u64, u32);

/// The live stages, each a set in scheduling order; terminal partitions are in none.
#[derive(Default)]
pub(crate) struct Stages {
    sets: [BTreeSet<Staged>; 4],
}

impl Stages {
    fn slot(state: PartitionState) -> Option<usize> {
        match state {
            PartitionState::Pending => Some(0),
            PartitionState::Synthesizing => Some(1),
            PartitionState::SynthDone => Some(2),
            PartitionState::Gpu => Some(3),
            PartitionState::Done | PartitionState::Failed | PartitionState::Cancelled => None,
        }
    }

    /// Partition `entry` went from `from` (`None`: it is new) to `to`.
    pub fn moved(&mut self, entry: Staged, from: Option<PartitionState>, to: PartitionState) {
        if let Some(slot) = from.and_then(Stages::slot) {
            self.sets[slot].remove(&entry);
        }
        if let Some(slot) = Stages::slot(to) {
            self.sets[slot].insert(entry);
        }
    }

    /// The partitions in `state`, in scheduling order (none for a terminal state).
    pub fn of(&self, state: PartitionState) -> impl Iterator<Item = &Staged> {
        Stages::slot(state)
            .map(|slot| self.sets[slot].iter())
            .into_iter()
            .flatten()
    }

    /// The first partition in `state` after `after` (from the start for `None`), in order.
    pub fn next_after(&self, state: PartitionState, after: Option<Staged>) -> Option<Staged> {
        use std::ops::Bound::{Excluded, Unbounded};
        let set = &self.sets[Stages::slot(state)?];
        let from = after.map_or(Unbounded, Excluded);
        set.range((from, Unbounded)).next().copied()
    }

    pub fn count(&self, state: PartitionState) -> usize {
        Stages::slot(state).map_or(0, |slot| self.sets[slot].len())
    }
}

//! Scheduling order, as pure functions: CRITICAL before HIGH before NORMAL before LOW; within a
//! priority the oldest job first, then the lowest partition index. The same order is used for
//! admission (who synthesizes next) and for the ready queue (who gets the next idle worker).

use std::cmp::Reverse;

use crate::domain::Priority;

/// Sort key of one partition: smaller runs first.
pub type OrderKey = (Reverse<Priority>, u64, u32);

/// The key of partition `index` of the job submitted as number `job_seq` with `priority`.
pub fn order_key(priority: Priority, job_seq: u64, index: u32) -> OrderKey {
    (Reverse(priority), job_seq, index)
}

/// What bounds how many partitions synthesize at once, besides memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SynthesisRoom {
    /// `[synthesis] threads`.
    pub threads: usize,
    /// How many partitions below HIGH may synthesize under the lookahead now
    /// ([`lookahead_allows`]).
    pub lookahead: usize,
}

/// Synthesis threads a partition of `priority` may use: the configured ones, and beyond them
/// one more for HIGH (WindowPoSt) and two for CRITICAL (WinningPoSt), so that neither waits for
/// a long PoRep synthesis and a WinningPoSt never waits for a WindowPoSt.
pub fn synthesis_threads_for(priority: Priority, threads: usize) -> usize {
    let extra = match priority {
        Priority::Critical => 2,
        Priority::High => 1,
        Priority::Normal | Priority::Low => 0,
    };
    threads.max(1) + extra
}

/// The admission rule, memory aside: may a partition of `priority` start synthesis while
/// `active` syntheses run? A deadline partition (HIGH and above) ignores the lookahead.
pub fn may_start_synthesis(priority: Priority, active: usize, room: SynthesisRoom) -> bool {
    active < synthesis_threads_for(priority, room.threads)
        && (priority >= Priority::High || active < room.lookahead)
}

/// How many syntheses can run right now, counting the `active` ones, if the next partitions are
/// like the next pending one (of `priority`, needing `partition_bytes`, with `free_bytes` of the
/// budget free): [`may_start_synthesis`] applied one partition after the other.
pub fn synthesis_allowed_now(
    priority: Priority,
    active: usize,
    room: SynthesisRoom,
    free_bytes: u64,
    partition_bytes: u64,
) -> usize {
    let mut allowed = active;
    let mut free = free_bytes;
    while may_start_synthesis(priority, allowed, room) && free >= partition_bytes {
        free -= partition_bytes;
        allowed += 1;
    }
    allowed
}

/// How many partitions below HIGH may synthesize at once under a synthesis lookahead of
/// `lookahead` (0 = no limit) while `waiting` synthesized partitions wait for a device.
pub fn lookahead_allows(lookahead: usize, waiting: usize) -> usize {
    match lookahead {
        0 => usize::MAX,
        n => n.saturating_sub(waiting),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Priority::*;

    #[test]
    fn order_is_priority_then_age_then_index() {
        // (priority, job_seq, index) in submit order; expected run order below.
        let mut parts = vec![
            (Low, 1, 0),
            (Normal, 2, 1),
            (Normal, 2, 0),
            (Critical, 5, 0),
            (High, 4, 0),
            (Normal, 3, 0),
            (Critical, 6, 0),
        ];
        parts.sort_by_key(|&(p, s, i)| order_key(p, s, i));
        assert_eq!(
            parts,
            vec![
                (Critical, 5, 0),
                (Critical, 6, 0),
                (High, 4, 0),
                (Normal, 2, 0),
                (Normal, 2, 1),
                (Normal, 3, 0),
                (Low, 1, 0),
            ]
        );
    }

    #[test]
    fn the_admission_rule_by_priority_threads_and_lookahead() {
        let room = |threads, lookahead| SynthesisRoom { threads, lookahead };
        let table = [
            // (priority, active, threads, lookahead) -> may start
            ((Normal, 0, 2, usize::MAX), true),
            ((Normal, 2, 2, usize::MAX), false),
            ((Low, 1, 2, 1), false),
            ((Normal, 0, 2, 0), false),
            ((High, 2, 2, 0), true),
            ((High, 3, 2, 0), false),
            ((Critical, 3, 2, 0), true),
            ((Critical, 4, 2, 0), false),
            ((Normal, 0, 0, usize::MAX), true),
        ];
        for ((priority, active, threads, lookahead), start) in table {
            assert_eq!(
                may_start_synthesis(priority, active, room(threads, lookahead)),
                start,
                "{priority:?} with {active} running on {threads} threads, lookahead {lookahead}"
            );
        }
    }

    #[test]
    fn synthesis_allowed_follows_the_rule_and_the_budget() {
        let gib = 1u64 << 30;
        let open = |threads| SynthesisRoom {
            threads,
            lookahead: usize::MAX,
        };
        let table = [
            // (priority, active, room, free, per partition) -> allowed
            ((Normal, 0, open(8), 100 * gib, 14 * gib), 7),
            ((Normal, 0, open(8), 10 * gib, 14 * gib), 0),
            ((Normal, 2, open(8), 30 * gib, 14 * gib), 4),
            ((Normal, 3, open(2), 100 * gib, 14 * gib), 3),
            ((Normal, 0, open(4), 0, 0), 4),
            ((Critical, 0, open(4), 0, 0), 6),
            (
                (
                    Normal,
                    1,
                    SynthesisRoom {
                        threads: 8,
                        lookahead: 2,
                    },
                    100 * gib,
                    gib,
                ),
                2,
            ),
        ];
        for ((priority, active, room, free, per), allowed) in table {
            assert_eq!(
                synthesis_allowed_now(priority, active, room, free, per),
                allowed,
                "{priority:?} {active} {room:?} {free} {per}"
            );
        }
    }
}

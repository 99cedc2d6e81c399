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

/// How many partition syntheses fit right now: limited by free threads and by how many
/// partitions of `partition_bytes` the free memory holds (at least the ones already running).
pub fn synthesis_allowed_now(
    active: usize,
    threads: usize,
    free_bytes: u64,
    partition_bytes: u64,
) -> usize {
    let by_memory = free_bytes
        .checked_div(partition_bytes)
        .map_or(threads, |n| n as usize);
    (active + by_memory).min(threads.max(active))
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
    fn synthesis_allowed_follows_the_budget_not_a_knob() {
        let gib = 1u64 << 30;
        let table = [
            // (active, threads, free, per partition) -> allowed
            ((0, 8, 100 * gib, 14 * gib), 7),
            ((0, 8, 10 * gib, 14 * gib), 0),
            ((2, 8, 30 * gib, 14 * gib), 4),
            ((3, 2, 100 * gib, 14 * gib), 3),
            ((0, 4, 0, 0), 4),
        ];
        for ((active, threads, free, per), allowed) in table {
            assert_eq!(
                synthesis_allowed_now(active, threads, free, per),
                allowed,
                "{active} {threads} {free} {per}"
            );
        }
    }
}

//! How many workers share a device when the configuration leaves it to the device
//! (`[gpus] workers_per_device = "auto"`): two on a GPU where the memory allows it, so that one
//! partition's uploads (its witness, a and b: about 12.5 GB at 32 GiB, through pageable copies),
//! host waits and the host's sums overlap the other's kernels; one elsewhere. Each worker then
//! plans within its share of the device's pool ([`super::DeviceQueue::share`]).
//!
//! "Where the memory allows" is reckoned for the largest partition the daemon proves (64 GiB
//! PoRep): two workers when the pool holds two such partitions' working memory beside the
//! circuit's bases (both kept on the device), or when it holds two working sets but not even one
//! beside the bases (they are streamed either way, and a second worker's copies overlap the
//! first one's kernels); one when two workers would cost the bases their place on the device.
//! A circuit's actual bases are weighed again when it is first proved on the device.

use super::plan::working_bytes;
use super::pool_bytes;
use super::queue::LOCAL_WORK_SIZE;
use super::resident::{BaseCounts, Resident};
use crate::filecoin::estimate::{shape, CircuitShape};
use crate::filecoin::ProofKind;

/// The largest partition circuit: 64 GiB PoRep's.
const LARGEST: (ProofKind, u64) = (ProofKind::PorepSealCommit, 64 << 30);

/// Aux variables among a PoRep circuit's A and B terms, per mille: 996 and 255 in the 2 KiB
/// parameters (2,674,948 and 685,522 bases of 2,685,673, inputs included), as the original
/// daemon measured at 32 GiB (99.7 % and 25.4 %). Rounded up.
const A_AUX_PER_MILLE: usize = 997;
const B_AUX_PER_MILLE: usize = 256;

/// Compute units of the largest GPUs the plan is made for (an H200 has 132, a B200 148): the
/// per-work-item memory of a step is a few MB at most, so a device with fewer loses nothing.
const PLANNED_COMPUTE_UNITS: usize = 256;

/// Workers a device of `kind` ("gpu", "cpu", …) with `memory_bytes` of global memory runs when
/// the configuration leaves it to the device: see the module's doc.
pub fn default_workers(kind: &str, memory_bytes: u64) -> usize {
    if kind != "gpu" {
        // PoCL's CPU device: its kernels run on the cores synthesis needs.
        return 1;
    }
    workers_that_fit(pool_bytes(memory_bytes))
}

/// Workers a pool of `pool` bytes takes for the largest partition.
fn workers_that_fit(pool: u64) -> usize {
    let (bases, working) = largest_partition();
    let both_kept = bases + 2 * working <= pool;
    let streamed_anyway = bases + working > pool && 2 * working <= pool;
    match both_kept || streamed_anyway {
        true => 2,
        false => 1,
    }
}

/// The device bytes of the largest partition's bases, and those it works in beside them.
fn largest_partition() -> (u64, u64) {
    let s = shape(LARGEST.0, LARGEST.1);
    let units = LOCAL_WORK_SIZE * PLANNED_COMPUTE_UNITS;
    let working = working_bytes(s.inputs + s.aux, s.constraints, units);
    (Resident::bytes_of(estimated_bases(s)), working)
}

/// A PoRep circuit's bases by its shape: H has the evaluation domain's less one, L the aux
/// variables, A and B the inputs and their share of the aux variables.
fn estimated_bases(s: CircuitShape) -> BaseCounts {
    let share = |per_mille: usize| s.inputs + (s.aux * per_mille).div_ceil(1000);
    BaseCounts {
        h: s.constraints.next_power_of_two() - 1,
        l: s.aux,
        a: share(A_AUX_PER_MILLE),
        b: share(B_AUX_PER_MILLE),
        // Counted as kept: "auto" does not turn on where B's G2 multiexp runs.
        b_g2: share(B_AUX_PER_MILLE),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GB: u64 = 1_000_000_000;

    #[test]
    fn a_gpu_with_room_for_two_partitions_beside_the_bases_runs_two_workers() {
        let (bases, working) = largest_partition();
        // The figures the rule turns on, at 64 GiB PoRep.
        assert!((45 * GB..52 * GB).contains(&bases), "bases {bases}");
        assert!((22 * GB..28 * GB).contains(&working), "working {working}");
        // An H200 (139.8 GiB as OpenCL reports it): both partitions' bases stay.
        assert_eq!(default_workers("gpu", 150_110_000_000), 2);
        // An 80 GB H100: the bases are streamed even for one worker; two overlap the copies.
        assert_eq!(default_workers("gpu", 85_000_000_000), 2);
        // A 96 GB card keeps the bases for one worker and would stream them for two.
        assert_eq!(default_workers("gpu", 103_000_000_000), 1);
        // 48, 24 and 16 GB cards: no room for two working sets.
        for memory in [51_500_000_000, 25_700_000_000, 17_100_000_000] {
            assert_eq!(default_workers("gpu", memory), 1, "{memory}");
        }
        // PoCL's CPU device, however much memory.
        assert_eq!(default_workers("cpu", 1 << 40), 1);
    }

    #[test]
    fn two_workers_never_cost_the_bases_their_place_on_the_device() {
        let (bases, working) = largest_partition();
        for pool in (8..400).map(|g| g * GB / 2) {
            let one_keeps = bases + working <= pool;
            let two_keep = bases + 2 * working <= pool;
            if workers_that_fit(pool) == 2 {
                assert!(two_keep || !one_keeps, "pool {pool}");
                assert!(2 * working <= pool, "pool {pool}");
            } else {
                assert!(!two_keep, "pool {pool}");
            }
        }
    }
}

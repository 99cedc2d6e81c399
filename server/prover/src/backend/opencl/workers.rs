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
//!
//! With B's G2 multiexp on the host (`[gpus] b_g2 = "cpu"`), the device holds no G2 bases (6.4 GB
//! at 64 GiB PoRep) and its largest step is a G1 one, so both figures are smaller: two workers
//! keep their bases on a smaller pool, and an 80 GB card, whose bases are otherwise streamed
//! even for one worker, keeps them for one. (Where the host has no room for B's G2 multiexp, it
//! runs on the device after all, its bases streamed: a step short of memory there halves its
//! chunks, so it is slower, never wrong.)

use super::plan::working_bytes;
use super::pool_bytes;
use super::queue::LOCAL_WORK_SIZE;
use super::resident::{BaseCounts, Resident};
use crate::filecoin::estimate::{shape, CircuitShape};
use crate::filecoin::ProofKind;
use crate::groth16::G2On;

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
/// the configuration leaves it to the device, B's G2 multiexp running `b_g2`: see the module's
/// doc.
pub fn default_workers(kind: &str, memory_bytes: u64, b_g2: G2On) -> usize {
    if kind != "gpu" {
        // PoCL's CPU device: its kernels run on the cores synthesis needs.
        return 1;
    }
    workers_that_fit(pool_bytes(memory_bytes), b_g2)
}

/// Workers a pool of `pool` bytes takes for the largest partition.
fn workers_that_fit(pool: u64, b_g2: G2On) -> usize {
    let (bases, working) = largest_partition(b_g2);
    let both_kept = bases + 2 * working <= pool;
    let streamed_anyway = bases + working > pool && 2 * working <= pool;
    match both_kept || streamed_anyway {
        true => 2,
        false => 1,
    }
}

/// The device bytes of the largest partition's bases, and those it works in beside them.
fn largest_partition(b_g2: G2On) -> (u64, u64) {
    let s = shape(LARGEST.0, LARGEST.1);
    let units = LOCAL_WORK_SIZE * PLANNED_COMPUTE_UNITS;
    let working = working_bytes(s.inputs + s.aux, s.constraints, units, b_g2);
    (Resident::bytes_of(estimated_bases(s, b_g2)), working)
}

/// A PoRep circuit's bases by its shape: H has the evaluation domain's less one, L the aux
/// variables, A and B the inputs and their share of the aux variables; B's G2 bases only where
/// its multiexp runs on the device.
fn estimated_bases(s: CircuitShape, b_g2: G2On) -> BaseCounts {
    let share = |per_mille: usize| s.inputs + (s.aux * per_mille).div_ceil(1000);
    BaseCounts {
        h: s.constraints.next_power_of_two() - 1,
        l: s.aux,
        a: share(A_AUX_PER_MILLE),
        b: share(B_AUX_PER_MILLE),
        b_g2: match b_g2 {
            G2On::Device => share(B_AUX_PER_MILLE),
            G2On::Cpu => 0,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GB: u64 = 1_000_000_000;

    #[test]
    fn a_gpu_with_room_for_two_partitions_beside_the_bases_runs_two_workers() {
        let (bases, working) = largest_partition(G2On::Device);
        // The figures the rule turns on, at 64 GiB PoRep.
        assert!((45 * GB..52 * GB).contains(&bases), "bases {bases}");
        assert!((22 * GB..28 * GB).contains(&working), "working {working}");
        let workers = |memory| default_workers("gpu", memory, G2On::Device);
        // An H200 (139.8 GiB as OpenCL reports it): both partitions' bases stay.
        assert_eq!(workers(150_110_000_000), 2);
        // An 80 GB H100: the bases are streamed even for one worker; two overlap the copies.
        assert_eq!(workers(85_000_000_000), 2);
        // A 96 GB card keeps the bases for one worker and would stream them for two.
        assert_eq!(workers(103_000_000_000), 1);
        // 48, 24 and 16 GB cards: no room for two working sets.
        for memory in [51_500_000_000, 25_700_000_000, 17_100_000_000] {
            assert_eq!(workers(memory), 1, "{memory}");
        }
        // PoCL's CPU device, however much memory.
        assert_eq!(default_workers("cpu", 1 << 40, G2On::Device), 1);
    }

    #[test]
    fn with_b_g2_on_the_cpu_the_device_keeps_no_g2_bases_and_works_in_g1_steps() {
        let (bases, working) = largest_partition(G2On::Device);
        let (g1_bases, g1_working) = largest_partition(G2On::Cpu);
        let s = shape(LARGEST.0, LARGEST.1);
        let g2 = estimated_bases(s, G2On::Device).b_g2 as u64;
        assert_eq!(estimated_bases(s, G2On::Cpu).b_g2, 0);
        assert_eq!(bases - g1_bases, g2 * 192, "B's G2 bases, 192 bytes each");
        // The largest step is a G1 one: 13 windows of 2^19 buckets, 144 bytes smaller each.
        assert!(
            working - g1_working > (13 << 19) * 144,
            "{working} {g1_working}"
        );
        let workers = |memory| default_workers("gpu", memory, G2On::Cpu);
        // An H200 still runs two; an 80 GB H100 now keeps the bases for one worker, which two
        // would stream (the rule: a second worker never costs the bases their place).
        assert_eq!(workers(150_110_000_000), 2);
        assert!(g1_bases + g1_working <= pool_bytes(85_000_000_000));
        assert_eq!(workers(85_000_000_000), 1);
        // Two keep their bases on a smaller pool than with B's G2 on the device.
        let smallest = |bases: u64, working: u64| {
            (8..400)
                .map(|g| g * GB / 2)
                .find(|&pool| bases + 2 * working <= pool)
        };
        assert!(smallest(g1_bases, g1_working) < smallest(bases, working));
        assert_eq!(default_workers("cpu", 1 << 40, G2On::Cpu), 1);
    }

    #[test]
    fn two_workers_never_cost_the_bases_their_place_on_the_device() {
        for b_g2 in [G2On::Device, G2On::Cpu] {
            let (bases, working) = largest_partition(b_g2);
            for pool in (8..400).map(|g| g * GB / 2) {
                let one_keeps = bases + working <= pool;
                let two_keep = bases + 2 * working <= pool;
                if workers_that_fit(pool, b_g2) == 2 {
                    assert!(two_keep || !one_keeps, "{b_g2:?}, pool {pool}");
                    assert!(2 * working <= pool, "{b_g2:?}, pool {pool}");
                } else {
                    assert!(!two_keep, "{b_g2:?}, pool {pool}");
                }
            }
        }
    }
}

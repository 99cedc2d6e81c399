//! How a multiexp step is cut into chunks for a device: the window its terms are worth within
//! the memory it may hold, the chunk length that memory leaves, and the work items; and what a
//! step needs beside bases kept on the device (`plan.rs` reckons residency with it).

use group::prime::PrimeCurveAffine;

use super::kernels::SCAN_BLOCK;
use super::queue::LOCAL_WORK_SIZE;
use super::windows::{buckets_of, sorted_bits, windows_of, MAX_SORTED_BITS};
use crate::error::{ProverError, Result};

/// Device bytes a term of a chunk takes besides its base and its digits: its place in one of
/// the two lists (4 bytes) and, for the rest, its canonical scalar (32 bytes).
const TERM_BYTES: u64 = 4 + 4 + 32;
/// The most work items of the buckets' reduction: what it writes is read back and added up on
/// the host, a (T, S) pair a part of a window (16 Ki items: 4 MB of G1 points a chunk).
const REDUCE_ITEMS_MAX: usize = 16 << 10;

/// Device bytes of a multiexp step of `terms` terms over `G` with resident bases and
/// `work_units` work items, at the window the terms are worth (what [`plan`] takes where memory
/// allows).
pub fn step_bytes<G: PrimeCurveAffine>(terms: usize, work_units: usize) -> u64 {
    let bits = sorted_bits(terms, MAX_SORTED_BITS, u64::MAX);
    terms as u64 * term_bytes::<G>(bits, 0) + fixed_bytes::<G>(work_units, bits)
}

/// Device bytes a term takes at `bits`-bit windows: [`TERM_BYTES`], its digits' places in the
/// sorted list (4 bytes a window) and its base in each of `staging` staging buffers (streamed
/// bases: two, so that a chunk's bases go up while the chunk before runs, unless only one fits
/// beside a step of one chunk).
pub(super) fn term_bytes<G: PrimeCurveAffine>(bits: usize, staging: usize) -> u64 {
    TERM_BYTES + 4 * windows_of(bits) as u64 + (staging * std::mem::size_of::<G>()) as u64
}

/// Device bytes of a chunk that do not turn on its length: the buckets at `bits`-bit windows
/// with their counts, starts and the scan's block sums, the split's three counts, and the
/// heads, sums and reduction parts of `units` work items.
pub(super) fn fixed_bytes<G: PrimeCurveAffine>(units: usize, bits: usize) -> u64 {
    let buckets = buckets_of(bits) as u64;
    buckets * (point_bytes::<G>() + 8)
        + 4 * (buckets.div_ceil(SCAN_BLOCK as u64) + 1)
        + 12
        + unit_bytes::<G>(units)
}

/// Device bytes of `units` work items' slices' heads, work groups' sums of ones and
/// reduction parts.
fn unit_bytes<G: PrimeCurveAffine>(units: usize) -> u64 {
    (units + units / LOCAL_WORK_SIZE + 2 * reduce_items(units)) as u64 * point_bytes::<G>()
}

fn point_bytes<G: PrimeCurveAffine>() -> u64 {
    std::mem::size_of::<G::Curve>() as u64
}

/// Work items of the buckets' reduction for `units` work units: a quarter of them (it does two
/// additions a bucket, each a chain of 2·B/P; at 2^24 terms and 20-bit windows that chain is a
/// third as long as a work item's share of the bucket sums), at least 256 (a part of each of
/// up to 256 windows), at most [`REDUCE_ITEMS_MAX`].
pub(super) fn reduce_items(units: usize) -> usize {
    (units / 4)
        .next_multiple_of(LOCAL_WORK_SIZE)
        .clamp(2 * LOCAL_WORK_SIZE, REDUCE_ITEMS_MAX)
}

/// How one multiexp step is cut up for a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkPlan {
    /// Terms per chunk.
    pub chunk_terms: usize,
    /// Work items of the sum of ones and of the bucket sums (whole work groups).
    pub work_units: usize,
    /// The widest window a chunk may use: its buckets are allocated for it.
    pub window_bits: usize,
    /// Staging buffers of a chunk's bases: none when they are kept on the device; where they
    /// are streamed two, or one where the step is one chunk and two would not fit beside it
    /// (the next chunk's copy then waits for this one's end).
    pub staging: usize,
}

impl ChunkPlan {
    /// Room of the sorted list: the digits of a whole chunk at its widest window (a shorter
    /// count whose best window has more digits is widened to fit: `sorted_bits`).
    pub fn capacity(&self) -> usize {
        self.chunk_terms * windows_of(self.window_bits)
    }
}

/// The chunk size for `terms` terms of `G` given a memory `share`: what is left after the
/// buckets and the work items' points, divided by the device bytes of a term (its base too when
/// the bases are `staged`), capped by `max_chunk_terms` and the device's largest buffer. Where
/// the work items' points would take more than an eighth of the share the work units are
/// halved until they fit, down to one work group. The window is the one the terms are worth
/// ([`sorted_bits`]), narrowed until its buckets take at most a quarter of the share and fit
/// the largest buffer.
pub(super) fn plan<G: PrimeCurveAffine>(
    terms: usize,
    work_units: usize,
    share: u64,
    max_alloc: u64,
    max_chunk_terms: usize,
    staged: bool,
) -> Result<ChunkPlan> {
    let mut groups = (work_units / LOCAL_WORK_SIZE).max(1);
    while groups > 1 && unit_bytes::<G>(groups * LOCAL_WORK_SIZE) > share / 8 {
        groups /= 2;
    }
    let work_units = groups * LOCAL_WORK_SIZE;
    let fixed = |bits| fixed_bytes::<G>(work_units, bits);
    let n = terms.min(max_chunk_terms).max(1);
    let mut window_bits = sorted_bits(n, MAX_SORTED_BITS, u64::MAX);
    while window_bits > 1
        && (fixed(window_bits) > share / 4
            || buckets_of(window_bits) as u64 * point_bytes::<G>() > max_alloc)
    {
        window_bits -= 1;
    }
    let windows = windows_of(window_bits);
    let widest = 32
        .max(4 * windows)
        .max(if staged { std::mem::size_of::<G>() } else { 0 });
    let by_alloc = max_alloc / widest as u64;
    // The sorted list's places are 32-bit (a term's position with the digit's sign in bit 31).
    let by_places = u32::MAX as usize / windows;
    let chunk_with = |staging: usize| {
        let by_memory =
            share.saturating_sub(fixed(window_bits)) / term_bytes::<G>(window_bits, staging);
        (by_memory.min(by_alloc) as usize).min(by_places).min(n)
    };
    let (chunk, staging) = match staged {
        false => (chunk_with(0), 0),
        true if chunk_with(2) >= terms => (terms, 2),
        true if chunk_with(1) >= terms => (terms, 1),
        true => (chunk_with(2), 2),
    };
    if chunk == 0 {
        return Err(ProverError::Device {
            backend: "opencl".into(),
            reason: format!(
                "a multiexp needs more than this worker's {share} bytes of device memory"
            ),
        });
    }
    Ok(ChunkPlan {
        chunk_terms: chunk,
        work_units,
        window_bits,
        staging,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::{G1Affine, G2Affine};

    /// G1's fixed bytes at `bits`: 152 a bucket (its 144-byte point, count and start), the
    /// scan's block sums, the split's counts, and 144 a point of the work items' heads, sums
    /// and reduction parts.
    fn g1_fixed(units: u64, bits: usize) -> u64 {
        let b = buckets_of(bits) as u64;
        b * 152 + 4 * (b.div_ceil(1024) + 1) + 12 + (units + units / 128 + 2 * 256) * 144
    }

    #[test]
    fn chunks_are_capped_by_memory_and_by_the_configured_limit() {
        // 2^30 terms are worth 20-bit windows; a share of 4× their fixed bytes keeps them, and
        // a term takes 40 bytes, 52 for its 13 digits' places and, when staged over several
        // chunks, 96 more in each of two staging buffers.
        let share = 4 * g1_fixed(256, 20) + 92 * 1000;
        let p = plan::<G1Affine>(1 << 30, 256, share, u64::MAX, usize::MAX, false).unwrap();
        assert_eq!(
            p,
            ChunkPlan {
                chunk_terms: ((3 * g1_fixed(256, 20) + 92_000) / 92) as usize,
                work_units: 256,
                window_bits: 20,
                staging: 0,
            }
        );
        assert_eq!(p.capacity(), p.chunk_terms * 13);
        let staged = plan::<G1Affine>(1 << 30, 256, share, u64::MAX, usize::MAX, true).unwrap();
        assert_eq!(
            staged.chunk_terms as u64,
            (3 * g1_fixed(256, 20) + 92_000) / 284
        );
        assert_eq!(staged.staging, 2, "several chunks: two staging buffers");
        // A step of one chunk takes two staging buffers where they fit beside it, so the next
        // step's first chunk goes up while it runs; one where only one does.
        let whole = plan::<G1Affine>(1000, 256, share, u64::MAX, usize::MAX, true).unwrap();
        assert_eq!((whole.chunk_terms, whole.staging), (1000, 2));
        let n = 1 << 20;
        let roomy = plan::<G1Affine>(n, 128, u64::MAX / 2, u64::MAX, usize::MAX, true).unwrap();
        assert_eq!((roomy.chunk_terms, roomy.staging), (n, 2));
        let bits = roomy.window_bits;
        // A quarter of the share holds the buckets at that window, and the rest one staging
        // buffer beside the step, not two.
        let (fixed, tight) = (
            fixed_bytes::<G1Affine>(128, bits),
            4 * fixed_bytes::<G1Affine>(128, bits),
        );
        assert!(tight >= fixed + n as u64 * term_bytes::<G1Affine>(bits, 1));
        assert!(tight < fixed + n as u64 * term_bytes::<G1Affine>(bits, 2));
        let one = plan::<G1Affine>(n, 128, tight, u64::MAX, usize::MAX, true).unwrap();
        assert_eq!(
            (one.chunk_terms, one.staging, one.window_bits),
            (n, 1, bits)
        );
        let p = plan::<G1Affine>(1 << 20, 256, u64::MAX / 2, u64::MAX, 300, false).unwrap();
        assert_eq!(p.chunk_terms, 300);
        let p = plan::<G1Affine>(50, 256, u64::MAX / 2, u64::MAX, 300, false).unwrap();
        assert_eq!(p.chunk_terms, 50);
        // 2^20 terms are worth 16-bit windows, whose 2^19 buckets (75 MB) would not fit a
        // largest buffer of 50.4 MB: at 15 bits (42 MB) the sorted list is the widest buffer,
        // 72 bytes a term (18 windows).
        let p = plan::<G1Affine>(1 << 30, 256, u64::MAX / 2, 72 * 700_000, 1 << 20, false);
        let p = p.unwrap();
        assert_eq!(
            (p.window_bits, p.chunk_terms),
            (15, 700_000),
            "the largest buffer caps it"
        );
    }

    #[test]
    fn the_window_is_what_the_terms_are_worth_as_far_as_a_quarter_of_the_share_holds_its_buckets() {
        // 4 Mi terms are worth 19 bits (`sorted_bits`), with room to spare.
        let roomy = plan::<G1Affine>(1 << 22, 256, u64::MAX / 2, u64::MAX, usize::MAX, false);
        assert_eq!(roomy.unwrap().window_bits, 19);
        // 1 Gi terms are worth 20 bits; a quarter of the share holds 16 bits' buckets, not 17's.
        let share = 4 * g1_fixed(256, 16) + 4;
        let tight = plan::<G1Affine>(1 << 30, 256, share, u64::MAX, usize::MAX, false).unwrap();
        assert_eq!(tight.window_bits, 16);
        assert_eq!(
            tight.chunk_terms as u64,
            (share - g1_fixed(256, 16)) / (40 + 4 * 16)
        );
        // Few terms keep a narrow window, and the buckets of a window must fit one buffer.
        let few = plan::<G1Affine>(1000, 256, u64::MAX / 2, u64::MAX, usize::MAX, false);
        assert!(few.unwrap().window_bits <= 10);
        let one_buffer = 144 * buckets_of(14) as u64;
        let capped = plan::<G1Affine>(1 << 30, 256, u64::MAX / 2, one_buffer, 1 << 20, false);
        assert_eq!(capped.unwrap().window_bits, 14);
    }

    #[test]
    fn work_units_shrink_when_their_points_would_crowd_out_the_terms() {
        // 8,192 work items' heads, sums and parts are about 1.8 MB of G1 points: a share of
        // 8 MB keeps half of them (at most an eighth of the share).
        let share = 8 << 20;
        let p = plan::<G1Affine>(1 << 30, 8192, share, u64::MAX, usize::MAX, false).unwrap();
        assert!(p.work_units.is_multiple_of(LOCAL_WORK_SIZE) && p.work_units < 8192);
        assert!(unit_bytes::<G1Affine>(p.work_units) <= share / 8, "{p:?}");
        assert!(
            unit_bytes::<G1Affine>(2 * p.work_units) > share / 8,
            "{p:?}"
        );
        assert!(plan::<G1Affine>(50, 256, 1000, u64::MAX, 300, false).is_err());
    }

    #[test]
    fn a_resident_step_is_reckoned_at_the_window_its_terms_are_worth() {
        // 2^24 terms: 20-bit windows, 92 bytes a term (40, and 13 digits' places), and G2's 13
        // windows of 2^19 buckets (288-byte points with their counts and starts); G1's buckets
        // 144 bytes smaller each.
        let units = 128 * 132;
        let fixed = fixed_bytes::<G2Affine>(units, 20);
        assert_eq!(step_bytes::<G2Affine>(1 << 24, units), fixed + (92 << 24));
        assert!(fixed > (13 << 19) * 296, "{fixed}");
        let g1 = step_bytes::<G1Affine>(1 << 24, units);
        assert_eq!(g1, fixed_bytes::<G1Affine>(units, 20) + (92 << 24));
        assert!(
            g1 + (13 << 19) * 144 < step_bytes::<G2Affine>(1 << 24, units),
            "{g1}"
        );
    }
}

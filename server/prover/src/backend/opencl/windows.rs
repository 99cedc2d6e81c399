//! How a multiexp chunk cuts its exponents into windows, and how the host adds up what the
//! device's bucket kernels return.
//!
//! Our kernels sort a chunk's signed digits by (window, digit) (`snarkd_sort.cl`) and sum each
//! bucket over the sorted list (`snarkd_point.cl`): a window of `b` bits has 2^(b−1) buckets,
//! shared by every work item, so a chunk of `n` terms costs about ⌈256/b⌉·n mixed additions
//! for its digits plus ⌈256/b⌉·2^b to sum the buckets, which [`sorted_bits`] minimises (the
//! device's memory may cap the window lower: `msm_plan::plan`). ec-gpu-gen's kernel, kept for the
//! before-and-after benchmark (`legacy.rs`), gives every work item buckets of its own and reads
//! unsigned digits: [`Windows::unsigned`].

use group::Group;
use rayon::prelude::*;

use crate::threads;

/// Bits of an exponent as the kernels read them (the scalar's 256 bits, most significant first).
pub(super) const EXPONENT_BITS: usize = 256;
/// The widest window: 13 windows of 2^19 buckets, what 2^24 terms are worth.
pub(super) const MAX_SORTED_BITS: usize = 20;
/// ec-gpu-gen's widest unsigned window: 2^10 − 1 buckets a work item.
#[cfg(any(test, feature = "bench"))]
pub(super) const MAX_UNSIGNED_BITS: usize = 10;

/// Windows of `bits` bits covering the exponent.
pub(super) fn windows_of(bits: usize) -> usize {
    EXPONENT_BITS.div_ceil(bits.max(1))
}

/// Buckets of all windows of `bits` bits: 2^(bits−1) a window (signed digits).
pub(super) fn buckets_of(bits: usize) -> usize {
    windows_of(bits) << (bits.max(1) - 1)
}

/// The window for `n` terms, at most `max_bits` wide: the one that minimises the additions
/// ⌈256/b⌉·n + ⌈256/b⌉·2^b (the narrowest of equals), widened while its digits would be more
/// than `capacity` (the room of the sorted list). The kernels' `snarkd_sorted_bits`.
pub(super) fn sorted_bits(n: usize, max_bits: usize, capacity: u64) -> usize {
    let max_bits = max_bits.clamp(1, MAX_SORTED_BITS);
    let cost = |b: usize| (windows_of(b) as u128) * (n as u128 + (1u128 << b));
    let mut bits = (1..=max_bits)
        .min_by_key(|&b| cost(b))
        .expect("at least one window width");
    while bits < max_bits && (n * windows_of(bits)) as u64 > capacity {
        bits += 1;
    }
    bits
}

/// The shape of one chunk's sorted bucket multiexp, as the device chose it from the chunk's
/// count, and what its reduction returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sorted {
    /// Bits per window.
    pub bits: usize,
    /// Windows covering the 256 exponent bits.
    pub windows: usize,
    /// Buckets a window.
    pub buckets: usize,
    /// Parts of a window's buckets, a work item each of the reduction.
    pub parts: usize,
}

impl Sorted {
    /// The shape of `n` terms at most `max_bits` wide within `capacity` digits, reduced by
    /// `reduce_items` work items (`POINT_snarkd_bucket_reduce`).
    pub fn new(n: usize, max_bits: usize, capacity: u64, reduce_items: usize) -> Sorted {
        let bits = sorted_bits(n, max_bits, capacity);
        let (windows, buckets) = (windows_of(bits), 1 << (bits - 1));
        let mut parts = 1;
        while parts * 2 <= buckets && windows * parts * 2 <= reduce_items {
            parts *= 2;
        }
        Sorted {
            bits,
            windows,
            buckets,
            parts,
        }
    }

    /// Points the reduction writes: a (T, S) pair for each part of each window.
    pub fn out_len(&self) -> usize {
        2 * self.windows * self.parts
    }

    /// The chunk's sum from the reduction's pairs: window j's is Σ_p T_p + (B/P)·Σ_p p·S_p (the
    /// parts' weights formed by running sums, B/P a power of two: doublings), then the windows
    /// most significant first: acc ← acc·2^bits + window.
    pub fn combine<C: Group + Send + Sync>(&self, out: &[C]) -> C {
        let parts = self.parts;
        let shift = (self.buckets / parts).trailing_zeros();
        let per_window: Vec<C> = threads::pool().install(|| {
            out[..self.out_len()]
                .par_chunks(2 * parts)
                .map(|w| {
                    let t = w.iter().step_by(2).fold(C::identity(), |a, p| a + p);
                    let (mut running, mut weighted) = (C::identity(), C::identity());
                    for p in (1..parts).rev() {
                        running += w[2 * p + 1];
                        weighted += running;
                    }
                    (0..shift).fold(weighted, |a, _| a.double()) + t
                })
                .collect()
        });
        horner(self.bits, &per_window)
    }
}

/// Σ over windows of `bits` bits, most significant first: acc ← acc·2^bits + sum (the last
/// window holding what is left of the 256 bits).
fn horner<C: Group>(bits: usize, per_window: &[C]) -> C {
    let mut acc = C::identity();
    let mut done = 0;
    for sum in per_window {
        let bits = bits.min(EXPONENT_BITS - done);
        for _ in 0..bits {
            acc = acc.double();
        }
        acc += sum;
        done += bits;
    }
    acc
}

/// The window split of ec-gpu-gen's bucket multiexp: one work item a (window, group).
#[cfg(any(test, feature = "bench"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Windows {
    /// Bits per window.
    pub bits: usize,
    /// Windows covering the 256 exponent bits.
    pub windows: usize,
    /// Groups of terms, each handled by `windows` work items.
    pub groups: usize,
}

#[cfg(any(test, feature = "bench"))]
impl Windows {
    /// ec-gpu-gen's unsigned kernel's split, as the old device phase chose it: the window a
    /// little wider than log2 of the terms a unit gets, at most 10 bits.
    pub fn unsigned(terms: usize, work_units: usize) -> Windows {
        let per_unit = terms.div_ceil(work_units.max(1)).max(1);
        let bits = (per_unit.ilog2() as usize + 2).clamp(1, MAX_UNSIGNED_BITS);
        let windows = windows_of(bits);
        Windows {
            bits,
            windows,
            groups: (work_units / windows).max(1),
        }
    }

    /// Σ over windows, most significant first: acc ← acc·2^bits + Σ_groups result[g][w].
    #[cfg(feature = "bench")]
    pub fn reduce<C: Group + Send + Sync>(&self, results: &[C]) -> C {
        let per_window: Vec<C> = threads::pool().install(|| {
            (0..self.windows)
                .into_par_iter()
                .map(|w| {
                    (0..self.groups)
                        .fold(C::identity(), |acc, g| acc + results[g * self.windows + w])
                })
                .collect()
        });
        horner(self.bits, &per_window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::{G1Projective, Scalar as Fr};
    use ff::Field;

    #[test]
    fn windows_cover_every_exponent_bit_and_the_reduction_fits_its_work_items() {
        for (terms, items) in [
            (1, 256),
            (255, 256),
            (10_000, 256),
            (1 << 24, 4096),
            (7, 256),
        ] {
            let s = Sorted::new(terms, MAX_SORTED_BITS, u64::MAX, items);
            assert!(s.bits * s.windows >= EXPONENT_BITS, "{s:?}");
            assert!(
                (s.windows - 1) * s.bits < EXPONENT_BITS,
                "{s:?}: a window too many"
            );
            assert!(s.parts.is_power_of_two() && s.parts <= s.buckets, "{s:?}");
            assert!(s.windows * s.parts <= items.max(s.windows), "{s:?}");
            let w = Windows::unsigned(terms, items);
            assert!(w.bits * w.windows >= EXPONENT_BITS && w.bits <= MAX_UNSIGNED_BITS);
            assert!(w.windows * w.groups <= items.max(w.windows), "{w:?}");
        }
    }

    #[test]
    fn the_window_grows_with_the_terms_until_its_buckets_cost_more() {
        // 2^24 terms: 13 windows of 20 bits cost 13·(2^24 + 2^20) additions, against 16·(2^24
        // + 2^16) at 16 bits (1.16× as many).
        assert_eq!(sorted_bits(1 << 24, MAX_SORTED_BITS, u64::MAX), 20);
        assert_eq!(sorted_bits(1 << 24, 16, u64::MAX), 16);
        // One term still pays a digit a window: 2 bits (128 windows of 2 buckets) are the
        // cheapest, 128·(1 + 4) against 4 bits' 64·(1 + 16).
        assert_eq!(sorted_bits(1, MAX_SORTED_BITS, u64::MAX), 2);
        let widths: Vec<usize> = (0..30)
            .map(|k| sorted_bits(1 << k, MAX_SORTED_BITS, u64::MAX))
            .collect();
        assert!(widths.windows(2).all(|p| p[0] <= p[1]), "{widths:?}");
        assert_eq!(*widths.last().unwrap(), MAX_SORTED_BITS);
        assert_eq!(buckets_of(20), 13 << 19);
        assert_eq!(buckets_of(1), 256);
    }

    #[test]
    fn a_sorted_list_sized_for_a_chunk_holds_the_digits_of_any_shorter_count() {
        // The plan sizes the list for the chunk at its window; a shorter count whose own best
        // window has more digits than that is widened until they fit, and never past the cap.
        for (chunk, max_bits) in [(600, 20), (4096, 11), (1 << 16, 13), (70_000, 20)] {
            let bits = sorted_bits(chunk, max_bits, u64::MAX);
            let capacity = (chunk * windows_of(bits)) as u64;
            for n in (0..=chunk).step_by(7).chain([chunk]) {
                let b = sorted_bits(n, max_bits, capacity);
                assert!(b <= max_bits, "{n} of {chunk}: {b} bits");
                assert!(
                    (n * windows_of(b)) as u64 <= capacity,
                    "{n} of {chunk}: {b} bits"
                );
            }
        }
    }

    #[test]
    fn the_parts_of_the_reduction_combine_to_every_windows_weighted_bucket_sum() {
        // What POINT_snarkd_bucket_reduce writes for random buckets, against the sum weighted
        // by digit and window position done the long way.
        let mut rng = rand::rngs::OsRng;
        for (bits, items) in [(3, 256), (5, 256), (7, 4096), (1, 128)] {
            let s = Sorted::new(1 << (2 * bits), bits, u64::MAX, items);
            assert_eq!(s.bits, bits);
            let buckets: Vec<Vec<G1Projective>> = (0..s.windows)
                .map(|_| {
                    (0..s.buckets)
                        .map(|_| G1Projective::random(&mut rng))
                        .collect()
                })
                .collect();
            let per = s.buckets / s.parts;
            let mut out = Vec::new();
            for window in &buckets {
                for part in window.chunks(per) {
                    let (mut running, mut t) = (G1Projective::identity(), G1Projective::identity());
                    for b in part.iter().rev() {
                        running += b;
                        t += running;
                    }
                    out.extend([t, running]);
                }
            }
            let mut want = G1Projective::identity();
            let mut low = EXPONENT_BITS;
            for window in &buckets {
                low -= bits.min(low);
                let weight = Fr::from(2u64).pow_vartime([low as u64]);
                for (i, b) in window.iter().enumerate() {
                    want += b * (Fr::from(i as u64 + 1) * weight);
                }
            }
            assert_eq!(s.combine(&out), want, "{s:?}");
        }
    }
}

//! How a bucket multiexp cuts its exponents into windows and its terms into groups, one work
//! item per (window, group), and how the host adds the work items' results up.
//!
//! Our kernel (`POINT_snarkd_multiexp`) reads signed digits: a window of `b` bits needs
//! 2^(b−1) buckets, and a work item costs about one mixed addition per term of its group plus
//! 2^b additions to sum its buckets. Over `u` work units and `n` terms that is about
//! ⌈256/b⌉·n/u + 2^b additions a unit, which [`best_bits`] minimises; the device's memory may
//! cap the window lower (`msm::plan`). ec-gpu-gen's kernel, kept for the before-and-after
//! benchmark (`legacy.rs`), reads unsigned digits: [`Windows::unsigned`].

use group::Group;
use rayon::prelude::*;

use crate::threads;

/// Bits of an exponent as the kernels read them (the scalar's 256 bits, most significant first).
pub(super) const EXPONENT_BITS: usize = 256;
/// The widest signed window: 2^15 buckets a work item.
pub(super) const MAX_SIGNED_BITS: usize = 16;
/// The window every step can have: 2^10 buckets a work item, what ec-gpu-gen's widest unsigned
/// window held; wider ones only where the device's memory allows (`msm::plan`).
pub(super) const BASE_SIGNED_BITS: usize = 11;
/// ec-gpu-gen's widest unsigned window: 2^10 − 1 buckets a work item.
#[cfg(any(test, feature = "bench"))]
pub(super) const MAX_UNSIGNED_BITS: usize = 10;

/// Buckets a work item of our kernel holds for a window of `bits` bits.
pub(super) fn signed_buckets(bits: usize) -> usize {
    1 << (bits.max(1) - 1)
}

/// The window, at most `max_bits` wide, that minimises the additions a work unit does for
/// `per_unit` terms: ⌈256/b⌉·per_unit for the terms, 2^b for summing the buckets (the
/// narrowest of widths that cost the same).
pub(super) fn best_bits(per_unit: usize, max_bits: usize) -> usize {
    let cost = |b: usize| EXPONENT_BITS.div_ceil(b) as u128 * per_unit as u128 + (1u128 << b);
    (1..=max_bits.clamp(1, MAX_SIGNED_BITS))
        .min_by_key(|&b| cost(b))
        .expect("at least one window width")
}

/// The window split of one bucket multiexp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Windows {
    /// Bits per window.
    pub bits: usize,
    /// Windows covering the 256 exponent bits.
    pub windows: usize,
    /// Groups of terms, each handled by `windows` work items.
    pub groups: usize,
}

impl Windows {
    /// Our signed-digit kernel's split of `terms` terms over `work_units`, the window at most
    /// `max_bits` wide ([`best_bits`]).
    pub fn signed(terms: usize, work_units: usize, max_bits: usize) -> Windows {
        let per_unit = terms.div_ceil(work_units.max(1)).max(1);
        Windows::with_bits(best_bits(per_unit, max_bits), work_units)
    }

    /// ec-gpu-gen's unsigned kernel's split, as the old device phase chose it: the window a
    /// little wider than log2 of the terms a unit gets, at most 10 bits.
    #[cfg(any(test, feature = "bench"))]
    pub fn unsigned(terms: usize, work_units: usize) -> Windows {
        let per_unit = terms.div_ceil(work_units.max(1)).max(1);
        let bits = (per_unit.ilog2() as usize + 2).clamp(1, MAX_UNSIGNED_BITS);
        Windows::with_bits(bits, work_units)
    }

    fn with_bits(bits: usize, work_units: usize) -> Windows {
        let windows = EXPONENT_BITS.div_ceil(bits);
        Windows {
            bits,
            windows,
            groups: (work_units / windows).max(1),
        }
    }

    /// Σ over windows, most significant first: acc ← acc·2^bits + Σ_groups result[g][w].
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
        let mut acc = C::identity();
        let mut done = 0;
        for sum in per_window {
            let bits = self.bits.min(EXPONENT_BITS - done);
            for _ in 0..bits {
                acc = acc.double();
            }
            acc += sum;
            done += bits;
        }
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_cover_every_exponent_bit_and_fit_the_work_units() {
        for (terms, units) in [
            (1, 256),
            (255, 256),
            (10_000, 256),
            (1 << 22, 8192),
            (1 << 22, 256),
            (7, 128),
        ] {
            for w in [
                Windows::signed(terms, units, MAX_SIGNED_BITS),
                Windows::signed(terms, units, BASE_SIGNED_BITS),
                Windows::unsigned(terms, units),
            ] {
                assert!(w.bits * w.windows >= EXPONENT_BITS, "{w:?}");
                assert!(
                    (w.bits - 1) * w.windows < EXPONENT_BITS,
                    "{w:?}: a window too many"
                );
                assert!(w.windows * w.groups <= units.max(w.windows), "{w:?}");
            }
            assert!(Windows::signed(terms, units, BASE_SIGNED_BITS).bits <= BASE_SIGNED_BITS);
            assert!(Windows::unsigned(terms, units).bits <= MAX_UNSIGNED_BITS);
        }
    }

    #[test]
    fn the_window_grows_with_the_terms_a_unit_gets_until_its_buckets_cost_more() {
        // 16 Ki terms a unit (a 2 KiB PoRep's H on PoCL's 256 units): 14, 15 and 16 bits all
        // cost 327,680 additions (19·16 Ki + 2^14, …), against 427,008 at 10 bits; the
        // narrowest of equals holds the fewest buckets.
        assert_eq!(best_bits(16 << 10, MAX_SIGNED_BITS), 14);
        assert_eq!(best_bits(16 << 10, BASE_SIGNED_BITS), 11);
        // One term a unit still pays ⌈256/b⌉ additions: 4 bits (64 + 16) beat 1 (256 + 2).
        assert_eq!(best_bits(1, MAX_SIGNED_BITS), 4);
        let widths: Vec<usize> = (0..24)
            .map(|k| best_bits(1 << k, MAX_SIGNED_BITS))
            .collect();
        assert!(widths.windows(2).all(|p| p[0] <= p[1]), "{widths:?}");
        assert_eq!(*widths.last().unwrap(), MAX_SIGNED_BITS);
        assert_eq!(signed_buckets(11), 1024);
        assert_eq!(signed_buckets(1), 1);
    }
}

//! Multi-scalar multiplication on the CPU with blst's Pippenger (measured ~2x faster per core
//! than bellperson's CPU multiexp, see BRIEF). Zero scalars cost nothing in Pippenger's buckets
//! and ones cost a single bucket addition, so the sparse, mostly-0/1 witness vectors of Filecoin
//! circuits are passed as they are, without gathering points.
//!
//! The work is split into tiles (a window of scalar bits over a row of points, blst's
//! `tile_pippenger`) that run on the thread pool of the calling thread's OS priority
//! ([`crate::threads::pool`]): a background partition's multiexp yields the cores to a deadline
//! partition's, where blst's own pool would run both at one priority.

use std::ops::Range;

use blst::{blst_p1, blst_p1_affine, blst_p2, blst_p2_affine, byte, limb_t, MultiPoint};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use group::Group;
use rayon::prelude::*;

use crate::synthesis::Density;
use crate::threads;

/// Little-endian 32-byte scalars, laid out back to back as blst wants them.
pub struct ScalarBytes(Storage);

/// A run of scalars of a [`ScalarBytes`] (all of them, or a [`Scalars::slice`]).
#[derive(Clone, Copy)]
pub struct Scalars<'a>(&'a [u8]);

impl<'a> Scalars<'a> {
    pub fn len(&self) -> usize {
        self.0.len() / 32
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The scalars' bytes, 32 per scalar.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.0
    }

    /// The scalars at positions `range`.
    pub fn slice(&self, range: Range<usize>) -> Scalars<'a> {
        Scalars(&self.0[range.start * 32..range.end * 32])
    }
}

enum Storage {
    Bytes(Vec<u8>),
    /// A `Vec<Fr>` whose elements were overwritten, each with its own 32 little-endian bytes
    /// (see [`ScalarBytes::dense_in_place`]); never read as field elements again.
    Reused(Vec<Fr>),
}

// `dense_in_place` writes each scalar's 32 bytes over the scalar itself.
const _: () = assert!(std::mem::size_of::<Fr>() == 32);

impl ScalarBytes {
    pub fn len(&self) -> usize {
        self.as_bytes().len() / 32
    }

    pub fn is_empty(&self) -> bool {
        self.as_bytes().is_empty()
    }

    /// The scalars' bytes, 32 per scalar.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Storage::Bytes(b) => b,
            // SAFETY: the vector's `len * 32` bytes are initialised (each element was written
            // whole by `dense_in_place`), u8 needs no alignment, and the borrow of `self` keeps
            // the vector alive and unchanged for the slice's lifetime.
            Storage::Reused(v) => unsafe {
                std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), v.len() * 32)
            },
        }
    }

    /// All the scalars.
    pub fn view(&self) -> Scalars<'_> {
        Scalars(self.as_bytes())
    }

    /// All of `scalars`.
    pub fn dense(scalars: &[Fr]) -> Self {
        let mut out = vec![0u8; scalars.len() * 32];
        threads::pool().install(|| {
            out.par_chunks_mut(32 * 4096)
                .zip(scalars.par_chunks(4096))
                .for_each(|(o, s)| {
                    for (o, s) in o.chunks_mut(32).zip(s) {
                        o.copy_from_slice(&s.to_bytes_le());
                    }
                })
        });
        ScalarBytes(Storage::Bytes(out))
    }

    /// All of `scalars`, converted where they lie: no second buffer, so the device phase holds
    /// the H coefficients once, not twice, during the H MSM.
    pub fn dense_in_place(mut scalars: Vec<Fr>) -> Self {
        threads::pool().install(|| {
            scalars.par_chunks_mut(4096).for_each(|chunk| {
                for s in chunk {
                    let bytes = s.to_bytes_le();
                    // SAFETY: `s` is a valid, exclusively borrowed 32-byte location (size checked
                    // above) and `[u8; 32]` needs no alignment. Every bit pattern is a valid `Fr`
                    // representation in memory ([u64; 4]), and the value is only read back as bytes.
                    unsafe { std::ptr::write((s as *mut Fr).cast::<[u8; 32]>(), bytes) };
                }
            })
        });
        ScalarBytes(Storage::Reused(scalars))
    }

    /// Concatenation of parts, each the scalars of `values` whose bit in the density is set
    /// (all of them when the density is `None`).
    pub fn gathered(parts: &[(&[Fr], Option<&Density>)]) -> Self {
        let total: usize = parts
            .iter()
            .map(|(v, d)| d.map_or(v.len(), |d| d.count()))
            .sum();
        let mut out = Vec::with_capacity(total * 32);
        for (values, density) in parts {
            match density {
                None => out.extend(values.iter().flat_map(|s| s.to_bytes_le())),
                Some(d) => out.extend(
                    values
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| d.get(*i))
                        .flat_map(|(_, s)| s.to_bytes_le()),
                ),
            }
        }
        ScalarBytes(Storage::Bytes(out))
    }
}

// SAFETY: blstrs declares `G1Affine` / `G2Affine` / `G1Projective` / `G2Projective` as
// `#[repr(transparent)]` wrappers of blst's `blst_p1_affine` / `blst_p2_affine` / `blst_p1` /
// `blst_p2`; the sizes are checked at compile time below.
const _: () = assert!(std::mem::size_of::<G1Affine>() == std::mem::size_of::<blst_p1_affine>());
const _: () = assert!(std::mem::size_of::<G2Affine>() == std::mem::size_of::<blst_p2_affine>());
const _: () = assert!(std::mem::size_of::<G1Projective>() == std::mem::size_of::<blst_p1>());
const _: () = assert!(std::mem::size_of::<G2Projective>() == std::mem::size_of::<blst_p2>());

/// Bits of a scalar (BLS12-381's r is below 2^255).
const SCALAR_BITS: usize = 255;
/// Fewer points than this in a row cost more in bucket sums than they save in parallelism.
const MIN_ROW_POINTS: usize = 1 << 12;

/// `sum(bases[i] * scalars[i])` over G1. `bases` and `scalars` must have the same length.
pub fn msm_g1(bases: &[G1Affine], scalars: Scalars<'_>) -> G1Projective {
    msm_g1_in_steps(bases, scalars, &mut || {})
}

/// [`msm_g1`], calling `between` at each step boundary inside it (see [`tiled`]).
pub fn msm_g1_in_steps(
    bases: &[G1Affine],
    scalars: Scalars<'_>,
    between: &mut dyn FnMut(),
) -> G1Projective {
    assert_eq!(bases.len(), scalars.len(), "msm_g1 length mismatch");
    // SAFETY: see the layout note above.
    let points: &[blst_p1_affine] =
        unsafe { std::slice::from_raw_parts(bases.as_ptr().cast(), bases.len()) };
    tiled::<G1>(points, scalars.as_bytes(), between)
}

/// `sum(bases[i] * scalars[i])` over G2. `bases` and `scalars` must have the same length.
pub fn msm_g2(bases: &[G2Affine], scalars: Scalars<'_>) -> G2Projective {
    msm_g2_in_steps(bases, scalars, &mut || {})
}

/// [`msm_g2`] on `pool`'s threads (not the pool of the caller's priority).
pub fn msm_g2_on(
    pool: &rayon::ThreadPool,
    bases: &[G2Affine],
    scalars: Scalars<'_>,
) -> G2Projective {
    assert_eq!(bases.len(), scalars.len(), "msm_g2 length mismatch");
    // SAFETY: see the layout note above.
    let points: &[blst_p2_affine] =
        unsafe { std::slice::from_raw_parts(bases.as_ptr().cast(), bases.len()) };
    tiled_on::<G2>(pool, points, scalars.as_bytes(), &mut || {})
}

/// Most host bytes of bucket scratch a G2 multiexp of `terms` terms takes on `threads` threads
/// (a tile's a thread; no row is longer than [`MAX_ROW_POINTS`]).
pub fn msm_g2_scratch_bytes(threads: usize, terms: usize) -> u64 {
    (threads * <G2 as Tiles>::scratch_bytes(terms.clamp(1, MAX_ROW_POINTS))) as u64
}

/// [`msm_g2`], calling `between` at each step boundary inside it (see [`tiled`]).
pub fn msm_g2_in_steps(
    bases: &[G2Affine],
    scalars: Scalars<'_>,
    between: &mut dyn FnMut(),
) -> G2Projective {
    assert_eq!(bases.len(), scalars.len(), "msm_g2 length mismatch");
    // SAFETY: see the layout note above.
    let points: &[blst_p2_affine] =
        unsafe { std::slice::from_raw_parts(bases.as_ptr().cast(), bases.len()) };
    tiled::<G2>(points, scalars.as_bytes(), between)
}

/// One of blst's groups, as the tiled multiexp needs it.
trait Tiles {
    type Affine: Sync;
    type Point: Group + Send;
    /// Bytes of scratch blst's Pippenger wants for `npoints` (its buckets for the window it
    /// would choose: `sizeof(bucket) << (window - 1)`).
    fn scratch_bytes(npoints: usize) -> usize;
    /// The whole multiexp by blst's own code (for fewer than [`MIN_ROW_POINTS`] points).
    fn small(points: &[Self::Affine], scalars: &[u8]) -> Self::Point;
    /// `sum(points[i] * (bits bit0..bit0+window of scalars[i]))`, Booth-encoded like blst's own
    /// multiexp (the top window takes the carry), over two points or more; `scratch` must hold
    /// `scratch_bytes(n)` for an `n` whose window is at least `window`.
    fn tile(
        points: &[Self::Affine],
        scalars: &[u8],
        scratch: &mut [limb_t],
        bit0: usize,
        window: usize,
    ) -> Self::Point;
}

macro_rules! blst_tiles {
    ($group:ident, $affine:ty, $point:ty, $blst_point:ty, $sizeof:ident, $tile:ident) => {
        struct $group;

        impl Tiles for $group {
            type Affine = $affine;
            type Point = $point;

            fn scratch_bytes(npoints: usize) -> usize {
                // SAFETY: a pure function of its argument.
                unsafe { blst::$sizeof(npoints) }
            }

            fn small(points: &[$affine], scalars: &[u8]) -> $point {
                if points.is_empty() {
                    return <$point>::identity();
                }
                let sum: $blst_point = points.mult(scalars, SCALAR_BITS);
                // SAFETY: see the layout note above.
                unsafe { std::mem::transmute::<$blst_point, $point>(sum) }
            }

            fn tile(
                points: &[$affine],
                scalars: &[u8],
                scratch: &mut [limb_t],
                bit0: usize,
                window: usize,
            ) -> $point {
                assert!(points.len() >= 2 && points.len() * 32 == scalars.len());
                debug_assert!(
                    std::mem::size_of_val(scratch) >= Self::scratch_bytes(1) << (window - 1)
                );
                // A second, null pointer tells blst that the first one points at a contiguous
                // array (of points, of 32-byte scalars).
                let p: [*const $affine; 2] = [points.as_ptr(), std::ptr::null()];
                let s: [*const byte; 2] = [scalars.as_ptr(), std::ptr::null()];
                let mut out = <$blst_point>::default();
                // SAFETY: `points` and `scalars` hold `points.len()` entries each (checked by
                // the callers), and `scratch` holds the buckets of `window` (checked above).
                unsafe {
                    blst::$tile(
                        &mut out,
                        p.as_ptr(),
                        points.len(),
                        s.as_ptr(),
                        SCALAR_BITS,
                        scratch.as_mut_ptr(),
                        bit0,
                        window,
                    );
                    // SAFETY: see the layout note above.
                    std::mem::transmute::<$blst_point, $point>(out)
                }
            }
        }
    };
}

blst_tiles!(
    G1,
    blst_p1_affine,
    G1Projective,
    blst_p1,
    blst_p1s_mult_pippenger_scratch_sizeof,
    blst_p1s_tile_pippenger
);
blst_tiles!(
    G2,
    blst_p2_affine,
    G2Projective,
    blst_p2,
    blst_p2s_mult_pippenger_scratch_sizeof,
    blst_p2s_tile_pippenger
);

/// blst's Pippenger window for rows of `npoints` points, read off its scratch size.
fn window<T: Tiles>(npoints: usize) -> usize {
    let buckets = T::scratch_bytes(npoints) / T::scratch_bytes(1);
    buckets.trailing_zeros() as usize + 1
}

/// The multiexp as rows × windows tiles on the calling thread's pool, summed per window and
/// combined from the top window down (doubling `window` times between windows). The tiles run
/// in steps of about one tile per thread, and `between` runs after every step but the last: the
/// preemption points inside a multiexp.
fn tiled<T: Tiles>(points: &[T::Affine], scalars: &[u8], between: &mut dyn FnMut()) -> T::Point {
    if points.len() < MIN_ROW_POINTS {
        return T::small(points, scalars);
    }
    tiled_on::<T>(&threads::pool(), points, scalars, between)
}

/// [`tiled`] on `pool`.
fn tiled_on<T: Tiles>(
    pool: &rayon::ThreadPool,
    points: &[T::Affine],
    scalars: &[u8],
    between: &mut dyn FnMut(),
) -> T::Point {
    if points.len() < MIN_ROW_POINTS {
        // Too little to share out (and blst's tiles need two points or more).
        return T::small(points, scalars);
    }
    tiles_on::<T>(pool, pool.current_num_threads(), points, scalars, between)
}

/// Most points in a row: a tile (one window over a row) stays under about a second of a core,
/// which bounds a step. More rows cost a little (each sums its own buckets, with a smaller
/// window), so rows are only cut this fine for long multiexps.
const MAX_ROW_POINTS: usize = 1 << 20;

/// [`tiled`] on `pool`, in steps of at least `threads` tiles where the points allow.
fn tiles_on<T: Tiles>(
    pool: &rayon::ThreadPool,
    threads: usize,
    points: &[T::Affine],
    scalars: &[u8],
    between: &mut dyn FnMut(),
) -> T::Point {
    let n = points.len();
    // Windows first (no extra bucket sums), then rows, each row at least MIN_ROW_POINTS long (the
    // last one too, as rows <= n / MIN_ROW_POINTS) and at most MAX_ROW_POINTS.
    let windows_of = |w: usize| SCALAR_BITS / w + 1;
    let rows = threads
        .div_ceil(windows_of(window::<T>(n)))
        .max(n.div_ceil(MAX_ROW_POINTS))
        .min(n / MIN_ROW_POINTS)
        .max(1);
    let row_len = n.div_ceil(rows);
    let w = window::<T>(row_len);
    let windows = windows_of(w);
    let scratch_words = T::scratch_bytes(row_len).div_ceil(std::mem::size_of::<limb_t>());
    let tile = |scratch: &mut Vec<limb_t>, (row, k): (usize, usize)| {
        let start = row * row_len;
        let end = (start + row_len).min(n);
        T::tile(
            &points[start..end],
            &scalars[start * 32..end * 32],
            scratch,
            k * w,
            w,
        )
    };

    // Windows top down, all rows of a window in the same step.
    let per_step = threads.div_ceil(rows).max(1);
    let mut acc = T::Point::identity();
    let mut top = windows;
    while top > 0 {
        let low = top.saturating_sub(per_step);
        let sums: Vec<T::Point> = pool.install(|| {
            (0..(top - low) * rows)
                .into_par_iter()
                .map_init(
                    || vec![0 as limb_t; scratch_words],
                    |scratch, t| tile(scratch, (t % rows, top - 1 - t / rows)),
                )
                .collect()
        });
        for window in sums.chunks(rows) {
            for _ in 0..w {
                acc = acc.double();
            }
            for sum in window {
                acc += sum;
            }
        }
        top = low;
        if top > 0 {
            between();
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use group::Curve;
    use rand::SeedableRng;

    /// Against blst's own multithreaded multiexp, at sizes that give one row, several rows and a
    /// top window that is only the carry bit.
    #[test]
    fn tiled_multiexp_matches_blst() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for n in [1, 3, 100, MIN_ROW_POINTS + 1, 5 * MIN_ROW_POINTS] {
            let bases: Vec<G1Affine> = (0..n)
                .map(|_| G1Projective::random(&mut rng).to_affine())
                .collect();
            let mut values: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
            values[0] = -Fr::ONE; // the largest scalar: every window set
            let scalars = ScalarBytes::dense(&values);
            let points: &[blst_p1_affine] =
                unsafe { std::slice::from_raw_parts(bases.as_ptr().cast(), n) };
            let want: blst_p1 = points.mult(scalars.as_bytes(), SCALAR_BITS);
            let want = unsafe { std::mem::transmute::<blst_p1, G1Projective>(want) };
            assert_eq!(
                msm_g1(&bases, scalars.view()).to_affine(),
                want.to_affine(),
                "n = {n}"
            );
            if n >= MIN_ROW_POINTS {
                // As many rows as the points allow (a machine with hundreds of cores), and one
                // tile per step (a machine with one), with a step boundary between steps.
                let pool = threads::pool();
                for threads in [1000, 1] {
                    let mut steps = 1;
                    let sum =
                        tiles_on::<G1>(&pool, threads, points, scalars.as_bytes(), &mut || {
                            steps += 1
                        });
                    assert_eq!(
                        sum.to_affine(),
                        want.to_affine(),
                        "n = {n}, {threads} threads"
                    );
                    assert!(threads > 1 || steps > 1, "n = {n}: {steps} steps");
                }
            }
        }
        let g2: Vec<G2Affine> = (0..300)
            .map(|_| G2Projective::random(&mut rng).to_affine())
            .collect();
        let values: Vec<Fr> = (0..300).map(|_| Fr::random(&mut rng)).collect();
        let want: G2Projective = g2.iter().zip(&values).map(|(b, s)| *b * s).sum();
        let scalars = ScalarBytes::dense(&values);
        assert_eq!(msm_g2(&g2, scalars.view()).to_affine(), want.to_affine());
    }
}

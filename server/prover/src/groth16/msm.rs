//! Multi-scalar multiplication on the CPU with blst's Pippenger (measured ~2x faster per core
//! than bellperson's CPU multiexp, see BRIEF). Zero scalars cost nothing in Pippenger's buckets
//! and ones cost a single bucket addition, so the sparse, mostly-0/1 witness vectors of Filecoin
//! circuits are passed as they are, without gathering points.

use blst::{blst_p1, blst_p1_affine, blst_p2, blst_p2_affine, MultiPoint};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use group::Group;
use rayon::prelude::*;

use crate::synthesis::Density;

/// Little-endian 32-byte scalars, laid out back to back as blst wants them.
pub struct ScalarBytes(Storage);

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

    /// All of `scalars`.
    pub fn dense(scalars: &[Fr]) -> Self {
        let mut out = vec![0u8; scalars.len() * 32];
        out.par_chunks_mut(32 * 4096)
            .zip(scalars.par_chunks(4096))
            .for_each(|(o, s)| {
                for (o, s) in o.chunks_mut(32).zip(s) {
                    o.copy_from_slice(&s.to_bytes_le());
                }
            });
        ScalarBytes(Storage::Bytes(out))
    }

    /// All of `scalars`, converted where they lie: no second buffer, so the device phase holds
    /// the H coefficients once, not twice, during the H MSM.
    pub fn dense_in_place(mut scalars: Vec<Fr>) -> Self {
        scalars.par_chunks_mut(4096).for_each(|chunk| {
            for s in chunk {
                let bytes = s.to_bytes_le();
                // SAFETY: `s` is a valid, exclusively borrowed 32-byte location (size checked
                // above) and `[u8; 32]` needs no alignment. Every bit pattern is a valid `Fr`
                // representation in memory ([u64; 4]), and the value is only read back as bytes.
                unsafe { std::ptr::write((s as *mut Fr).cast::<[u8; 32]>(), bytes) };
            }
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

/// `sum(bases[i] * scalars[i])` over G1. `bases` and `scalars` must have the same length.
pub fn msm_g1(bases: &[G1Affine], scalars: &ScalarBytes) -> G1Projective {
    assert_eq!(bases.len(), scalars.len(), "msm_g1 length mismatch");
    if bases.is_empty() {
        return G1Projective::identity();
    }
    // SAFETY: see the layout note above.
    let points: &[blst_p1_affine] =
        unsafe { std::slice::from_raw_parts(bases.as_ptr().cast(), bases.len()) };
    let res: blst_p1 = points.mult(scalars.as_bytes(), 255);
    // SAFETY: see the layout note above.
    unsafe { std::mem::transmute::<blst_p1, G1Projective>(res) }
}

/// `sum(bases[i] * scalars[i])` over G2. `bases` and `scalars` must have the same length.
pub fn msm_g2(bases: &[G2Affine], scalars: &ScalarBytes) -> G2Projective {
    assert_eq!(bases.len(), scalars.len(), "msm_g2 length mismatch");
    if bases.is_empty() {
        return G2Projective::identity();
    }
    // SAFETY: see the layout note above.
    let points: &[blst_p2_affine] =
        unsafe { std::slice::from_raw_parts(bases.as_ptr().cast(), bases.len()) };
    let res: blst_p2 = points.mult(scalars.as_bytes(), 255);
    // SAFETY: see the layout note above.
    unsafe { std::mem::transmute::<blst_p2, G2Projective>(res) }
}

//! Multi-scalar multiplication on the device with ec-gpu-gen's bucket multiexp kernel, driven by
//! our own host code: the terms are cut into chunks that fit this worker's share of device
//! memory (and the configured cap), each chunk is one kernel launch over `windows × groups`
//! work items, and the per-item results are reduced on the host.
//!
//! Kernel conventions (`POINT_multiexp` in ec-gpu-gen's multiexp.cl): bases are affine points in
//! blst's layout (Montgomery limbs, no infinity flag), exponents are canonical little-endian
//! 32-byte scalars, results are Jacobian points in blst's layout. Work item `gid` handles window
//! `gid % windows` (window 0 holds the most significant bits) of the terms of group
//! `gid / windows`.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use ec_gpu::GpuName;
use group::prime::PrimeCurveAffine;
use group::Group;

use super::kernels::{multiexp_kernel, read, write};
use super::queue::{DeviceQueue, LOCAL_WORK_SIZE};
use crate::error::{ProverError, Result};
use crate::groth16::Scalars;

/// Bits of an exponent as the kernel reads it (the scalar's 32 bytes).
const EXPONENT_BITS: usize = 256;
/// Largest window: 2^10 − 1 buckets per work item. Larger windows leave too few work items.
const MAX_WINDOW_BITS: usize = 10;
/// Bytes of one exponent.
const EXPONENT_BYTES: usize = 32;

/// `sum(bases[i] * scalars[i])` over G1 on the device.
pub fn msm_g1(q: &DeviceQueue, bases: &[G1Affine], scalars: Scalars<'_>) -> Result<G1Projective> {
    multiexp(q, bases, scalars)
}

/// `sum(bases[i] * scalars[i])` over G2 on the device.
pub fn msm_g2(q: &DeviceQueue, bases: &[G2Affine], scalars: Scalars<'_>) -> Result<G2Projective> {
    multiexp(q, bases, scalars)
}

/// How one MSM is cut up for a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkPlan {
    /// Terms per kernel launch.
    pub chunk_terms: usize,
    /// Work items (windows × groups) of one launch.
    pub work_units: usize,
}

/// The chunk size for `terms` terms of `G` given a memory `share`: what is left after the
/// buckets and results of every work item, divided by the size of a term, capped by
/// `max_chunk_terms` and the device's largest buffer. Where the buckets of `work_units` items
/// would take more than half the share (many compute units, several workers on a small
/// device), the work units are halved until they fit, down to one work group.
pub fn plan<G: PrimeCurveAffine>(
    terms: usize,
    work_units: usize,
    share: u64,
    max_alloc: u64,
    max_chunk_terms: usize,
) -> Result<ChunkPlan> {
    let proj = std::mem::size_of::<G::Curve>() as u64;
    let term = (std::mem::size_of::<G>() + EXPONENT_BYTES) as u64;
    let fixed = |units: usize| units as u64 * ((1u64 << MAX_WINDOW_BITS) + 1) * proj;
    let mut work_units = work_units.max(1);
    while work_units > LOCAL_WORK_SIZE && fixed(work_units) > share / 2 {
        work_units /= 2;
    }
    let by_memory = share.saturating_sub(fixed(work_units)) / term;
    let by_alloc = max_alloc / std::mem::size_of::<G>() as u64;
    let chunk = (by_memory.min(by_alloc) as usize)
        .min(max_chunk_terms)
        .min(terms.max(1));
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
    })
}

fn multiexp<G>(q: &DeviceQueue, bases: &[G], scalars: Scalars<'_>) -> Result<G::Curve>
where
    G: PrimeCurveAffine + GpuName,
{
    assert_eq!(bases.len(), scalars.len(), "multiexp length mismatch");
    if bases.is_empty() {
        return Ok(G::Curve::identity());
    }
    let plan = plan::<G>(
        bases.len(),
        q.work_units(),
        q.share(),
        q.max_alloc(),
        q.max_chunk_terms,
    )?;
    let proj = std::mem::size_of::<G::Curve>();
    let bucket_items = plan.work_units * ((1 << MAX_WINDOW_BITS) - 1);
    let bytes = plan.chunk_terms * (std::mem::size_of::<G>() + EXPONENT_BYTES)
        + bucket_items * proj
        + plan.work_units * proj;
    let _grant = q.reserve(bytes as u64)?;

    let mut base_buf = q.program.buffer::<G>(plan.chunk_terms)?;
    let mut exp_buf = q.program.buffer::<u8>(plan.chunk_terms * EXPONENT_BYTES)?;
    let bucket_buf = q.program.buffer::<G::Curve>(bucket_items)?;
    let result_buf = q.program.buffer::<G::Curve>(plan.work_units)?;
    let kernel = q.program.kernel(&multiexp_kernel::<G>())?;

    let exps = scalars.as_bytes();
    let mut acc = G::Curve::identity();
    for (chunk, bases) in bases.chunks(plan.chunk_terms).enumerate() {
        let exps =
            &exps[chunk * plan.chunk_terms * EXPONENT_BYTES..][..bases.len() * EXPONENT_BYTES];
        write(&q.queue, &mut base_buf, bases)?;
        write(&q.queue, &mut exp_buf, exps)?;
        let shape = Windows::for_chunk(bases.len(), plan.work_units);
        let items = shape.windows * shape.groups;
        q.run(
            &kernel,
            items.div_ceil(LOCAL_WORK_SIZE),
            LOCAL_WORK_SIZE,
            |k| {
                // SAFETY: the argument list of `POINT_multiexp`, in order; the kernel returns early
                // for work items past windows × groups, and the bucket buffer holds
                // 2^window − 1 buckets for each of them.
                unsafe {
                    k.set_arg(&base_buf)
                        .set_arg(&bucket_buf)
                        .set_arg(&result_buf)
                        .set_arg(&exp_buf)
                        .set_arg(&(bases.len() as u32))
                        .set_arg(&(shape.groups as u32))
                        .set_arg(&(shape.windows as u32))
                        .set_arg(&(shape.bits as u32));
                }
            },
        )?;
        let mut results = vec![G::Curve::identity(); items];
        read(&q.queue, &result_buf, &mut results)?;
        acc += shape.reduce(&results);
    }
    Ok(acc)
}

/// The window split of one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Windows {
    /// Bits per window.
    bits: usize,
    /// Windows covering the 256 exponent bits.
    windows: usize,
    /// Groups of terms, each handled by `windows` work items.
    groups: usize,
}

impl Windows {
    /// Small chunks get small windows (more windows, so more work items stay busy); about four
    /// terms per bucket once the chunk is spread over the work units.
    fn for_chunk(terms: usize, work_units: usize) -> Windows {
        let per_unit = terms.div_ceil(work_units).max(1);
        let bits = (per_unit.ilog2() as usize + 2).clamp(1, MAX_WINDOW_BITS);
        let windows = EXPONENT_BITS.div_ceil(bits);
        let groups = (work_units / windows).max(1);
        Windows {
            bits,
            windows,
            groups,
        }
    }

    /// Σ over windows, most significant first: acc ← acc·2^bits + Σ_groups result[g][w].
    fn reduce<C: Group>(&self, results: &[C]) -> C {
        let mut acc = C::identity();
        let mut done = 0;
        for w in 0..self.windows {
            let bits = self.bits.min(EXPONENT_BITS - done);
            for _ in 0..bits {
                acc = acc.double();
            }
            for g in 0..self.groups {
                acc += results[g * self.windows + w];
            }
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
            (7, 128),
        ] {
            let w = Windows::for_chunk(terms, units);
            assert!(w.bits * w.windows >= EXPONENT_BITS, "{w:?}");
            assert!(w.bits <= MAX_WINDOW_BITS);
            assert!(w.windows * w.groups <= units.max(w.windows), "{w:?}");
        }
    }

    #[test]
    fn chunks_are_capped_by_memory_and_by_the_configured_limit() {
        // G1: 144-byte Jacobian buckets, 96 + 32 bytes a term.
        let fixed = |units: u64| units * 1025 * 144;
        let share = 2 * fixed(256) + 128 * 1000;
        let p = plan::<G1Affine>(1 << 30, 256, share, u64::MAX, usize::MAX).unwrap();
        assert_eq!(
            p,
            ChunkPlan {
                chunk_terms: (fixed(256) / 128 + 1000) as usize,
                work_units: 256
            }
        );
        let p = plan::<G1Affine>(1 << 20, 256, u64::MAX / 2, u64::MAX, 300).unwrap();
        assert_eq!(p.chunk_terms, 300);
        let p = plan::<G1Affine>(50, 256, u64::MAX / 2, u64::MAX, 300).unwrap();
        assert_eq!(p.chunk_terms, 50);
        let p = plan::<G1Affine>(1 << 30, 256, u64::MAX / 2, 96 * 700, usize::MAX).unwrap();
        assert_eq!(p.chunk_terms, 700, "the largest buffer caps the bases");
    }

    #[test]
    fn work_units_shrink_when_their_buckets_would_crowd_out_the_terms() {
        let fixed = |units: u64| units * 1025 * 144;
        let p = plan::<G1Affine>(1 << 30, 256, fixed(256), u64::MAX, usize::MAX).unwrap();
        assert_eq!(p.work_units, 128);
        assert_eq!(p.chunk_terms as u64, (fixed(256) - fixed(128)) / 128);
        assert!(plan::<G1Affine>(50, 256, 1000, u64::MAX, 300).is_err());
    }
}

//! The device phase's multiexps as they were before the device-resident plan, for the device
//! benchmark's side-by-side ratio only (feature `bench`): every step gathers its scalars on the
//! host (one thread, byte by byte), copies its bases and scalars up with blocking copies, runs
//! ec-gpu-gen's own bucket multiexp (one work item per window and group, bits read most
//! significant first, no split of zeros and ones), waits after the launch and reduces on the
//! host. h is computed by the current device FFT and read back (the old path read it back too;
//! it also sent c up, which this one does not, so its byte count is a lower bound of the old).

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ec_gpu::GpuName;
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::Group;

use super::fft;
use super::msm_plan::plan;
use super::queue::{DeviceQueue, LOCAL_WORK_SIZE};
use super::windows::Windows;
use crate::error::{ProverError, Result};
use crate::groth16::{DeviceOps, Scalars};
use crate::synthesis::Abc;

/// The old steps on one queue.
pub struct LegacyOps<'a> {
    pub queue: &'a DeviceQueue,
}

/// The old device step: 2^24 terms.
const LEGACY_STEP_POINTS: usize = 1 << 24;

impl DeviceOps for LegacyOps<'_> {
    fn compute_h(&self, abc: Abc) -> Result<Vec<Fr>> {
        let q = self.queue;
        let on = fft::compute_h(q, &abc.a, &abc.b)?.ok_or_else(|| ProverError::Device {
            backend: "opencl".into(),
            reason: "no room for the h polynomial".into(),
        })?;
        let mut h = vec![Fr::ZERO; on.len];
        q.read(&on.h, &mut h)?;
        Ok(h)
    }

    fn msm_g1(&self, bases: &[G1Affine], scalars: Scalars<'_>) -> Result<G1Projective> {
        multiexp(self.queue, bases, scalars)
    }

    fn msm_g2(&self, bases: &[G2Affine], scalars: Scalars<'_>) -> Result<G2Projective> {
        multiexp(self.queue, bases, scalars)
    }

    fn step_points(&self) -> usize {
        LEGACY_STEP_POINTS
    }
}

/// ec-gpu-gen's `POINT_multiexp` over host bases and canonical scalar bytes, chunk by chunk.
fn multiexp<G>(q: &DeviceQueue, bases: &[G], scalars: Scalars<'_>) -> Result<G::Curve>
where
    G: PrimeCurveAffine + GpuName,
{
    if bases.is_empty() {
        return Ok(G::Curve::identity());
    }
    let p = plan::<G>(
        bases.len(),
        q.work_units(),
        q.share(),
        q.max_alloc(),
        q.max_chunk_terms,
        true,
    )?;
    let bucket_items = p.work_units * ((1 << 10) - 1);
    let bytes = p.chunk_terms * (std::mem::size_of::<G>() + 32)
        + (bucket_items + p.work_units) * std::mem::size_of::<G::Curve>();
    let _grant = q.reserve(bytes as u64)?;
    let mut base_buf = q.program.buffer::<G>(p.chunk_terms)?;
    let mut exp_buf = q.program.buffer::<u8>(p.chunk_terms * 32)?;
    let bucket_buf = q.program.buffer::<G::Curve>(bucket_items)?;
    let result_buf = q.program.buffer::<G::Curve>(p.work_units)?;
    let kernel = q.program.kernel(&format!("{}_multiexp", G::name()))?;
    let exps = scalars.as_bytes();
    let mut acc = G::Curve::identity();
    for (chunk, bases) in bases.chunks(p.chunk_terms).enumerate() {
        let exps = &exps[chunk * p.chunk_terms * 32..][..bases.len() * 32];
        q.write(&mut base_buf, 0, bases)?;
        q.write(&mut exp_buf, 0, exps)?;
        let shape = Windows::unsigned(bases.len(), p.work_units);
        let items = shape.windows * shape.groups;
        q.launch(
            &kernel,
            items.div_ceil(LOCAL_WORK_SIZE),
            LOCAL_WORK_SIZE,
            |k| {
                // SAFETY: the argument list of ec-gpu-gen's `POINT_multiexp`, in order; the kernel
                // returns early past windows × groups, and the bucket buffer holds 2^window − 1
                // buckets for each work item.
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
        q.finish()?;
        let mut results = vec![G::Curve::identity(); items];
        q.read(&result_buf, &mut results)?;
        acc += shape.reduce(&results);
    }
    Ok(acc)
}

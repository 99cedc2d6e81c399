//! The sorted-bucket multiexp of a chunk's `rest` terms, after the split: the counting sort of
//! their signed digits by (window, digit) (`snarkd_sort.cl`: count, three scan passes,
//! scatter), each bucket's bases summed over its run of the sorted list
//! (`POINT_snarkd_bucket_sum`, a work item a slice of the list however uneven the buckets) and
//! each window's buckets weighed by their digits in parts (`POINT_snarkd_bucket_reduce`), all
//! enqueued without a wait. The host combines the parts (`windows.rs`: `Sorted::combine`).

use ec_gpu::GpuName;
use group::prime::PrimeCurveAffine;
use opencl3::kernel::{ExecuteKernel, Kernel};
use opencl3::memory::Buffer;

use super::kernels::{bucket_reduce_kernel, bucket_sum_kernel, SCAN_BLOCK};
use super::msm_plan::{reduce_items, ChunkPlan};
use super::queue::{DeviceQueue, LOCAL_WORK_SIZE};
use super::windows::buckets_of;
use crate::error::Result;

/// The device buffers of the sort and the buckets, sized for a plan's widest window.
pub(super) struct SortBuffers<G: PrimeCurveAffine> {
    bucket_counts: Buffer<u32>,
    starts: Buffer<u32>,
    block_sums: Buffer<u32>,
    sorted: Buffer<u32>,
    buckets: Buffer<G::Curve>,
    heads: Buffer<G::Curve>,
    /// The reduction's (T, S) pairs, read back.
    pub parts: Buffer<G::Curve>,
}

impl<G: PrimeCurveAffine> SortBuffers<G> {
    pub fn new(q: &DeviceQueue, plan: &ChunkPlan) -> Result<SortBuffers<G>> {
        let p = &q.program;
        let buckets = buckets_of(plan.window_bits);
        Ok(SortBuffers {
            bucket_counts: p.buffer::<u32>(buckets)?,
            starts: p.buffer::<u32>(buckets + 1)?,
            block_sums: p.buffer::<u32>(buckets.div_ceil(SCAN_BLOCK))?,
            sorted: p.buffer::<u32>(plan.capacity())?,
            buckets: p.buffer::<G::Curve>(buckets)?,
            heads: p.buffer::<G::Curve>(plan.work_units)?,
            parts: p.buffer::<G::Curve>(2 * reduce_items(plan.work_units))?,
        })
    }
}

/// The sort's and the buckets' kernels, created once a step.
pub(super) struct SortKernels {
    count: Kernel,
    scan_blocks: Kernel,
    scan_totals: Kernel,
    scan_add: Kernel,
    scatter: Kernel,
    bucket_sum: Kernel,
    bucket_reduce: Kernel,
}

impl SortKernels {
    pub fn new<G: GpuName>(q: &DeviceQueue) -> Result<SortKernels> {
        let k = |name: &str| q.program.kernel(name);
        Ok(SortKernels {
            count: k("snarkd_digit_count")?,
            scan_blocks: k("snarkd_scan_blocks")?,
            scan_totals: k("snarkd_scan_totals")?,
            scan_add: k("snarkd_scan_add")?,
            scatter: k("snarkd_digit_scatter")?,
            bucket_sum: k(&bucket_sum_kernel::<G>())?,
            bucket_reduce: k(&bucket_reduce_kernel::<G>())?,
        })
    }
}

/// What every kernel here reads its shape from (the split's counts, the chunk's length, the
/// widest window, the sorted list's room), passed in that order: each chooses the window from
/// the count on the device as `Sorted::new` does on the host.
pub(super) struct Shape<'a> {
    pub counts: &'a Buffer<u32>,
    pub chunk: u32,
    pub max_bits: u32,
    pub capacity: u32,
}

impl Shape<'_> {
    /// # Safety
    /// The kernel's next four parameters are `GLOBAL uint* split_counts, uint chunk,
    /// uint max_bits, uint capacity`.
    unsafe fn set<'k, 'a>(&self, k: &'k mut ExecuteKernel<'a>) -> &'k mut ExecuteKernel<'a> {
        // SAFETY: the caller's contract.
        unsafe {
            k.set_arg(self.counts)
                .set_arg(&self.chunk)
                .set_arg(&self.max_bits)
                .set_arg(&self.capacity)
        }
    }
}

/// The chunk's rest as the split left it, and the bases its positions index.
pub(super) struct Rest<'a, G> {
    pub rest: &'a Buffer<u32>,
    pub exps: &'a Buffer<blstrs::Scalar>,
    pub bases: &'a Buffer<G>,
    pub base_start: u32,
}

/// Enqueues the sort and the bucket sums of a chunk of `n` terms under `plan` (does not wait).
/// Each launch's work size covers the widest window the plan allows; the items past the
/// chunk's own shape return.
pub(super) fn enqueue<G: PrimeCurveAffine>(
    q: &DeviceQueue,
    k: &SortKernels,
    b: &mut SortBuffers<G>,
    shape: &Shape<'_>,
    rest: Rest<'_, G>,
    plan: &ChunkPlan,
    n: usize,
) -> Result<()> {
    let buckets = buckets_of(plan.window_bits);
    let units = plan.work_units;
    let local = LOCAL_WORK_SIZE;
    q.fill(&mut b.bucket_counts, 0u32, 0, buckets)?;
    let by_term = n.div_ceil(local);
    q.launch(&k.count, by_term, local, |e| {
        // SAFETY: the argument list of `snarkd_digit_count`; `bucket_counts` holds the buckets
        // of the widest window the plan allows.
        unsafe { shape.set(e.set_arg(rest.exps)).set_arg(&b.bucket_counts) };
    })?;
    q.launch(&k.scan_blocks, buckets.div_ceil(SCAN_BLOCK), local, |e| {
        // SAFETY: the argument list of `snarkd_scan_blocks`; `block_sums` holds one count a
        // block of the widest window's buckets.
        unsafe {
            shape
                .set(e)
                .set_arg(&b.bucket_counts)
                .set_arg(&b.starts)
                .set_arg(&b.block_sums)
        };
    })?;
    q.launch(&k.scan_totals, 1, local, |e| {
        // SAFETY: the argument list of `snarkd_scan_totals`; `starts` holds one more than the
        // buckets, the split's counts three.
        unsafe { shape.set(e).set_arg(&b.block_sums).set_arg(&b.starts) };
    })?;
    q.launch(&k.scan_add, buckets.div_ceil(local), local, |e| {
        // SAFETY: the argument list of `snarkd_scan_add`.
        unsafe { shape.set(e).set_arg(&b.block_sums).set_arg(&b.starts) };
    })?;
    q.launch(&k.scatter, by_term, local, |e| {
        // SAFETY: the argument list of `snarkd_digit_scatter`; `sorted` holds `capacity`
        // places, at least the chunk's digits at the window the kernels choose.
        unsafe {
            shape
                .set(e.set_arg(rest.exps).set_arg(rest.rest))
                .set_arg(&b.bucket_counts)
                .set_arg(&b.starts)
                .set_arg(&b.sorted)
        };
    })?;
    q.launch(&k.bucket_sum, units / local, local, |e| {
        // SAFETY: the argument list of `POINT_snarkd_bucket_sum`; `heads` holds a point a work
        // item, `buckets` one a bucket, and every listed term's base lies in the base buffer.
        unsafe {
            shape
                .set(e.set_arg(rest.bases).set_arg(&rest.base_start))
                .set_arg(&b.starts)
                .set_arg(&b.sorted)
                .set_arg(&b.buckets)
                .set_arg(&b.heads)
        };
    })?;
    let slice_items = units as u32;
    q.launch(&k.bucket_reduce, reduce_items(units) / local, local, |e| {
        // SAFETY: the argument list of `POINT_snarkd_bucket_reduce`; `parts` holds two points
        // a work item, and `slice_items` is the bucket sum's work size.
        unsafe {
            shape
                .set(e)
                .set_arg(&b.starts)
                .set_arg(&b.buckets)
                .set_arg(&b.heads)
                .set_arg(&slice_items)
                .set_arg(&b.parts)
        };
    })?;
    Ok(())
}

//! Multi-scalar multiplication on the device, in proportion to the witness: a step's scalars
//! are split on the device (`snarkd_split`) into zeros (dropped), ones (their bases summed with
//! mixed additions, `POINT_snarkd_sum_ones`) and the rest, whose signed digits are sorted by
//! (window, digit) with a counting sort (`snarkd_sort.cl`: count, scan, scatter) so that every
//! bucket's bases are summed over one list (`POINT_snarkd_bucket_sum`, a work item a slice of
//! the list however uneven the buckets) and each window's buckets are weighted by their digit
//! in parts (`POINT_snarkd_bucket_reduce`). The buckets are the chunk's, not a work item's, so
//! their memory does not grow with the work items and the window can be as wide as the terms
//! are worth (`windows.rs`). The scalars are read where they already lie on the device (the
//! witness buffer, through a term → position map for A and B, or h), so nothing is gathered or
//! converted on the host; the bases are the resident copy, or the chunk's slice of the host's
//! bases streamed up into one of two staging buffers (one where a step of one chunk has no
//! next step or two do not fit; `stream.rs`: through pinned memory, on the copy queue). How a
//! step is cut into chunks: `msm_plan.rs`; the sort and the buckets' launches: `buckets.rs`.
//!
//! The chunks are a pipeline ([`Pipeline`]): a chunk's kernels, and the copy of its bases, are
//! enqueued before the host waits for the chunk before it, so the device works while the host
//! waits, reads back and combines. A device phase keeps one pipeline a group across its steps:
//! a step's last chunk is waited for after the next step's first chunk is enqueued, so the
//! phase's G1 multiexps (H, L, A, B) wait once with the device idle behind, at their end
//! (where streamed bases have one staging buffer, which the next chunk's copy would overwrite,
//! each step waits for its own end). Per
//! chunk the host waits once, for what it reads back: the split's two counts and the sort's (the
//! digits it listed), the work groups' sums of ones and the reduction's parts, which it adds up
//! on its own threads. Every kernel of the sort and the buckets chooses the window from the
//! count on the device (the host chooses the same one from the count to combine the windows).

use std::ops::Range;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ec_gpu::GpuName;
use group::prime::PrimeCurveAffine;
use group::Group;
use opencl3::kernel::Kernel;
use opencl3::memory::Buffer;

use super::buckets::{self, Rest, Shape, SortBuffers, SortKernels};
use super::flight::{Flight, ReadFrom};
use super::kernels::sum_ones_kernel;
use super::msm_plan::{fixed_bytes, plan, term_bytes, ChunkPlan};
use super::queue::{DeviceQueue, LOCAL_WORK_SIZE};
use super::windows::sorted_bits;
use crate::error::{ProverError, Result};
use crate::groth16::Step;

/// Work items per work group of the split kernel.
const SPLIT_LOCAL: usize = 64;

/// Where a multiexp's scalars lie on the device: term `t`'s is `buf[map[t]]`, or
/// `buf[offset + t]` without a map.
#[derive(Clone, Copy)]
pub struct DeviceScalars<'a> {
    pub buf: &'a Buffer<Fr>,
    pub map: Option<&'a Buffer<u32>>,
    pub offset: usize,
}

/// Where a multiexp's bases are: kept on the device (term `t` at `buf[t]`), or in host memory,
/// copied up step by step.
pub enum Bases<'a, G> {
    Device(&'a Buffer<G>),
    Host(&'a [G]),
}

// Two borrows: copied whatever `G` is (a derive would ask `G: Copy`).
impl<G> Clone for Bases<'_, G> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<G> Copy for Bases<'_, G> {}

/// A multiexp step as the device runs it: `Σ bases[t]·scalars[t]` for `t` in the step's range.
pub struct StepOn<'a, G> {
    pub step: Step,
    pub bases: Bases<'a, G>,
    pub scalars: DeviceScalars<'a>,
}

/// One step over G1 on a pipeline of its own; `None` when the device's pool has no room for
/// even a small chunk now (other phases hold it: run the step elsewhere).
pub fn msm_g1(q: &DeviceQueue, step: StepOn<'_, G1Affine>) -> Result<Option<G1Projective>> {
    multiexp(q, step)
}

/// One step over G2 on a pipeline of its own (`None` as for [`msm_g1`]).
pub fn msm_g2(q: &DeviceQueue, step: StepOn<'_, G2Affine>) -> Result<Option<G2Projective>> {
    multiexp(q, step)
}

/// The buffers of one multiexp step, and the device memory they hold.
struct Workspace<G: PrimeCurveAffine> {
    ones: Buffer<u32>,
    rest: Buffer<u32>,
    exps: Buffer<Fr>,
    /// The split's two counts, and the pairs the sort listed.
    counts: Buffer<u32>,
    sums: Buffer<G::Curve>,
    sort: SortBuffers<G>,
    /// Where bases are streamed, the staging buffers of the plan's chunks: two (a chunk's go up
    /// while the one before runs), or one (`ChunkPlan::staging`).
    staging: Vec<Buffer<G>>,
    /// Taken by the pipeline's drop where its chunks may still run (`Pipeline`'s `Drop`).
    grant: Option<super::device::MemoryGrant>,
}

/// The kernels of a chunk, created once a pipeline.
struct Kernels {
    split: Kernel,
    sum_ones: Kernel,
    sort: SortKernels,
}

impl Kernels {
    fn new<G: GpuName>(q: &DeviceQueue) -> Result<Kernels> {
        Ok(Kernels {
            split: q.program.kernel("snarkd_split")?,
            sum_ones: q.program.kernel(&sum_ones_kernel::<G>())?,
            sort: SortKernels::new::<G>(q)?,
        })
    }
}

fn multiexp<G>(q: &DeviceQueue, step: StepOn<'_, G>) -> Result<Option<G::Curve>>
where
    G: PrimeCurveAffine + GpuName,
{
    if step.step.range.is_empty() {
        return Ok(Some(G::Curve::identity()));
    }
    let staged = matches!(step.bases, Bases::Host(_));
    let Some(mut pipeline) = Pipeline::open(q, step.step.range.len(), staged, false)? else {
        return Ok(None);
    };
    let sum = pipeline.run(q, step, None);
    if sum.is_err() {
        // A read-back may still be running: waited for, or its memory kept until the queue's
        // next successful wait.
        let _ = pipeline.drain(q);
    }
    sum.map(Some)
}

/// A device phase's multiexp steps over one group, as one pipeline of chunks: one workspace,
/// one set of kernels and two read-backs for all of them. A step's chunks are enqueued one
/// ahead of the host's wait; handed the step after it, a step enqueues that one's first chunk
/// before it waits for its own last, so the device does not idle between steps.
///
/// Dropped with a read-back possibly still running (a failure not followed by
/// [`Pipeline::drain`], a panic), the read-backs' host memory and the workspace's room in the
/// pool are kept until the queue's next successful wait (`settling.rs`).
pub struct Pipeline<G: PrimeCurveAffine> {
    plan: ChunkPlan,
    ws: Workspace<G>,
    /// Where streamed bases go: the chunk `i` of the pipeline copies into `staging[i % len]`.
    staging: Vec<Buffer<G>>,
    kernels: Kernels,
    flight: Flight<G::Curve>,
    /// Chunks enqueued so far.
    enqueued: usize,
    /// The step whose first chunk was enqueued by the step before it, still pending.
    ahead: Option<Step>,
}

impl<G: PrimeCurveAffine> Drop for Pipeline<G> {
    fn drop(&mut self) {
        // Kernels may still use the buffers (the OpenCL runtime frees them once they are done):
        // their room goes back to the pool when the queue has run them, not before.
        if self.flight.unsettled() {
            if let Some(grant) = self.ws.grant.take() {
                self.flight.keep_until_settled(grant);
            }
        }
    }
}

impl<G> Pipeline<G>
where
    G: PrimeCurveAffine + GpuName,
{
    /// A pipeline for steps of at most `terms` terms, their bases kept on the device or
    /// `staged`; `None` when the pool has no room for even a small chunk now. Unless `chained`
    /// (a step may be handed a next), a step of one chunk takes one staging buffer: a second
    /// would only serve a next step's first chunk.
    pub fn open(
        q: &DeviceQueue,
        terms: usize,
        staged: bool,
        chained: bool,
    ) -> Result<Option<Self>> {
        let mut plan = plan::<G>(
            terms.max(1),
            q.work_units(),
            q.share(),
            q.max_alloc(),
            q.max_chunk_terms,
            staged,
        )?;
        if !chained && plan.staging == 2 && plan.chunk_terms >= terms {
            plan.staging = 1;
        }
        let Some((mut ws, plan)) = workspace::<G>(q, plan, terms.max(1))? else {
            return Ok(None);
        };
        Ok(Some(Pipeline {
            plan,
            staging: std::mem::take(&mut ws.staging),
            ws,
            kernels: Kernels::new::<G>(q)?,
            flight: Flight::new(q, plan.work_units),
            enqueued: 0,
            ahead: None,
        }))
    }

    /// Runs `this`: its chunks (less the first where the step before enqueued it), each
    /// enqueued before the wait for the one before it; then, where `next` is given, `next`'s
    /// first chunk before the wait for this step's last, which leaves it running on return.
    /// A pending chunk of a step other than `this` is waited for and dropped, unread.
    pub fn run(
        &mut self,
        q: &DeviceQueue,
        this: StepOn<'_, G>,
        next: Option<StepOn<'_, G>>,
    ) -> Result<G::Curve> {
        let range = this.step.range.clone();
        let chunk = self.plan.chunk_terms;
        let mut first = range.start;
        match self.ahead.take() {
            Some(ahead) if ahead == this.step => first = (first + chunk).min(range.end),
            Some(_) => self.flight.drain(q)?,
            None => {}
        }
        let mut acc = G::Curve::identity();
        for start in (first..range.end).step_by(chunk) {
            self.enqueue(q, &this, start..(start + chunk).min(range.end))?;
            if let Some(sum) = self.flight.collect_earlier(q, self.plan)? {
                acc += sum;
            }
        }
        // One staging buffer is reused by the next chunk: it waits for this one's end.
        let next = next.filter(|n| !n.step.range.is_empty() && self.staging.len() != 1);
        match next {
            Some(next) => {
                let r = &next.step.range;
                self.enqueue(q, &next, r.start..(r.start + chunk).min(r.end))?;
                self.ahead = Some(next.step);
                // This step's last chunk (none for a step of no terms).
                if let Some(sum) = self.flight.collect_earlier(q, self.plan)? {
                    acc += sum;
                }
            }
            None => acc += self.flight.collect_last(q, self.plan)?,
        }
        Ok(acc)
    }

    /// Waits for whatever is still running (a chunk ahead, a failed step's read-backs), so the
    /// read-backs' memory can go; after an error it waits for the queue's next successful
    /// wait.
    pub fn drain(&mut self, q: &DeviceQueue) -> Result<()> {
        self.ahead = None;
        self.flight.drain(q)
    }

    /// Enqueues the chunk `terms` of `step`: its bases' copy where they are streamed (into the
    /// staging buffer the chunk two before used, whose read-back the host has waited for), its
    /// kernels and its read-back.
    fn enqueue(
        &mut self,
        q: &DeviceQueue,
        step: &StepOn<'_, G>,
        terms: Range<usize>,
    ) -> Result<()> {
        self.flight.enqueuing();
        let (base_buf, base_start) = match step.bases {
            Bases::Device(buf) => (buf, terms.start),
            Bases::Host(host) => {
                if host.len() < terms.end {
                    return Err(ProverError::ParamsShape(format!(
                        "a multiexp has {} bases for {} terms",
                        host.len(),
                        terms.end
                    )));
                }
                debug_assert!(
                    !self.staging.is_empty(),
                    "streamed bases have a staging buffer"
                );
                let at = self.enqueued % self.staging.len();
                let copied = q.stage(&mut self.staging[at], 0, &host[terms.clone()])?;
                q.after(&copied)?;
                (&self.staging[at], 0)
            }
        };
        let (plan, len) = (self.plan, terms.len());
        enqueue_chunk(
            q,
            &mut self.ws,
            &self.kernels,
            plan,
            (base_buf, base_start),
            step.scalars,
            &terms,
        )?;
        let from = ReadFrom {
            counts: &self.ws.counts,
            sums: &self.ws.sums,
            parts: &self.ws.sort.parts,
        };
        self.flight.read_back(q, from, len)?;
        self.enqueued += 1;
        // Submitted now, so the device starts on it while the host stages the next chunk.
        q.flush()
    }
}

/// Chunks smaller than this are not worth a launch: the step runs elsewhere instead.
const MIN_CHUNK_TERMS: usize = 1 << 12;

/// The buffers of `plan`, its chunks halved (the window following the terms, never wider) and
/// then its work groups halved (down to one a compute unit) until they fit in what the pool has
/// free now (it never waits: a phase preempted at a step boundary holds its witness meanwhile,
/// and its pipelines where it did not see the preemption coming, and the preempting phase must
/// not wait for it; a plan of one staging buffer whose chunks are halved below `terms` takes a
/// second). `None` when not even a small chunk fits.
fn workspace<G>(
    q: &DeviceQueue,
    mut plan: ChunkPlan,
    terms: usize,
) -> Result<Option<(Workspace<G>, ChunkPlan)>>
where
    G: PrimeCurveAffine,
{
    let bytes = |plan: &ChunkPlan| {
        plan.chunk_terms as u64 * term_bytes::<G>(plan.window_bits, plan.staging)
            + fixed_bytes::<G>(plan.work_units, plan.window_bits)
    };
    let base_units = q.work_units_at_one_group();
    let grant = loop {
        if let Some(grant) = q.memory().try_reserve(bytes(&plan), 0) {
            break grant;
        }
        if plan.chunk_terms > MIN_CHUNK_TERMS {
            plan.chunk_terms /= 2;
            plan.window_bits = sorted_bits(plan.chunk_terms, plan.window_bits, u64::MAX);
            if plan.staging > 0 && plan.chunk_terms < terms {
                plan.staging = 2;
            }
        } else if plan.work_units > base_units {
            plan.work_units = (plan.work_units / LOCAL_WORK_SIZE / 2).max(1) * LOCAL_WORK_SIZE;
        } else {
            return Ok(None);
        }
    };
    let n = plan.chunk_terms;
    let p = &q.program;
    Ok(Some((
        Workspace {
            ones: p.buffer::<u32>(n)?,
            rest: p.buffer::<u32>(n)?,
            exps: p.buffer::<Fr>(n)?,
            counts: p.buffer::<u32>(3)?,
            sums: p.buffer::<G::Curve>(plan.work_units / LOCAL_WORK_SIZE)?,
            sort: SortBuffers::new(q, &plan)?,
            staging: (0..plan.staging)
                .map(|_| p.buffer::<G>(n))
                .collect::<Result<_>>()?,
            grant: Some(grant),
        },
        plan,
    )))
}

/// Enqueues one chunk's kernels: the split, the sum of ones, the sort of the rest's digits by
/// bucket, the bucket sums and their reduction, over the bases in `base` (a buffer and the
/// place of the chunk's first term in it). Does not wait.
fn enqueue_chunk<G>(
    q: &DeviceQueue,
    ws: &mut Workspace<G>,
    k: &Kernels,
    plan: ChunkPlan,
    (base_buf, base_start): (&Buffer<G>, usize),
    scalars: DeviceScalars<'_>,
    terms: &Range<usize>,
) -> Result<()>
where
    G: PrimeCurveAffine + GpuName,
{
    let base_start = u32::try_from(base_start).map_err(|_| too_long(base_start))?;
    let out = SplitOut {
        ones: &ws.ones,
        rest: &ws.rest,
        exps: &ws.exps,
        counts: &mut ws.counts,
    };
    let n = terms.len();
    let chunk_len = n as u32;
    split_scalars(q, &k.split, scalars, terms.clone(), out)?;
    let units = plan.work_units;
    debug_assert_eq!(
        units % LOCAL_WORK_SIZE,
        0,
        "the plan makes whole work groups"
    );
    let capacity = plan.capacity();
    let shape = Shape {
        counts: &ws.counts,
        chunk: chunk_len,
        max_bits: plan.window_bits as u32,
        capacity: u32::try_from(capacity).map_err(|_| too_long(capacity))?,
    };
    // Every kernel below reads the split's counts on the device (a sum of no ones is the
    // identity; a count is never taken above the chunk's length).
    q.launch(&k.sum_ones, units / LOCAL_WORK_SIZE, LOCAL_WORK_SIZE, |e| {
        // SAFETY: the argument list of `POINT_snarkd_sum_ones`; `sums` holds one point per
        // work group, and every listed term's base lies in the base buffer.
        unsafe {
            e.set_arg(base_buf)
                .set_arg(&base_start)
                .set_arg(&ws.ones)
                .set_arg(shape.counts)
                .set_arg(&chunk_len)
                .set_arg(&ws.sums);
        }
    })?;
    let rest = Rest {
        rest: &ws.rest,
        exps: &ws.exps,
        bases: base_buf,
        base_start,
    };
    buckets::enqueue(q, &k.sort, &mut ws.sort, &shape, rest, &plan, n)
}

/// Where a chunk's split writes: the terms whose scalar is one, the others with their exponents,
/// and the two counts (the sort writes a third).
struct SplitOut<'a> {
    ones: &'a Buffer<u32>,
    rest: &'a Buffer<u32>,
    exps: &'a Buffer<Fr>,
    counts: &'a mut Buffer<u32>,
}

/// Splits the chunk's scalars on the device into ones and the rest (with their exponents),
/// counting each on the device; does not wait.
fn split_scalars(
    q: &DeviceQueue,
    split: &Kernel,
    scalars: DeviceScalars<'_>,
    terms: Range<usize>,
    out: SplitOut<'_>,
) -> Result<()> {
    let n = terms.len();
    q.fill(&mut *out.counts, 0u32, 0, 2)?;
    // Without a map the kernel reads none: any buffer stands in for it.
    let (map, use_map) = match scalars.map {
        Some(m) => (m, 1u32),
        None => (out.ones, 0u32),
    };
    let (start, count) = (terms.start as u32, n as u32);
    let offset = u32::try_from(scalars.offset).map_err(|_| too_long(scalars.offset))?;
    q.launch(split, n.div_ceil(SPLIT_LOCAL), SPLIT_LOCAL, |k| {
        // SAFETY: the argument list of `snarkd_split`; `ones`, `rest` and `exps` hold `n`
        // entries, the map (when used) and the scalars cover every term of the chunk.
        unsafe {
            k.set_arg(scalars.buf)
                .set_arg(map)
                .set_arg(&use_map)
                .set_arg(&offset)
                .set_arg(&start)
                .set_arg(&count)
                .set_arg(out.ones)
                .set_arg(out.rest)
                .set_arg(out.exps)
                .set_arg(&*out.counts);
        }
    })?;
    Ok(())
}

fn too_long(what: usize) -> ProverError {
    ProverError::ParamsShape(format!("{what} is beyond the device's 32-bit positions"))
}

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
//! bases streamed up into a staging buffer, one of two where a step takes several chunks
//! (`stream.rs`: through pinned memory, on the copy queue). How a step is cut into chunks:
//! `msm_plan.rs`; the sort and the buckets' launches: `buckets.rs`.
//!
//! The chunks are a pipeline: a chunk's kernels, and the copy of its bases, are enqueued before
//! the host waits for the chunk before it, so the device works while the host waits, reads back
//! and combines (a step's last chunk is its one idle wait). Per chunk the host waits once, for
//! what it reads back: the split's two counts and the sort's (the digits it listed), the work
//! groups' sums of ones and the reduction's parts, which it adds up on its own threads. Every
//! kernel of the sort and the buckets chooses the window from the count on the device (the host
//! chooses the same one from the count to combine the windows).

use std::mem::ManuallyDrop;
use std::ops::Range;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ec_gpu::GpuName;
use group::prime::PrimeCurveAffine;
use group::Group;
use opencl3::event::Event;
use opencl3::kernel::Kernel;
use opencl3::memory::Buffer;
use rayon::prelude::*;

use super::buckets::{self, Rest, Shape, SortBuffers, SortKernels};
use super::kernels::sum_ones_kernel;
use super::msm_plan::{fixed_bytes, plan, reduce_items, term_bytes, ChunkPlan};
use super::queue::{DeviceQueue, LOCAL_WORK_SIZE};
use super::windows::{sorted_bits, Sorted};
use crate::error::{ProverError, Result};
use crate::threads;

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

/// `Σ bases[t]·scalars[t]` for `t` in `range`, over G1; `None` when the device's pool has no
/// room for even a small chunk now (other phases hold it: run the step elsewhere).
pub fn msm_g1(
    q: &DeviceQueue,
    bases: Bases<'_, G1Affine>,
    scalars: DeviceScalars<'_>,
    range: Range<usize>,
) -> Result<Option<G1Projective>> {
    multiexp(q, bases, scalars, range)
}

/// `Σ bases[t]·scalars[t]` for `t` in `range`, over G2 (`None` as for [`msm_g1`]).
pub fn msm_g2(
    q: &DeviceQueue,
    bases: Bases<'_, G2Affine>,
    scalars: DeviceScalars<'_>,
    range: Range<usize>,
) -> Result<Option<G2Projective>> {
    multiexp(q, bases, scalars, range)
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
    /// Where bases are streamed, the staging buffers of the plan's chunks: two where the step
    /// takes several chunks (a chunk's go up while the one before runs).
    staging: Vec<Buffer<G>>,
    _grant: super::device::MemoryGrant,
}

/// The kernels of a chunk, created once a step.
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

fn multiexp<G>(
    q: &DeviceQueue,
    bases: Bases<'_, G>,
    scalars: DeviceScalars<'_>,
    range: Range<usize>,
) -> Result<Option<G::Curve>>
where
    G: PrimeCurveAffine + GpuName,
{
    if range.is_empty() {
        return Ok(Some(G::Curve::identity()));
    }
    if let Bases::Host(b) = bases {
        if b.len() < range.end {
            return Err(ProverError::ParamsShape(format!(
                "a multiexp has {} bases for {} terms",
                b.len(),
                range.end
            )));
        }
    }
    let staged = matches!(bases, Bases::Host(_));
    let plan = plan::<G>(
        range.len(),
        q.work_units(),
        q.share(),
        q.max_alloc(),
        q.max_chunk_terms,
        staged,
    )?;
    let Some((mut ws, plan)) = workspace::<G>(q, plan, range.len())? else {
        return Ok(None);
    };
    let kernels = Kernels::new::<G>(q)?;
    let mut staging = std::mem::take(&mut ws.staging);
    // Dropped first: on a failure it drains the queues before the buffers they use go.
    let mut flight = Flight::new(q, plan.work_units);
    let mut acc = G::Curve::identity();
    let chunks = (range.start..range.end).step_by(plan.chunk_terms);
    for (i, start) in chunks.enumerate() {
        let terms = start..(start + plan.chunk_terms).min(range.end);
        let slot = i % 2;
        // The bases of this chunk: the resident buffer from its first term, or a copy into the
        // staging buffer the chunk two before used (its kernels are done: the host waited for
        // its read-back when it enqueued the chunk before this one).
        let (base_buf, base_start) = match &bases {
            Bases::Device(buf) => (*buf, terms.start),
            Bases::Host(host) => {
                debug_assert!(!staging.is_empty(), "streamed bases have a staging buffer");
                let at = i % staging.len();
                let copied = q.stage(&mut staging[at], 0, &host[terms.clone()])?;
                q.after(&copied)?;
                (&staging[at], 0)
            }
        };
        enqueue_chunk(
            q,
            &mut ws,
            &kernels,
            plan,
            (base_buf, base_start),
            scalars,
            &terms,
        )?;
        flight.read_back(&ws, slot, terms.len())?;
        // Submitted now, so the device starts on it while the host stages the next chunk.
        q.flush()?;
        // The chunk before this one, while this one runs.
        if let Some(sum) = flight.collect_earlier(plan)? {
            acc += sum;
        }
    }
    acc += flight.collect_last(plan)?;
    Ok(Some(acc))
}

/// Chunks smaller than this are not worth a launch: the step runs elsewhere instead.
const MIN_CHUNK_TERMS: usize = 1 << 12;

/// The buffers of `plan`, its chunks halved (the window following the terms, never wider) and
/// then its work groups halved (down to one a compute unit) until they fit in what the pool has
/// free now (it never waits: a phase preempted at a step boundary holds its witness meanwhile,
/// and the preempting phase must not wait for it; a step of `terms` streamed terms cut into
/// several chunks takes a second staging buffer). `None` when not even a small chunk fits.
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
            _grant: grant,
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

/// What a chunk reads back: the split's counts, the work groups' sums of ones and the
/// reduction's parts.
struct ReadBack<C> {
    counts: [u32; 3],
    sums: Vec<C>,
    parts: Vec<C>,
}

/// A chunk whose read-back is enqueued: into which of the two [`ReadBack`]s, its length, and
/// the event of its end.
struct Pending {
    slot: usize,
    terms: usize,
    done: Event,
}

/// The read-backs of a multiexp's chunks, in host memory the device writes while the host goes
/// on: two, for the chunk running and the one before it. Dropped with a copy possibly still
/// running (a failure), it drains both queues first; where even that fails the host memory is
/// never freed (a copy may still write it).
struct Flight<'q, C> {
    q: &'q DeviceQueue,
    backs: ManuallyDrop<[Box<ReadBack<C>>; 2]>,
    pending: Vec<Pending>,
    /// Every chunk was collected: nothing enqueued is left to wait for (false from the start:
    /// a failure before the first read-back may leave a copy of bases running).
    drained: bool,
}

impl<'q, C: Group + Send + Sync> Flight<'q, C> {
    fn new(q: &'q DeviceQueue, units: usize) -> Self {
        let back = || {
            Box::new(ReadBack {
                counts: [0; 3],
                sums: vec![C::identity(); units / LOCAL_WORK_SIZE],
                parts: vec![C::identity(); 2 * reduce_items(units)],
            })
        };
        Flight {
            q,
            backs: ManuallyDrop::new([back(), back()]),
            pending: Vec::with_capacity(2),
            drained: false,
        }
    }

    /// Enqueues the read-back of the chunk just enqueued into `slot` (not the slot of a chunk
    /// still pending), and a marker for its end; does not wait.
    fn read_back<G>(&mut self, ws: &Workspace<G>, slot: usize, terms: usize) -> Result<()>
    where
        G: PrimeCurveAffine<Curve = C>,
    {
        debug_assert!(self.pending.iter().all(|p| p.slot != slot));
        let back = &mut *self.backs[slot];
        // SAFETY: `back` is neither touched nor freed until the wait for `done` (after these
        // copies on the same queue) has returned; on a failure `Drop` drains the queues first.
        unsafe {
            self.q.read_async(&ws.counts, &mut back.counts)?;
            self.q.read_async(&ws.sums, &mut back.sums)?;
            self.q.read_async(&ws.sort.parts, &mut back.parts)?;
        }
        let done = self.q.marker()?;
        self.pending.push(Pending { slot, terms, done });
        Ok(())
    }

    /// The sum of the earlier of two pending chunks, once it has run (the later one keeps the
    /// device busy meanwhile); `None` with one pending.
    fn collect_earlier(&mut self, plan: ChunkPlan) -> Result<Option<C>> {
        if self.pending.len() < 2 {
            return Ok(None);
        }
        let earlier = self.pending.remove(0);
        self.collect(earlier, true, plan).map(Some)
    }

    /// The sum of the last pending chunk (the identity with none), once it has run: the
    /// multiexp's one wait with the device idle behind it.
    fn collect_last(&mut self, plan: ChunkPlan) -> Result<C> {
        let sum = match self.pending.pop() {
            Some(last) => self.collect(last, false, plan)?,
            None => C::identity(),
        };
        debug_assert!(self.pending.is_empty());
        self.drained = true;
        Ok(sum)
    }

    fn collect(&mut self, chunk: Pending, work_behind: bool, plan: ChunkPlan) -> Result<C> {
        self.q.wait(&chunk.done, work_behind)?;
        let back = &self.backs[chunk.slot];
        let n = chunk.terms;
        let [n_ones, n_rest, pairs] = back.counts.map(|c| c as usize);
        if n_ones > n || n_rest > n || n_ones + n_rest > n {
            return Err(ProverError::Device {
                backend: "opencl".into(),
                reason: format!(
                    "the split of {n} scalars counted {n_ones} ones and {n_rest} others"
                ),
            });
        }
        let mut acc = C::identity();
        if n_ones > 0 {
            acc += sum_on_host(&back.sums);
        }
        if n_rest > 0 {
            let shape = Sorted::new(
                n_rest,
                plan.window_bits,
                plan.capacity() as u64,
                reduce_items(plan.work_units),
            );
            acc += shape.combine(&back.parts);
            self.q
                .count_additions((pairs + 2 * shape.windows * shape.buckets) as u64);
        }
        self.q.count_additions(n_ones as u64);
        Ok(acc)
    }
}

impl<C> Drop for Flight<'_, C> {
    fn drop(&mut self) {
        if self.drained || self.q.finish().is_ok() {
            // SAFETY: dropped once, here; no copy writes them any more.
            unsafe { ManuallyDrop::drop(&mut self.backs) };
        }
    }
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

/// Σ of the work items' points, on the host's threads.
fn sum_on_host<C: Group + Send + Sync>(points: &[C]) -> C {
    threads::pool().install(|| {
        points
            .par_chunks(1024)
            .map(|c| c.iter().fold(C::identity(), |a, p| a + p))
            .reduce(C::identity, |a, b| a + b)
    })
}

//! Multi-scalar multiplication on the device, in proportion to the witness: a step's scalars
//! are split on the device (`snarkd_split`) into zeros (dropped), ones (their bases summed with
//! mixed additions, `POINT_snarkd_sum_ones`) and the rest (a bucket multiexp over their canonical
//! values in signed digits, `POINT_snarkd_multiexp`, its window chosen for the count of the rest
//! within what the plan's memory allows: `windows.rs`). The scalars
//! are read where they already lie on the device (the witness buffer, through a term → position
//! map for A and B, or h), so nothing is gathered or converted on the host; the bases are the
//! resident copy, or the step's slice of the host's bases copied up into a staging buffer.
//!
//! Per chunk of a step the host waits once, for what it reads back with one wait: the split's
//! two counts, the work groups' sums of ones and the work items' bucket results, which it adds
//! up on its own threads. The bucket kernel chooses its window from the count on the device (the host
//! chooses the same one from the count to combine the windows).

use std::ops::Range;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ec_gpu::GpuName;
use group::prime::PrimeCurveAffine;
use group::Group;
use opencl3::memory::Buffer;
use rayon::prelude::*;

use super::kernels::{multiexp_kernel, sum_ones_kernel};
use super::queue::{DeviceQueue, LOCAL_WORK_SIZE};
use super::windows::{best_bits, signed_buckets, Windows, BASE_SIGNED_BITS, MAX_SIGNED_BITS};
use crate::error::{ProverError, Result};
use crate::threads;

/// Device bytes a term of a chunk takes besides its base: its place in one of the two lists
/// (4 bytes) and, for the rest, its canonical scalar (32 bytes).
const TERM_BYTES: u64 = 4 + 4 + 32;
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

/// Device bytes of a multiexp step of `terms` terms with resident bases and `work_units` work
/// items, at the window every step can have, over G2 (the larger group).
pub fn step_bytes(terms: usize, work_units: usize) -> u64 {
    terms as u64 * TERM_BYTES + fixed_bytes::<G2Affine>(work_units, BASE_SIGNED_BITS)
}

/// Device bytes of the buckets, results and sums of `units` work items at `bits`-bit windows.
fn fixed_bytes<G: PrimeCurveAffine>(units: usize, bits: usize) -> u64 {
    let proj = std::mem::size_of::<G::Curve>() as u64;
    units as u64 * (signed_buckets(bits) as u64 + 2) * proj
}

/// How one multiexp step is cut up for a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkPlan {
    /// Terms per chunk.
    pub chunk_terms: usize,
    /// Work items of the bucket multiexp (windows × groups at most) and of the sum of ones.
    pub work_units: usize,
    /// The widest window a chunk may use: its buckets are allocated for it.
    pub window_bits: usize,
}

/// The chunk size for `terms` terms of `G` given a memory `share`: what is left after the
/// buckets, results and sums of every work item, divided by the device bytes of a term (its
/// base too when the bases are `staged`), capped by `max_chunk_terms` and the device's largest
/// buffer. Where the buckets of `work_units` items would take more than half the share at the
/// base window (11 bits), the work units are halved until they fit, down to one work group.
/// The window is the one the terms a unit gets are worth ([`best_bits`]), narrowed to the base
/// until its buckets take at most a quarter of the share.
pub fn plan<G: PrimeCurveAffine>(
    terms: usize,
    work_units: usize,
    share: u64,
    max_alloc: u64,
    max_chunk_terms: usize,
    staged: bool,
) -> Result<ChunkPlan> {
    let term = TERM_BYTES
        + if staged {
            std::mem::size_of::<G>() as u64
        } else {
            0
        };
    let fixed = fixed_bytes::<G>;
    // Whole work groups: the sum of ones runs `work_units / LOCAL_WORK_SIZE` of them and every
    // work item's sum is read back.
    let mut groups = (work_units / LOCAL_WORK_SIZE).max(1);
    while groups > 1 && fixed(groups * LOCAL_WORK_SIZE, BASE_SIGNED_BITS) > share / 2 {
        groups /= 2;
    }
    let work_units = groups * LOCAL_WORK_SIZE;
    let per_unit = terms.min(max_chunk_terms).div_ceil(work_units).max(1);
    let mut window_bits = best_bits(per_unit, MAX_SIGNED_BITS);
    while window_bits > BASE_SIGNED_BITS && fixed(work_units, window_bits) > share / 4 {
        window_bits -= 1;
    }
    let by_memory = share.saturating_sub(fixed(work_units, window_bits)) / term;
    let widest = if staged {
        std::mem::size_of::<G>().max(32)
    } else {
        32
    };
    let by_alloc = max_alloc / widest as u64;
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
        window_bits,
    })
}

/// The buffers of one multiexp step, and the device memory they hold.
struct Workspace<G: PrimeCurveAffine> {
    ones: Buffer<u32>,
    rest: Buffer<u32>,
    exps: Buffer<Fr>,
    counts: Buffer<u32>,
    buckets: Buffer<G::Curve>,
    results: Buffer<G::Curve>,
    sums: Buffer<G::Curve>,
    staging: Option<Buffer<G>>,
    _grant: super::device::MemoryGrant,
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
    let Some((ws, plan)) = workspace::<G>(q, plan, staged)? else {
        return Ok(None);
    };
    let kernels = (
        q.program.kernel("snarkd_split")?,
        q.program.kernel(&sum_ones_kernel::<G>())?,
        q.program.kernel(&multiexp_kernel::<G>())?,
    );
    let mut acc = G::Curve::identity();
    let mut start = range.start;
    let mut ws = ws;
    while start < range.end {
        let end = (start + plan.chunk_terms).min(range.end);
        acc += chunk(q, &mut ws, &kernels, plan, &bases, scalars, start..end)?;
        start = end;
    }
    Ok(Some(acc))
}

/// Chunks smaller than this are not worth a launch: the step runs elsewhere instead.
const MIN_CHUNK_TERMS: usize = 1 << 12;

/// The buffers of `plan`, its window narrowed, its work groups and then its chunks halved until
/// they fit in what the pool has free now (it
/// never waits: a phase preempted at a step boundary holds its witness meanwhile, and the
/// preempting phase must not wait for it). `None` when not even a small chunk fits.
fn workspace<G>(
    q: &DeviceQueue,
    mut plan: ChunkPlan,
    staged: bool,
) -> Result<Option<(Workspace<G>, ChunkPlan)>>
where
    G: PrimeCurveAffine,
{
    let bytes = |plan: &ChunkPlan| {
        let n = plan.chunk_terms;
        n as u64 * TERM_BYTES
            + 8
            + fixed_bytes::<G>(plan.work_units, plan.window_bits)
            + if staged {
                (n * std::mem::size_of::<G>()) as u64
            } else {
                0
            }
    };
    // Narrower windows first (their buckets are most of what a wide one holds), then fewer work
    // groups (each holds its own buckets) down to one a compute unit, then shorter chunks.
    let base_units = q.work_units_at_one_group();
    let grant = loop {
        if let Some(grant) = q.memory().try_reserve(bytes(&plan), 0) {
            break grant;
        }
        if plan.window_bits > BASE_SIGNED_BITS {
            plan.window_bits -= 1;
        } else if plan.work_units > base_units {
            plan.work_units = (plan.work_units / LOCAL_WORK_SIZE / 2).max(1) * LOCAL_WORK_SIZE;
        } else if plan.chunk_terms > MIN_CHUNK_TERMS {
            plan.chunk_terms /= 2;
        } else {
            return Ok(None);
        }
    };
    let units = plan.work_units;
    let bucket_items = units * signed_buckets(plan.window_bits);
    let n = plan.chunk_terms;
    Ok(Some((
        Workspace {
            ones: q.program.buffer::<u32>(n)?,
            rest: q.program.buffer::<u32>(n)?,
            exps: q.program.buffer::<Fr>(n)?,
            counts: q.program.buffer::<u32>(2)?,
            buckets: q.program.buffer::<G::Curve>(bucket_items)?,
            results: q.program.buffer::<G::Curve>(units)?,
            sums: q.program.buffer::<G::Curve>(units / LOCAL_WORK_SIZE)?,
            staging: match staged {
                true => Some(q.program.buffer::<G>(n)?),
                false => None,
            },
            _grant: grant,
        },
        plan,
    )))
}

type Kernels = (
    opencl3::kernel::Kernel,
    opencl3::kernel::Kernel,
    opencl3::kernel::Kernel,
);

/// One chunk: split, sum of ones, bucket multiexp of the rest, host reduction.
fn chunk<G>(
    q: &DeviceQueue,
    ws: &mut Workspace<G>,
    (split, sum_ones, bucket): &Kernels,
    plan: ChunkPlan,
    bases: &Bases<'_, G>,
    scalars: DeviceScalars<'_>,
    terms: Range<usize>,
) -> Result<G::Curve>
where
    G: PrimeCurveAffine + GpuName,
{
    // The bases of this chunk: the resident buffer from the chunk's first term, or a copy.
    let (base_buf, base_start) = match bases {
        Bases::Device(buf) => (*buf, terms.start),
        Bases::Host(host) => {
            let staging = ws
                .staging
                .as_mut()
                .expect("a staged multiexp has a staging buffer");
            // SAFETY: the host bases are the parameters', alive for the whole phase; the chunk's
            // read-back waits for this copy.
            unsafe { q.write_async(staging, 0, &host[terms.clone()])? };
            (&*staging, 0)
        }
    };
    let base_start = u32::try_from(base_start).map_err(|_| too_long(base_start))?;
    let out = SplitOut {
        ones: &ws.ones,
        rest: &ws.rest,
        exps: &ws.exps,
        counts: &mut ws.counts,
    };
    let n = terms.len();
    let chunk_len = n as u32;
    split_scalars(q, split, scalars, terms, out)?;
    let units = plan.work_units;
    debug_assert_eq!(
        units % LOCAL_WORK_SIZE,
        0,
        "the plan makes whole work groups"
    );
    // Both kernels read their counts on the device (a sum of no ones is the identity; a count
    // is never taken above the chunk's length), and the bucket multiexp chooses its window from
    // its count as `Windows::signed` does below.
    q.launch(sum_ones, units / LOCAL_WORK_SIZE, LOCAL_WORK_SIZE, |k| {
        // SAFETY: the argument list of `POINT_snarkd_sum_ones`; `sums` holds one point per
        // work group, and every listed term's base lies in the base buffer.
        unsafe {
            k.set_arg(base_buf)
                .set_arg(&base_start)
                .set_arg(&ws.ones)
                .set_arg(&ws.counts)
                .set_arg(&chunk_len)
                .set_arg(&ws.sums);
        }
    })?;
    q.launch(bucket, units / LOCAL_WORK_SIZE, LOCAL_WORK_SIZE, |k| {
        // SAFETY: the argument list of `POINT_snarkd_multiexp`; the kernel returns early for
        // work items past its windows × groups (at most `units`), and `buckets` holds
        // 2^(max_bits − 1) buckets for each of `units` items.
        unsafe {
            k.set_arg(base_buf)
                .set_arg(&base_start)
                .set_arg(&ws.rest)
                .set_arg(&ws.exps)
                .set_arg(&ws.counts)
                .set_arg(&chunk_len)
                .set_arg(&ws.buckets)
                .set_arg(&ws.results)
                .set_arg(&(units as u32))
                .set_arg(&(plan.window_bits as u32));
        }
    })?;
    let back = read_back::<G>(q, ws, units)?;
    let [n_ones, n_rest] = back.counts.map(|c| c as usize);
    if n_ones > n || n_rest > n || n_ones + n_rest > n {
        return Err(ProverError::Device {
            backend: "opencl".into(),
            reason: format!("the split of {n} scalars counted {n_ones} ones and {n_rest} others"),
        });
    }
    let mut acc = G::Curve::identity();
    if n_ones > 0 {
        acc += sum_on_host(&back.sums);
    }
    if n_rest > 0 {
        let shape = Windows::signed(n_rest, units, plan.window_bits);
        acc += shape.reduce(&back.results[..shape.windows * shape.groups]);
    }
    Ok(acc)
}

/// What a chunk reads back: the split's counts, the work groups' sums of ones and the work
/// items' bucket results.
struct ReadBack<C> {
    counts: [u32; 2],
    sums: Vec<C>,
    results: Vec<C>,
}

/// Reads a chunk's counts, sums and results back with one wait. On a failure the queue is
/// drained before the host buffers go; where even that fails they are never freed (a copy may
/// still write them).
fn read_back<G: PrimeCurveAffine>(
    q: &DeviceQueue,
    ws: &Workspace<G>,
    units: usize,
) -> Result<Box<ReadBack<G::Curve>>> {
    let mut back = Box::new(ReadBack {
        counts: [0; 2],
        sums: vec![G::Curve::identity(); units / LOCAL_WORK_SIZE],
        results: vec![G::Curve::identity(); units],
    });
    let read = (|| {
        // SAFETY: `back` is neither touched nor freed until the blocking read below has waited
        // for these copies; on a failure it is kept until the queue is drained (below).
        unsafe {
            q.read_async(&ws.counts, &mut back.counts)?;
            q.read_async(&ws.sums, &mut back.sums)?;
        }
        q.read(&ws.results, &mut back.results)
    })();
    match read {
        Ok(()) => Ok(back),
        Err(e) => {
            if q.finish().is_err() {
                std::mem::forget(back);
            }
            Err(e)
        }
    }
}

/// Where a chunk's split writes: the terms whose scalar is one, the others with their exponents,
/// and the two counts.
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
    split: &opencl3::kernel::Kernel,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_capped_by_memory_and_by_the_configured_limit() {
        // G1: 144-byte Jacobian buckets (1024 a work item at the base window, plus its result
        // and sum); 40 bytes a term, 96 more when staged.
        let fixed = |units: u64| units * 1026 * 144;
        let share = 2 * fixed(256) + 40 * 1000;
        let p = plan::<G1Affine>(1 << 30, 256, share, u64::MAX, usize::MAX, false).unwrap();
        assert_eq!(
            p,
            ChunkPlan {
                chunk_terms: (fixed(256) / 40 + 1000) as usize,
                work_units: 256,
                window_bits: BASE_SIGNED_BITS,
            }
        );
        let staged = plan::<G1Affine>(1 << 30, 256, share, u64::MAX, usize::MAX, true).unwrap();
        assert_eq!(staged.chunk_terms as u64, (fixed(256) + 40_000) / 136);
        let p = plan::<G1Affine>(1 << 20, 256, u64::MAX / 2, u64::MAX, 300, false).unwrap();
        assert_eq!(p.chunk_terms, 300);
        let p = plan::<G1Affine>(50, 256, u64::MAX / 2, u64::MAX, 300, false).unwrap();
        assert_eq!(p.chunk_terms, 50);
        let p = plan::<G1Affine>(1 << 30, 256, u64::MAX / 2, 32 * 700, usize::MAX, false).unwrap();
        assert_eq!(p.chunk_terms, 700, "the largest buffer caps the scalars");
    }

    #[test]
    fn the_window_widens_with_the_terms_as_far_as_a_quarter_of_the_share_holds_its_buckets() {
        let buckets = |units: u64, bits: u32| units * ((1 << (bits - 1)) + 2) * 144;
        // 4 Mi terms over 256 units is worth 14 bits (`best_bits`), with room to spare.
        let roomy = plan::<G1Affine>(1 << 22, 256, u64::MAX / 2, u64::MAX, usize::MAX, false);
        assert_eq!(roomy.unwrap().window_bits, 14);
        // 1 Gi terms are worth 16 bits; a quarter of the share holds 13 bits' buckets, not 14's.
        let share = 4 * buckets(256, 13) + 4;
        let tight = plan::<G1Affine>(1 << 30, 256, share, u64::MAX, usize::MAX, false).unwrap();
        assert_eq!(tight.window_bits, 13);
        assert_eq!(tight.chunk_terms as u64, (share - buckets(256, 13)) / 40);
        // Few terms a unit keep a narrow window (and few buckets).
        let few = plan::<G1Affine>(1000, 256, u64::MAX / 2, u64::MAX, usize::MAX, false);
        assert!(few.unwrap().window_bits < BASE_SIGNED_BITS);
    }

    #[test]
    fn work_units_shrink_when_their_buckets_would_crowd_out_the_terms() {
        let fixed = |units: u64| units * 1026 * 144;
        let p = plan::<G1Affine>(1 << 30, 256, fixed(256), u64::MAX, usize::MAX, false).unwrap();
        assert_eq!(p.work_units, 128);
        assert_eq!(p.chunk_terms as u64, (fixed(256) - fixed(128)) / 40);
        // 132 compute units' work items halved stay whole work groups (132 groups → 66 → 33 → 16).
        let odd = plan::<G1Affine>(1 << 30, 132 * 128, fixed(2000), u64::MAX, usize::MAX, false);
        let units = odd.unwrap().work_units;
        assert!(
            units.is_multiple_of(LOCAL_WORK_SIZE) && fixed(units as u64) <= fixed(2000) / 2,
            "{units}"
        );
        assert!(plan::<G1Affine>(50, 256, 1000, u64::MAX, 300, false).is_err());
    }
}

//! The H polynomial on the device: a and b go up once, c = a∘b is formed there, every FFT and
//! element-wise step runs on the device (ec-gpu-gen's radix FFT kernel, our product, scale and
//! combine kernels), and h stays there for its multiexp. The same steps as the CPU's
//! `compute_h`:
//!
//! ```text
//! for v in a, b, c:  v ← iFFT(v) · (1/n)·g^i  then FFT(v)        (evaluations on the coset g·ω^i)
//! a ← (a·b − c) / (g^n − 1)                                      (t(x) is constant on the coset)
//! h ← iFFT(a) · (1/n)·g^(−i), the top coefficient dropped
//! ```

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use ff::{Field, PrimeField};
use opencl3::event::Event;
use opencl3::memory::Buffer;

use super::device::MemoryGrant;
use super::kernels::fft_kernel;
use super::queue::DeviceQueue;
use crate::error::{ProverError, Result};
use blstrs::Scalar as Fr;

/// Radix of one FFT kernel round: 2^8 (the kernel's twiddle table supports up to that).
const MAX_LOG2_RADIX: u32 = 8;
/// Work items per work group of an FFT round: at most 2^7.
const MAX_LOG2_LOCAL_WORK_SIZE: u32 = 7;
/// Device buffers the H computation holds at peak: a, b, c and one scratch vector.
const H_BUFFERS: u64 = 4;
/// Work items per work group of the element-wise kernels.
const ELEMENTWISE_LOCAL: usize = 64;
/// Work items of the scale kernel: enough to fill any GPU (2^16 · 32 bytes in flight), few
/// enough that each item's one power by squaring is small against its 2^11 elements at 2^27.
const SCALE_ITEMS: usize = 1 << 16;

/// The domain of the a/b/c vectors: size 2^log_n ≥ their length, and its generator ω.
struct Domain {
    log_n: u32,
    omega: Fr,
}

impl Domain {
    fn for_len(len: usize) -> Result<Domain> {
        let log_n = len.max(1).next_power_of_two().trailing_zeros();
        if log_n >= Fr::S {
            return Err(ProverError::ParamsShape(format!(
                "{len} constraints exceed the scalar field's FFT domain"
            )));
        }
        let mut omega = Fr::ROOT_OF_UNITY;
        for _ in log_n..Fr::S {
            omega = omega.square();
        }
        Ok(Domain { log_n, omega })
    }

    fn n(&self) -> usize {
        1 << self.log_n
    }
}

/// Device bytes [`compute_h`] reserves for vectors of `len` elements, and the largest buffer.
pub fn h_memory(len: usize) -> (u64, u64) {
    let buffer = (len.max(1).next_power_of_two() * std::mem::size_of::<Fr>()) as u64;
    (H_BUFFERS * buffer, buffer)
}

/// h(x) on the device: its n − 1 coefficients (Montgomery form, as the host keeps field
/// elements) in the first elements of `h`, for the H multiexp to read where they are.
pub struct HOnDevice {
    pub h: Buffer<Fr>,
    /// Coefficients in `h` (the domain size less one).
    pub len: usize,
    _grant: MemoryGrant,
}

/// h(x) = (A(x)·B(x) − C(x)) / t(x) from the a and b evaluations, kept on the device. Only a
/// and b go up: C's evaluations are a∘b for a satisfied R1CS (every constraint holds), so
/// they are formed here; a witness that does not satisfy the circuit gives a proof that fails
/// its check, as it would with c uploaded. `None` when the pool has no room for the four
/// vectors now. Borrows a and b (the caller keeps them until this returns, which waits for the
/// queue) so that a failed attempt can run again elsewhere.
pub fn compute_h(q: &DeviceQueue, a: &[Fr], b: &[Fr]) -> Result<Option<HOnDevice>> {
    if a.len() != b.len() {
        return Err(ProverError::ParamsShape(format!(
            "a/b lengths differ: {}, {}",
            a.len(),
            b.len()
        )));
    }
    let domain = Domain::for_len(a.len())?;
    let n = domain.n();
    let (bytes, buffer) = h_memory(a.len());
    let Some(mut grant) = q.memory().try_reserve(bytes, 0) else {
        return Ok(None);
    };

    // a and b go up through pinned memory on the copy queue; the kernels' queue waits for
    // them (the copy queue runs in order: b's copy ends after a's) before it touches the
    // buffers at all, their zero padding included.
    let upload = |v: &[Fr]| -> Result<(Buffer<Fr>, Event)> {
        let mut buf = q.program.buffer::<Fr>(n)?;
        let copied = q.stage(&mut buf, 0, v)?;
        Ok((buf, copied))
    };
    let len = a.len();
    let (mut a, _) = upload(a)?;
    let (mut b, copied) = upload(b)?;
    q.after(&copied)?;
    for buf in [&mut a, &mut b] {
        q.fill(buf, Fr::ZERO, len, n - len)?;
    }
    let mut c = q.program.buffer::<Fr>(n)?;
    let mut scratch = q.program.buffer::<Fr>(n)?;
    elementwise(q, "snarkd_product", n, |k| {
        // SAFETY: the argument list of `snarkd_product`; every buffer holds n elements.
        unsafe { k.set_arg(&a).set_arg(&b).set_arg(&c).set_arg(&(n as u32)) };
    })?;

    let tables = [
        Twiddles::new(q, domain.omega, domain.log_n)?,
        Twiddles::new(q, domain.omega.invert().unwrap(), domain.log_n)?,
    ];
    let [forward, inverse] = &tables;
    let g = Fr::MULTIPLICATIVE_GENERATOR;
    let n_inv = Fr::from(n as u64).invert().unwrap();
    for buf in [&mut a, &mut b, &mut c] {
        radix_fft(q, buf, &mut scratch, inverse, domain.log_n)?;
        scale_by_powers(q, buf, n, n_inv, g)?;
        radix_fft(q, buf, &mut scratch, forward, domain.log_n)?;
    }
    let z_inv = (g.pow_vartime([n as u64]) - Fr::ONE).invert().unwrap();
    elementwise(q, "snarkd_h_combine", n, |k| {
        // SAFETY: the argument list of `snarkd_h_combine`; every buffer holds n elements.
        unsafe {
            k.set_arg(&a)
                .set_arg(&b)
                .set_arg(&c)
                .set_arg(&(n as u32))
                .set_arg(&z_inv)
        };
    })?;
    radix_fft(q, &mut a, &mut scratch, inverse, domain.log_n)?;
    scale_by_powers(q, &mut a, n, n_inv, g.invert().unwrap())?;
    q.finish()?;
    drop((b, c, scratch, tables));
    grant.shrink_to(buffer);
    // deg h ≤ n − 2: the top coefficient is zero and the parameters hold n − 1 H bases.
    Ok(Some(HOnDevice {
        h: a,
        len: n - 1,
        _grant: grant,
    }))
}

/// h computed elsewhere (the CPU, after a device fault), copied up for the H multiexp; `None`
/// when the pool has no room for it now.
pub fn upload_h(q: &DeviceQueue, h: &[Fr]) -> Result<Option<HOnDevice>> {
    let bytes = std::mem::size_of_val(h) as u64;
    let Some(grant) = q.memory().try_reserve(bytes, 0) else {
        return Ok(None);
    };
    let mut buf = q.program.buffer::<Fr>(h.len())?;
    q.write(&mut buf, 0, h)?;
    Ok(Some(HOnDevice {
        h: buf,
        len: h.len(),
        _grant: grant,
    }))
}

/// The twiddle tables of one FFT direction, on the device.
struct Twiddles {
    /// pq[i] = (ω^(n / 2^max_deg))^i for i < 2^(max_deg−1).
    pq: Buffer<Fr>,
    /// ω^(2^k) for every k the kernel's power lookup may need.
    omegas: Buffer<Fr>,
}

/// The host's copy of one direction's tables: `pq`, then `omegas` (see [`Twiddles`]).
type HostTables = (Vec<Fr>, Vec<Fr>);

impl Twiddles {
    /// The tables for ω, copied up without waiting: their host copies are kept for the
    /// process (a few KiB for each domain size and direction), so no error path has to wait.
    fn new(q: &DeviceQueue, omega: Fr, log_n: u32) -> Result<Twiddles> {
        let (pq, omegas) = host_tables(omega, log_n);
        let mut pq_buf = q.program.buffer::<Fr>(pq.len())?;
        let mut omegas_buf = q.program.buffer::<Fr>(omegas.len())?;
        // SAFETY: the host tables live as long as the process.
        unsafe {
            q.write_async(&mut pq_buf, 0, pq)?;
            q.write_async(&mut omegas_buf, 0, omegas)?;
        }
        Ok(Twiddles {
            pq: pq_buf,
            omegas: omegas_buf,
        })
    }
}

/// The host tables for ω and 2^log_n, made once per process.
fn host_tables(omega: Fr, log_n: u32) -> &'static HostTables {
    type Made = HashMap<([u8; 32], u32), &'static HostTables>;
    static MADE: OnceLock<Mutex<Made>> = OnceLock::new();
    let mut made = MADE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    made.entry((omega.to_bytes_le(), log_n)).or_insert_with(|| {
        let max_deg = MAX_LOG2_RADIX.min(log_n).max(1);
        let n = 1u64 << log_n;
        let twiddle = omega.pow_vartime([n >> max_deg]);
        let mut pq = vec![Fr::ONE; 1 << (max_deg - 1)];
        for i in 1..pq.len() {
            pq[i] = pq[i - 1] * twiddle;
        }
        let mut omegas = vec![omega; 32];
        for k in 1..omegas.len() {
            omegas[k] = omegas[k - 1].square();
        }
        Box::leak(Box::new((pq, omegas)))
    })
}

/// Launches the element-wise kernel `name` over n elements.
fn elementwise(
    q: &DeviceQueue,
    name: &str,
    n: usize,
    set_args: impl FnOnce(&mut opencl3::kernel::ExecuteKernel),
) -> Result<()> {
    let kernel = q.program.kernel(name)?;
    let local = ELEMENTWISE_LOCAL.min(n);
    q.launch(&kernel, n.div_ceil(local), local, set_args)
}

/// In-place radix FFT of `buf` (2^log_n elements) with the root of `tw`; `scratch` is the
/// other half of each ping-pong round. The result ends in `buf`.
fn radix_fft(
    q: &DeviceQueue,
    buf: &mut Buffer<Fr>,
    scratch: &mut Buffer<Fr>,
    tw: &Twiddles,
    log_n: u32,
) -> Result<()> {
    if log_n == 0 {
        return Ok(());
    }
    let n = 1u32 << log_n;
    let max_deg = MAX_LOG2_RADIX.min(log_n);
    let kernel = q.program.kernel(&fft_kernel())?;
    let mut log_p = 0u32;
    let mut in_scratch = false;
    while log_p < log_n {
        let deg = max_deg.min(log_n - log_p);
        let local = 1usize << (deg - 1).min(MAX_LOG2_LOCAL_WORK_SIZE);
        let groups = (n >> deg) as usize;
        let (src, dst) = if in_scratch {
            (&*scratch, &*buf)
        } else {
            (&*buf, &*scratch)
        };
        q.launch(&kernel, groups, local, |k| {
            // SAFETY: the argument list of `FIELD_radix_fft` in ec-gpu-gen's fft.cl, in order.
            unsafe {
                k.set_arg(src)
                    .set_arg(dst)
                    .set_arg(&tw.pq)
                    .set_arg(&tw.omegas)
                    .set_arg_local_buffer((1usize << deg) * std::mem::size_of::<Fr>())
                    .set_arg(&n)
                    .set_arg(&log_p)
                    .set_arg(&deg)
                    .set_arg(&max_deg);
            }
        })?;
        log_p += deg;
        in_scratch = !in_scratch;
    }
    if in_scratch {
        std::mem::swap(buf, scratch);
    }
    Ok(())
}

/// x[i] ← x[i] · scale · g^i on the device: one power by squaring per work item, then one
/// multiplication per element.
fn scale_by_powers(q: &DeviceQueue, x: &mut Buffer<Fr>, n: usize, scale: Fr, g: Fr) -> Result<()> {
    let items = n.min(SCALE_ITEMS);
    let local = ELEMENTWISE_LOCAL.min(items);
    let groups = items.div_ceil(local);
    let g_stride = g.pow_vartime([(groups * local) as u64]);
    let kernel = q.program.kernel("snarkd_scale_by_powers")?;
    q.launch(&kernel, groups, local, |k| {
        // SAFETY: the argument list of `snarkd_scale_by_powers`; the kernel checks i < n.
        unsafe {
            k.set_arg(&*x)
                .set_arg(&(n as u32))
                .set_arg(&scale)
                .set_arg(&g)
                .set_arg(&g_stride);
        }
    })
}

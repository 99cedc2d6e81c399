//! The H polynomial on the device: the three a/b/c vectors go up once, every FFT and element-wise
//! step runs on the device (ec-gpu-gen's radix FFT kernel, our scale and combine kernels), and
//! only h comes back. The same steps as the CPU's `compute_h`:
//!
//! ```text
//! for v in a, b, c:  v ← iFFT(v) · (1/n)·g^i  then FFT(v)        (evaluations on the coset g·ω^i)
//! a ← (a·b − c) / (g^n − 1)                                      (t(x) is constant on the coset)
//! h ← iFFT(a) · (1/n)·g^(−i), the top coefficient dropped
//! ```

use ff::{Field, PrimeField};
use opencl3::memory::Buffer;

use super::kernels::{fft_kernel, read, write};
use super::queue::DeviceQueue;
use crate::error::{ProverError, Result};
use crate::synthesis::Abc;
use blstrs::Scalar as Fr;

/// Radix of one FFT kernel round: 2^8 (the kernel's twiddle table supports up to that).
const MAX_LOG2_RADIX: u32 = 8;
/// Work items per work group of an FFT round: at most 2^7.
const MAX_LOG2_LOCAL_WORK_SIZE: u32 = 7;
/// Device buffers the H computation holds at peak: a, b, c and one scratch vector.
const H_BUFFERS: u64 = 4;

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

/// Coefficients of h(x) = (A(x)·B(x) − C(x)) / t(x), as the CPU's `compute_h` returns them.
/// Borrows the a/b/c evaluations so a failed attempt can be run again elsewhere; the caller
/// frees them when this returns, as the CPU path frees them when its FFTs are done.
pub fn compute_h(q: &DeviceQueue, abc: &Abc) -> Result<Vec<Fr>> {
    let Abc { a, b, c } = abc;
    if a.len() != b.len() || a.len() != c.len() {
        return Err(ProverError::ParamsShape(format!(
            "a/b/c lengths differ: {}, {}, {}",
            a.len(),
            b.len(),
            c.len()
        )));
    }
    let domain = Domain::for_len(a.len())?;
    let n = domain.n();
    let (bytes, _) = h_memory(a.len());
    let _grant = q.reserve(bytes)?;

    let upload = |v: &[Fr]| -> Result<Buffer<Fr>> {
        let mut buf = q.program.buffer::<Fr>(n)?;
        write(&q.queue, &mut buf, v)?;
        let pad = n - v.len();
        if pad > 0 {
            write_at(q, &mut buf, n - pad, &vec![Fr::ZERO; pad])?;
        }
        Ok(buf)
    };
    let mut bufs = [upload(a)?, upload(b)?, upload(c)?];
    let mut scratch = q.program.buffer::<Fr>(n)?;

    let omega_inv = domain.omega.invert().unwrap();
    let g = Fr::MULTIPLICATIVE_GENERATOR;
    let n_inv = Fr::from(n as u64).invert().unwrap();
    for buf in bufs.iter_mut() {
        radix_fft(q, buf, &mut scratch, omega_inv, domain.log_n)?;
        scale_by_powers(q, buf, n, n_inv, g)?;
        radix_fft(q, buf, &mut scratch, domain.omega, domain.log_n)?;
    }
    let [mut a, b, c] = bufs;
    let z_inv = (g.pow_vartime([n as u64]) - Fr::ONE).invert().unwrap();
    h_combine(q, &mut a, &b, &c, n, z_inv)?;
    drop((b, c));
    radix_fft(q, &mut a, &mut scratch, omega_inv, domain.log_n)?;
    drop(scratch);
    scale_by_powers(q, &mut a, n, n_inv, g.invert().unwrap())?;

    let mut h = vec![Fr::ZERO; n];
    read(&q.queue, &a, &mut h)?;
    // deg h ≤ n − 2: the top coefficient is zero and the parameters hold n − 1 H bases.
    h.truncate(n - 1);
    Ok(h)
}

/// In-place radix FFT of `buf` (2^log_n elements) with the root `omega`; `scratch` is the
/// other half of each ping-pong round. The result ends in `buf`.
fn radix_fft(
    q: &DeviceQueue,
    buf: &mut Buffer<Fr>,
    scratch: &mut Buffer<Fr>,
    omega: Fr,
    log_n: u32,
) -> Result<()> {
    if log_n == 0 {
        return Ok(());
    }
    let n = 1u32 << log_n;
    let max_deg = MAX_LOG2_RADIX.min(log_n);
    // Twiddles of the largest radix: pq[i] = (ω^(n / 2^max_deg))^i for i < 2^(max_deg−1).
    let twiddle = omega.pow_vartime([(n >> max_deg) as u64]);
    let mut pq = vec![Fr::ONE; 1 << (max_deg - 1)];
    for i in 1..pq.len() {
        pq[i] = pq[i - 1] * twiddle;
    }
    // ω^(2^k) for every k the kernel's power lookup may need.
    let mut omegas = vec![omega; 32];
    for k in 1..omegas.len() {
        omegas[k] = omegas[k - 1].square();
    }
    let mut pq_buf = q.program.buffer::<Fr>(pq.len())?;
    write(&q.queue, &mut pq_buf, &pq)?;
    let mut omegas_buf = q.program.buffer::<Fr>(omegas.len())?;
    write(&q.queue, &mut omegas_buf, &omegas)?;

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
        q.run(&kernel, groups, local, |k| {
            // SAFETY: the argument list of `FIELD_radix_fft` in ec-gpu-gen's fft.cl, in order.
            unsafe {
                k.set_arg(src)
                    .set_arg(dst)
                    .set_arg(&pq_buf)
                    .set_arg(&omegas_buf)
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

/// x[i] ← x[i] · scale · g^i on the device.
fn scale_by_powers(q: &DeviceQueue, x: &mut Buffer<Fr>, n: usize, scale: Fr, g: Fr) -> Result<()> {
    let kernel = q.program.kernel("snarkd_scale_by_powers")?;
    let local = 64.min(n);
    q.run(&kernel, n.div_ceil(local), local, |k| {
        // SAFETY: the argument list of `snarkd_scale_by_powers`; the kernel checks i < n.
        unsafe {
            k.set_arg(&*x)
                .set_arg(&(n as u32))
                .set_arg(&scale)
                .set_arg(&g);
        }
    })
}

/// a[i] ← (a[i]·b[i] − c[i]) · z_inv on the device.
fn h_combine(
    q: &DeviceQueue,
    a: &mut Buffer<Fr>,
    b: &Buffer<Fr>,
    c: &Buffer<Fr>,
    n: usize,
    z_inv: Fr,
) -> Result<()> {
    let kernel = q.program.kernel("snarkd_h_combine")?;
    let local = 64.min(n);
    q.run(&kernel, n.div_ceil(local), local, |k| {
        // SAFETY: the argument list of `snarkd_h_combine`; the kernel checks i < n.
        unsafe {
            k.set_arg(&*a)
                .set_arg(b)
                .set_arg(c)
                .set_arg(&(n as u32))
                .set_arg(&z_inv);
        }
    })
}

/// Writes `data` at element `offset` of `buf`.
fn write_at(q: &DeviceQueue, buf: &mut Buffer<Fr>, offset: usize, data: &[Fr]) -> Result<()> {
    // SAFETY: blocking write of `data` (which outlives the call) into elements
    // offset..offset + data.len() of `buf`, which the caller allocated that large.
    unsafe {
        q.queue.enqueue_write_buffer(
            buf,
            opencl3::types::CL_BLOCKING,
            offset * std::mem::size_of::<Fr>(),
            data,
            &[],
        )
    }
    .map(drop)
    .map_err(|e| super::kernels::cl_err("writing a buffer", e))
}

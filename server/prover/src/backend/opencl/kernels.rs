//! The device programs: ec-gpu-gen's generated BLS12-381 source (the scalar field's radix FFT,
//! G1 and G2 bucket multiexp) plus two small element-wise kernels of ours for the H polynomial,
//! compiled once per device and process and shared by every worker on that device. Drivers
//! cache the compiled binary themselves (PoCL under `$POCL_CACHE_DIR` or `~/.cache/pocl`), so a
//! later process skips most of the compile time.
//!
//! The buffer helpers here are the only `unsafe` OpenCL calls of the backend; each states the
//! invariant it relies on.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use blstrs::{Fp, Fp2, G1Affine, G2Affine, Scalar as Fr};
use ec_gpu::GpuName;
use ec_gpu_gen::SourceBuilder;
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE};
use opencl3::program::Program;
use opencl3::types::CL_BLOCKING;

use super::device::OpenClDevice;
use crate::error::{ProverError, Result};

/// Our element-wise kernels over the scalar field (`SCALAR` is replaced by its generated name).
/// `scale_by_powers`: x[i] *= scale · g^i (the 1/n of an inverse FFT and the coset shift in one
/// pass); `h_combine`: a[i] = (a[i]·b[i] − c[i]) · z_inv (the quotient by t(x) on the coset).
const H_KERNELS: &str = r#"
KERNEL void snarkd_scale_by_powers(GLOBAL SCALAR* x, uint n, SCALAR scale, SCALAR g) {
  const uint i = GET_GLOBAL_ID();
  if (i >= n) return;
  x[i] = SCALAR_mul(x[i], SCALAR_mul(scale, SCALAR_pow(g, i)));
}

KERNEL void snarkd_h_combine(GLOBAL SCALAR* a, GLOBAL SCALAR* b, GLOBAL SCALAR* c, uint n,
                             SCALAR z_inv) {
  const uint i = GET_GLOBAL_ID();
  if (i >= n) return;
  a[i] = SCALAR_mul(SCALAR_sub(SCALAR_mul(a[i], b[i]), c[i]), z_inv);
}
"#;

/// The whole program source. ec-gpu-gen recommends 64-bit limbs for OpenCL.
pub fn source() -> String {
    SourceBuilder::new()
        .add_fft::<Fr>()
        .add_multiexp::<G1Affine, Fp>()
        .add_multiexp::<G2Affine, Fp2>()
        .append_source(H_KERNELS.replace("SCALAR", &Fr::name()))
        .build_64_bit_limbs()
}

/// Names of the generated kernels.
pub fn fft_kernel() -> String {
    format!("{}_radix_fft", Fr::name())
}
pub fn multiexp_kernel<G: GpuName>() -> String {
    format!("{}_multiexp", G::name())
}

/// A device's context and built program.
pub struct DeviceProgram {
    pub context: Context,
    pub program: Program,
}

impl DeviceProgram {
    /// The program for `device`, built on first use in this process.
    pub fn get(device: &OpenClDevice) -> Result<Arc<DeviceProgram>> {
        static BUILT: Mutex<Vec<(usize, Arc<DeviceProgram>)>> = Mutex::new(Vec::new());
        // One build at a time: concurrent builds of this size only compete for the same cores.
        let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
        let key = device.device.id() as usize;
        if let Some((_, p)) = built.iter().find(|(k, _)| *k == key) {
            return Ok(Arc::clone(p));
        }
        // Said before it starts: the daemon serves only once its devices' kernels are built.
        tracing::info!(
            device = %device.info.name,
            "building the opencl kernels (NVIDIA's compiler took 160 s on an H200 the first time)"
        );
        let start = Instant::now();
        let context = Context::from_device(&device.device).map_err(|e| cl_err("context", e))?;
        let program =
            Program::create_and_build_from_source(&context, &source(), "").map_err(|log| {
                ProverError::Device {
                    backend: "opencl".into(),
                    reason: format!("building the kernels for {}: {log}", device.info.name),
                }
            })?;
        let build_time = start.elapsed();
        tracing::info!(
            device = %device.info.name,
            build_ms = build_time.as_millis() as u64,
            "opencl kernels built"
        );
        let p = Arc::new(DeviceProgram { context, program });
        built.push((key, Arc::clone(&p)));
        Ok(p)
    }

    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        Kernel::create(&self.program, name).map_err(|e| cl_err(name, e))
    }

    /// An uninitialised device buffer of `len` elements; every caller writes it (from the host
    /// or a kernel) before reading it.
    pub fn buffer<T>(&self, len: usize) -> Result<Buffer<T>> {
        // SAFETY: no host pointer is passed; the size is `len` elements of `T`.
        unsafe {
            Buffer::<T>::create(
                &self.context,
                CL_MEM_READ_WRITE,
                len.max(1),
                std::ptr::null_mut(),
            )
        }
        .map_err(|e| cl_err("allocating a buffer", e))
    }
}

/// Copies `data` into the start of `buf` and waits.
pub fn write<T>(queue: &CommandQueue, buf: &mut Buffer<T>, data: &[T]) -> Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    // SAFETY: blocking write of `data`, which outlives the call; `buf` holds at least as many
    // elements (callers allocate it for `data`).
    unsafe { queue.enqueue_write_buffer(buf, CL_BLOCKING, 0, data, &[]) }
        .map(drop)
        .map_err(|e| cl_err("writing a buffer", e))
}

/// Copies the start of `buf` into `out` and waits.
pub fn read<T>(queue: &CommandQueue, buf: &Buffer<T>, out: &mut [T]) -> Result<()> {
    if out.is_empty() {
        return Ok(());
    }
    // SAFETY: blocking read into `out`; `buf` holds at least `out.len()` initialised elements.
    unsafe { queue.enqueue_read_buffer(buf, CL_BLOCKING, 0, out, &[]) }
        .map(drop)
        .map_err(|e| cl_err("reading a buffer", e))
}

/// An OpenCL error code as a device error naming what failed.
pub fn cl_err(what: &str, e: impl std::fmt::Display) -> ProverError {
    ProverError::Device {
        backend: "opencl".into(),
        reason: format!("{what}: {e}"),
    }
}

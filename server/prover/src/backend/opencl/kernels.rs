//! The device programs: ec-gpu-gen's generated BLS12-381 source (the scalar field's radix FFT,
//! the field and curve arithmetic) plus our kernels (`snarkd_scalar.cl`: the H polynomial's
//! element-wise passes and the split of a multiexp's scalars; `snarkd_point.cl`: the multiexp),
//! compiled once per device and process and shared by every worker on that device. Drivers
//! cache the compiled binary themselves (PoCL under `$POCL_CACHE_DIR` or `~/.cache/pocl`), so a
//! later process skips most of the compile time.
//!
//! The buffer allocation here and the copies in `queue.rs` are the backend's `unsafe` OpenCL
//! calls; each states the invariant it relies on.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use blstrs::{Fp, Fp2, G1Affine, G2Affine, Scalar as Fr};
use ec_gpu::GpuName;
use ec_gpu_gen::SourceBuilder;
use opencl3::context::Context;
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE};
use opencl3::program::Program;

use super::device::OpenClDevice;
use crate::error::{ProverError, Result};

/// Our kernels over the scalar field (`SCALAR` is replaced by its generated name): the H
/// polynomial's element-wise passes and the three-way split of a multiexp's scalars.
const SCALAR_KERNELS: &str = include_str!("snarkd_scalar.cl");
/// Our multiexp kernels over one group (`POINT`, `FIELD` and `SCALAR` replaced).
const POINT_KERNELS: &str = include_str!("snarkd_point.cl");

/// The whole program source: ec-gpu-gen's field, curve and FFT code (its bucket multiexp too,
/// which the kernels of ours call nothing of but share the curve code with) and ours.
/// ec-gpu-gen's documentation recommends 32-bit limbs for OpenCL; which is faster on NVIDIA's
/// driver is for the device benchmark to measure (`[gpus] limb_bits`).
pub fn source(limbs: LimbBits) -> String {
    let builder = SourceBuilder::new()
        .add_fft::<Fr>()
        .add_multiexp::<G1Affine, Fp>()
        .add_multiexp::<G2Affine, Fp2>()
        .append_source(SCALAR_KERNELS.replace("SCALAR", &Fr::name()))
        .append_source(point_kernels::<G1Affine, Fp>())
        .append_source(point_kernels::<G2Affine, Fp2>());
    match limbs {
        LimbBits::L32 => builder.build_32_bit_limbs(),
        LimbBits::L64 => builder.build_64_bit_limbs(),
    }
}

/// The limb width the field code is built with; the memory layout is the same either way
/// (little-endian limbs of a Montgomery-form value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LimbBits {
    L32,
    #[default]
    L64,
}

fn point_kernels<G: GpuName, F: GpuName>() -> String {
    POINT_KERNELS
        .replace("POINT", &G::name())
        .replace("FIELD", &F::name())
        .replace("SCALAR", &Fr::name())
}

/// Names of the generated kernels.
pub fn fft_kernel() -> String {
    format!("{}_radix_fft", Fr::name())
}
pub fn sum_ones_kernel<G: GpuName>() -> String {
    format!("{}_snarkd_sum_ones", G::name())
}
pub fn multiexp_kernel<G: GpuName>() -> String {
    format!("{}_snarkd_multiexp", G::name())
}

/// A device's context and built program.
pub struct DeviceProgram {
    pub context: Context,
    pub program: Program,
}

impl DeviceProgram {
    /// The program for `device`, built on first use in this process.
    pub fn get(device: &OpenClDevice, limbs: LimbBits) -> Result<Arc<DeviceProgram>> {
        type Built = Vec<((usize, LimbBits), Arc<DeviceProgram>)>;
        static BUILT: Mutex<Built> = Mutex::new(Vec::new());
        // One build at a time: concurrent builds of this size only compete for the same cores.
        let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
        let key = (device.device.id() as usize, limbs);
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
            Program::create_and_build_from_source(&context, &source(limbs), "").map_err(|log| {
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

/// An OpenCL error code as a device error naming what failed.
pub fn cl_err(what: &str, e: impl std::fmt::Display) -> ProverError {
    ProverError::Device {
        backend: "opencl".into(),
        reason: format!("{what}: {e}"),
    }
}

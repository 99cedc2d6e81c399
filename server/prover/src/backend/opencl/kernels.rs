//! The device programs: ec-gpu-gen's generated BLS12-381 source (the scalar field's radix FFT,
//! the field and curve arithmetic) plus our kernels (`snarkd_scalar.cl`: the H polynomial's
//! element-wise passes and the split of a multiexp's scalars; `snarkd_sort.cl`: the counting
//! sort of their digits by bucket; `snarkd_point.cl`: the sums of ones and of buckets, kept in
//! `snarkd_xyzz.cl`'s coordinates), compiled once per device and process and shared by every
//! worker on that device. The compiled binary is kept on disk (`kernel_cache.rs`) so a later
//! process loads it instead of compiling; drivers keep caches of their own too (PoCL under
//! `$POCL_CACHE_DIR` or `~/.cache/pocl`, NVIDIA its compiled machine code under
//! `$CUDA_CACHE_PATH` or `~/.nv/ComputeCache`).
//!
//! The buffer allocation here and the copies in `queue.rs` are the backend's `unsafe` OpenCL
//! calls; each states the invariant it relies on.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use blstrs::{Fp, Fp2, G1Affine, G2Affine, Scalar as Fr};
use ec_gpu::GpuName;
use ec_gpu_gen::SourceBuilder;
use opencl3::context::Context;
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE};
use opencl3::program::Program;

use super::device::OpenClDevice;
use super::kernel_cache;
use crate::error::{ProverError, Result};

/// Our kernels over the scalar field (`SCALAR` is replaced by its generated name): the H
/// polynomial's element-wise passes and the three-way split of a multiexp's scalars.
const SCALAR_KERNELS: &str = include_str!("snarkd_scalar.cl");
/// The counting sort of a multiexp chunk's digits by (window, digit) (`SCALAR` replaced).
const SORT_KERNELS: &str = include_str!("snarkd_sort.cl");
/// Our multiexp kernels over one group (`POINT`, `FIELD` and `SCALAR` replaced), after the
/// XYZZ coordinates their sums are kept in.
const POINT_KERNELS: [&str; 2] = [
    include_str!("snarkd_xyzz.cl"),
    include_str!("snarkd_point.cl"),
];

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
        .append_source(format!(
            "#define SNARKD_GROUP_ITEMS {LOCAL_WORK_SIZE}\n#define SNARKD_SCAN_BLOCK {SCAN_BLOCK}"
        ))
        .append_source(SORT_KERNELS.replace("SCALAR", &Fr::name()))
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
        .concat()
        .replace("POINT", &G::name())
        .replace("FIELD", &F::name())
        .replace("SCALAR", &Fr::name())
}

/// Work items per work group for the multiexp kernels (and the unit of their work size): the
/// sum of ones reduces a group's sums in local memory of this size, the sort's scans a
/// group's counts.
pub const LOCAL_WORK_SIZE: usize = 128;
// The sum of ones halves its group's sums in local memory until one is left.
const _: () = assert!(LOCAL_WORK_SIZE.is_power_of_two());
/// Buckets a work group of the sort's first scan takes (eight a work item).
pub const SCAN_BLOCK: usize = LOCAL_WORK_SIZE * 8;

/// Options every build of the program is made with (part of the kept binaries' key).
const BUILD_OPTIONS: &str = "";

/// Names of the generated kernels.
pub fn fft_kernel() -> String {
    format!("{}_radix_fft", Fr::name())
}
pub fn sum_ones_kernel<G: GpuName>() -> String {
    format!("{}_snarkd_sum_ones", G::name())
}
pub fn bucket_sum_kernel<G: GpuName>() -> String {
    format!("{}_snarkd_bucket_sum", G::name())
}
pub fn bucket_reduce_kernel<G: GpuName>() -> String {
    format!("{}_snarkd_bucket_reduce", G::name())
}

/// How a device's program came to be: compiled from source, or created from a kept binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuiltFrom {
    Source,
    Binary,
}

/// How and how fast a device's program was built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelBuild {
    pub from: BuiltFrom,
    pub elapsed: Duration,
}

/// A device's context and built program.
pub struct DeviceProgram {
    pub context: Context,
    pub program: Program,
    pub built: KernelBuild,
}

impl DeviceProgram {
    /// The program for `device`, built on first use in this process: from a binary kept in
    /// `cache` (see `kernel_cache.rs`) when there is a usable one, else from source (and kept
    /// there). Devices build in parallel; identical ones build once.
    pub fn get(
        device: &OpenClDevice,
        limbs: LimbBits,
        cache: Option<&Path>,
    ) -> Result<Arc<DeviceProgram>> {
        type Slot = Arc<Mutex<Option<Arc<DeviceProgram>>>>;
        static BUILT: Mutex<Vec<((usize, LimbBits), Slot)>> = Mutex::new(Vec::new());
        let key = (device.device.id() as usize, limbs);
        let slot = {
            let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
            match built.iter().find(|(k, _)| *k == key) {
                Some((_, slot)) => Arc::clone(slot),
                None => {
                    let slot = Slot::default();
                    built.push((key, Arc::clone(&slot)));
                    slot
                }
            }
        };
        let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = &*slot {
            return Ok(Arc::clone(p));
        }
        let p = Arc::new(DeviceProgram::build_sharing(device, limbs, cache, true)?);
        *slot = Some(Arc::clone(&p));
        Ok(p)
    }

    /// The program built as a new process would build it: nothing this process built is
    /// reused or shared, only what `cache` holds (for tests of the kept binaries).
    pub fn build_as_new_process(
        device: &OpenClDevice,
        limbs: LimbBits,
        cache: Option<&Path>,
    ) -> Result<DeviceProgram> {
        DeviceProgram::build_sharing(device, limbs, cache, false)
    }

    /// Builds the program for `device` now: from the binary another device of the same key
    /// built in this process (when `share`), or kept in `cache`, when the driver takes it; else
    /// from source, keeping the binary.
    fn build_sharing(
        device: &OpenClDevice,
        limbs: LimbBits,
        cache: Option<&Path>,
        share: bool,
    ) -> Result<DeviceProgram> {
        let start = Instant::now();
        let source = source(limbs);
        let key = kernel_cache::CacheKey::new(device, &source, BUILD_OPTIONS);
        // Held while this key builds: an identical device waits here and loads the binary.
        let slot = kernel_cache::slot(&key);
        let mut held = slot.lock().unwrap_or_else(|p| p.into_inner());
        let mut unshared = None;
        let known = if share { &mut *held } else { &mut unshared };
        let context = Context::from_device(&device.device).map_err(|e| cl_err("context", e))?;
        let kept = match (&*known, cache) {
            (Some(binary), _) => Some(Arc::clone(binary)),
            (None, Some(dir)) => match kernel_cache::read(dir, &key) {
                Ok(binary) => Some(Arc::new(binary)),
                Err(kernel_cache::Unusable::Missing) => None,
                Err(why) => {
                    tracing::warn!(device = %device.info.name, dir = %dir.display(), %why,
                        "the kept opencl kernels are not usable: building them from source");
                    None
                }
            },
            (None, None) => None,
        };
        if let Some(binary) = kept {
            match Program::create_and_build_from_binary(&context, &[&binary[..]], BUILD_OPTIONS) {
                Ok(program) => {
                    let built = KernelBuild {
                        from: BuiltFrom::Binary,
                        elapsed: start.elapsed(),
                    };
                    tracing::info!(device = %device.info.name,
                        build_ms = built.elapsed.as_millis() as u64, "opencl kernels loaded from their kept binary");
                    *known = Some(binary);
                    return Ok(DeviceProgram {
                        context,
                        program,
                        built,
                    });
                }
                Err(e) => {
                    tracing::warn!(device = %device.info.name, error = %e,
                        "the driver refused the kept opencl kernels: building them from source");
                    if let Some(dir) = cache {
                        kernel_cache::forget(dir, &key);
                    }
                }
            }
        }
        // Said before it starts: it takes minutes where nothing is kept.
        tracing::info!(
            device = %device.info.name,
            "building the opencl kernels from source (NVIDIA's compiler took 160 s on an H200)"
        );
        let program = Program::create_and_build_from_source(&context, &source, BUILD_OPTIONS)
            .map_err(|log| ProverError::Device {
                backend: "opencl".into(),
                reason: format!("building the kernels for {}: {log}", device.info.name),
            })?;
        let built = KernelBuild {
            from: BuiltFrom::Source,
            elapsed: start.elapsed(),
        };
        tracing::info!(
            device = %device.info.name,
            build_ms = built.elapsed.as_millis() as u64,
            "opencl kernels built"
        );
        match program.get_binaries().map(|mut b| b.pop()) {
            Ok(Some(binary)) if !binary.is_empty() => {
                if let Some(dir) = cache {
                    match kernel_cache::write(dir, &key, &binary) {
                        Ok(path) => tracing::info!(path = %path.display(), bytes = binary.len(),
                            "opencl kernels kept for the next start"),
                        Err(e) => tracing::warn!(dir = %dir.display(), error = %e,
                            "the opencl kernels could not be kept: the next start builds them again"),
                    }
                }
                *known = Some(Arc::new(binary));
            }
            other => {
                tracing::warn!(device = %device.info.name, result = ?other.map(|b| b.map(|b| b.len())),
                "the driver gave no binary of the opencl kernels: the next start builds them again")
            }
        }
        Ok(DeviceProgram {
            context,
            program,
            built,
        })
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

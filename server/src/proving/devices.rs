//! `[gpus]` → the devices the engine runs workers on, each with its backend, and the listing
//! `snarkd devices` prints.
//!
//! - `cpu`: one pseudo-device, the whole machine.
//! - `opencl`: every selected OpenCL device of every platform (PoCL's CPU device included); none
//!   found is a startup error.
//! - `auto`: the selected OpenCL devices of type GPU; without any, the CPU. PoCL's CPU device is
//!   never picked by `auto`: it is slower than the CPU backend on the same cores.
//! - `cuda`: a startup error pointing at `opencl`, which runs on NVIDIA GPUs through their driver.

use std::sync::Arc;

use snarkd_engine::prover::DeviceInfo;
use snarkd_prover::{CpuBackend, DeviceBackend};

use crate::config::{total_memory_bytes, Backend, Config, ConfigError};

/// One backend per selected device, with the device as the engine sees it. Logs what was chosen
/// and sets `snarkd_gpu_expected` (1 unless `[gpus] backend = "cpu"`), so that a box that asked
/// for a GPU and proves on the CPU is told apart from one that asked for the CPU.
pub fn backends(config: &Config) -> anyhow::Result<Vec<(DeviceInfo, Arc<dyn DeviceBackend>)>> {
    let chosen = choose(config)?;
    let gpu_expected = config.gpus.backend != Backend::Cpu;
    metrics::gauge!("snarkd_gpu_expected").set(if gpu_expected { 1.0 } else { 0.0 });
    let names: Vec<&str> = chosen.iter().map(|(_, b)| b.name()).collect();
    if gpu_expected && names == ["cpu"] {
        tracing::warn!(configured = ?config.gpus.backend,
            "no GPU found: proving on the CPU, which takes hours for a 32 GiB PoRep; install the \
             GPU's OpenCL driver (NVIDIA: its OpenCL ICD) and check `snarkd devices`");
    } else {
        let workers: Vec<usize> = chosen.iter().map(|(d, _)| d.workers).collect();
        // Each device's workers ([gpus] workers_per_device) beside its name.
        tracing::info!(configured = ?config.gpus.backend, devices = ?names, ?workers,
            "proving devices chosen");
    }
    Ok(chosen)
}

fn choose(config: &Config) -> anyhow::Result<Vec<(DeviceInfo, Arc<dyn DeviceBackend>)>> {
    match config.gpus.backend {
        Backend::Cpu => Ok(cpu(config)),
        Backend::Opencl => {
            let found = opencl::backends(config, false)?;
            if found.is_empty() {
                return Err(ConfigError::refused(
                    "gpus.backend",
                    format!(
                        "\"opencl\" found no OpenCL device{}; install a driver (PoCL's CPU \
                         device: apt-get install pocl-opencl-icd) or set backend = \"cpu\"",
                        opencl::unavailable_reason()
                    ),
                )
                .into());
            }
            Ok(found)
        }
        Backend::Auto => {
            let gpus = opencl::backends(config, true)?;
            Ok(if gpus.is_empty() { cpu(config) } else { gpus })
        }
        Backend::Cuda => Err(ConfigError::refused(
            "gpus.backend",
            "\"cuda\": snarkd has no CUDA backend; set backend = \"opencl\" (or \"auto\"), which \
             proves on NVIDIA GPUs through NVIDIA's OpenCL driver",
        )
        .into()),
    }
}

/// The lines `snarkd devices` prints: every OpenCL device, then the CPU.
pub fn listing() -> Vec<String> {
    let mut lines = opencl::listing();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    lines.push(format!(
        "cpu\tthis machine\t{threads} threads\tcpu\t{}\t{threads}",
        bytesize::ByteSize(total_memory_bytes()).to_string_as(true)
    ));
    lines
}

fn cpu(config: &Config) -> Vec<(DeviceInfo, Arc<dyn DeviceBackend>)> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let memory_bytes = total_memory_bytes();
    let device = DeviceInfo {
        ordinal: 0,
        name: format!("cpu ({threads} threads)"),
        memory_bytes,
        workers: (config.gpus.workers_per_device).on("cpu", memory_bytes, config.gpus.b_g2),
    };
    vec![(device, Arc::new(CpuBackend::new()))]
}

#[cfg(feature = "opencl")]
mod opencl {
    use std::sync::Arc;

    use snarkd_engine::prover::DeviceInfo;
    use snarkd_prover::backend::opencl::LimbBits;
    use snarkd_prover::backend::opencl::{list_devices, select_devices};
    use snarkd_prover::backend::warming::{Known, WarmingBackend};
    use snarkd_prover::{DeviceBackend, OpenClBackend, OpenClOptions};

    use crate::config::Config;

    /// Backends on the devices `[gpus] devices` selects (only GPUs when `gpus_only`), each set
    /// up in the background (kernels built or loaded, in parallel): see [`WarmingBackend`].
    pub fn backends(
        config: &Config,
        gpus_only: bool,
    ) -> anyhow::Result<Vec<(DeviceInfo, Arc<dyn DeviceBackend>)>> {
        let all = list_devices();
        let mut chosen = select_devices(&all, &config.gpus.devices)?;
        if gpus_only {
            chosen.retain(|d| d.info.kind == "gpu");
        }
        let g = &config.gpus;
        let options = OpenClOptions {
            workers_per_device: 1,
            max_chunk_terms: if g.max_chunk_terms == 0 {
                usize::MAX
            } else {
                g.max_chunk_terms
            },
            groups_per_unit: g.work_groups_per_unit,
            device_attempts: g.device_attempts,
            unhealthy_after: g.unhealthy_after,
            keep_params: g.keep_params,
            pool_bytes: None,
            limbs: match g.limb_bits {
                32 => LimbBits::L32,
                _ => LimbBits::L64,
            },
            kernel_cache: Some(config.kernel_cache_dir()),
            b_g2: g.b_g2,
        };
        Ok(chosen
            .into_iter()
            .map(|device| {
                let workers =
                    (g.workers_per_device).on(device.info.kind, device.info.memory_bytes, g.b_g2);
                let info = device_info(&device.info, workers);
                let known = Known {
                    name: device.info.backend_name(),
                    pci: device.info.pci,
                    driver: Some(device.info.driver()),
                };
                let options = OpenClOptions {
                    workers_per_device: workers,
                    ..options.clone()
                };
                let backend = WarmingBackend::start(
                    known,
                    g.cpu_while_warming.clone(),
                    "building or loading its kernels",
                    move || Ok(Arc::new(OpenClBackend::new(device, options)?) as _),
                );
                (info, backend as Arc<dyn DeviceBackend>)
            })
            .collect())
    }

    /// The engine's view of an OpenCL device with `workers` device workers.
    pub fn device_info(
        d: &snarkd_prover::backend::opencl::OpenClDeviceInfo,
        workers: usize,
    ) -> DeviceInfo {
        DeviceInfo {
            ordinal: d.ordinal,
            name: format!("{} ({})", d.name, d.platform),
            memory_bytes: d.memory_bytes,
            workers,
        }
    }

    pub fn unavailable_reason() -> &'static str {
        ""
    }

    pub fn listing() -> Vec<String> {
        list_devices()
            .iter()
            .map(|d| {
                let i = &d.info;
                format!(
                    "{}\t{}\t{}\t{}\t{}\t{}",
                    i.ordinal,
                    i.platform,
                    i.name,
                    i.kind,
                    bytesize::ByteSize(i.memory_bytes).to_string_as(true),
                    i.compute_units
                )
            })
            .collect()
    }
}

#[cfg(not(feature = "opencl"))]
mod opencl {
    use std::sync::Arc;

    use snarkd_engine::prover::DeviceInfo;
    use snarkd_prover::DeviceBackend;

    use crate::config::Config;

    pub fn backends(
        _config: &Config,
        _gpus_only: bool,
    ) -> anyhow::Result<Vec<(DeviceInfo, Arc<dyn DeviceBackend>)>> {
        Ok(Vec::new())
    }

    pub fn unavailable_reason() -> &'static str {
        " (this build has no `opencl` feature)"
    }

    pub fn listing() -> Vec<String> {
        Vec::new()
    }
}

#[cfg(feature = "opencl")]
pub use opencl::device_info;

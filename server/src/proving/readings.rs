//! What each device reports of itself ([`Prover::read_devices`](snarkd_engine::prover::Prover)):
//! NVML's utilisation, memory, temperature and power for NVIDIA GPUs, and the backend's own
//! device-memory pool. NVML (`libnvidia-ml.so.1`, part of NVIDIA's driver) is loaded at run time
//! and each OpenCL device is found in it by its PCI address; without the library, for a device it
//! does not list, or for a reading it refuses, that reading is absent, never zero. Every reading
//! is also a gauge on `/metrics`, labelled with the backend's device name (`opencl:0`).

use std::sync::Arc;

use nvml_wrapper::enum_wrappers::device::TemperatureSensor;
use nvml_wrapper::Nvml;
use snarkd_engine::prover::{DeviceInfo, DeviceTelemetry};
use snarkd_prover::DeviceBackend;

/// Reads every device that can report something.
pub struct DeviceReader {
    nvml: Option<Nvml>,
    sources: Vec<Source>,
}

struct Source {
    ordinal: u32,
    /// The backend's name, the metrics' `device` label.
    label: String,
    backend: Arc<dyn DeviceBackend>,
    /// The device's index in NVML, when NVML lists it.
    nvml_index: Option<u32>,
}

impl DeviceReader {
    /// Finds the devices in NVML (loaded only when some device has a PCI address to look for).
    pub fn new(backends: &[(DeviceInfo, Arc<dyn DeviceBackend>)]) -> DeviceReader {
        let wanted = backends.iter().any(|(_, b)| b.pci_address().is_some());
        let nvml = wanted.then(Nvml::init).and_then(|loaded| {
            loaded
                .map_err(|e| {
                    tracing::info!(
                        reason = %e,
                        "NVML is not available: devices report their memory pool only"
                    )
                })
                .ok()
        });
        let sources = backends
            .iter()
            .map(|(info, backend)| {
                let nvml_index = nvml.as_ref().and_then(|nvml| nvml_index(nvml, &**backend));
                if let Some(index) = nvml_index {
                    tracing::info!(
                        device = info.ordinal,
                        nvml_index = index,
                        "NVML reports this device"
                    );
                }
                let nvml_device = nvml
                    .as_ref()
                    .zip(nvml_index)
                    .and_then(|(nvml, i)| nvml.device_by_index(i).ok());
                set_info(info, &**backend, nvml_device.as_ref());
                Source {
                    ordinal: info.ordinal,
                    label: backend.name().to_string(),
                    backend: backend.clone(),
                    nvml_index,
                }
            })
            .collect();
        DeviceReader { nvml, sources }
    }

    /// Every device's readings now, leaving out devices that report nothing; sets the gauges.
    pub fn read(&self) -> Vec<DeviceTelemetry> {
        let mut out = Vec::new();
        for source in &self.sources {
            let mut reading = DeviceTelemetry {
                ordinal: source.ordinal,
                ..Default::default()
            };
            if let Some(pool) = source.backend.pool() {
                reading.pool_used_bytes = Some(pool.used_bytes);
                reading.pool_limit_bytes = Some(pool.limit_bytes);
            }
            if let (Some(nvml), Some(index)) = (&self.nvml, source.nvml_index) {
                read_nvml(nvml, index, &mut reading);
            }
            reading.warming = source.backend.warming();
            let warming = if reading.warming.is_some() { 1.0 } else { 0.0 };
            metrics::gauge!("snarkd_device_warming", "device" => source.label.clone()).set(warming);
            set_healthy(&source.label, &*source.backend);
            if !reading.is_empty() {
                set_gauges(&source.label, &reading);
                out.push(reading);
            }
        }
        out
    }
}

/// The NVML device at the backend's PCI address: the one that matches, or none when none or
/// several do (readings of the wrong GPU would be worse than none).
fn nvml_index(nvml: &Nvml, backend: &dyn DeviceBackend) -> Option<u32> {
    let pci = backend.pci_address()?;
    let matching: Vec<u32> = (0..nvml.device_count().ok()?)
        .filter(|&index| {
            (nvml.device_by_index(index).and_then(|d| d.pci_info()))
                .is_ok_and(|p| pci.matches(p.domain, p.bus, p.device))
        })
        .collect();
    match matching[..] {
        [index] => Some(index),
        [] => None,
        _ => {
            tracing::warn!(
                device = backend.name(),
                ?pci,
                "several NVML devices match this device's PCI address: no NVML readings for it"
            );
            None
        }
    }
}

fn read_nvml(nvml: &Nvml, index: u32, reading: &mut DeviceTelemetry) {
    let Ok(device) = nvml.device_by_index(index) else {
        return;
    };
    reading.utilization_percent = device.utilization_rates().ok().map(|u| u.gpu);
    if let Ok(memory) = device.memory_info() {
        reading.memory_used_bytes = Some(memory.used);
        reading.memory_total_bytes = Some(memory.total);
    }
    reading.temperature_celsius = device.temperature(TemperatureSensor::Gpu).ok();
    reading.power_milliwatts = device.power_usage().ok();
}

/// `snarkd_device_info` (1) with what joins the device's series with DCGM's and node exporter's:
/// its PCI bus id in NVML's and DCGM's form (`00000000:01:00.0`) and NVML's `UUID`, empty where
/// unknown; and `snarkd_device_healthy` 1 until a proof says otherwise.
fn set_info(info: &DeviceInfo, backend: &dyn DeviceBackend, nvml: Option<&nvml_wrapper::Device>) {
    let label = backend.name().to_string();
    let kind = label.split(':').next().unwrap_or_default().to_string();
    let pci_bus_id = nvml
        .and_then(|d| d.pci_info().ok())
        .map(|p| p.bus_id)
        .or_else(|| backend.pci_address().map(|p| p.bus_id()))
        .unwrap_or_default();
    let uuid = nvml.and_then(|d| d.uuid().ok()).unwrap_or_default();
    metrics::gauge!("snarkd_device_info", "device" => label.clone(), "backend" => kind,
        "ordinal" => info.ordinal.to_string(), "name" => info.name.clone(),
        "pci_bus_id" => pci_bus_id, "UUID" => uuid)
    .set(1.0);
    set_healthy(&label, backend);
}

/// `snarkd_device_healthy{device}`: 1 while the backend proves on its device, 0 once it failed
/// too often (at startup, and after every device phase).
pub(super) fn set_healthy(device: &str, backend: &dyn DeviceBackend) {
    let healthy = if backend.is_healthy() { 1.0 } else { 0.0 };
    metrics::gauge!("snarkd_device_healthy", "device" => device.to_string()).set(healthy);
}

/// One `gauge!` per metric, each with its literal name: `docker/check_metrics.py` finds the
/// metrics the daemon registers (for the Grafana dashboard's check) by reading these calls.
fn set_gauges(device: &str, r: &DeviceTelemetry) {
    let label = || device.to_string();
    if let Some(percent) = r.utilization_percent {
        metrics::gauge!("snarkd_device_utilization_ratio", "device" => label())
            .set(f64::from(percent) / 100.0);
    }
    if let Some(bytes) = r.memory_used_bytes {
        metrics::gauge!("snarkd_device_memory_used_bytes", "device" => label()).set(bytes as f64);
    }
    if let Some(bytes) = r.memory_total_bytes {
        metrics::gauge!("snarkd_device_memory_total_bytes", "device" => label()).set(bytes as f64);
    }
    if let Some(celsius) = r.temperature_celsius {
        metrics::gauge!("snarkd_device_temperature_celsius", "device" => label())
            .set(f64::from(celsius));
    }
    if let Some(milliwatts) = r.power_milliwatts {
        metrics::gauge!("snarkd_device_power_watts", "device" => label())
            .set(f64::from(milliwatts) / 1000.0);
    }
    if let Some(bytes) = r.pool_used_bytes {
        metrics::gauge!("snarkd_device_pool_used_bytes", "device" => label()).set(bytes as f64);
    }
    if let Some(bytes) = r.pool_limit_bytes {
        metrics::gauge!("snarkd_device_pool_limit_bytes", "device" => label()).set(bytes as f64);
    }
}

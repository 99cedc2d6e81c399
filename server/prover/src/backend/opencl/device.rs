//! OpenCL device discovery and per-device memory accounting.
//!
//! Every device of every platform is listed, whatever its type or vendor: a GPU from NVIDIA, AMD
//! or Intel, and PoCL's CPU device alike. A device's ordinal is its position in that list
//! (platforms in the order the ICD loader reports them, devices in platform order), stable for a
//! given machine and driver set.

use std::sync::{Arc, Condvar, Mutex};

use opencl3::device::{
    Device, CL_DEVICE_TYPE_ACCELERATOR, CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_CPU, CL_DEVICE_TYPE_GPU,
};
use opencl3::platform::get_platforms;

use crate::backend::PciAddress;
use crate::error::{ProverError, Result};

/// What `snarkd devices` prints and status reports for one OpenCL device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenClDeviceInfo {
    /// Position in the list of all devices of all platforms.
    pub ordinal: u32,
    pub platform: String,
    pub name: String,
    /// `gpu`, `cpu` (PoCL, Intel's CPU runtime), `accelerator` or `other`.
    pub kind: &'static str,
    /// Global memory in bytes.
    pub memory_bytes: u64,
    /// The largest single buffer the device allows.
    pub max_alloc_bytes: u64,
    pub compute_units: u32,
    /// Where it sits on the PCI bus, where the driver says (`None` for PoCL's CPU device).
    pub pci: Option<PciAddress>,
    /// The OpenCL driver's version as it reports it (`CL_DRIVER_VERSION`), e.g. "550.54.15".
    pub driver_version: String,
}

impl OpenClDeviceInfo {
    /// The name of the backend on this device (`opencl:<ordinal>`), its metrics' `device` label.
    pub fn backend_name(&self) -> String {
        format!("opencl:{}", self.ordinal)
    }

    /// Platform and driver version, as status shows them.
    pub fn driver(&self) -> String {
        format!("{} {}", self.platform, self.driver_version)
            .trim()
            .to_string()
    }
}

/// One discovered device: its description and its OpenCL handle.
#[derive(Clone)]
pub struct OpenClDevice {
    pub info: OpenClDeviceInfo,
    pub(crate) device: Device,
}

impl std::fmt::Debug for OpenClDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.info.fmt(f)
    }
}

/// Every OpenCL device of every platform. No OpenCL runtime (no `libOpenCL.so.1`) or no
/// platform is an empty list, not an error: the caller decides whether that is fatal.
/// Discovery runs once per process (ICD loaders do not all tolerate concurrent first calls);
/// an empty result is not kept, so a later call looks again.
pub fn list_devices() -> Vec<OpenClDevice> {
    static FOUND: Mutex<Vec<OpenClDevice>> = Mutex::new(Vec::new());
    let mut found = FOUND.lock().unwrap_or_else(|p| p.into_inner());
    if found.is_empty() {
        *found = discover();
    }
    found.clone()
}

fn discover() -> Vec<OpenClDevice> {
    let Ok(platforms) = get_platforms() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for platform in platforms {
        let platform_name = platform
            .name()
            .unwrap_or_else(|_| "unknown platform".into());
        let Ok(ids) = platform.get_devices(CL_DEVICE_TYPE_ALL) else {
            continue;
        };
        for id in ids {
            let device = Device::new(id);
            let info = OpenClDeviceInfo {
                ordinal: out.len() as u32,
                platform: platform_name.trim().to_string(),
                name: device
                    .name()
                    .map(|n| n.trim().to_string())
                    .unwrap_or_else(|_| "unknown device".into()),
                kind: match device.dev_type().unwrap_or(0) {
                    t if t & CL_DEVICE_TYPE_GPU != 0 => "gpu",
                    t if t & CL_DEVICE_TYPE_CPU != 0 => "cpu",
                    t if t & CL_DEVICE_TYPE_ACCELERATOR != 0 => "accelerator",
                    _ => "other",
                },
                memory_bytes: device.global_mem_size().unwrap_or(0),
                max_alloc_bytes: device.max_mem_alloc_size().unwrap_or(0),
                compute_units: device.max_compute_units().unwrap_or(1),
                pci: pci_address(&device),
                driver_version: device
                    .driver_version()
                    .map(|v| v.trim().to_string())
                    .unwrap_or_default(),
            };
            out.push(OpenClDevice { info, device });
        }
    }
    out
}

/// The device's PCI address from `cl_khr_pci_bus_info` (NVIDIA since R510, Intel, recent AMD)
/// or NVIDIA's own attribute query (its bus only: see [`PciAddress`]). Devices without either
/// (PoCL's CPU device, older AMD drivers) have none.
fn pci_address(device: &Device) -> Option<PciAddress> {
    let has = |extension: &str| {
        (device.extensions())
            .map(|all| all.split_whitespace().any(|e| e == extension))
            .unwrap_or(false)
    };
    if has("cl_khr_pci_bus_info") {
        if let Ok(info) = device.pcibusinfokhr_intel() {
            return Some(PciAddress {
                domain: Some(info.pci_domain),
                bus: info.pci_bus,
                device: Some(info.pci_device),
            });
        }
    }
    if has("cl_nv_device_attribute_query") {
        if let Ok(bus) = device.pci_bus_id_nv() {
            return Some(PciAddress {
                domain: None,
                bus,
                device: None,
            });
        }
    }
    None
}

/// The device a benchmark or check takes: the first GPU, else the first device of any kind
/// (PoCL's CPU device is listed too where it is installed).
pub fn preferred_device() -> Option<OpenClDevice> {
    let all = list_devices();
    all.iter()
        .find(|d| d.info.kind == "gpu")
        .or(all.first())
        .cloned()
}

/// The devices `selectors` name, each an ordinal (`"1"`) or a case-insensitive substring of the
/// device name (`"RTX 4090"`); empty selects all. A selector matching nothing is an error.
pub fn select_devices(all: &[OpenClDevice], selectors: &[String]) -> Result<Vec<OpenClDevice>> {
    if selectors.is_empty() {
        return Ok(all.to_vec());
    }
    let mut chosen: Vec<OpenClDevice> = Vec::new();
    for selector in selectors {
        let matches: Vec<&OpenClDevice> = match selector.trim().parse::<u32>() {
            Ok(ordinal) => all.iter().filter(|d| d.info.ordinal == ordinal).collect(),
            Err(_) => {
                let needle = selector.trim().to_lowercase();
                all.iter()
                    .filter(|d| d.info.name.to_lowercase().contains(&needle))
                    .collect()
            }
        };
        if matches.is_empty() {
            return Err(ProverError::Device {
                backend: "opencl".into(),
                reason: format!(
                    "no OpenCL device matches {selector:?}; `snarkd devices` lists what was found"
                ),
            });
        }
        for d in matches {
            if !chosen.iter().any(|c| c.info.ordinal == d.info.ordinal) {
                chosen.push(d.clone());
            }
        }
    }
    Ok(chosen)
}

/// The device memory that the workers of one device share. Each buffer set is reserved before it
/// is allocated and returned when its [`MemoryGrant`] drops; a reservation larger than what is
/// free waits until the other workers return theirs, so the sum never exceeds the limit.
#[derive(Debug)]
pub struct DeviceMemory {
    limit: u64,
    used: Mutex<u64>,
    freed: Condvar,
}

impl DeviceMemory {
    /// A pool of `limit` bytes.
    pub fn new(limit: u64) -> Arc<DeviceMemory> {
        Arc::new(DeviceMemory {
            limit,
            used: Mutex::new(0),
            freed: Condvar::new(),
        })
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes reserved now.
    pub fn used(&self) -> u64 {
        *self.used.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserves `bytes`, waiting for other workers to return memory if needed. More than the
    /// whole limit is an error (the caller must chunk or fall back).
    pub fn reserve(self: &Arc<Self>, bytes: u64) -> Result<MemoryGrant> {
        if bytes > self.limit {
            return Err(ProverError::Device {
                backend: "opencl".into(),
                reason: format!(
                    "{bytes} bytes of device buffers exceed the device's usable {} bytes",
                    self.limit
                ),
            });
        }
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        while *used + bytes > self.limit {
            used = self.freed.wait(used).unwrap_or_else(|p| p.into_inner());
        }
        *used += bytes;
        Ok(MemoryGrant {
            pool: Arc::clone(self),
            bytes,
        })
    }
}

impl DeviceMemory {
    /// Reserves `bytes` if they are free now with `keep_free` more left over; never waits (for
    /// memory held across a preemption point, where waiting for the preempting phase would
    /// wait for ourselves, and for parameters kept on the device).
    pub fn try_reserve(self: &Arc<Self>, bytes: u64, keep_free: u64) -> Option<MemoryGrant> {
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        if (*used).saturating_add(bytes).saturating_add(keep_free) > self.limit {
            return None;
        }
        *used += bytes;
        Some(MemoryGrant {
            pool: Arc::clone(self),
            bytes,
        })
    }
}

impl MemoryGrant {
    /// Bytes this grant holds.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Gives back all but `bytes` (when the buffers it covered shrank).
    pub fn shrink_to(&mut self, bytes: u64) {
        if bytes >= self.bytes {
            return;
        }
        let mut used = self.pool.used.lock().unwrap_or_else(|p| p.into_inner());
        *used -= self.bytes - bytes;
        self.bytes = bytes;
        self.pool.freed.notify_all();
    }
}

/// Reserved device memory, returned to its pool on drop.
#[derive(Debug)]
pub struct MemoryGrant {
    pool: Arc<DeviceMemory>,
    bytes: u64,
}

impl Drop for MemoryGrant {
    fn drop(&mut self) {
        let mut used = self.pool.used.lock().unwrap_or_else(|p| p.into_inner());
        *used -= self.bytes;
        self.pool.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_reservation_over_the_limit_is_an_error_not_a_wait() {
        let pool = DeviceMemory::new(100);
        assert!(pool.reserve(101).is_err());
        assert_eq!(pool.used(), 0);
    }

    #[test]
    fn a_try_reservation_takes_only_what_is_free_now() {
        let pool = DeviceMemory::new(100);
        let held = pool.try_reserve(70, 0).unwrap();
        assert!(pool.try_reserve(31, 0).is_none());
        assert!(pool.try_reserve(20, 11).is_none(), "leaves too little free");
        let more = pool.try_reserve(30, 0).unwrap();
        assert_eq!((pool.used(), more.bytes()), (100, 30));
        drop((held, more));
        assert_eq!(pool.used(), 0);
        assert!(pool.try_reserve(101, 0).is_none());
        let mut shrinking = pool.try_reserve(80, 0).unwrap();
        shrinking.shrink_to(30);
        assert_eq!((pool.used(), shrinking.bytes()), (30, 30));
        shrinking.shrink_to(50);
        assert_eq!(pool.used(), 30, "a grant never grows");
        drop(shrinking);
        assert_eq!(pool.used(), 0);
    }

    #[test]
    fn a_reservation_waits_until_other_workers_return_enough() {
        let pool = DeviceMemory::new(100);
        let first = pool.reserve(60).unwrap();
        let second = pool.reserve(40).unwrap();
        assert_eq!(pool.used(), 100);
        let (tx, rx) = mpsc::channel();
        let waiter = {
            let pool = Arc::clone(&pool);
            std::thread::spawn(move || {
                let grant = pool.reserve(50).unwrap();
                tx.send(pool.used()).unwrap();
                drop(grant);
            })
        };
        drop(second); // 40 free: not enough for 50
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
        drop(first); // now 100 free
        let used_then = rx.recv().unwrap();
        assert_eq!(used_then, 50, "the waiter holds only its own 50");
        waiter.join().unwrap();
        assert_eq!(pool.used(), 0);
    }
}

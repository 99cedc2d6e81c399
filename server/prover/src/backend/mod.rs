//! Device backends: where a partition's FFTs and MSMs run. The engine holds backends as
//! `Arc<dyn DeviceBackend>`, one per device, and calls [`DeviceBackend::prove`] from a blocking
//! thread.
//!
//! Layout:
//! - `mod.rs`: the [`DeviceBackend`] trait.
//! - `cpu.rs`: [`CpuBackend`], the CPU implementation (blst MSM, bellperson FFT).
//! - `opencl/` (feature `opencl`): [`OpenClBackend`], ec-gpu-gen's kernels on any OpenCL device.
//! - `warming.rs`: [`warming::WarmingBackend`], a device set up in the background while the
//!   daemon serves.

mod cpu;
#[cfg(feature = "opencl")]
pub mod opencl;
pub mod warming;

use bellperson::groth16::Proof;
use blstrs::Bls12;

pub use cpu::CpuBackend;
#[cfg(feature = "opencl")]
pub use opencl::{OpenClBackend, OpenClOptions};

use crate::error::Result;
use crate::filecoin::estimate::PhaseOn;
use crate::groth16::{DeviceTimings, PhaseHooks, Randomness};
use crate::keys::LoadedParams;
use crate::synthesis::SynthesizedPartition;

/// Where a device sits on the PCI bus, as far as its driver says. A part it does not say, or
/// says in an encoding drivers disagree on, is `None` and matches anything: NVIDIA's own OpenCL
/// query gives no domain, and a slot that is the device number on some drivers and
/// `device << 3 | function` on others. A GPU has a bus of its own, so the bus alone finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PciAddress {
    pub domain: Option<u32>,
    pub bus: u32,
    pub device: Option<u32>,
}

impl PciAddress {
    /// Whether a full address (as NVML reports one) may be this device.
    pub fn matches(&self, domain: u32, bus: u32, device: u32) -> bool {
        self.domain.is_none_or(|d| d == domain)
            && self.bus == bus
            && self.device.is_none_or(|d| d == device)
    }

    /// The address as NVML and DCGM write a bus id (`00000000:01:00.0`), an unknown domain or
    /// device as 0.
    pub fn bus_id(&self) -> String {
        format!(
            "{:08X}:{:02X}:{:02X}.0",
            self.domain.unwrap_or(0),
            self.bus,
            self.device.unwrap_or(0)
        )
    }
}

/// A backend's device-memory pool: reserved now, and the most it hands out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolUse {
    pub used_bytes: u64,
    pub limit_bytes: u64,
}

/// A device that turns a synthesized partition into a Groth16 proof.
pub trait DeviceBackend: Send + Sync {
    /// Stable name for logs and status (`cpu`, `opencl:0`, …).
    fn name(&self) -> &str;

    /// False once the device failed too often and the backend runs its steps on the CPU.
    fn is_healthy(&self) -> bool {
        true
    }

    /// Where the device sits on the PCI bus, where its driver says (to find it in NVML).
    fn pci_address(&self) -> Option<PciAddress> {
        None
    }

    /// The driver that runs the device (platform and version), where there is one.
    fn driver(&self) -> Option<String> {
        None
    }

    /// The backend's own device-memory pool, for backends that keep one.
    fn pool(&self) -> Option<PoolUse> {
        None
    }

    /// What the device is doing while it is being set up (`None` once it serves): see
    /// [`warming::WarmingBackend`].
    fn warming(&self) -> Option<String> {
        None
    }

    /// Waits until the device's set-up has ended (at most `limit`); whether it has.
    fn wait_warm(&self, limit: std::time::Duration) -> bool {
        let _ = limit;
        true
    }

    /// Where this backend runs a partition's H computation and multiexps now, which decides
    /// the host memory its partitions are reserved for ([`crate::filecoin::estimate::PhaseOn`]).
    fn phase_on(&self) -> PhaseOn {
        PhaseOn::Host
    }

    /// Proves one partition with `params` (which must belong to the partition's circuit; the
    /// shapes are checked). `hooks` hears once of the a/b/c release (so the caller can return
    /// that memory to its budget while the MSMs still run) and of every step's end, where the
    /// caller may run a deadline partition's device phase before this one goes on.
    fn prove(
        &self,
        partition: SynthesizedPartition,
        params: &LoadedParams,
        randomness: Randomness,
        hooks: &mut dyn PhaseHooks,
    ) -> Result<(Proof<Bls12>, DeviceTimings)>;
}

#[cfg(test)]
mod tests {
    use super::PciAddress;

    #[test]
    fn a_pci_address_matches_on_what_its_driver_said() {
        let full = PciAddress {
            domain: Some(0),
            bus: 0x41,
            device: Some(0),
        };
        assert!(full.matches(0, 0x41, 0));
        assert!(!full.matches(1, 0x41, 0), "another domain");
        assert!(!full.matches(0, 0x42, 0), "another bus");
        assert!(!full.matches(0, 0x41, 1), "another device");
        // NVIDIA's own query: the bus alone.
        let bus_only = PciAddress {
            domain: None,
            bus: 0x41,
            device: None,
        };
        assert!(bus_only.matches(3, 0x41, 7));
        assert!(!bus_only.matches(0, 0x42, 0));
    }
}

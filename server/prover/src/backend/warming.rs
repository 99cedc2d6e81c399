//! [`WarmingBackend`]: a device that is still being set up (its kernels built or loaded, its
//! queues opened) while the daemon already serves. The set-up runs on a thread of its own; the
//! device joins once it is done.
//!
//! Meanwhile a partition of a kind in its `cpu_kinds` (WinningPoSt always: it is never retried
//! and has seconds) is proved on the CPU, after asking for the host memory that
//! needs; any other partition waits for the device, at a step boundary: it calls
//! [`PhaseHooks::step_done`] while it waits, so a deadline partition still runs (on the CPU)
//! and a cancel stops it. A device whose set-up fails is unhealthy and proves on the CPU, as a
//! device that failed too often does.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use bellperson::groth16::Proof;
use blstrs::Bls12;

use super::{CpuBackend, DeviceBackend, PciAddress, PoolUse};
use crate::circuit::ProofKind;
use crate::error::{ProverError, Result};
use crate::filecoin::estimate::{host_phase, PhaseOn};
use crate::groth16::{DeviceTimings, PhaseHooks, Randomness};
use crate::keys::LoadedParams;
use crate::synthesis::SynthesizedPartition;

/// How often a partition waiting for the device lets the caller act (run a deadline partition,
/// stop on a cancel).
const WAIT_STEP: Duration = Duration::from_millis(50);

/// Where a device's set-up stands.
#[derive(Clone)]
enum Warmth {
    /// Being set up: what it is doing.
    Warming(String),
    Ready(Arc<dyn DeviceBackend>),
    /// The set-up failed (logged with why): the device proves on the CPU.
    Failed,
}

/// What the device is known to be before its set-up ends.
#[derive(Debug, Clone)]
pub struct Known {
    pub name: String,
    pub pci: Option<PciAddress>,
    pub driver: Option<String>,
}

/// A device being set up in the background; see the module's documentation.
pub struct WarmingBackend {
    known: Known,
    cpu_kinds: Vec<ProofKind>,
    cpu: CpuBackend,
    state: Mutex<Warmth>,
    changed: Condvar,
}

impl WarmingBackend {
    /// Starts `set_up` on a thread of its own and returns at once. `cpu_kinds` are proved on
    /// the CPU until it is done (WinningPoSt is added when missing); `doing` says what it does.
    pub fn start(
        known: Known,
        mut cpu_kinds: Vec<ProofKind>,
        doing: &str,
        set_up: impl FnOnce() -> Result<Arc<dyn DeviceBackend>> + Send + 'static,
    ) -> Arc<WarmingBackend> {
        if !cpu_kinds.contains(&ProofKind::WinningPost) {
            cpu_kinds.push(ProofKind::WinningPost);
        }
        let backend = Arc::new(WarmingBackend {
            known,
            cpu_kinds,
            cpu: CpuBackend::new(),
            state: Mutex::new(Warmth::Warming(doing.to_string())),
            changed: Condvar::new(),
        });
        let warming = Arc::clone(&backend);
        let spawned = std::thread::Builder::new()
            .name(format!("snarkd-warm-{}", backend.known.name))
            .spawn(move || {
                let started = Instant::now();
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(set_up))
                    .unwrap_or_else(|p| {
                        Err(ProverError::Device {
                            backend: warming.known.name.clone(),
                            reason: crate::synthesis::panic_message(&p),
                        })
                    });
                warming.finish(outcome, started.elapsed());
            });
        if let Err(e) = spawned {
            backend.finish(
                Err(ProverError::Device {
                    backend: backend.known.name.clone(),
                    reason: format!("cannot start the thread that sets the device up: {e}"),
                }),
                Duration::ZERO,
            );
        }
        backend
    }

    fn finish(&self, outcome: Result<Arc<dyn DeviceBackend>>, took: Duration) {
        let next = match outcome {
            Ok(ready) => {
                tracing::info!(device = %self.known.name, took_ms = took.as_millis() as u64,
                    "device ready: its partitions are proved on it from now on");
                Warmth::Ready(ready)
            }
            Err(e) => {
                tracing::error!(device = %self.known.name, error = %e,
                    "the device could not be set up: its partitions are proved on the cpu");
                Warmth::Failed
            }
        };
        *self.state.lock().unwrap_or_else(|p| p.into_inner()) = next;
        self.changed.notify_all();
    }

    /// Where the set-up stands now.
    fn warmth(&self) -> Warmth {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Where the set-up stands once it has ended, or after `limit` if it has not by then.
    fn settled_within(&self, limit: Duration) -> Warmth {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (state, _) = self
            .changed
            .wait_timeout_while(state, limit, |s| matches!(s, Warmth::Warming(_)))
            .unwrap_or_else(|p| p.into_inner());
        state.clone()
    }

    /// What the device is doing while it warms; `None` once it is ready or failed.
    pub fn warming(&self) -> Option<String> {
        match self.warmth() {
            Warmth::Warming(doing) => Some(doing),
            _ => None,
        }
    }

    /// Waits until the set-up has ended (ready or failed), at most `limit`; whether it has.
    pub fn wait_warm(&self, limit: Duration) -> bool {
        !matches!(self.settled_within(limit), Warmth::Warming(_))
    }

    /// The device once ready, `None` for the CPU (set-up failed), after waiting for it at step
    /// boundaries.
    fn device_when_ready(
        &self,
        hooks: &mut dyn PhaseHooks,
    ) -> Result<Option<Arc<dyn DeviceBackend>>> {
        loop {
            match self.settled_within(WAIT_STEP) {
                Warmth::Ready(b) => return Ok(Some(b)),
                Warmth::Failed => return Ok(None),
                Warmth::Warming(_) => {}
            }
            hooks.step_done();
            if hooks.stop_requested() {
                return Err(ProverError::Stopped);
            }
        }
    }

    /// A partition proved on the CPU instead of the device, with the host memory that needs
    /// (it was reserved for a device phase on the device).
    fn on_cpu(
        &self,
        partition: SynthesizedPartition,
        params: &LoadedParams,
        randomness: Randomness,
        hooks: &mut dyn PhaseHooks,
    ) -> Result<(Proof<Bls12>, DeviceTimings)> {
        let bytes = host_phase(partition.shape()).fft_peak_bytes;
        if !hooks.hold_at_least(bytes) {
            return Err(ProverError::Device {
                backend: self.known.name.clone(),
                reason: format!(
                    "proving on the cpu instead of the device needs {bytes} bytes of host \
                     memory, more than the memory budget has free now"
                ),
            });
        }
        self.cpu.prove(partition, params, randomness, hooks)
    }
}

impl DeviceBackend for WarmingBackend {
    fn name(&self) -> &str {
        &self.known.name
    }

    fn is_healthy(&self) -> bool {
        match self.warmth() {
            Warmth::Ready(b) => b.is_healthy(),
            Warmth::Warming(_) => true,
            Warmth::Failed => false,
        }
    }

    fn pci_address(&self) -> Option<PciAddress> {
        self.known.pci
    }

    fn driver(&self) -> Option<String> {
        self.known.driver.clone()
    }

    fn pool(&self) -> Option<PoolUse> {
        match self.warmth() {
            Warmth::Ready(b) => b.pool(),
            _ => None,
        }
    }

    fn phase_on(&self) -> PhaseOn {
        match self.warmth() {
            Warmth::Ready(b) => b.phase_on(),
            // Its partitions are reserved for the device they wait for; one proved on the CPU
            // meanwhile asks for more first.
            Warmth::Warming(_) => PhaseOn::Device,
            Warmth::Failed => PhaseOn::Host,
        }
    }

    fn warming(&self) -> Option<String> {
        WarmingBackend::warming(self)
    }

    fn wait_warm(&self, limit: Duration) -> bool {
        WarmingBackend::wait_warm(self, limit)
    }

    fn prove(
        &self,
        partition: SynthesizedPartition,
        params: &LoadedParams,
        randomness: Randomness,
        hooks: &mut dyn PhaseHooks,
    ) -> Result<(Proof<Bls12>, DeviceTimings)> {
        let ready = match self.warmth() {
            Warmth::Ready(b) => Some(b),
            Warmth::Failed => None,
            Warmth::Warming(_) => {
                let kind = params.circuit_id().kind();
                if self.cpu_kinds.contains(&kind) {
                    tracing::info!(device = %self.known.name, %kind,
                        "the device is still warming: this partition is proved on the cpu");
                    metrics::counter!("snarkd_cpu_while_warming_total", "kind" => kind.name())
                        .increment(1);
                    return self.on_cpu(partition, params, randomness, hooks);
                }
                self.device_when_ready(hooks)?
            }
        };
        match ready {
            Some(device) => device.prove(partition, params, randomness, hooks),
            None => self.on_cpu(partition, params, randomness, hooks),
        }
    }
}

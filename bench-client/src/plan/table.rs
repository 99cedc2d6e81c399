//! The two files `plan` reads: a box (cores, memory, GPUs) and a cost table (each kind's costs
//! per step, each row naming the command and machine it was measured on). Memory per
//! partition and per parameter set is not in the table: it is snarkd's own estimate for the
//! kind, sector size and backend (`snarkd_prover::filecoin::estimate`, `load_cost`), the same
//! the daemon reserves by.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use bytesize::ByteSize;
use serde::{Deserialize, Serialize};
use snarkd_engine::sim::{CpuWork, DeviceCost, KindCosts, Setup};
use snarkd_prover::filecoin::estimate::{estimate_on, precompiled_bytes, PhaseOn};
use snarkd_prover::filecoin::load_cost::{load_cost, Matrices};
use snarkd_prover::{CircuitId, ProofKind};

/// A box to simulate.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoxFile {
    pub name: String,
    pub cores: u32,
    #[serde(with = "binary_size")]
    pub memory: ByteSize,
    /// The daemon's `[memory] budget` where it is set; else the automatic one on `memory`.
    #[serde(default, with = "binary_size::optional")]
    pub budget: Option<ByteSize>,
    /// GPUs of the one model `gpu` names in the cost table's device rows; 0: the CPU backend.
    #[serde(default)]
    pub gpus: u32,
    #[serde(default)]
    pub gpu: Option<String>,
    #[serde(default, with = "binary_size::optional")]
    pub gpu_memory: Option<ByteSize>,
    /// The daemon's own memory after startup (charged to the budget), and where it was read.
    #[serde(with = "binary_size")]
    pub baseline: ByteSize,
    pub baseline_source: String,
    /// Another prover's published seconds a proof on this box, by memory size (e.g. the
    /// original daemon's table), shown beside the simulated ones.
    #[serde(default)]
    pub published: BTreeMap<String, f64>,
    #[serde(default)]
    pub published_source: Option<String>,
}

/// A step's measured time, and where.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepRow {
    #[serde(flatten)]
    pub work: CpuWork,
    pub source: String,
}

/// A device phase's measured time on one device model (`cpu`: the CPU backend), and where.
/// Without `seconds` (a GPU) or `walls` (the CPU) it is not measured: the box cannot be
/// simulated with it, and the table says so.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceRow {
    #[serde(default)]
    pub seconds: Option<f64>,
    #[serde(default)]
    pub walls: Option<Vec<(f64, f64)>>,
    pub steps: u32,
    pub source: String,
}

/// One kind's row of the cost table.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KindRow {
    /// `porep`, `snap`, `wpost` or `winning`.
    #[serde(with = "short_kind")]
    pub kind: ProofKind,
    pub partitions: u32,
    /// The `.params` file (its size decides the load time), and where the figure comes from.
    pub params_file_bytes: u64,
    pub params_source: String,
    pub plan: StepRow,
    pub synthesis: StepRow,
    pub finalize: StepRow,
    /// By device model (`cpu` for the CPU backend).
    pub device: BTreeMap<String, DeviceRow>,
}

/// A cost table: one sector size, a row per kind.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostFile {
    #[serde(with = "binary_size")]
    pub sector_size: ByteSize,
    /// Where the figures were measured, in a sentence.
    pub measured_on: String,
    pub kind: Vec<KindRow>,
}

pub fn read_toml<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("reading {}", path.display()))
}

/// Engine settings simulated instead of the daemon's defaults.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub lookahead: Option<snarkd_engine::Lookahead>,
    pub workers_per_device: Option<usize>,
    pub synthesis_threads: Option<usize>,
}

impl Settings {
    /// snarkd's default config with these settings.
    fn config(&self) -> snarkd::config::Config {
        let mut config = snarkd::config::Config::default();
        if let Some(threads) = self.synthesis_threads {
            config.synthesis.threads = threads;
        }
        if let Some(workers) = self.workers_per_device {
            config.gpus.workers_per_device = snarkd::config::Workers::Fixed(workers);
        }
        if let Some(lookahead) = self.lookahead {
            config.pipeline.synthesis_lookahead = lookahead;
        }
        config
    }
}

impl DeviceRow {
    /// The device phase's cost on a box of `gpus` GPUs (none: the CPU backend's walls), or none
    /// when this row has no measurement for it; `what` names it in an error.
    fn cost(&self, gpus: u32, what: &str) -> Result<Option<DeviceCost>> {
        Ok(match (gpus, self.seconds, &self.walls) {
            (0, _, Some(walls)) => {
                let work = CpuWork {
                    walls: walls.clone(),
                    max_threads: None,
                };
                work.check().map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
                Some(DeviceCost::Cpu {
                    work,
                    steps: self.steps,
                })
            }
            (1.., Some(seconds), _) if seconds.is_finite() && seconds >= 0.0 => {
                Some(DeviceCost::Gpu {
                    seconds,
                    steps: self.steps,
                })
            }
            (1.., Some(seconds), _) => bail!("{what}: {seconds} seconds; give 0 or more"),
            _ => None,
        })
    }
}

/// Why a box cannot be simulated with a table (a device time not measured), or the setup.
pub enum Built {
    Setup(Setup),
    Missing(String),
}

/// The simulation's setup for `b` with `memory` (the box's own when none), the kinds of
/// `kinds` from `costs`, and snarkd's default settings on it.
pub fn setup(
    b: &BoxFile,
    memory: Option<ByteSize>,
    settings: &Settings,
    costs: &CostFile,
    kinds: &[ProofKind],
) -> Result<Built> {
    let memory = memory.unwrap_or(b.memory).as_u64();
    let config = settings.config();
    let budget = match b.budget {
        Some(budget) => budget.as_u64(),
        None => config.memory_budget_on(memory)?,
    };
    let engine = config.engine_config_on(budget, b.baseline.as_u64(), b.cores as usize);
    let device = if b.gpus == 0 {
        "cpu".to_string()
    } else {
        b.gpu
            .clone()
            .context("a box with GPUs names their model (gpu = \"…\")")?
    };
    let on = if b.gpus == 0 {
        PhaseOn::Host
    } else {
        PhaseOn::Device
    };
    let size = costs.sector_size.as_u64();
    let mut rows = Vec::new();
    for &kind in kinds {
        let Some(row) = costs.kind.iter().find(|r| r.kind == kind) else {
            bail!("the cost table has no row for {kind}");
        };
        for (step, work) in [
            ("plan", &row.plan),
            ("synthesis", &row.synthesis),
            ("finalize", &row.finalize),
        ] {
            work.work
                .check()
                .map_err(|e| anyhow::anyhow!("{kind}'s {step}: {e}"))?;
        }
        let Some(d) = row.device.get(&device) else {
            return Ok(Built::Missing(format!(
                "{kind} on {device}: no row in the cost table"
            )));
        };
        let what = format!("{kind}'s device phase on {device}");
        let Some(device_cost) = d.cost(b.gpus, &what)? else {
            return Ok(Built::Missing(format!("{kind} on {device}: {}", d.source)));
        };
        let circuit = CircuitId::new(kind, size)?;
        let estimate = estimate_on(kind, size, on);
        let (load, _) = load_cost(
            circuit,
            row.params_file_bytes,
            Matrices::Kept,
            b.cores as usize,
        );
        rows.push(KindCosts {
            kind,
            circuit: circuit.to_string(),
            partitions: row.partitions,
            priority: config.scheduler.default_priority(kind),
            reserve_bytes: estimate.reserve_bytes(),
            abc_bytes: estimate.released_after_h_bytes(),
            params_bytes: row.params_file_bytes + precompiled_bytes(circuit),
            params_load_s: load.as_secs_f64(),
            plan: row.plan.work.clone(),
            synthesis: row.synthesis.work.clone(),
            device: device_cost,
            finalize: row.finalize.work.clone(),
        });
    }
    let gpu_memory_bytes = b.gpu_memory.map_or(0, |m| m.as_u64());
    // As the daemon would run them: on each GPU, or on the CPU backend's one device.
    let (workers, b_g2) = (config.gpus.workers_per_device, config.gpus.b_g2);
    let workers_per_device = match b.gpus {
        0 => workers.on("cpu", memory, b_g2),
        _ => workers.on("gpu", gpu_memory_bytes, b_g2),
    };
    Ok(Built::Setup(Setup {
        config: engine,
        cores: f64::from(b.cores),
        gpus: b.gpus,
        gpu_memory_bytes,
        workers_per_device,
        costs: rows,
    }))
}

/// A kind in the files as snarkd names it (`porep`, `snap`, `wpost`, `winning`).
mod short_kind {
    use serde::{Deserialize, Deserializer, Serializer};
    use snarkd_prover::ProofKind;

    pub fn serialize<S: Serializer>(kind: &ProofKind, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(kind.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ProofKind, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(|_| {
            serde::de::Error::custom(format!("{name:?} is not porep, snap, wpost or winning"))
        })
    }
}

/// Sizes written in binary units ("2.0 KiB", "8.0 GiB"), which read back to the same bytes
/// (bytesize's own writes decimal units, "2.0 KB": 2000 bytes read back).
mod binary_size {
    use bytesize::ByteSize;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(size: &ByteSize, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&size.to_string_as(true))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ByteSize, D::Error> {
        ByteSize::deserialize(d)
    }

    pub mod optional {
        use bytesize::ByteSize;
        use serde::{Deserialize, Deserializer, Serializer};

        pub fn serialize<S: Serializer>(size: &Option<ByteSize>, s: S) -> Result<S::Ok, S::Error> {
            match size {
                Some(size) => super::serialize(size, s),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ByteSize>, D::Error> {
            Option::<ByteSize>::deserialize(d)
        }
    }
}

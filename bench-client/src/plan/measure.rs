//! The 2 KiB cost table of this machine, measured through real daemons: for each core count,
//! a daemon on that many CPUs proves each kind alone a few times, and each step's median time
//! (the daemon's own timings; the plan step is the client's latency beyond the job's total:
//! decoding, checking and recording the request) becomes the step's wall at that thread count.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Result};
use bytesize::ByteSize;
use snarkd_engine::sim::CpuWork;
use snarkd_proto::v1 as pb;
use snarkd_prover::{ProofInput, ProofKind};

use super::table::{CostFile, DeviceRow, KindRow, StepRow};
use crate::remote::{prove, request_id};
use crate::report::daemon::Daemon;
use crate::request::to_wire;
use crate::summary::Outcome;

/// Steps of a 2 KiB device phase on the CPU backend: the H FFTs and the multiexps (H, L, A,
/// B_G1, B_G2), each a step boundary (`groth16::prove_partition_with`).
const CPU_PHASE_STEPS: u32 = 6;

/// One kind's medians at one core count, in seconds.
#[derive(Debug, Clone, Copy)]
struct Medians {
    plan: f64,
    synthesis: f64,
    device: f64,
    finalize: f64,
    partitions: u32,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn medians(outcomes: &[Outcome]) -> Medians {
    let partitions = outcomes
        .first()
        .map_or(1, |o| (o.proof_bytes / 192).max(1) as u32);
    let p = f64::from(partitions);
    let ms = |v: u64| v as f64 / 1e3;
    let each = |f: &dyn Fn(&Outcome) -> f64| median(outcomes.iter().map(f).collect());
    Medians {
        plan: each(&|o| (o.latency.as_secs_f64() - ms(o.total_ms)).max(0.0)),
        synthesis: each(&|o| ms(o.synthesis_ms) / p),
        device: each(&|o| ms(o.gpu_compute_ms) / p),
        // What the job's total holds beyond its waits and its (one partition's) steps.
        finalize: each(&|o| {
            let steps = o.queue_wait_ms
                + o.srs_load_ms
                + (o.synthesis_ms + o.gpu_compute_ms) / u64::from(partitions);
            ms(o.total_ms.saturating_sub(steps))
        }),
        partitions,
    }
}

/// Proves each of `requests` alone `samples` times on a daemon started on `cpus` CPUs.
async fn at(
    snarkd: &Path,
    env: &[(&str, String)],
    cpus: usize,
    requests: &[(ProofKind, ProofInput)],
    samples: usize,
) -> Result<BTreeMap<ProofKind, Medians>> {
    let d = Daemon::start_on(snarkd, env, Some(cpus))?;
    let client = d.client().await?;
    for (kind, _) in requests {
        crate::report::preload(client.clone(), &format!("{}-2k", kind.as_str())).await?;
    }
    let mut out = BTreeMap::new();
    for (kind, request) in requests {
        let mut outcomes = Vec::new();
        // One first, not counted: the first proof of a kind warms what the next ones reuse.
        for i in 0..=samples {
            let submit = to_wire(request, pb::Priority::Unspecified, request_id(i));
            let o = prove(&mut client.clone(), submit).await;
            if !o.completed() {
                bail!("{kind} alone on {cpus} CPUs: {} {}", o.status, o.error);
            }
            if i > 0 {
                outcomes.push(o);
            }
        }
        out.insert(*kind, medians(&outcomes));
    }
    d.stop()?;
    Ok(out)
}

/// The cost table of this machine at 2 KiB, at each core count of `cores`.
pub async fn costs(
    snarkd: &Path,
    env: &[(&str, String)],
    requests: &[(ProofKind, ProofInput)],
    params_dir: &Path,
    cores: &[usize],
    samples: usize,
) -> Result<CostFile> {
    let mut by_cores = Vec::new();
    for &c in cores {
        by_cores.push((c, at(snarkd, env, c, requests, samples).await?));
    }
    let source = |step: &str| {
        format!(
            "{step}: median of {samples} proofs alone through a daemon on 1–{} CPUs of this machine \
             (snarkd-bench plan --check)",
            cores.iter().max().unwrap_or(&1)
        )
    };
    let walls = |kind: ProofKind, f: fn(&Medians) -> f64| -> Vec<(f64, f64)> {
        (by_cores.iter())
            .map(|(c, m)| (*c as f64, f(&m[&kind])))
            .collect()
    };
    let step = |kind, f, name: &str| StepRow {
        work: CpuWork {
            walls: walls(kind, f),
            max_threads: None,
        },
        source: source(name),
    };
    let mut rows = Vec::new();
    for (kind, _) in requests {
        let kind = *kind;
        let circuit = snarkd_prover::CircuitId::new(kind, 2048)?;
        let params_file = params_dir.join(format!("{}.params", circuit.params_file_stem()));
        let params_file_bytes = std::fs::metadata(&params_file).map_or(0, |m| m.len());
        let device = DeviceRow {
            seconds: None,
            walls: Some(walls(kind, |m| m.device)),
            steps: CPU_PHASE_STEPS,
            source: source("device phase on the CPU backend"),
        };
        rows.push(KindRow {
            kind,
            partitions: by_cores[0].1[&kind].partitions,
            params_file_bytes,
            params_source: format!("the local test file ({})", ByteSize(params_file_bytes)),
            plan: step(kind, |m| m.plan, "plan"),
            synthesis: step(kind, |m| m.synthesis, "synthesis"),
            finalize: step(kind, |m| m.finalize, "finalize"),
            device: [("cpu".to_string(), device)].into_iter().collect(),
        });
    }
    Ok(CostFile {
        sector_size: ByteSize(2048),
        measured_on: format!(
            "this machine ({} cores), 2 KiB, the CPU backend",
            cores.iter().max().unwrap_or(&1)
        ),
        kind: rows,
    })
}

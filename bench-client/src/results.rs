//! What a run leaves for people to look at later (`single`/`batch --out DIR`, and `report`):
//! `proofs.csv`, a row per proof (kind, condition, request, queue, params, synthesis, device,
//! total, client latency, outcome), and `result.json`: the run's own JSON beside the machine the
//! client ran on and the daemon it measured (version, build, backend, devices, memory budget, from
//! its first status snapshot), so a result says what it is a result of.

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{json, Value};
use snarkd_proto::v1 as pb;

use crate::client::Client;
use crate::summary::Outcome;

/// The daemon as its first status snapshot describes it.
pub async fn daemon(client: &mut Client) -> Result<Value> {
    let mut stream = client
        .stream_status(pb::StreamStatusRequest {
            min_interval_ms: 0,
            job_ids: vec![],
        })
        .await
        .context("StreamStatus, to describe the daemon")?
        .into_inner();
    let s = stream
        .message()
        .await
        .context("the daemon's first status snapshot")?
        .context("the status stream ended at once")?;
    let d = s.daemon.unwrap_or_default();
    let mut devices: Vec<(u32, String)> = s
        .workers
        .iter()
        .map(|w| (w.device_ordinal, w.device_name.clone()))
        .collect();
    devices.sort();
    devices.dedup();
    Ok(json!({
        "version": d.version,
        "build_id": d.build_id,
        "backend": d.backend,
        "gpu_fallback": d.gpu_fallback,
        "devices": devices.iter().map(|(o, n)| json!({"ordinal": o, "name": n})).collect::<Vec<_>>(),
        "workers": s.workers.len(),
        "memory_budget_bytes": s.memory.map(|m| m.total_bytes),
    }))
}

/// The machine this client runs on: cores, memory and CPU model (Linux's /proc).
pub fn machine() -> Value {
    let proc_field = |file: &str, key: &str| -> Option<String> {
        let text = std::fs::read_to_string(file).ok()?;
        let line = text.lines().find(|l| l.starts_with(key))?;
        Some(line.split_once(':')?.1.trim().to_string())
    };
    let memory_bytes = proc_field("/proc/meminfo", "MemTotal")
        .and_then(|v| v.trim_end_matches(" kB").trim().parse::<u64>().ok())
        .map(|kib| kib * 1024);
    json!({
        "cores": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "memory_bytes": memory_bytes,
        "cpu_model": proc_field("/proc/cpuinfo", "model name"),
    })
}

/// Writes `proofs.csv` and `result.json` into `dir` (created if missing): `outcomes` are proofs
/// of `kind` made under `condition` ("single", "batch").
pub fn write(
    dir: &Path,
    (kind, condition): (&str, &str),
    outcomes: &[Outcome],
    run: Value,
    daemon: Value,
) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    proofs_csv(
        &dir.join("proofs.csv"),
        outcomes.iter().map(|o| (kind, condition, o)),
    )?;
    let result = json!({ "run": run, "machine": machine(), "daemon": daemon });
    let json_path = dir.join("result.json");
    std::fs::write(&json_path, serde_json::to_vec_pretty(&result)?)
        .with_context(|| format!("writing {}", json_path.display()))?;
    Ok(())
}

/// Writes a CSV row per proof to `path`: its kind, the condition it was made under, then what the
/// daemon and the client measured of it.
pub fn proofs_csv<'a>(
    path: &Path,
    proofs: impl IntoIterator<Item = (&'a str, &'a str, &'a Outcome)>,
) -> Result<()> {
    let mut csv =
        csv::Writer::from_path(path).with_context(|| format!("writing {}", path.display()))?;
    csv.write_record([
        "kind",
        "condition",
        "request_id",
        "outcome",
        "queue_ms",
        "params_ms",
        "synthesis_ms",
        "device_ms",
        "total_ms",
        "client_ms",
        "error",
    ])?;
    for (kind, condition, o) in proofs {
        csv.write_record([
            kind.to_string(),
            condition.to_string(),
            o.request_id.clone(),
            o.status.clone(),
            o.queue_wait_ms.to_string(),
            o.srs_load_ms.to_string(),
            o.synthesis_ms.to_string(),
            o.gpu_compute_ms.to_string(),
            o.total_ms.to_string(),
            format!("{:.1}", o.latency.as_secs_f64() * 1e3),
            o.error.clone(),
        ])?;
    }
    csv.flush()?;
    Ok(())
}

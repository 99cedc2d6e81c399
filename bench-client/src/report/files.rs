//! The report's files: `report.json` (with the machine and the daemon measured), `proofs.csv`,
//! `report.html` and `report.md` (also printed).

use std::path::Path;

use anyhow::Result;
use bytesize::ByteSize;
use serde_json::{json, Value};

use super::{html, Row};

/// Writes the report of `rows` and the timed proofs of `runs` into `out`.
pub(super) fn write(out: &Path, rows: &[Row], runs: &[html::Run], daemon: &Value) -> Result<()> {
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let machine = crate::results::machine();
    let j = json!({
        "command": command,
        "snarkd_bench_version": env!("CARGO_PKG_VERSION"),
        "machine": machine,
        "daemon": daemon,
        "benchmarks": rows.iter().map(Row::json).collect::<Vec<_>>(),
    });
    std::fs::write(
        out.join("report.json"),
        serde_json::to_string_pretty(&j)? + "\n",
    )?;
    crate::results::proofs_csv(
        &out.join("proofs.csv"),
        runs.iter().flat_map(|r| {
            (r.sides.iter()).flat_map(|s| s.outcomes.iter().map(|o| (&*r.kind, &*s.condition, o)))
        }),
    )?;
    std::fs::write(
        out.join("report.html"),
        html::page(&command, &machine, daemon, rows, runs),
    )?;
    let mut md = String::from("# snarkd benchmark report\n\n");
    md.push_str(&format!(
        "Reproduce with `{command}` ({} CPUs, {} RAM). Each ratio is snarkd over a baseline run in the same invocation. Charts: report.html.\n\n",
        machine["cores"],
        ByteSize(machine["memory_bytes"].as_u64().unwrap_or(0))
    ));
    md.push_str(
        "| benchmark | baseline | snarkd | ratio | target | met |\n|---|---|---|---|---|---|\n",
    );
    for r in rows {
        md.push_str(&format!(
            "| {} | {}: {:.3} | {}: {:.3} | {:.2} | {} | {} |\n",
            r.name,
            r.baseline.0,
            r.baseline.1,
            r.snarkd.0,
            r.snarkd.1,
            r.ratio,
            r.target.map_or("—", |t| t.0),
            match r.target {
                Some((_, true)) => "yes",
                Some((_, false)) => "**no**",
                None => "—",
            }
        ));
    }
    std::fs::write(out.join("report.md"), &md)?;
    print!("{md}");
    Ok(())
}

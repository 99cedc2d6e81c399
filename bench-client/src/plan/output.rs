//! A plan's rows: Markdown (stdout and plan.md), one JSON object per row (`--json`, plan.json)
//! and plan.html (the table, and per row the partitions in flight and memory over time).

use std::fmt::Write;
use std::path::Path;

use anyhow::{Context, Result};
use bytesize::ByteSize;
use serde_json::{json, Value};
use snarkd_engine::sim::{Report, Sample, Workload};

use super::table::{BoxFile, CostFile};
use crate::chart::{esc, Chart, SIDE_COLOURS};

/// What simulating one row gave.
pub enum Simulated {
    Ran {
        report: Report,
        budget: u64,
        /// Seconds of real time the simulation took.
        real_s: f64,
    },
    /// A figure the box needs is not measured.
    Missing(String),
}

/// One box at one memory size.
pub struct Row {
    pub machine: String,
    /// The device row of the cost table it ran with (`cpu`: the CPU backend).
    pub gpu: String,
    pub memory: ByteSize,
    /// Another prover's published seconds a proof on this box (the box file's).
    pub published_s: Option<f64>,
    pub result: Simulated,
}

/// A size as a person writes it: "128 GiB".
fn size(s: ByteSize) -> String {
    s.to_string_as(true).replace(".0 ", " ")
}

fn gib(bytes: u64) -> String {
    format!("{:.0} GiB", bytes as f64 / f64::from(1u32 << 30))
}

/// What limits the row: the resource in use nearly all the time.
pub fn limit(report: &Report, budget: u64) -> &'static str {
    let gpu = report.device_busy_share.iter().copied().fold(0.0, f64::max);
    if gpu >= 0.95 && !report.device_busy_share.is_empty() {
        "GPU"
    } else if report.cpu_busy_share >= 0.95 {
        "cores"
    } else if report.peak_memory_bytes as f64 >= 0.9 * budget as f64 {
        "memory"
    } else {
        "arrivals (the box waits for work)"
    }
}

/// Mean partitions synthesizing or synthesized and waiting, over the timeline.
fn mean_in_flight(report: &Report) -> f64 {
    let n = report.timeline.len().max(1) as f64;
    (report.timeline.iter())
        .map(|s| f64::from(s.load.synthesizing + s.load.waiting_for_worker + s.load.on_worker))
        .sum::<f64>()
        / n
}

pub fn json(row: &Row) -> Value {
    let mut v = json!({
        "box": row.machine,
        "gpu": row.gpu,
        "memory_bytes": row.memory.as_u64(),
        "published_s_per_proof": row.published_s,
    });
    match &row.result {
        Simulated::Missing(why) => v["missing"] = json!(why),
        Simulated::Ran {
            report,
            budget,
            real_s,
        } => {
            v["budget_bytes"] = json!(budget);
            v["peak_memory_bytes"] = json!(report.peak_memory_bytes);
            v["device_busy_share"] = json!(report.device_busy_share);
            v["cpu_busy_share"] = json!(report.cpu_busy_share);
            v["limit"] = json!(limit(report, *budget));
            v["mean_partitions_in_flight"] = json!(mean_in_flight(report));
            v["kinds"] = json!(report.kinds);
            v["simulated_s"] = json!(report.simulated_s);
            v["real_s"] = json!(real_s);
        }
    }
    v
}

fn secs(s: Option<f64>) -> String {
    s.map_or("–".into(), |s| format!("{s:.1}"))
}

pub fn markdown(machine: &BoxFile, costs: &CostFile, workload: &Workload, rows: &[Row]) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "### {} (simulated)\n", machine.name);
    let _ = writeln!(
        t,
        "Simulated by `snarkd-bench plan` (the engine in simulated time) over {} after {} of \
         warm-up; kinds kept in flight: {}; arrivals: {}. Costs: {} sector size, measured on {}. \
         The daemon's own memory: {} ({}).\n",
        humantime::format_duration(workload.duration.saturating_sub(workload.warmup)),
        humantime::format_duration(workload.warmup),
        (workload.in_flight.iter())
            .map(|(k, n)| format!("{k} × {n}"))
            .collect::<Vec<_>>()
            .join(", "),
        if workload.arrivals.is_empty() {
            "none".to_string()
        } else {
            format!("{} in all", workload.arrivals.len())
        },
        size(costs.sector_size),
        costs.measured_on,
        size(machine.baseline),
        machine.baseline_source,
    );
    let _ = writeln!(
        t,
        "| device row | memory | budget | proofs an hour | seconds a proof | deadline p50 / p99 s | peak memory | GPU busy | cores busy | limit | published s a proof |\n|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for row in rows {
        match &row.result {
            Simulated::Missing(why) => {
                let _ = writeln!(
                    t,
                    "| {} | {} | | not simulated: {} | | | | | | | {} |",
                    row.gpu,
                    size(row.memory),
                    why,
                    secs(row.published_s)
                );
            }
            Simulated::Ran { report, budget, .. } => {
                let per = |f: &dyn Fn(&snarkd_engine::sim::KindReport) -> String| {
                    (report.kinds.iter())
                        .map(|k| format!("{} {}", k.kind, f(k)))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let deadline: Vec<String> = (report.kinds.iter())
                    .filter(|k| workload.arrivals.iter().any(|(_, a)| *a == k.kind))
                    .map(|k| {
                        format!(
                            "{} {} / {}",
                            k.kind,
                            secs(k.latency_p50_s),
                            secs(k.latency_p99_s)
                        )
                    })
                    .collect();
                let _ = writeln!(
                    t,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {:.0} % | {} | {} |",
                    row.gpu,
                    size(row.memory),
                    gib(*budget),
                    per(&|k| format!("{:.1}", k.per_hour)),
                    per(&|k| secs(k.seconds_per_proof)),
                    if deadline.is_empty() {
                        "–".into()
                    } else {
                        deadline.join(", ")
                    },
                    gib(report.peak_memory_bytes),
                    (report.device_busy_share.iter())
                        .map(|b| format!("{:.0} %", b * 100.0))
                        .collect::<Vec<_>>()
                        .join(", "),
                    report.cpu_busy_share * 100.0,
                    limit(report, *budget),
                    secs(row.published_s),
                );
            }
        }
    }
    if let Some(source) = &machine.published_source {
        let _ = writeln!(t, "\nPublished figures: {source}.");
    }
    let _ = writeln!(t, "\nCost table rows:\n");
    for k in &costs.kind {
        let _ = writeln!(
            t,
            "- {}: synthesis {}; plan {}; finalize {}; params {}",
            k.kind, k.synthesis.source, k.plan.source, k.finalize.source, k.params_source
        );
        for (device, d) in &k.device {
            let _ = writeln!(t, "  - device phase on {device}: {}", d.source);
        }
    }
    t
}

/// plan.md, plan.json (a row per line) and plan.html in `dir`.
pub fn write(dir: &Path, text: &str, rows: &[Row]) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::write(dir.join("plan.md"), text)?;
    let lines: Vec<String> = rows.iter().map(|r| json(r).to_string()).collect();
    std::fs::write(dir.join("plan.json"), lines.join("\n") + "\n")?;
    std::fs::write(dir.join("plan.html"), page(text, rows))?;
    Ok(())
}

/// The page: the Markdown as preformatted text, and per simulated row its load over time.
fn page(text: &str, rows: &[Row]) -> String {
    let mut h = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>snarkd plan</title>\
         <style>body{font:14px sans-serif;margin:24px}pre{white-space:pre-wrap}\
         svg{display:block;margin:12px 0}text{font:11px sans-serif}</style></head><body>",
    );
    let _ = write!(h, "<pre>{}</pre>", esc(text));
    for row in rows {
        let Simulated::Ran { report, budget, .. } = &row.result else {
            continue;
        };
        let subject = format!("{}, {}, {}", row.machine, row.gpu, size(row.memory));
        let _ = write!(h, "<h3>{}</h3>", esc(&subject));
        h.push_str(&in_flight_chart(&subject, report));
        h.push_str(&memory_chart(&subject, report, *budget));
    }
    h.push_str("</body></html>\n");
    h
}

/// A named figure of a load sample.
type Series = (&'static str, fn(&Sample) -> u32);

fn in_flight_chart(subject: &str, report: &Report) -> String {
    let series: [Series; 4] = [
        ("waiting for admission", |s| s.load.waiting_for_admission),
        ("synthesizing", |s| s.load.synthesizing),
        ("waiting for a worker", |s| s.load.waiting_for_worker),
        ("on a worker", |s| s.load.on_worker),
    ];
    let y_max = (report.timeline.iter())
        .flat_map(|s| series.iter().map(move |(_, f)| f(s)))
        .max()
        .unwrap_or(0);
    let mut c = Chart::new(
        "partitions",
        subject,
        200.0,
        (report.simulated_s / 60.0, "minutes"),
        (f64::from(y_max), "partitions"),
    );
    for (i, (name, f)) in series.iter().enumerate() {
        let d = steps(&c, report, |s| f64::from(f(s)));
        c.path(&d, SIDE_COLOURS[i % SIDE_COLOURS.len()], name);
    }
    c.legend(series.iter().map(|(n, _)| n.to_string()));
    c.finish()
}

fn memory_chart(subject: &str, report: &Report, budget: u64) -> String {
    let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
    let mut c = Chart::new(
        "memory",
        subject,
        160.0,
        (report.simulated_s / 60.0, "minutes"),
        (gib(budget), "GiB reserved"),
    );
    let d = steps(&c, report, |s| gib(s.load.memory_used_bytes));
    c.path(&d, SIDE_COLOURS[0], "reserved");
    let flat = format!(
        "M{:.1} {:.1} H{:.1}",
        c.x(0.0),
        c.y(gib(budget)),
        c.x(report.simulated_s / 60.0)
    );
    c.path(&flat, SIDE_COLOURS[1], "budget");
    c.legend(["reserved".to_string(), "budget".to_string()].into_iter());
    c.finish()
}

/// A step line through the timeline's samples of `value`.
fn steps(c: &Chart, report: &Report, value: impl Fn(&Sample) -> f64) -> String {
    let mut d = String::new();
    for (i, s) in report.timeline.iter().enumerate() {
        let (x, y) = (c.x(s.at_s / 60.0), c.y(value(s)));
        let _ = if i == 0 {
            write!(d, "M{x:.1} {y:.1}")
        } else {
            write!(d, " H{x:.1} V{y:.1}")
        };
    }
    d
}

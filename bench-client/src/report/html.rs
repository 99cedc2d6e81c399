//! `report.html`: the report's table and SVG charts drawn from the proofs its runs made, one
//! self-contained page (no script, no stylesheet or font from elsewhere) that a browser shows
//! offline. For each deadline kind: the latency distribution idle against loaded, proofs
//! completed over time, and where the time of each proof went.

use std::fmt::Write;

use serde_json::Value;

use super::Row;
use crate::chart::{esc, Chart, LEFT, SIDE_COLOURS, TOP};
use crate::summary::Outcome;

/// The proofs of one kind that a report run timed, side by side (idle, then under load).
pub(super) struct Run {
    /// The kind as the page names it ("WinningPoSt"); each run gets one chart of each sort.
    pub kind: String,
    pub sides: Vec<Side>,
}

impl Run {
    /// The proofs of `kind`, each side with what it was made under.
    pub fn of<const N: usize>(kind: &str, sides: [(Vec<Outcome>, &str); N]) -> Run {
        Run {
            kind: kind.to_string(),
            sides: (sides.into_iter())
                .map(|(outcomes, condition)| Side {
                    condition: condition.to_string(),
                    outcomes,
                })
                .collect(),
        }
    }
}

/// Proofs made under one condition.
pub(super) struct Side {
    /// What they were made under ("idle"), as proofs.csv says it.
    pub condition: String,
    pub outcomes: Vec<Outcome>,
}

impl Side {
    /// The side as a chart's legend names it: its condition and how many proofs it holds.
    fn label(&self) -> String {
        format!("{}, {} proofs", self.condition, self.outcomes.len())
    }
}

/// Colours of the sides, in order (idle blue, loaded orange, then more if a run has them).
/// The phases of a proof as the phases chart stacks them, with their colours.
const PHASES: [(&str, &str); 6] = [
    ("queue", "#94a3b8"),
    ("params", "#a16207"),
    ("synthesis", "#2563eb"),
    ("device", "#16a34a"),
    ("waiting for a worker, finalizing", "#f59e0b"),
    ("client and network", "#e11d48"),
];

/// The whole page.
pub(super) fn page(
    command: &str,
    machine: &Value,
    daemon: &Value,
    rows: &[Row],
    runs: &[Run],
) -> String {
    let mut h = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>snarkd benchmark report</title>\n<style>\
         body{font:14px/1.4 system-ui,sans-serif;margin:24px;max-width:1100px;color:#111}\
         table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}\
         .no{color:#b91c1c;font-weight:bold}svg{display:block;margin:8px 0 20px}\
         svg text{font:11px system-ui,sans-serif}code{font-size:12px}</style></head><body>\n\
         <h1>snarkd benchmark report</h1>\n",
    );
    let _ = writeln!(
        h,
        "<p>Reproduce with <code>{}</code>. Each ratio is snarkd over a baseline run in the same \
         invocation.</p>\n<p>Machine: {}.<br>Daemon: {}.</p>",
        esc(command),
        esc(&describe(machine)),
        esc(&describe(daemon))
    );
    h.push_str(
        "<table><tr><th>benchmark</th><th>baseline</th><th>snarkd</th><th>ratio</th>\
         <th>target</th><th>met</th></tr>\n",
    );
    for r in rows {
        let met = match r.target {
            Some((_, true)) => "yes",
            Some((_, false)) => "<span class=\"no\">no</span>",
            None => "—",
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}: {:.3}</td><td>{}: {:.3}</td><td>{:.2}</td><td>{}</td>\
             <td>{met}</td></tr>",
            esc(&r.name),
            esc(&r.baseline.0),
            r.baseline.1,
            esc(&r.snarkd.0),
            r.snarkd.1,
            r.ratio,
            esc(r.target.map_or("—", |t| t.0)),
        );
    }
    h.push_str("</table>\n");
    for run in runs {
        let _ = writeln!(h, "<h2>{}</h2>", esc(&run.kind));
        h.push_str(&latency_chart(run));
        h.push_str(&throughput_chart(run));
        h.push_str(&phases_chart(run));
    }
    h.push_str("</body></html>\n");
    h
}

/// Empirical distribution of client-side latency, one step line per side.
fn latency_chart(run: &Run) -> String {
    let all = run.sides.iter().flat_map(|s| &s.outcomes);
    let max = all.map(latency_ms).fold(0.0, f64::max);
    let mut c = Chart::new(
        "latency",
        &run.kind,
        240.0,
        (max, "client latency (ms)"),
        (1.0, "share of proofs"),
    );
    for (i, side) in run.sides.iter().enumerate() {
        let mut ms: Vec<f64> = side.outcomes.iter().map(latency_ms).collect();
        ms.sort_by(f64::total_cmp);
        let n = ms.len() as f64;
        let mut d = format!(
            "M{:.1} {:.1}",
            c.x(ms.first().copied().unwrap_or(0.0)),
            c.y(0.0)
        );
        for (k, v) in ms.iter().enumerate() {
            let _ = write!(d, " H{:.1} V{:.1}", c.x(*v), c.y((k + 1) as f64 / n));
        }
        c.path(&d, SIDE_COLOURS[i % SIDE_COLOURS.len()], &side.label());
    }
    c.legend(run.sides.iter().map(Side::label));
    c.finish()
}

/// Proofs completed against seconds since the side's first call began.
fn throughput_chart(run: &Run) -> String {
    let starts: Vec<Option<std::time::Instant>> = run
        .sides
        .iter()
        .map(|s| s.outcomes.iter().map(|o| o.finished - o.latency).min())
        .collect();
    let elapsed = |o: &Outcome, start: std::time::Instant| (o.finished - start).as_secs_f64();
    let (mut max_t, mut max_n) = (0.0f64, 0usize);
    for (side, start) in run.sides.iter().zip(&starts) {
        if let Some(start) = start {
            for o in &side.outcomes {
                max_t = max_t.max(elapsed(o, *start));
            }
        }
        max_n = max_n.max(side.outcomes.iter().filter(|o| o.completed()).count());
    }
    let mut c = Chart::new(
        "throughput",
        &run.kind,
        220.0,
        (max_t, "seconds since the first call"),
        (max_n as f64, "proofs completed"),
    );
    for (i, (side, start)) in run.sides.iter().zip(&starts).enumerate() {
        let Some(start) = start else { continue };
        let mut done: Vec<f64> = (side.outcomes.iter())
            .filter(|o| o.completed())
            .map(|o| elapsed(o, *start))
            .collect();
        done.sort_by(f64::total_cmp);
        let mut d = format!("M{:.1} {:.1}", c.x(0.0), c.y(0.0));
        for (k, t) in done.iter().enumerate() {
            let _ = write!(d, " H{:.1} V{:.1}", c.x(*t), c.y((k + 1) as f64));
        }
        c.path(&d, SIDE_COLOURS[i % SIDE_COLOURS.len()], &side.label());
    }
    c.legend(run.sides.iter().map(Side::label));
    c.finish()
}

/// One stacked bar per proof: the daemon's phases, the rest of its total, and what the client
/// waited beyond the daemon's total.
fn phases_chart(run: &Run) -> String {
    let bars: Vec<(String, [f64; 6])> = (run.sides.iter())
        .flat_map(|s| {
            s.outcomes.iter().enumerate().map(move |(k, o)| {
                let steps = [
                    o.queue_wait_ms,
                    o.srs_load_ms,
                    o.synthesis_ms,
                    o.gpu_compute_ms,
                ];
                let steps_sum: u64 = steps.iter().sum();
                let mut parts = [0.0; 6];
                for (p, v) in parts.iter_mut().zip(steps) {
                    *p = v as f64;
                }
                parts[4] = o.total_ms.saturating_sub(steps_sum) as f64;
                parts[5] = (latency_ms(o) - o.total_ms as f64).max(0.0);
                (format!("{} {}", short(&s.condition), k + 1), parts)
            })
        })
        .collect();
    let max = bars
        .iter()
        .map(|(_, p)| p.iter().sum::<f64>())
        .fold(0.0, f64::max);
    let row = 18.0;
    let plot = (bars.len() as f64 * row).max(row);
    let mut c = Chart::new("phases", &run.kind, plot, (max, "milliseconds"), (0.0, ""));
    for (i, (label, parts)) in bars.iter().enumerate() {
        let y = TOP + i as f64 * row + 2.0;
        let _ = write!(
            c.svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT - 6.0,
            y + 11.0,
            esc(label)
        );
        let mut at = 0.0;
        for (v, (phase, colour)) in parts.iter().zip(PHASES) {
            if *v > 0.0 {
                let _ = write!(
                    c.svg,
                    "<rect x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" \
                     fill=\"{colour}\"><title>{}: {v:.0} ms</title></rect>",
                    c.x(at),
                    c.x(at + v) - c.x(at),
                    row - 4.0,
                    esc(phase)
                );
            }
            at += v;
        }
    }
    c.legend(PHASES.iter().map(|p| p.0.to_string()));
    c.colours = PHASES.iter().map(|p| p.1).collect();
    c.finish()
}

fn latency_ms(o: &Outcome) -> f64 {
    o.latency.as_secs_f64() * 1e3
}

/// The first word of a side's condition ("idle", "during …" → "during").
fn short(label: &str) -> &str {
    label.split([' ', ',']).next().unwrap_or(label)
}

/// A JSON object as "key value, key value" for the page's header.
fn describe(v: &Value) -> String {
    match v {
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{} {}", k.replace('_', " "), describe(v)))
            .collect::<Vec<_>>()
            .join(", "),
        Value::Array(a) => a.iter().map(describe).collect::<Vec<_>>().join("; "),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    fn outcome(latency_ms: u64, synthesis_ms: u64) -> Outcome {
        let mut o =
            Outcome::rpc_error("r".into(), String::new(), Duration::from_millis(latency_ms));
        o.status = "COMPLETED".into();
        o.synthesis_ms = synthesis_ms;
        o.total_ms = synthesis_ms + 5;
        o.finished = Instant::now();
        o
    }

    #[test]
    fn a_page_has_each_chart_of_each_run_and_escapes_what_it_quotes() {
        let run = |kind: &str| Run {
            kind: kind.into(),
            sides: vec![
                Side {
                    condition: "idle".into(),
                    outcomes: vec![outcome(100, 40), outcome(120, 50)],
                },
                Side {
                    condition: "during <load>".into(),
                    outcomes: vec![outcome(300, 60)],
                },
            ],
        };
        let page = page(
            "snarkd-bench report",
            &serde_json::json!({"cores": 2}),
            &serde_json::json!({"backend": "cpu"}),
            &[],
            &[run("WinningPoSt"), run("WindowPoSt")],
        );
        for kind in ["WinningPoSt", "WindowPoSt"] {
            for chart in ["latency", "throughput", "phases"] {
                let tag = format!("data-chart=\"{chart}\" data-kind=\"{kind}\"");
                assert_eq!(page.matches(&tag).count(), 1, "{tag}");
            }
        }
        assert!(page.contains("during &lt;load&gt;, 1 proofs") && !page.contains("<load>"));
        // Three bars a run, each with its queue-less phases: synthesis, the rest, the client.
        assert_eq!(page.matches("<title>synthesis: ").count(), 6);
        assert_eq!(page.matches("<svg").count(), page.matches("</svg>").count());
    }
}

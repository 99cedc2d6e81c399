//! The report's runs, one function each, over what they share (`Bench`), adding their rows
//! and timed proofs to what was found (`Found`).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use bytesize::ByteSize;
use snarkd_proto::v1 as pb;
use snarkd_prover::fixtures::Fixtures;
use snarkd_prover::{ProofInput, ProofKind};

use super::daemon::Daemon;
use super::{
    baseline, deadline_rows, html, latency, mix, ms, percentile_of, precompiled, preload,
    subscribers, Options, Row,
};
use crate::remote::run_batch;
use crate::summary::Outcome;

/// What every run of the report shares: its options, the daemon binary, a runtime and the
/// fixture requests.
pub(super) struct Bench<'a> {
    pub o: &'a Options,
    pub snarkd: PathBuf,
    pub runtime: tokio::runtime::Runtime,
    pub fixtures: Fixtures,
    pub wpost: ProofInput,
    pub winning: ProofInput,
    pub porep: ProofInput,
    pub params: String,
}

impl Bench<'_> {
    /// The settings every daemon of the report starts with, with `budget` as its memory budget.
    pub fn base_env(&self, budget: String) -> Vec<(&'static str, String)> {
        vec![
            ("SNARKD_PARAMS_DIR", self.params.clone()),
            ("SNARKD_MEMORY_BUDGET", budget),
            ("SNARKD_DAEMON_RETENTION", "10m".to_string()),
        ]
    }
}

/// One of the report's runs.
pub(super) type PartRun = fn(&Bench, &mut Found) -> Result<()>;

/// What the runs found: the report's rows, and the timed deadline proofs for proofs.csv and the
/// page's charts.
#[derive(Default)]
pub(super) struct Found {
    pub rows: Vec<Row>,
    pub runs: Vec<html::Run>,
}

/// 1. Throughput against filecoin-proofs-api, and the device worker's busy share.
pub(super) fn throughput(b: &Bench, found: &mut Found) -> Result<()> {
    let Bench {
        o,
        snarkd,
        runtime,
        wpost,
        ..
    } = b;
    let rows = &mut found.rows;
    eprintln!(
        "1/7 throughput: baseline, {} WindowPoSt proofs one after another",
        o.count
    );
    let base_wall = baseline::sequential(wpost, o.count)?;
    let base_rate = o.count as f64 * 60.0 / base_wall.as_secs_f64();
    eprintln!(
        "1/7 throughput: snarkd, the same {} proofs at concurrency {}",
        o.count, o.concurrency
    );
    let d = Daemon::start(snarkd, &b.base_env("auto".into()))?;
    let summary = runtime.block_on(async {
        let client = d.client().await?;
        preload(client.clone(), "wpost-2k").await?;
        run_batch(
            client,
            wpost,
            o.count,
            o.concurrency,
            pb::Priority::Unspecified,
            true,
        )
        .await
    })?;
    d.stop()?;
    if summary.failed() > 0 {
        bail!(
            "{} daemon proofs failed: {}",
            summary.failed(),
            summary.json()["failures"]
        );
    }
    let rate = summary.proofs_per_min();
    rows.push(Row {
        name: "throughput (2 KiB WindowPoSt, proofs/min)".into(),
        baseline: ("filecoin-proofs-api, sequential".into(), base_rate),
        snarkd: (format!("snarkd, concurrency {}", o.concurrency), rate),
        ratio: rate / base_rate,
        target: Some((">= 1.25x", rate / base_rate >= 1.25)),
    });

    let usage = summary
        .usage
        .clone()
        .context("no status stream during the batch")?;
    let queued_share = usage.busy_share_while_queued().unwrap_or(0.0);
    let (synth, device) = (
        summary.mean_ms(|o| o.synthesis_ms),
        summary.mean_ms(|o| o.gpu_compute_ms),
    );
    let monolithic_share = device / (synth + device);
    rows.push(Row {
        name: "device worker busy share while partitions wait".into(),
        baseline: (
            "monolithic: device / (synthesis + device)".into(),
            monolithic_share,
        ),
        snarkd: (
            format!(
                "snarkd, {:.1} s with partitions waiting",
                usage.json()["queued_seconds"].as_f64().unwrap_or(0.0)
            ),
            queued_share,
        ),
        ratio: queued_share / monolithic_share,
        target: Some((">= 95 % busy", queued_share >= 0.95)),
    });
    Ok(())
}

/// 3. Peak RSS of bursts against the memory budget.
pub(super) fn memory(b: &Bench, found: &mut Found) -> Result<()> {
    let Bench {
        o,
        snarkd,
        runtime,
        fixtures,
        wpost,
        porep,
        ..
    } = b;
    let rows = &mut found.rows;
    let snap = &fixtures.request(ProofKind::SnapDealsUpdate);
    let bursts: [(&str, Vec<&ProofInput>); 2] = [
        ("WindowPoSt", vec![wpost]),
        (
            "PoRep and SnapDeals (reservations dominate)",
            vec![porep, snap],
        ),
    ];
    for (what, requests) in bursts {
        let each = (o.burst / requests.len()).max(1);
        eprintln!("3/7 memory: a burst of {what}, {each} jobs each, budget automatic then bounded");
        // (idle RSS, peak RSS) of the burst under `budget`.
        let burst = |budget: String| -> Result<(u64, u64)> {
            let d = Daemon::start(snarkd, &b.base_env(budget))?;
            let idle = d.rss()?;
            let failed = runtime.block_on(async {
                let client = d.client().await?;
                let batches = requests.iter().map(|r| {
                    run_batch(
                        client.clone(),
                        r,
                        each,
                        each,
                        pb::Priority::Unspecified,
                        false,
                    )
                });
                let mut failed = 0;
                for summary in futures::future::join_all(batches).await {
                    failed += summary?.failed();
                }
                anyhow::Ok(failed)
            })?;
            let peak = d.peak_rss()?;
            d.stop()?;
            if failed > 0 {
                bail!("{failed} burst proofs failed");
            }
            Ok((idle, peak))
        };
        let (idle, unbounded) = burst("auto".into())?;
        // The daemon's own memory is part of the budget: bound what the burst adds to it.
        let budget_bytes = (o.burst_budget)
            .map_or(idle + unbounded.saturating_sub(idle) * 3 / 5, |b| {
                b.as_u64()
            });
        let (_, bounded) = burst(format!("{budget_bytes}B"))?;
        let budget = budget_bytes as f64;
        rows.push(Row {
            name: format!("peak RSS during a burst of {what}, over the configured budget"),
            baseline: (
                format!("budget auto: peak {}", ByteSize(unbounded)),
                unbounded as f64 / budget,
            ),
            snarkd: (
                format!(
                    "budget {}: peak {}",
                    ByteSize(budget_bytes),
                    ByteSize(bounded)
                ),
                bounded as f64 / budget,
            ),
            ratio: bounded as f64 / budget,
            target: Some(("<= 1.05 (budget + 5 %)", bounded as f64 <= budget * 1.05)),
        });
    }
    Ok(())
}

/// 4. Deadline latency idle and while PoRep runs.
pub(super) fn latency_runs(b: &Bench, found: &mut Found) -> Result<()> {
    let Bench {
        o,
        snarkd,
        runtime,
        wpost,
        winning,
        porep,
        ..
    } = b;
    let (rows, runs) = (&mut found.rows, &mut found.runs);
    let deadlines = [
        ("WinningPoSt", winning, "winning-2k"),
        ("WindowPoSt", wpost, "wpost-2k"),
    ];
    for (name, request, circuit) in deadlines {
        eprintln!("4/7 latency: {name} idle, then while PoRep runs");
        let d = Daemon::start(snarkd, &b.base_env("auto".into()))?;
        let (idle, loaded) = runtime.block_on(latency::idle_and_loaded(
            &d,
            (request, circuit),
            porep,
            o.latency_samples,
        ))?;
        d.stop()?;
        rows.extend(deadline_rows(
            name,
            (&idle, "idle"),
            (&loaded, "during 2 PoRep C2 jobs"),
        ));
        runs.push(html::Run::of(
            name,
            [(idle, "idle"), (loaded, "during 2 PoRep C2 jobs")],
        ));
    }
    Ok(())
}

/// 5. The realistic mix, with preemption and without.
pub(super) fn mix_runs(b: &Bench, found: &mut Found) -> Result<()> {
    let Bench {
        o,
        snarkd,
        runtime,
        fixtures,
        wpost,
        winning,
        porep,
        ..
    } = b;
    let (rows, runs) = (&mut found.rows, &mut found.runs);
    let requests = mix::Requests {
        porep,
        snap: &fixtures.request(ProofKind::SnapDealsUpdate),
        wpost,
        winning,
    };
    let shape = mix::Shape {
        duration: o.mix_duration,
        wpost_every: o.mix_wpost_every,
        winning_mean: o.mix_winning_mean,
        seed: 42,
    };
    // As many idle proofs of each kind as the mix will have, so that each p99 is taken over
    // samples of one size (the p99 of 8 is their maximum, that of 49 the maximum of 49:
    // on a machine whose speed wanders, the larger sample's is higher with no load at all).
    let (wpost_at, winning_at) = shape.arrivals();
    let (n_winning, n_wpost) = (winning_at.len(), wpost_at.len());
    eprintln!("5/7 mix: idle deadline latencies ({n_winning} WinningPoSt, {n_wpost} WindowPoSt)");
    let idle = idle_deadlines(b, n_winning, n_wpost)?;
    let mut mix_runs = Vec::new();
    for preempt in ["true", "false"] {
        eprintln!("5/7 mix: {:?} with preempt = {preempt}", o.mix_duration);
        let mut env = b.base_env("auto".into());
        env.push(("SNARKD_SCHEDULER_PREEMPT", preempt.into()));
        let d = Daemon::start(snarkd, &env)?;
        mix_runs.push(runtime.block_on(mix::run(&d, &requests, shape))?);
        d.stop()?;
    }
    let (on, off) = (&mix_runs[0], &mix_runs[1]);
    rows.extend(deadline_rows(
        "mix: WinningPoSt",
        (&idle.0, "idle"),
        (&on.winning, "in the mix"),
    ));
    rows.extend(deadline_rows(
        "mix: WindowPoSt",
        (&idle.1, "idle"),
        (&on.wpost, "in the mix"),
    ));
    let minutes = o.mix_duration.as_secs_f64() / 60.0;
    let (rate_on, rate_off) = (on.porep_work / minutes, off.porep_work / minutes);
    rows.push(Row {
        name: "mix: PoRep throughput (proofs/min), preemption on over off".into(),
        baseline: (
            format!(
                "preempt = false ({} PoRep + {:.2} cut off; WinningPoSt p50 {:.0} ms)",
                off.porep_done,
                off.porep_work - off.porep_done as f64,
                ms(percentile_of(&off.winning, 50.0).latency)
            ),
            rate_off,
        ),
        snarkd: (
            format!(
                "preempt = true ({} PoRep + {:.2} cut off)",
                on.porep_done,
                on.porep_work - on.porep_done as f64
            ),
            rate_on,
        ),
        ratio: rate_on / rate_off,
        target: Some((">= 0.90 (at most 10 % lost)", rate_on >= 0.9 * rate_off)),
    });
    let on = mix_runs.swap_remove(0);
    runs.push(html::Run::of(
        "mix: WinningPoSt",
        [(idle.0, "idle"), (on.winning, "in the mix")],
    ));
    runs.push(html::Run::of(
        "mix: WindowPoSt",
        [(idle.1, "idle"), (on.wpost, "in the mix")],
    ));
    Ok(())
}

/// `n_winning` WinningPoSt and `n_wpost` WindowPoSt proofs timed one after another on an idle
/// daemon.
fn idle_deadlines(
    b: &Bench,
    n_winning: usize,
    n_wpost: usize,
) -> Result<(Vec<Outcome>, Vec<Outcome>)> {
    let d = Daemon::start(&b.snarkd, &b.base_env("auto".into()))?;
    let idle = b.runtime.block_on(async {
        let client = d.client().await?;
        let mut idle = (Vec::new(), Vec::new());
        preload(client.clone(), "winning-2k").await?;
        preload(client.clone(), "wpost-2k").await?;
        for i in 0..n_winning.max(n_wpost) {
            if i < n_winning {
                idle.0
                    .push(latency::timed(client.clone(), &b.winning, "winning-2k", i).await?);
            }
            if i < n_wpost {
                idle.1
                    .push(latency::timed(client.clone(), &b.wpost, "wpost-2k", i).await?);
            }
        }
        anyhow::Ok(idle)
    })?;
    d.stop()?;
    Ok(idle)
}

/// 6. A PoRep + SnapDeals batch with pre-compiled synthesis over without.
pub(super) fn precompiled_run(b: &Bench, found: &mut Found) -> Result<()> {
    let Bench {
        o,
        snarkd,
        runtime,
        fixtures,
        porep,
        ..
    } = b;
    let rows = &mut found.rows;
    let snap = &fixtures.request(ProofKind::SnapDealsUpdate);
    let dir = o.out.join("precompiled");
    let _ = std::fs::remove_dir_all(&dir);
    let mut sides = Vec::new();
    for on in [false, true] {
        eprintln!(
            "6/7 pre-compiled synthesis {}: {} PoRep and {} SnapDeals jobs at once",
            if on { "on" } else { "off" },
            o.precompiled_count,
            o.precompiled_count
        );
        sides.push(precompiled::side(
            runtime,
            snarkd,
            &b.base_env("auto".into()),
            (porep, snap),
            o.precompiled_count,
            on,
            &dir,
        )?);
    }
    let (off, on) = (&sides[0], &sides[1]);
    let what = |name: &str, s: &precompiled::Side| {
        format!(
            "{name}: synthesis {:.0} ms a PoRep partition, {:.0} ms a SnapDeals one",
            s.synthesis_ms.0, s.synthesis_ms.1
        )
    };
    let ratio = on.proofs_per_min / off.proofs_per_min;
    rows.push(Row {
        name: "PoRep + SnapDeals batch throughput (proofs/min)".into(),
        baseline: (what("plain synthesis", off), off.proofs_per_min),
        snarkd: (what("pre-compiled synthesis", on), on.proofs_per_min),
        ratio,
        target: Some(("> 1.0", ratio > 1.0)),
    });
    Ok(())
}

/// 7. StreamStatus with many subscribers against one.
pub(super) fn subscribers_run(b: &Bench, found: &mut Found) -> Result<()> {
    let Bench {
        o,
        snarkd,
        runtime,
        wpost,
        ..
    } = b;
    let rows = &mut found.rows;
    let shape = subscribers::Shape::of(o);
    let d = Daemon::start(snarkd, &shape.daemon_env(b.base_env("auto".into())))?;
    let sides = runtime.block_on(subscribers::run(&d, wpost, shape))?;
    // Hundreds of queued proofs would take minutes to drain.
    d.kill()?;
    rows.extend(subscribers::rows(&sides, shape));
    Ok(())
}

//! Benchmark 6: a daemon's throughput on a batch of PoRep and SnapDeals jobs with pre-compiled
//! synthesis, against the same daemon synthesizing the plain way (`[synthesis] precompiled =
//! false`), one after the other in the same invocation. Each daemon loads both circuits first
//! (PreloadSRS: the pre-compiled one records its matrices then), so only proving is timed.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Result};
use snarkd_proto::v1 as pb;
use snarkd_prover::ProofInput;

use super::daemon::Daemon;
use super::preload;
use crate::remote::run_batch;

/// What one side of the comparison measured.
pub(super) struct Side {
    pub proofs_per_min: f64,
    /// Mean synthesis time of a partition, per kind: (PoRep, SnapDeals).
    pub synthesis_ms: (f64, f64),
}

/// Runs `count` PoRep and `count` SnapDeals jobs at once against a daemon started with `env`
/// and `[synthesis] precompiled = on`, its matrices kept in `dir`.
pub(super) fn side(
    runtime: &tokio::runtime::Runtime,
    snarkd: &Path,
    env: &[(&str, String)],
    (porep, snap): (&ProofInput, &ProofInput),
    count: usize,
    on: bool,
    dir: &Path,
) -> Result<Side> {
    let mut env = env.to_vec();
    env.push(("SNARKD_SYNTHESIS_PRECOMPILED", on.to_string()));
    env.push((
        "SNARKD_SYNTHESIS_PRECOMPILED_DIR",
        dir.display().to_string(),
    ));
    let d = Daemon::start(snarkd, &env)?;
    let result = runtime.block_on(async {
        let client = d.client().await?;
        preload(client.clone(), "porep-2k").await?;
        preload(client.clone(), "snap-2k").await?;
        let started = Instant::now();
        let (p, s) = futures::future::join(
            run_batch(
                client.clone(),
                porep,
                count,
                count,
                pb::Priority::Unspecified,
                false,
            ),
            run_batch(client, snap, count, count, pb::Priority::Unspecified, false),
        )
        .await;
        let wall = started.elapsed();
        let (p, s) = (p?, s?);
        if p.failed() + s.failed() > 0 {
            bail!("{} proofs failed", p.failed() + s.failed());
        }
        let per_partition = |sum: &crate::summary::Summary, partitions: f64| {
            sum.mean_ms(|o| o.synthesis_ms) / partitions
        };
        anyhow::Ok(Side {
            proofs_per_min: (p.completed() + s.completed()) as f64 * 60.0 / wall.as_secs_f64(),
            synthesis_ms: (
                per_partition(&p, partitions(porep)),
                per_partition(&s, partitions(snap)),
            ),
        })
    });
    d.stop()?;
    result
}

/// Partitions of a request's proof (the daemon's synthesis time is summed over them).
fn partitions(request: &ProofInput) -> f64 {
    snarkd_prover::prepare(request).map_or(1, |j| j.num_partitions()) as f64
}

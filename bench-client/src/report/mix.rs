//! The realistic mix: two PoRep and one SnapDeals proof in flight all the time, a WindowPoSt every
//! `wpost_every` and a WinningPoSt at random times (seeded, so every run sees the same arrivals),
//! for `duration`. What it measures: each deadline kind's latencies, and how many PoRep proofs
//! completed in the window.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use rand::{Rng, SeedableRng};
use snarkd_proto::v1 as pb;
use snarkd_prover::ProofRequest;
use tokio::time::{sleep_until, timeout_at, Instant};

use super::daemon::Daemon;
use super::latency::timed;
use super::preload;
use crate::remote::{prove, request_id};
use crate::request::to_wire;

/// The arrivals of one mix run.
#[derive(Clone, Copy)]
pub(super) struct Shape {
    pub duration: Duration,
    pub wpost_every: Duration,
    /// WinningPoSt gaps are uniform between half and one and a half of this.
    pub winning_mean: Duration,
    pub seed: u64,
}

/// The proofs a mix run uses.
pub(super) struct Requests<'a> {
    pub porep: &'a ProofRequest,
    pub snap: &'a ProofRequest,
    pub wpost: &'a ProofRequest,
    pub winning: &'a ProofRequest,
}

/// What one mix run measured.
pub(super) struct Run {
    /// WinningPoSt latencies, ms.
    pub winning: Vec<f64>,
    /// WindowPoSt latencies, ms.
    pub wpost: Vec<f64>,
    /// PoRep proofs completed within the window.
    pub porep_done: usize,
}

impl Shape {
    /// Arrival offsets of (WindowPoSt, WinningPoSt) proofs.
    fn arrivals(&self) -> (Vec<Duration>, Vec<Duration>) {
        let wpost = (1..)
            .map(|k| self.wpost_every * k)
            .take_while(|t| *t < self.duration)
            .collect();
        let mut rng = rand::rngs::StdRng::seed_from_u64(self.seed);
        let mut winning = Vec::new();
        let mut t = Duration::ZERO;
        loop {
            t += self.winning_mean.mul_f64(rng.gen_range(0.5..1.5));
            if t >= self.duration {
                break;
            }
            winning.push(t);
        }
        (wpost, winning)
    }
}

/// Preloads every circuit, then runs the mix on `d`.
pub(super) async fn run(d: &Daemon, r: &Requests<'_>, shape: Shape) -> Result<Run> {
    let client = d.client().await?;
    for circuit in ["porep-2k", "snap-2k", "wpost-2k", "winning-2k"] {
        preload(client.clone(), circuit).await?;
    }
    let start = Instant::now();
    let end = start + shape.duration;

    let mut background = Vec::new();
    for (lane, request) in [r.porep, r.porep, r.snap].into_iter().enumerate() {
        let (client, request) = (client.clone(), request.clone());
        background.push(tokio::spawn(async move {
            let mut done = 0usize;
            for n in 0.. {
                let submit = to_wire(
                    &request,
                    pb::Priority::Unspecified,
                    request_id(100_000 * (lane + 1) + n),
                );
                // A proof still running at the end is not counted (the daemon stops after).
                let Ok(o) = timeout_at(end, prove(&mut client.clone(), submit)).await else {
                    break;
                };
                if !o.completed() {
                    bail!("background proof {}: {}", o.status, o.error);
                }
                done += 1;
            }
            Ok(done)
        }));
    }

    let (wpost_at, winning_at) = shape.arrivals();
    let deadline = |at: Duration, request: &ProofRequest, circuit: &'static str, i: usize| {
        let (client, request) = (client.clone(), request.clone());
        tokio::spawn(async move {
            sleep_until(start + at).await;
            timed(client, &request, circuit, i).await
        })
    };
    let wpost: Vec<_> = (wpost_at.into_iter().enumerate())
        .map(|(i, at)| deadline(at, r.wpost, "wpost-2k", 200_000 + i))
        .collect();
    let winning: Vec<_> = (winning_at.into_iter().enumerate())
        .map(|(i, at)| deadline(at, r.winning, "winning-2k", 300_000 + i))
        .collect();

    let mut run = Run {
        winning: Vec::new(),
        wpost: Vec::new(),
        porep_done: 0,
    };
    for task in wpost {
        run.wpost.push(task.await.context("a WindowPoSt task")??);
    }
    for task in winning {
        run.winning.push(task.await.context("a WinningPoSt task")??);
    }
    for (lane, task) in background.into_iter().enumerate() {
        let done = task.await.context("a background task")??;
        if lane < 2 {
            run.porep_done += done;
        }
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_are_the_same_for_a_seed_and_stay_in_the_window() {
        let shape = Shape {
            duration: Duration::from_secs(100),
            wpost_every: Duration::from_secs(20),
            winning_mean: Duration::from_secs(10),
            seed: 7,
        };
        let (wpost, winning) = shape.arrivals();
        assert_eq!(wpost.len(), 4);
        assert_eq!(shape.arrivals().1, winning);
        assert!(winning.len() >= 6 && winning.iter().all(|t| *t < shape.duration));
        let other = Shape { seed: 8, ..shape }.arrivals().1;
        assert_ne!(other, winning);
    }
}

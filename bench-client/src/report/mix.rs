//! The realistic mix: two PoRep and one SnapDeals proof in flight all the time, a WindowPoSt every
//! `wpost_every` and a WinningPoSt at random times (seeded, so every run sees the same arrivals),
//! for `duration`. What it measures: each deadline kind's latencies, and how much PoRep work was
//! done in the window: the proofs completed, plus the share of the one still running at the end
//! (its time so far over its lane's mean proof time), so that the figure does not move in steps
//! of a whole proof.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use rand::{Rng, SeedableRng};
use snarkd_proto::v1 as pb;
use snarkd_prover::ProofInput;
use tokio::time::{sleep_until, timeout_at, Instant};

use super::daemon::Daemon;
use super::latency::timed;
use super::preload;
use crate::remote::{prove, request_id};
use crate::request::to_wire;
use crate::summary::Outcome;

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
    pub porep: &'a ProofInput,
    pub snap: &'a ProofInput,
    pub wpost: &'a ProofInput,
    pub winning: &'a ProofInput,
}

/// What one mix run measured.
pub(super) struct Run {
    /// WinningPoSt proofs.
    pub winning: Vec<Outcome>,
    /// WindowPoSt proofs.
    pub wpost: Vec<Outcome>,
    /// PoRep proofs completed within the window.
    pub porep_done: usize,
    /// `porep_done` plus the shares of the PoRep proofs running at the end.
    pub porep_work: f64,
}

impl Shape {
    /// Arrival offsets of (WindowPoSt, WinningPoSt) proofs.
    pub(super) fn arrivals(&self) -> (Vec<Duration>, Vec<Duration>) {
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
            let mut last_end = start;
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
                last_end = Instant::now();
            }
            Ok(Lane {
                done,
                running_for: end - last_end,
                mean: (done > 0).then(|| (last_end - start) / done as u32),
            })
        }));
    }

    let (wpost_at, winning_at) = shape.arrivals();
    let deadline = |at: Duration, request: &ProofInput, circuit: &'static str, i: usize| {
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
        porep_work: 0.0,
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
            run.porep_done += done.done;
            run.porep_work += done.work();
        }
    }
    Ok(run)
}

/// One background lane's proofs, one after another.
struct Lane {
    done: usize,
    /// How long the proof cut off at the end had run.
    running_for: Duration,
    /// The lane's mean proof time (none when no proof completed).
    mean: Option<Duration>,
}

impl Lane {
    /// Proofs done, counting the one cut off by its share of a mean proof (less than one).
    fn work(&self) -> f64 {
        let share = self.mean.map_or(0.0, |mean| {
            (self.running_for.as_secs_f64() / mean.as_secs_f64()).min(0.99)
        });
        self.done as f64 + share
    }
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

    #[test]
    fn a_lane_counts_the_proof_cut_off_by_its_share() {
        let lane = |done, running_for, mean| Lane {
            done,
            running_for: Duration::from_secs(running_for),
            mean: Some(Duration::from_secs(mean)),
        };
        assert_eq!(lane(3, 30, 60).work(), 3.5);
        // A proof running longer than the mean still counts as less than a whole one.
        assert_eq!(lane(2, 90, 60).work(), 2.99);
        let none = Lane {
            done: 0,
            running_for: Duration::from_secs(100),
            mean: None,
        };
        assert_eq!(none.work(), 0.0);
    }
}

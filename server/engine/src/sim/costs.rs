//! What each step of a proof costs in a simulation: time on the CPU at the thread counts it was
//! measured at, time on a device, memory held. The figures come from the caller's cost table
//! (measured, each row naming where); nothing here invents one.

use serde::{Deserialize, Serialize};

use crate::domain::{Priority, ProofKind};

/// A step that runs on the CPU: how long it took alone at each thread count it was measured
/// at, `[[threads, seconds], …]`, fewest threads first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuWork {
    pub walls: Vec<(f64, f64)>,
    /// The most threads the step can use (1 for a step on one thread); none: every core of its
    /// pool. Past the most threads measured, its parallel efficiency is held at the last
    /// measured one's (an assumption the caller's table states).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_threads: Option<f64>,
}

/// Figures of a cost row that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BadCost {
    #[error(
        "walls {0:?}: give [threads, seconds] pairs, threads 1 or more in ascending order, \
         seconds not negative"
    )]
    Walls(Vec<(f64, f64)>),
    #[error("max_threads {0}: give 1 or more")]
    MaxThreads(f64),
}

impl CpuWork {
    /// A step on one thread that takes `seconds`.
    pub fn one_thread(seconds: f64) -> CpuWork {
        CpuWork {
            walls: vec![(1.0, seconds)],
            max_threads: Some(1.0),
        }
    }

    /// No work at all.
    pub fn none() -> CpuWork {
        CpuWork::one_thread(0.0)
    }

    /// Why the figures cannot be used, if they cannot: at least one point, thread counts of at
    /// least one in ascending order, times finite and not negative (`speedup` relies on it).
    pub fn check(&self) -> Result<(), BadCost> {
        let ascending = self.walls.windows(2).all(|w| w[0].0 < w[1].0);
        let sane = (self.walls.iter()).all(|&(t, s)| t >= 1.0 && s.is_finite() && s >= 0.0);
        if self.walls.is_empty() || !ascending || !sane {
            return Err(BadCost::Walls(self.walls.clone()));
        }
        match self.max_threads {
            Some(m) if m < 1.0 || !m.is_finite() => Err(BadCost::MaxThreads(m)),
            _ => Ok(()),
        }
    }

    /// Its work in core-seconds: its time on one thread (the first point scaled down to one
    /// thread when it was measured on more, as if it scaled perfectly below it).
    pub fn core_seconds(&self) -> f64 {
        self.walls.first().map_or(0.0, |&(t, s)| s * t.max(1.0))
    }

    /// How many cores' worth of speed it reaches with `threads` threads (its speed-up over one
    /// thread): measured points interpolated, held at the last one's efficiency past it. The
    /// figures must pass [`CpuWork::check`].
    pub fn speedup(&self, threads: f64) -> f64 {
        let threads = self
            .max_threads
            .map_or(threads, |m| threads.min(m))
            .max(1.0);
        let work = self.core_seconds();
        if work <= 0.0 {
            return threads;
        }
        let points: Vec<(f64, f64)> = (self.walls.iter())
            .map(|&(t, s)| (t, if s > 0.0 { work / s } else { t }))
            .collect();
        let (first, last) = (points[0], points[points.len() - 1]);
        if threads <= first.0 {
            return threads * first.1 / first.0;
        }
        if threads >= last.0 {
            return last.1 * threads / last.0;
        }
        let i = points
            .iter()
            .position(|p| p.0 >= threads)
            .unwrap_or(points.len() - 1);
        let (a, b) = (points[i - 1], points[i]);
        a.1 + (b.1 - a.1) * (threads - a.0) / (b.0 - a.0)
    }
}

/// Where one partition's device phase runs and what it costs there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceCost {
    /// On a GPU: seconds of the device alone per partition, in `steps` steps (its preemption
    /// points). Phases sharing a device share its time.
    Gpu { seconds: f64, steps: u32 },
    /// On the CPU backend: CPU work per partition, in `steps` steps.
    Cpu { work: CpuWork, steps: u32 },
}

impl DeviceCost {
    pub fn steps(&self) -> u32 {
        match self {
            DeviceCost::Gpu { steps, .. } | DeviceCost::Cpu { steps, .. } => (*steps).max(1),
        }
    }
}

/// One proof kind's costs on the simulated box.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KindCosts {
    pub kind: ProofKind,
    /// The circuit its parameters are loaded for, e.g. `porep-32g`.
    pub circuit: String,
    pub partitions: u32,
    /// The priority Curio gives it (the API layer's cap applied).
    pub priority: Priority,
    /// What a partition reserves at admission, and the a/b/c share its device phase returns
    /// after its first step.
    pub reserve_bytes: u64,
    pub abc_bytes: u64,
    /// The circuit's parameters in memory, and how long loading them takes (not on the cores:
    /// an assumption the table states).
    pub params_bytes: u64,
    pub params_load_s: f64,
    /// Decoding and checking the request at submit, before the job is queued.
    pub plan: CpuWork,
    /// One partition's synthesis.
    pub synthesis: CpuWork,
    pub device: DeviceCost,
    /// Assembling and verifying the proof.
    pub finalize: CpuWork,
}

/// The OS's share for a thread at a priority: CFS's weights of nice 0 and of the background
/// nice (19 by default: 15 against 1024), so deadline work takes nearly all of a contended core.
pub(crate) fn cpu_weight(priority: Priority, background_nice: i32) -> f64 {
    let nice = if priority >= Priority::High {
        0
    } else {
        background_nice.clamp(0, 19)
    };
    // 1024 / 1.25^nice, as the kernel's table rounds it.
    1024.0 / 1.25_f64.powi(nice)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_a_speed_up_cannot_be_reckoned_from_are_refused() {
        let work = |walls: Vec<(f64, f64)>| CpuWork {
            walls,
            max_threads: None,
        };
        assert!(work(vec![(1.0, 44.0), (2.0, 23.2)]).check().is_ok());
        for bad in [
            vec![],
            vec![(2.0, 1.0), (1.0, 2.0)],
            vec![(0.0, 1.0)],
            vec![(1.0, -1.0)],
        ] {
            assert!(work(bad.clone()).check().is_err(), "{bad:?}");
        }
        let capped = CpuWork {
            max_threads: Some(0.0),
            ..CpuWork::one_thread(1.0)
        };
        assert!(capped.check().is_err());
    }
}

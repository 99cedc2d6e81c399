//! Proof outcomes and the batch summary: wall time, proofs/min, latency percentiles and the
//! daemon's mean per-phase times, as text for people and JSON for scripts.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use snarkd_proto::v1 as pb;

use crate::usage::WorkerUsage;

/// What one `Prove` call came back with (or why it did not).
#[derive(Clone, Debug)]
pub struct Outcome {
    pub request_id: String,
    /// COMPLETED, FAILED, CANCELLED, TIMEOUT, UNKNOWN, or RPC_ERROR when the call itself failed.
    pub status: String,
    pub error: String,
    /// The proof returned (empty unless it completed).
    pub proof: Vec<u8>,
    pub proof_bytes: usize,
    /// Client-side latency of the call.
    pub latency: Duration,
    /// When the call came back (the report's throughput-over-time chart).
    pub finished: Instant,
    pub queue_wait_ms: u64,
    pub srs_load_ms: u64,
    pub synthesis_ms: u64,
    pub gpu_compute_ms: u64,
    pub total_ms: u64,
}

impl Outcome {
    pub fn from_result(request_id: String, r: &pb::AwaitProofResponse, latency: Duration) -> Self {
        let status = pb::await_proof_response::Status::try_from(r.status).map_or_else(
            |_| format!("STATUS_{}", r.status),
            |s| s.as_str_name().to_string(),
        );
        Outcome {
            request_id,
            status,
            error: r.error_message.clone(),
            proof: r.proof.clone(),
            proof_bytes: r.proof.len(),
            latency,
            finished: Instant::now(),
            queue_wait_ms: r.queue_wait_ms,
            srs_load_ms: r.srs_load_ms,
            synthesis_ms: r.synthesis_ms,
            gpu_compute_ms: r.gpu_compute_ms,
            total_ms: r.total_ms,
        }
    }

    pub fn rpc_error(request_id: String, error: String, latency: Duration) -> Self {
        Outcome {
            request_id,
            status: "RPC_ERROR".into(),
            error,
            proof: Vec::new(),
            proof_bytes: 0,
            latency,
            finished: Instant::now(),
            queue_wait_ms: 0,
            srs_load_ms: 0,
            synthesis_ms: 0,
            gpu_compute_ms: 0,
            total_ms: 0,
        }
    }

    pub fn completed(&self) -> bool {
        self.status == "COMPLETED"
    }

    pub fn json(&self) -> Value {
        json!({
            "request_id": self.request_id,
            "status": self.status,
            "error": self.error,
            "proof_bytes": self.proof_bytes,
            "latency_ms": ms(self.latency),
            "queue_wait_ms": self.queue_wait_ms,
            "srs_load_ms": self.srs_load_ms,
            "synthesis_ms": self.synthesis_ms,
            "gpu_compute_ms": self.gpu_compute_ms,
            "total_ms": self.total_ms,
        })
    }

    pub fn text(&self) -> String {
        let mut s = format!(
            "status      {}\nproof       {} bytes\nlatency     {:.1} ms (client)\n\
             daemon      queue {} ms, params load {} ms, synthesis {} ms, device {} ms, total {} ms",
            self.status,
            self.proof_bytes,
            ms(self.latency),
            self.queue_wait_ms,
            self.srs_load_ms,
            self.synthesis_ms,
            self.gpu_compute_ms,
            self.total_ms
        );
        if !self.error.is_empty() {
            s.push_str(&format!("\nerror       {}", self.error));
        }
        s
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The nearest-rank `p`th percentile (0 < p <= 100) of ascending `sorted`; None when empty.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    percentile_of(sorted, p).copied()
}

/// The element at the nearest-rank `p`th percentile (0 < p <= 100) of `sorted`, whatever it
/// is sorted by; None when empty.
pub fn percentile_of<T>(sorted: &[T], p: f64) -> Option<&T> {
    snarkd_engine::history::nearest_rank(sorted.len(), p / 100.0).map(|i| &sorted[i])
}

/// A batch run summarised.
#[derive(Clone, Debug)]
pub struct Summary {
    pub kind: String,
    pub concurrency: usize,
    pub wall: Duration,
    pub outcomes: Vec<Outcome>,
    /// The daemon's device workers during the run, when its status stream could be followed.
    pub usage: Option<WorkerUsage>,
}

impl Summary {
    pub fn completed(&self) -> usize {
        self.outcomes.iter().filter(|o| o.completed()).count()
    }

    pub fn failed(&self) -> usize {
        self.outcomes.len() - self.completed()
    }

    /// Completed proofs per minute of wall time.
    pub fn proofs_per_min(&self) -> f64 {
        let secs = self.wall.as_secs_f64();
        if secs == 0.0 {
            0.0
        } else {
            self.completed() as f64 * 60.0 / secs
        }
    }

    /// Client latencies of completed proofs, ascending, in ms.
    fn latencies(&self) -> Vec<f64> {
        let mut l: Vec<f64> = self
            .outcomes
            .iter()
            .filter(|o| o.completed())
            .map(|o| ms(o.latency))
            .collect();
        l.sort_by(f64::total_cmp);
        l
    }

    /// Mean of a daemon-reported phase over completed proofs, in ms.
    pub fn mean_ms(&self, f: impl Fn(&Outcome) -> u64) -> f64 {
        let done: Vec<u64> = self
            .outcomes
            .iter()
            .filter(|o| o.completed())
            .map(f)
            .collect();
        if done.is_empty() {
            0.0
        } else {
            done.iter().sum::<u64>() as f64 / done.len() as f64
        }
    }

    pub fn json(&self) -> Value {
        let l = self.latencies();
        let failures: Vec<Value> = self
            .outcomes
            .iter()
            .filter(|o| !o.completed())
            .map(Outcome::json)
            .collect();
        json!({
            "kind": self.kind,
            "count": self.outcomes.len(),
            "concurrency": self.concurrency,
            "completed": self.completed(),
            "failed": self.failed(),
            "wall_s": self.wall.as_secs_f64(),
            "proofs_per_min": self.proofs_per_min(),
            "latency_ms": {
                "min": l.first(),
                "p50": percentile(&l, 50.0),
                "p90": percentile(&l, 90.0),
                "p99": percentile(&l, 99.0),
                "max": l.last(),
            },
            "mean_ms": {
                "queue_wait": self.mean_ms(|o| o.queue_wait_ms),
                "srs_load": self.mean_ms(|o| o.srs_load_ms),
                "synthesis": self.mean_ms(|o| o.synthesis_ms),
                "gpu_compute": self.mean_ms(|o| o.gpu_compute_ms),
            },
            "workers": self.usage.as_ref().map(WorkerUsage::json),
            "failures": failures,
        })
    }

    pub fn text(&self) -> String {
        let l = self.latencies();
        let p = |q| percentile(&l, q).map_or("-".to_string(), |v| format!("{v:.1}"));
        let mut s = format!(
            "{} x {} at concurrency {}: {} completed, {} failed\n\
             wall        {:.2} s ({:.1} proofs/min)\n\
             latency ms  p50 {}  p90 {}  p99 {}\n\
             mean ms     queue {:.1}  params load {:.1}  synthesis {:.1}  device {:.1}",
            self.outcomes.len(),
            self.kind,
            self.concurrency,
            self.completed(),
            self.failed(),
            self.wall.as_secs_f64(),
            self.proofs_per_min(),
            p(50.0),
            p(90.0),
            p(99.0),
            self.mean_ms(|o| o.queue_wait_ms),
            self.mean_ms(|o| o.srs_load_ms),
            self.mean_ms(|o| o.synthesis_ms),
            self.mean_ms(|o| o.gpu_compute_ms),
        );
        if let Some(usage) = &self.usage {
            s.push('\n');
            s.push_str(&usage.text());
        }
        for o in self.outcomes.iter().filter(|o| !o.completed()) {
            s.push_str(&format!("\n{} {}: {}", o.request_id, o.status, o.error));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&hundred, 50.0), Some(50.0));
        assert_eq!(percentile(&hundred, 90.0), Some(90.0));
        assert_eq!(percentile(&hundred, 99.0), Some(99.0));
        assert_eq!(percentile(&hundred, 100.0), Some(100.0));
        let three = [10.0, 20.0, 30.0];
        assert_eq!(percentile(&three, 50.0), Some(20.0));
        assert_eq!(percentile(&three, 90.0), Some(30.0));
        assert_eq!(percentile(&[4.0], 1.0), Some(4.0));
        assert_eq!(percentile(&[], 50.0), None);
    }

    fn outcome(status: &str, latency_ms: u64, synthesis_ms: u64) -> Outcome {
        let mut o =
            Outcome::rpc_error("r".into(), String::new(), Duration::from_millis(latency_ms));
        o.status = status.into();
        o.synthesis_ms = synthesis_ms;
        o
    }

    #[test]
    fn summary_counts_only_completed_proofs() {
        let s = Summary {
            kind: "wpost".into(),
            concurrency: 2,
            wall: Duration::from_secs(30),
            outcomes: vec![
                outcome("COMPLETED", 100, 10),
                outcome("COMPLETED", 300, 30),
                outcome("FAILED", 5000, 0),
            ],
            usage: None,
        };
        assert_eq!((s.completed(), s.failed()), (2, 1));
        assert_eq!(s.proofs_per_min(), 4.0);
        let j = s.json();
        assert_eq!(j["count"], 3);
        assert_eq!(j["latency_ms"]["p50"], 100.0);
        assert_eq!(j["latency_ms"]["p99"], 300.0);
        assert_eq!(j["mean_ms"]["synthesis"], 20.0);
        assert_eq!(j["failures"].as_array().unwrap().len(), 1);
        assert!(s.text().contains("2 completed, 1 failed"));
    }
}

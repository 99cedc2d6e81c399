//! What the engine's single writer costs with many jobs queued: CPU per input and snapshot
//! publishes while nothing changes. Not a test; run it side by side with a baseline build:
//!
//! ```sh
//! cargo bench -p snarkd-engine --features test-hooks --bench writer            # 500 jobs
//! SNARKD_BENCH_JOBS=2000 cargo bench -p snarkd-engine --features test-hooks --bench writer
//! ```
//!
//! The jobs are the engine's stand-in prover's (10 partitions each); their syntheses are held
//! so that they stay queued. Two loads: journal flush requests, the cheapest input the API
//! sends, which change nothing (what the writer does after every input: schedule, snapshot);
//! and a submit followed by its cancel, two changes a snapshot must show. `--json` prints one
//! object instead of the text.

use std::time::{Duration, Instant};

use snarkd_engine::test_prover::{request, TestProver};
use snarkd_engine::{Engine, EngineConfig, IntakeLimits, ProofKind};

/// User and system CPU seconds of this process so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

#[allow(clippy::await_holding_lock)] // the gate below, held on purpose
fn main() {
    let jobs: usize = std::env::var("SNARKD_BENCH_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    let inputs = 5000;
    let idle = Duration::from_secs(5);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let prover = TestProver::new(1);
        // Held across the awaits on purpose (hence the allow on `main`): the stand-in prover's
        // steps wait on it, so no job runs while the writer is measured.
        let gate = prover.gate.lock();
        let config = EngineConfig {
            memory_budget_bytes: 1 << 40,
            synthesis_threads: 1,
            limits: IntakeLimits {
                queued_jobs: jobs + 1,
                queued_input_bytes: u64::MAX,
            },
            ..Default::default()
        };
        let engine = Engine::start(config, prover.clone());
        for _ in 0..jobs {
            engine
                .submit(request(ProofKind::PorepSealCommit, 10, 1000))
                .await
                .expect("accepted");
        }
        engine.flush_journal().await;

        let (cpu, started) = (cpu_seconds(), Instant::now());
        for _ in 0..inputs {
            engine.flush_journal().await;
        }
        let per_input = (cpu_seconds() - cpu) / inputs as f64;
        let wall = started.elapsed().as_secs_f64() / inputs as f64;

        // Changes: a new job and its cancel, each a snapshot the streams must see.
        let changes_n = inputs / 10;
        let mut watcher = engine.subscribe();
        watcher.borrow_and_update();
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counting = tokio::spawn({
            let seen = seen.clone();
            async move {
                while watcher.changed().await.is_ok() {
                    watcher.borrow_and_update();
                    seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
        });
        let (cpu, started) = (cpu_seconds(), Instant::now());
        for _ in 0..changes_n {
            let job = engine
                .submit(request(ProofKind::PorepSealCommit, 10, 1000))
                .await
                .expect("accepted");
            engine.cancel(&job.job_id).await.expect("cancelled");
        }
        let per_change = (cpu_seconds() - cpu) / (2 * changes_n) as f64;
        let change_wall = started.elapsed().as_secs_f64();
        counting.abort();
        let published = seen.load(std::sync::atomic::Ordering::Relaxed);

        let mut changes = engine.subscribe();
        changes.borrow_and_update();
        let (cpu, until) = (cpu_seconds(), tokio::time::Instant::now() + idle);
        let mut publishes = 0u32;
        while let Ok(Ok(())) = tokio::time::timeout_at(until, changes.changed()).await {
            publishes += 1;
        }
        let idle_cpu = (cpu_seconds() - cpu) / idle.as_secs_f64();
        if std::env::args().any(|a| a == "--json") {
            println!(
                "{{\"jobs\":{jobs},\"cpu_per_input_us\":{:.1},\"wall_per_input_us\":{:.1},\"cpu_per_change_us\":{:.1},\"changes_per_s\":{:.0},\"publishes_per_s\":{:.0},\"idle_publishes_per_s\":{:.2},\"idle_cpu_share\":{:.4}}}",
                per_input * 1e6,
                wall * 1e6,
                per_change * 1e6,
                (2 * changes_n) as f64 / change_wall,
                published as f64 / change_wall,
                publishes as f64 / idle.as_secs_f64(),
                idle_cpu
            );
            drop(gate);
            return;
        }
        println!("writer with {jobs} jobs queued ({} partitions)", jobs * 10);
        println!("  CPU per input:            {:>8.1} µs", per_input * 1e6);
        println!("  wall per input:           {:>8.1} µs", wall * 1e6);
        println!("  CPU per change:           {:>8.1} µs", per_change * 1e6);
        println!(
            "  changes per second:       {:>8.0}",
            (2 * changes_n) as f64 / change_wall
        );
        println!(
            "  publishes per second:     {:>8.0}",
            published as f64 / change_wall
        );
        println!(
            "  snapshots published idle: {:>8.2} /s",
            publishes as f64 / idle.as_secs_f64()
        );
        println!(
            "  CPU while idle:           {:>8.2} % of a core",
            idle_cpu * 100.0
        );
        drop(gate);
    });
}

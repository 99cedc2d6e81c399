//! Decoding a parameter file: bellperson's reader (point by point on one thread, as snarkd read
//! them before) against the memory-mapped parallel decoder (`params::read`), on a made-up
//! `.params` file in the published layout written first. A measurement, not a test.
//!
//!   cargo run --release -p snarkd-prover --features bench --example params_decode -- \
//!       [--divisor N] [--threads 1,2,...] [--dir DIR] [--json]
//!
//! The file has a 32 GiB PoRep's point counts over N (default 16: 2.8 GiB; 1 is the whole
//! 44 GiB). It is read once before the timing, so both readers read it from the page cache:
//! what is timed is the decode (blst's on-curve check of every point), not the disk. Each row
//! is one read: reader (`stream` or `mapped`), threads (the rayon pool the decoder runs on;
//! the stream reader always uses one), points, bytes, seconds, and points per second per
//! thread. The two readers' results are compared point by point. `--json` prints one JSON
//! object per row.

use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;
use snarkd_prover::params::made_up::{write_made_up_file, FileCounts};
use snarkd_prover::params::read::{read_params_file, read_streamed};

fn main() {
    let mut divisor = 16usize;
    let mut threads: Vec<usize> = vec![1, num_cpus()];
    let mut dir = std::env::temp_dir();
    let mut as_json = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--divisor" => {
                divisor = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--divisor N")
            }
            "--threads" => {
                threads = (args.next().expect("--threads 1,2,..").split(','))
                    .map(|t| t.parse().expect("a thread count"))
                    .collect()
            }
            "--dir" => dir = PathBuf::from(args.next().expect("--dir DIR")),
            "--json" => as_json = true,
            other => panic!("unknown argument {other}"),
        }
    }
    threads.dedup();
    let counts = FileCounts::porep_32g_over(divisor.max(1));
    let (g1, g2) = counts.points();
    let points = g1 + g2;
    let path = dir.join(format!(
        "snarkd-params-decode-{}.params",
        std::process::id()
    ));
    let started = Instant::now();
    let bytes = write_made_up_file(&path, counts).expect("writing the made-up file");
    eprintln!(
        "wrote {} ({:.2} GiB, {g1} G1 and {g2} G2 points) in {:.1} s",
        path.display(),
        bytes as f64 / (1u64 << 30) as f64,
        started.elapsed().as_secs_f64()
    );
    // Into the page cache, so no reader pays for the disk.
    let _ = std::fs::read(&path).map(|b| b.len());

    let row = |reader: &str, threads: usize, seconds: f64| {
        let rate = points as f64 / seconds / threads as f64;
        if as_json {
            println!(
                "{}",
                json!({"bench": "params_decode", "reader": reader, "threads": threads,
                    "points": points, "bytes": bytes, "seconds": seconds,
                    "points_per_second_per_thread": rate})
            );
        } else {
            println!(
                "{reader:>7} {threads:>3} threads  {seconds:>8.2} s  {:>6.2} M points/s/thread",
                rate / 1e6
            );
        }
    };
    let started = Instant::now();
    let streamed = read_streamed(std::fs::File::open(&path).unwrap()).expect("stream read");
    row("stream", 1, started.elapsed().as_secs_f64());
    for &n in &threads {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap();
        let started = Instant::now();
        let (mapped, _) = pool
            .install(|| read_params_file(std::fs::File::open(&path)?))
            .expect("mapped read");
        row("mapped", n, started.elapsed().as_secs_f64());
        assert!(mapped.vk == streamed.vk);
        assert!(
            mapped.h == streamed.h
                && mapped.l == streamed.l
                && mapped.a == streamed.a
                && mapped.b_g1 == streamed.b_g1
                && mapped.b_g2 == streamed.b_g2,
            "the readers disagree"
        );
    }
    let _ = std::fs::remove_file(&path);
}

fn num_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

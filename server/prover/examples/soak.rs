//! Soak run of the split prover: many proofs of one kind, synthesized on several threads while
//! the device phase runs on another (as in the daemon), each checked twice: by the device
//! phase's own self-check against the partition's recorded inputs, and by the kind's filecoin
//! verifier. Counts every failure by where it was caught; exits 1 if there was any. For hunting
//! rare, load-dependent faults: run it beside other work (a build, a second copy).
//!
//!   cargo run --release -p snarkd-prover --example soak [-- KIND [PROOFS [SYNTH_THREADS [SECTORS]]]]
//!
//! KIND is winning, wpost, snap or porep (default winning), PROOFS defaults to 100,
//! SYNTH_THREADS to 2 and SECTORS to 1: the number of random sectors sealed for inputs, which the
//! proofs take in turn (many hunt faults that depend on the input, one those that depend on load).
//! Parameters come from `snarkd_prover::test_params_dir()`.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Instant;

use snarkd_prover::fixtures::generate_fixtures;
use snarkd_prover::groth16::Randomness;
use snarkd_prover::{
    load_params, prepare, test_params_dir, CircuitId, CpuBackend, DeviceBackend, ProofKind,
};

const SECTOR_2K: u64 = 2 << 10;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kind = match args.first() {
        Some(k) => ProofKind::from_short(k)?,
        None => ProofKind::WinningPost,
    };
    let proofs: usize = args.get(1).map_or(Ok(100), |n| n.parse())?;
    let synth_threads: usize = args.get(2).map_or(Ok(2), |n| n.parse())?;
    let sectors: usize = args.get(3).map_or(Ok(1), |n| n.parse())?;

    let params = load_params(&test_params_dir(), CircuitId::new(kind, SECTOR_2K)?)?;
    let (mut jobs, mut sealed) = (Vec::with_capacity(sectors), Vec::with_capacity(sectors));
    for _ in 0..sectors.max(1) {
        let work = tempfile::tempdir()?;
        let fixtures = generate_fixtures(SECTOR_2K, work.path())?;
        jobs.push(Arc::new(prepare(&fixtures.request(kind))?));
        sealed.push(work);
    }
    let jobs = Arc::new(jobs);
    let partitions = jobs[0].num_partitions();
    // Proof `i` is of sector `i % sectors`.
    let job_of = |i: usize| &jobs[i % jobs.len()];

    // Synthesis threads take partition numbers from a shared counter and hand partitions over
    // through a channel as small as the daemon's ready queue, so synthesis overlaps proving.
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (tx, rx) = mpsc::sync_channel(synth_threads);
    let total = proofs * partitions;
    let synths: Vec<_> = (0..synth_threads)
        .map(|_| {
            let (jobs, next, tx) = (jobs.clone(), next.clone(), tx.clone());
            std::thread::spawn(move || loop {
                let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if n >= total {
                    return;
                }
                let job = &jobs[(n / partitions) % jobs.len()];
                if tx.send((n, job.synthesize(n % partitions))).is_err() {
                    return;
                }
            })
        })
        .collect();
    drop(tx);

    let backend = CpuBackend::new();
    let start = Instant::now();
    let (mut synth_failed, mut self_check_failed, mut verifier_failed) = (0, 0, 0);
    let mut pending: Vec<Option<_>> = (0..total).map(|_| None).collect();
    for (n, synthesized) in rx {
        let partition = match synthesized {
            Ok(p) => p,
            Err(e) => {
                synth_failed += 1;
                eprintln!("proof {}: synthesis: {e}", n / partitions);
                continue;
            }
        };
        match backend.prove(partition, &params, Randomness::random(), &mut |_| {}) {
            Ok((proof, _)) => pending[n] = Some(proof),
            Err(e) => {
                self_check_failed += 1;
                eprintln!("proof {}: device phase: {e}", n / partitions);
            }
        }
        let first = n - n % partitions;
        if pending[first..first + partitions]
            .iter()
            .all(Option::is_some)
        {
            let parts: Vec<_> = pending[first..first + partitions]
                .iter_mut()
                .map(|p| p.take().expect("checked"))
                .collect();
            if let Err(e) = job_of(n / partitions).finalize(&parts, &params) {
                verifier_failed += 1;
                eprintln!(
                    "proof {} (sector {}): filecoin verifier: {e}",
                    n / partitions,
                    (n / partitions) % jobs.len()
                );
            }
        }
    }
    for s in synths {
        s.join()
            .map_err(|_| anyhow::anyhow!("a synthesis thread panicked"))?;
    }
    let failed = synth_failed + self_check_failed + verifier_failed;
    println!(
        "{kind}: {proofs} proofs ({partitions} partitions each) of {} sectors in {:.1} s with \
         {synth_threads} synthesis threads: {synth_failed} synthesis, {self_check_failed} \
         self-check and {verifier_failed} verifier failures",
        jobs.len(),
        start.elapsed().as_secs_f64()
    );
    if failed > 0 {
        std::process::exit(1);
    }
    Ok(())
}

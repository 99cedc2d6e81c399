//! Shared test environment: parameter directory, fixtures, and the prove-all-partitions loop.

use std::path::PathBuf;

use bellperson::groth16::Proof;
use blstrs::Bls12;
use std::sync::{Arc, Mutex, OnceLock};

use snarkd_prover::fixtures::{generate_fixtures, Fixtures};
use snarkd_prover::groth16::Randomness;
use snarkd_prover::{
    generate_params, load_params, CpuBackend, DeviceBackend, LoadedParams, PreparedJob, ProofKind,
};

pub const SECTOR_2K: u64 = 2 << 10;

pub struct Env {
    pub params_dir: PathBuf,
    pub fixtures: Fixtures,
    _work: tempfile::TempDir,
}

/// Sets `FIL_PROOFS_PARAMETER_CACHE` to the test parameter directory before anything reads
/// filecoin-proofs' settings, then seals the fixture sector. Every test starts here.
pub fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let params_dir = snarkd_prover::test_params_dir();
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &params_dir);
        let work = tempfile::tempdir().unwrap();
        let fixtures =
            generate_fixtures(SECTOR_2K, work.path()).expect("sealing the fixture sector");
        Env {
            params_dir,
            fixtures,
            _work: work,
        }
    })
}

/// Parameters of `kind` at 2 KiB, generated into the cache when missing (one generator at a
/// time), loaded once per test binary.
pub fn params(kind: ProofKind) -> Arc<LoadedParams> {
    static LOADED: Mutex<Vec<(ProofKind, Arc<LoadedParams>)>> = Mutex::new(Vec::new());
    let env = env();
    let mut loaded = LOADED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, p)) = loaded.iter().find(|(k, _)| *k == kind) {
        return p.clone();
    }
    generate_params(&env.params_dir, SECTOR_2K, &[kind]).expect("generating test params");
    let circuit = snarkd_prover::CircuitId::new(kind, SECTOR_2K).unwrap();
    let p = load_params(&env.params_dir, circuit).expect("loading test params");
    loaded.push((kind, p.clone()));
    p
}

/// Synthesizes and proves every partition of `job` on the CPU backend.
pub fn prove_partitions(job: &PreparedJob, params: &LoadedParams) -> Vec<Proof<Bls12>> {
    let backend = CpuBackend::new();
    (0..job.num_partitions())
        .map(|i| {
            let partition = job.synthesize(i).expect("synthesis");
            backend
                .prove(partition, params, Randomness::random(), &mut |_| {})
                .expect("device phase")
                .0
        })
        .collect()
}

/// [`prove_partitions`], then finalize (which verifies).
pub fn prove(job: &PreparedJob, params: &LoadedParams) -> Vec<u8> {
    let proofs = prove_partitions(job, params);
    job.finalize(&proofs, params)
        .expect("finalize (includes verification)")
}

/// Concatenated 192-byte proofs without our verification (for checking filecoin's verifier alone).
pub fn serialize(proofs: &[Proof<Bls12>]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in proofs {
        p.write(&mut out).unwrap();
    }
    out
}

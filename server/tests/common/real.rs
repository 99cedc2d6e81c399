//! Real-proof plumbing shared by the tests that prove through the daemon with the real prover:
//! the 2 KiB fixtures and params, a daemon with a given prover, Curio-shaped wire requests, and
//! an independent check of every proof with filecoin-proofs' verifier.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use snarkd::Daemon;
use snarkd_engine::prover::Prover;
use snarkd_engine::Engine;
use snarkd_proto::v1 as pb;
use snarkd_prover::fixtures::{generate_fixtures, Fixtures};
use snarkd_prover::{ProofInput, ProofKind};

use crate::common;

#[path = "independent.rs"]
mod independent;

pub const SECTOR_2K: u64 = 2 << 10;

pub struct Env {
    pub params_dir: PathBuf,
    pub fixtures: Fixtures,
    _work: tempfile::TempDir,
}

pub fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let params_dir = snarkd_prover::test_params_dir();
        // filecoin-proofs-api's verifiers read their keys from its parameter cache, a setting
        // it reads once: set before anything of filecoin-proofs runs.
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

/// Makes sure the 2 KiB params of `kinds` exist (one generator at a time).
pub fn ensure_params(kinds: &[ProofKind]) {
    static GENERATING: Mutex<()> = Mutex::new(());
    let _one = GENERATING.lock().unwrap_or_else(|p| p.into_inner());
    snarkd_prover::generate_params(&env().params_dir, SECTOR_2K, kinds)
        .expect("generating 2 KiB test params");
}

pub struct RealDaemon {
    pub daemon: Daemon,
    pub grpc: common::Client,
}

/// The config of a real-prover daemon: 2 KiB params, 8 GiB budget, `synthesis_threads`.
pub fn real_config(synthesis_threads: usize) -> snarkd::config::Config {
    let mut config = common::test_config();
    config.params.dir = env().params_dir.clone();
    config.memory.budget = snarkd::config::MemoryBudget::Fixed(bytesize::ByteSize::gib(8));
    config.synthesis.threads = synthesis_threads;
    // Real proofs on a busy two-core machine are slow: keep finished jobs long enough to await
    // and inspect them all.
    config.daemon.retention = std::time::Duration::from_secs(600);
    config
}

/// A daemon proving `kinds` (params made if missing) with the CPU backend.
pub async fn start(kinds: &[ProofKind], synthesis_threads: usize) -> RealDaemon {
    let mut config = real_config(synthesis_threads);
    config.gpus.backend = snarkd::config::Backend::Cpu;
    let prover = snarkd::proving::from_config(&config).expect("cpu prover");
    start_with(kinds, &config, prover).await
}

/// A daemon proving `kinds` (params made if missing) with `prover`.
pub async fn start_with<P: Prover>(
    kinds: &[ProofKind],
    config: &snarkd::config::Config,
    prover: Arc<P>,
) -> RealDaemon {
    ensure_params(kinds);
    snarkd::telemetry::prometheus();
    let engine = Engine::start(config.engine_config().expect("engine config"), prover);
    let daemon = Daemon::start(config, engine).await.expect("daemon starts");
    let snarkd::config::ListenAddr::Tcp(addr) = daemon.grpc_addr().clone() else {
        panic!("tcp")
    };
    RealDaemon {
        grpc: common::connect(addr).await,
        daemon,
    }
}

/// The wire request for a fixture, as Curio would send it (no request id): the proto message
/// filled field by field from the fixture's files, not through snarkd's own conversion.
pub fn wire(r: &ProofInput, priority: pb::Priority) -> pb::SubmitProofRequest {
    let proof_kind = match r.kind() {
        ProofKind::PorepSealCommit => pb::ProofKind::PorepSealCommit,
        ProofKind::WinningPost => pb::ProofKind::WinningPost,
        ProofKind::WindowPost => pb::ProofKind::WindowPostPartition,
        ProofKind::SnapDealsUpdate => pb::ProofKind::SnapDealsUpdate,
    };
    let registered = r.registered();
    let request = pb::SubmitProofRequest {
        proof_kind: proof_kind as i32,
        sector_size: registered.sector_size,
        registered_proof: registered.registered_proof,
        priority: priority as i32,
        ..Default::default()
    };
    match r {
        ProofInput::PoRep(p) => pb::SubmitProofRequest {
            vanilla_proof: p.vanilla_proof.clone(),
            sector_number: p.sector_number,
            miner_id: p.miner_id,
            ..request
        },
        ProofInput::SnapDeals(s) => pb::SubmitProofRequest {
            vanilla_proofs: s.vanilla_proofs.clone(),
            comm_r_old: s.comm_r_old.clone(),
            comm_r_new: s.comm_r_new.clone(),
            comm_d_new: s.comm_d_new.clone(),
            ..request
        },
        ProofInput::WindowPost {
            post,
            partition_index,
        } => pb::SubmitProofRequest {
            vanilla_proofs: post.vanilla_proofs.clone(),
            miner_id: post.miner_id,
            randomness: post.randomness.clone(),
            partition_index: *partition_index,
            ..request
        },
        ProofInput::WinningPost(post) => pb::SubmitProofRequest {
            vanilla_proofs: post.vanilla_proofs.clone(),
            miner_id: post.miner_id,
            randomness: post.randomness.clone(),
            ..request
        },
    }
}

/// Checks `proof` for the fixture `request` with filecoin-proofs-api's own verifier, on public
/// inputs filecoin-proofs derives from the original inputs (the C1 output it wrote, the seal's
/// comm_r, the PoSt randomness, the update's commitments), and that the same proof with its
/// first A point negated (still a valid curve point) is rejected. Nothing of snarkd's decoding
/// takes part.
pub fn assert_verifies(request: &ProofInput, proof: &[u8]) {
    assert!(
        independent::verify(request, proof),
        "{} proof must verify with filecoin-proofs-api",
        request.kind()
    );
    let mut tampered = proof.to_vec();
    tampered[0] ^= 0x20; // the sign flag of the compressed G1 point A: -A
    assert!(
        !independent::verify(request, &tampered),
        "{} tampered proof must be rejected",
        request.kind()
    );
}

/// The daemon's Prometheus text, through gRPC's GetMetrics.
pub async fn metrics_text(d: &mut RealDaemon) -> String {
    d.grpc
        .get_metrics(pb::GetMetricsRequest {})
        .await
        .expect("GetMetrics")
        .into_inner()
        .prometheus_text
}

pub async fn prove_and_check(d: &mut RealDaemon, kind: ProofKind) {
    let request = env().fixtures.request(kind);
    let call = d.grpc.prove(pb::ProveRequest {
        submit: Some(wire(&request, pb::Priority::Unspecified)),
    });
    let result = common::within(&format!("{kind} Prove reply"), call)
        .await
        .expect("Prove")
        .into_inner()
        .result
        .expect("result");
    assert_eq!(
        result.status,
        pb::await_proof_response::Status::Completed as i32,
        "{kind}: {}",
        result.error_message
    );
    assert!(result.synthesis_ms + result.gpu_compute_ms <= result.total_ms + 1);
    assert_verifies(&request, &result.proof);
}

/// The settings of a `snarkd` process proving on the CPU with the test parameters.
pub fn binary_env() -> Vec<(&'static str, String)> {
    vec![
        ("SNARKD_PARAMS_DIR", env().params_dir.display().to_string()),
        ("SNARKD_GPUS_BACKEND", "cpu".into()),
        ("SNARKD_MEMORY_BUDGET", "8GiB".into()),
    ]
}

/// Proves `submit` with `Prove` on the daemon at `grpc` (`host:port`), failing the test unless
/// it COMPLETED.
pub async fn prove_completed(grpc: &str, submit: pb::SubmitProofRequest) -> pb::AwaitProofResponse {
    let mut client = common::connect(grpc.parse().unwrap()).await;
    let call = client.prove(pb::ProveRequest {
        submit: Some(submit),
    });
    let result = common::within("Prove reply", call)
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(
        result.status,
        pb::await_proof_response::Status::Completed as i32,
        "{}",
        result.error_message
    );
    result
}

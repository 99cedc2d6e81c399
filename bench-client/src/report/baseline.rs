//! The baseline a lotus-style worker gives: filecoin-proofs-api proving one request after
//! another in one process (synthesis and proving back to back, nothing overlapped).

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use filecoin_proofs_api::post::{
    generate_single_window_post_with_vanilla, generate_winning_post_with_vanilla,
};
use filecoin_proofs_api::RegisteredPoStProof;
use snarkd_prover::filecoin::registered::post_proof;
use snarkd_prover::{prover_id_from_miner_id, ProofInput, ProofKind};

/// Proves `request` once with filecoin-proofs-api; returns the time it took.
fn prove_once(request: &ProofInput) -> Result<Duration> {
    let registered: RegisteredPoStProof = post_proof(request.kind, request.registered_proof)?;
    let randomness: [u8; 32] = request.randomness.as_slice().try_into()?;
    let prover_id = prover_id_from_miner_id(request.miner_id);
    let t = Instant::now();
    match request.kind {
        ProofKind::WindowPost => {
            generate_single_window_post_with_vanilla(
                registered,
                &randomness,
                prover_id,
                &request.vanilla_proofs,
                request.partition_index as usize,
            )?;
        }
        ProofKind::WinningPost => {
            generate_winning_post_with_vanilla(
                registered,
                &randomness,
                prover_id,
                &request.vanilla_proofs,
            )?;
        }
        other => bail!("the baseline covers the PoSt kinds, not {other:?}"),
    }
    Ok(t.elapsed())
}

/// One untimed warm-up proof (it loads the parameters, as the daemon's preload does), then
/// `count` proofs one after another: the wall time of those.
pub fn sequential(request: &ProofInput, count: usize) -> Result<Duration> {
    prove_once(request)?;
    let t = Instant::now();
    for _ in 0..count {
        prove_once(request)?;
    }
    Ok(t.elapsed())
}

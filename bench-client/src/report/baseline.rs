//! The baseline a lotus-style worker gives: filecoin-proofs-api proving one request after
//! another in one process (synthesis and proving back to back, nothing overlapped).

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use filecoin_proofs_api::post::{
    generate_single_window_post_with_vanilla, generate_winning_post_with_vanilla,
};
use filecoin_proofs_api::RegisteredPoStProof;
use snarkd_prover::filecoin::registered::post_proof;
use snarkd_prover::{prover_id_from_miner_id, ProofInput};

/// Proves `request` once with filecoin-proofs-api; returns the time it took.
fn prove_once(request: &ProofInput) -> Result<Duration> {
    let (post, partition) = match request {
        ProofInput::WindowPost {
            post,
            partition_index,
        } => (post, Some(*partition_index as usize)),
        ProofInput::WinningPost(post) => (post, None),
        other => bail!("the baseline covers the PoSt kinds, not {:?}", other.kind()),
    };
    let registered: RegisteredPoStProof =
        post_proof(request.kind(), post.registered.registered_proof)?;
    let randomness: [u8; 32] = post.randomness.as_slice().try_into()?;
    let prover_id = prover_id_from_miner_id(post.miner_id);
    let t = Instant::now();
    match partition {
        Some(partition) => {
            generate_single_window_post_with_vanilla(
                registered,
                &randomness,
                prover_id,
                &post.vanilla_proofs,
                partition,
            )?;
        }
        None => {
            generate_winning_post_with_vanilla(
                registered,
                &randomness,
                prover_id,
                &post.vanilla_proofs,
            )?;
        }
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

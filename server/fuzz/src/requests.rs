//! Each target's input bytes → the `ProofInput` it hands to `snarkd_prover::prepare`. Included by
//! path in the prover's tests too (`server/prover/tests/filecoin/fuzz_findings.rs`), which replay
//! the committed corpus and the crashing inputs in `artifacts-found/` in CI, so it names only
//! `snarkd_prover` and its sibling `layout` module.

use snarkd_prover::{ProofInput, ProofKind};

use super::layout::{Porep, Post, Snap};

/// `porep_c1`: a C1 output (bare or in Curio's wrapper) with its sector and miner.
pub fn porep(data: &[u8]) -> ProofInput {
    let input = Porep::parse(data);
    let mut req = ProofInput::new(ProofKind::PorepSealCommit, input.registered_proof);
    req.sector_number = input.sector_number;
    req.miner_id = input.miner_id;
    req.vanilla_proof = input.vanilla_proof;
    req
}

/// `post_vanilla`: WinningPoSt or WindowPoSt vanilla proofs with their randomness.
pub fn post(data: &[u8]) -> ProofInput {
    let input = Post::parse(data);
    let kind = if input.window {
        ProofKind::WindowPost
    } else {
        ProofKind::WinningPost
    };
    let mut req = ProofInput::new(kind, input.registered_proof());
    req.miner_id = input.miner_id;
    req.partition_index = input.partition_index;
    req.randomness = input.randomness.to_vec();
    req.vanilla_proofs = input.vanilla_proofs;
    req
}

/// `snap_vanilla`: SnapDeals partition proofs and the three commitments.
pub fn snap(data: &[u8]) -> ProofInput {
    let input = Snap::parse(data);
    let mut req = ProofInput::new(ProofKind::SnapDealsUpdate, Snap::UPDATE_2K);
    req.comm_r_old = input.comm_r_old.to_vec();
    req.comm_r_new = input.comm_r_new.to_vec();
    req.comm_d_new = input.comm_d_new.to_vec();
    req.vanilla_proofs = input.vanilla_proofs;
    req
}

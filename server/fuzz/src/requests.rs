//! Each target's input bytes → the `ProofInput` it hands to `snarkd_prover::prepare`. Included by
//! path in the prover's tests too (`server/prover/tests/filecoin/fuzz_findings.rs`), which replay
//! the committed corpus and the crashing inputs in `artifacts-found/` in CI, so it names only
//! `snarkd_prover` and its sibling `layout` module.

use snarkd_prover::{PoRepInput, PostInput, ProofInput, Registered, SnapInput};

use super::layout::{Porep, Post, Snap};

/// `porep_c1`: a C1 output (bare or in Curio's wrapper) with its sector and miner.
pub fn porep(data: &[u8]) -> ProofInput {
    let input = Porep::parse(data);
    ProofInput::PoRep(PoRepInput {
        registered: Registered::proof(input.registered_proof),
        vanilla_proof: input.vanilla_proof,
        sector_number: input.sector_number,
        miner_id: input.miner_id,
    })
}

/// `post_vanilla`: WinningPoSt or WindowPoSt vanilla proofs with their randomness (a WinningPoSt
/// has no partition index: the layout's is read only for WindowPoSt).
pub fn post(data: &[u8]) -> ProofInput {
    let input = Post::parse(data);
    let post = PostInput {
        registered: Registered::proof(input.registered_proof()),
        vanilla_proofs: input.vanilla_proofs,
        miner_id: input.miner_id,
        randomness: input.randomness.to_vec(),
    };
    match input.window {
        true => ProofInput::WindowPost {
            post,
            partition_index: input.partition_index,
        },
        false => ProofInput::WinningPost(post),
    }
}

/// `snap_vanilla`: SnapDeals partition proofs and the three commitments.
pub fn snap(data: &[u8]) -> ProofInput {
    let input = Snap::parse(data);
    ProofInput::SnapDeals(SnapInput {
        registered: Registered::proof(Snap::UPDATE_2K),
        vanilla_proofs: input.vanilla_proofs,
        comm_r_old: input.comm_r_old.to_vec(),
        comm_r_new: input.comm_r_new.to_vec(),
        comm_d_new: input.comm_d_new.to_vec(),
    })
}

//! The other direction, for clients of snarkd that hold a proof input (the bench client, the
//! tests): a [`ProofInput`] as Curio would submit it.

use snarkd_engine::{PostInput, ProofInput};
use snarkd_proto::v1 as pb;

use super::outcome::kind_to_pb;

/// `r` as Curio would submit it, at `priority`, under `request_id` (the daemon's idempotency
/// key; empty for none).
pub fn submit_request(
    r: &ProofInput,
    priority: pb::Priority,
    request_id: String,
) -> pb::SubmitProofRequest {
    let registered = r.registered();
    let request = pb::SubmitProofRequest {
        request_id,
        proof_kind: kind_to_pb(r.kind()) as i32,
        sector_size: registered.sector_size,
        registered_proof: registered.registered_proof,
        priority: priority as i32,
        ..Default::default()
    };
    let post = |request, p: &PostInput, partition_index| pb::SubmitProofRequest {
        vanilla_proofs: p.vanilla_proofs.clone(),
        miner_id: p.miner_id,
        randomness: p.randomness.clone(),
        partition_index,
        ..request
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
            post: p,
            partition_index,
        } => post(request, p, *partition_index),
        ProofInput::WinningPost(p) => post(request, p, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The request a client sends converts back (`request::proof_request`) to what it holds.
    #[test]
    fn a_submitted_request_reads_back_as_the_same_input() {
        let post = PostInput {
            registered: snarkd_engine::Registered::proof(3),
            vanilla_proofs: vec![vec![1, 2]],
            miner_id: 1000,
            randomness: vec![7; 32],
        };
        let window = ProofInput::WindowPost {
            post: post.clone(),
            partition_index: 4,
        };
        for r in [ProofInput::WinningPost(post), window] {
            let w = submit_request(&r, pb::Priority::Low, "id-1".into());
            let back = super::super::request::proof_request(w).unwrap();
            assert_eq!(back.input, r);
            assert_eq!(back.priority, Some(snarkd_engine::Priority::Low));
            assert_eq!(back.request_id, "id-1");
        }
    }
}

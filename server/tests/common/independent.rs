//! filecoin-proofs-api's verifiers on what filecoin-proofs itself derives from a fixture's
//! original inputs: the proof type by its name in the fixture manifest or in the C1 output,
//! comm_r / comm_d / ticket / seed from the C1 output filecoin-proofs wrote, the prover id as
//! an actor's ID address payload. snarkd's decoding is not used, so a mistake it makes on both
//! the proving and the checking side cannot pass.

use std::collections::BTreeMap;

use filecoin_proofs_api::post::{verify_window_post, verify_winning_post};
use filecoin_proofs_api::seal::{verify_seal, SealCommitPhase1Output};
use filecoin_proofs_api::update::verify_empty_sector_update_proof;
use filecoin_proofs_api::{
    PublicReplicaInfo, RegisteredPoStProof, RegisteredUpdateProof, SectorId,
};
use snarkd_prover::ProofInput;

use super::env;

/// Whether filecoin-proofs-api accepts `proof` for the fixture `request` (an error is a no).
pub fn verify(request: &ProofInput, proof: &[u8]) -> bool {
    let miner_id = env().fixtures.manifest.miner_id;
    let prover_id = id_address_payload(miner_id);
    let outcome = match request {
        ProofInput::PoRep(r) => {
            let c1: SealCommitPhase1Output =
                serde_json::from_slice(&r.vanilla_proof).expect("the fixture's C1 output");
            verify_seal(
                c1.registered_proof,
                c1.comm_r,
                c1.comm_d,
                prover_id,
                SectorId::from(r.sector_number),
                c1.ticket,
                c1.seed,
                proof,
            )
        }
        ProofInput::WinningPost(post) => {
            let (_, replicas) = replicas(&env().fixtures.manifest.winning);
            verify_winning_post(&bytes32(&post.randomness), proof, &replicas, prover_id)
        }
        ProofInput::WindowPost { post, .. } => {
            let (registered, replicas) = replicas(&env().fixtures.manifest.window);
            verify_window_post(
                &bytes32(&post.randomness),
                &[(registered, proof)],
                &replicas,
                prover_id,
            )
        }
        ProofInput::SnapDeals(r) => {
            let registered: RegisteredUpdateProof =
                by_name(&env().fixtures.manifest.snap.registered_proof_name);
            verify_empty_sector_update_proof(
                registered,
                proof,
                bytes32(&r.comm_r_old),
                bytes32(&r.comm_r_new),
                bytes32(&r.comm_d_new),
            )
        }
    };
    matches!(outcome, Ok(true))
}

/// The PoSt proof type the fixture was made with, and the one sector it challenges with the
/// comm_r its seal produced (from the C1 output filecoin-proofs wrote).
fn replicas(
    entry: &snarkd_prover::fixtures::KindEntry,
) -> (RegisteredPoStProof, BTreeMap<SectorId, PublicReplicaInfo>) {
    let registered: RegisteredPoStProof = by_name(&entry.registered_proof_name);
    let fixtures = &env().fixtures;
    let c1: SealCommitPhase1Output =
        serde_json::from_slice(&fixtures.porep.vanilla_proof).expect("the fixture's C1 output");
    let sector = SectorId::from(fixtures.manifest.sector_number);
    (
        registered,
        BTreeMap::from([(sector, PublicReplicaInfo::new(registered, c1.comm_r))]),
    )
}

/// A filecoin-proofs-api enum from its variant's name, as its serde reads it.
fn by_name<T: serde::de::DeserializeOwned>(name: &str) -> T {
    serde_json::from_value(serde_json::Value::String(name.into()))
        .unwrap_or_else(|e| panic!("{name} is no filecoin-proofs-api proof type: {e}"))
}

fn bytes32(v: &[u8]) -> [u8; 32] {
    v.try_into().expect("32 bytes")
}

/// The prover id filecoin uses for actor `id`: the payload of its ID address (unsigned LEB128
/// of the id), zero-padded to 32 bytes.
fn id_address_payload(id: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let (mut rest, mut i) = (id, 0);
    while rest >= 0x80 {
        out[i] = (rest as u8 & 0x7f) | 0x80;
        rest >>= 7;
        i += 1;
    }
    out[i] = rest as u8;
    out
}

//! WinningPoSt and WindowPoSt at 2 KiB.

use std::collections::BTreeMap;

use filecoin_proofs_api::post::{verify_window_post, verify_winning_post};
use filecoin_proofs_api::{PublicReplicaInfo, RegisteredPoStProof, SectorId};
use snarkd_prover::filecoin::registered::post_proof;
use snarkd_prover::{prepare, prover_id_from_miner_id, ProofKind, ProofRequest, ProverError};

use super::common::{env, params, prove};

fn replicas(req: &ProofRequest) -> (RegisteredPoStProof, BTreeMap<SectorId, PublicReplicaInfo>) {
    let fx = &env().fixtures;
    let registered = post_proof(req.kind, req.registered_proof).unwrap();
    let comm_r = fx.seal_values().unwrap().0;
    let sector = SectorId::from(fx.manifest.sector_number);
    (registered, BTreeMap::from([(sector, PublicReplicaInfo::new(registered, comm_r))]))
}

fn rnd(req: &ProofRequest) -> [u8; 32] {
    req.randomness.clone().try_into().unwrap()
}

#[test]
fn winning_post_proof_is_accepted_by_filecoin_and_rejected_for_altered_inputs() {
    let req = &env().fixtures.winning;
    let job = prepare(req).unwrap();
    assert_eq!(job.circuit_id().to_string(), "winning-2k");
    assert_eq!(job.num_partitions(), 1);
    let params = params(ProofKind::WinningPost);
    let proof = prove(&job, &params);
    assert_eq!(proof.len(), 192);

    let (_, replicas) = replicas(req);
    let prover_id = prover_id_from_miner_id(req.miner_id);
    assert!(verify_winning_post(&rnd(req), &proof, &replicas, prover_id).unwrap());

    let mut other_rnd = rnd(req);
    other_rnd[0] ^= 1;
    assert!(!matches!(verify_winning_post(&other_rnd, &proof, &replicas, prover_id), Ok(true)));
    let other_prover = prover_id_from_miner_id(req.miner_id + 1);
    assert!(!matches!(verify_winning_post(&rnd(req), &proof, &replicas, other_prover), Ok(true)));

    // Our own verification sees the same difference.
    assert!(job.verify(&proof, &params).unwrap());
    let mut other = req.clone();
    other.miner_id += 1;
    if let Ok(other_job) = prepare(&other) {
        assert!(!other_job.verify(&proof, &params).unwrap());
    }
}

#[test]
fn window_post_partition_proof_is_accepted_by_filecoin_and_rejected_for_altered_inputs() {
    let req = &env().fixtures.window;
    let job = prepare(req).unwrap();
    assert_eq!(job.circuit_id().to_string(), "wpost-2k");
    let params = params(ProofKind::WindowPost);
    let proof = prove(&job, &params);
    assert_eq!(proof.len(), 192);

    let (registered, replicas) = replicas(req);
    let prover_id = prover_id_from_miner_id(req.miner_id);
    assert!(verify_window_post(&rnd(req), &[(registered, &proof)], &replicas, prover_id).unwrap());
    let mut other_rnd = rnd(req);
    other_rnd[3] ^= 0x10;
    assert!(!matches!(verify_window_post(&other_rnd, &[(registered, &proof)], &replicas, prover_id), Ok(true)));

    // A job whose public inputs differ (other randomness) refuses to finalize this proof.
    let mut other = req.clone();
    other.randomness = other_rnd.to_vec();
    let other_job = prepare(&other).unwrap();
    assert!(!other_job.verify(&proof, &params).unwrap());
    let proofs = snarkd_prover::filecoin::parse_proofs(&proof, 1).unwrap();
    assert!(matches!(
        other_job.finalize(&proofs, &params),
        Err(ProverError::VerificationFailed { kind: ProofKind::WindowPost })
    ));
}

//! WinningPoSt and WindowPoSt at 2 KiB.

use std::collections::BTreeMap;

use filecoin_proofs_api::post::{verify_window_post, verify_winning_post};
use filecoin_proofs_api::{PublicReplicaInfo, RegisteredPoStProof, SectorId};
use snarkd_prover::filecoin::registered::post_proof;
use snarkd_prover::{
    prepare, prover_id_from_miner_id, PostInput, ProofInput, ProofKind, ProverError,
};

use super::common::{env, params, prove, prove_partitions, serialize};

fn replicas(
    kind: ProofKind,
    req: &PostInput,
) -> (RegisteredPoStProof, BTreeMap<SectorId, PublicReplicaInfo>) {
    let fx = &env().fixtures;
    let registered = post_proof(kind, req.registered.registered_proof).unwrap();
    let comm_r = fx.seal_values().unwrap().comm_r;
    let sector = SectorId::from(fx.manifest.sector_number);
    (
        registered,
        BTreeMap::from([(sector, PublicReplicaInfo::new(registered, comm_r))]),
    )
}

fn rnd(req: &PostInput) -> [u8; 32] {
    req.randomness.clone().try_into().unwrap()
}

#[test]
fn winning_post_proof_is_accepted_by_filecoin_and_rejected_for_altered_inputs() {
    let req = &env().fixtures.winning;
    let job = prepare(&ProofInput::WinningPost(req.clone())).unwrap();
    assert_eq!(job.circuit_id().to_string(), "winning-2k");
    assert_eq!(job.num_partitions(), 1);
    let params = params(ProofKind::WinningPost);
    let proofs = prove_partitions(&job, &params);
    let (_, replicas) = replicas(ProofKind::WinningPost, req);
    let prover_id = prover_id_from_miner_id(req.miner_id);
    let raw = serialize(&proofs);
    assert!(
        verify_winning_post(&rnd(req), &raw, &replicas, prover_id).unwrap(),
        "filecoin rejects"
    );
    let proof = job.finalize(&proofs, &params).unwrap();
    assert_eq!(proof, raw);

    let mut other_rnd = rnd(req);
    other_rnd[0] ^= 1;
    assert!(!matches!(
        verify_winning_post(&other_rnd, &proof, &replicas, prover_id),
        Ok(true)
    ));
    // The sector id feeds the challenge derivation (the fallback PoSt circuit does not bind
    // the prover id, so a different miner id is not a different statement).
    let registered = post_proof(ProofKind::WinningPost, req.registered.registered_proof).unwrap();
    let comm_r = env().fixtures.seal_values().unwrap().comm_r;
    let other_sector = SectorId::from(env().fixtures.manifest.sector_number + 1);
    let other_replicas =
        BTreeMap::from([(other_sector, PublicReplicaInfo::new(registered, comm_r))]);
    assert!(!matches!(
        verify_winning_post(&rnd(req), &proof, &other_replicas, prover_id),
        Ok(true)
    ));

    // Our own verification agrees, and refuses a tampered proof.
    assert!(job.verify(&proof, &params).unwrap());
    let mut bad = proofs.clone();
    bad[0].a =
        group::Curve::to_affine(&group::Group::double(&blstrs::G1Projective::from(bad[0].a)));
    assert!(matches!(
        job.finalize(&bad, &params),
        Err(ProverError::VerificationFailed {
            kind: ProofKind::WinningPost
        })
    ));
}

#[test]
fn window_post_partition_proof_is_accepted_by_filecoin_and_rejected_for_altered_inputs() {
    let req = &env().fixtures.window;
    let job = prepare(&env().fixtures.window_request(req.clone())).unwrap();
    assert_eq!(job.circuit_id().to_string(), "wpost-2k");
    let params = params(ProofKind::WindowPost);
    let proof = prove(&job, &params);
    assert_eq!(proof.len(), 192);

    let (registered, replicas) = replicas(ProofKind::WindowPost, req);
    let prover_id = prover_id_from_miner_id(req.miner_id);
    assert!(verify_window_post(&rnd(req), &[(registered, &proof)], &replicas, prover_id).unwrap());
    let mut other_rnd = rnd(req);
    other_rnd[3] ^= 0x10;
    assert!(!matches!(
        verify_window_post(&other_rnd, &[(registered, &proof)], &replicas, prover_id),
        Ok(true)
    ));

    // Vanilla proofs made for other randomness are refused up front.
    let mut other = req.clone();
    other.randomness = other_rnd.to_vec();
    assert!(matches!(
        prepare(&env().fixtures.window_request(other)),
        Err(ProverError::InvalidRequest(_))
    ));
    // The fallback PoSt circuit does not bind the prover id, so the only other public values
    // are in the vanilla proofs; a tampered proof must not finalize.
    let mut proofs = snarkd_prover::filecoin::parse_proofs(&proof, 1).unwrap();
    assert!(job.verify(&proof, &params).unwrap());
    proofs[0].c = group::Curve::to_affine(&group::Group::double(&blstrs::G1Projective::from(
        proofs[0].c,
    )));
    assert!(matches!(
        job.finalize(&proofs, &params),
        Err(ProverError::VerificationFailed {
            kind: ProofKind::WindowPost
        })
    ));
}

/// WinningPoSt's leaf for one of its 66 one-challenge slots at 2 KiB, as filecoin-proofs derives it.
fn winning_leaf(randomness: &[u8; 32], sector: u64, slot: u64) -> u64 {
    use filecoin_hashers::{poseidon::PoseidonDomain, Domain};
    let params = storage_proofs_post::fallback::PublicParams {
        sector_size: 2048,
        challenge_count: 1,
        sector_count: 66,
        api_version: storage_proofs_core::api_version::ApiVersion::V1_2_0,
    };
    let r = PoseidonDomain::try_from_bytes(randomness).unwrap();
    storage_proofs_post::fallback::generate_leaf_challenge(&params, r, sector, slot)
}

#[test]
fn winning_randomness_that_moves_any_challenge_is_refused_up_front() {
    // Other randomness that happens to pick the same leaf for the first challenge (one in 64 at
    // 2 KiB) and another leaf for a later one: filecoin-proofs' partitioning check looks at the
    // first slot only, so this is what got through to proving before.
    let req = &env().fixtures.winning;
    let sector = env().fixtures.manifest.sector_number;
    let ours = rnd(req);
    let other = (0..=u16::MAX)
        .map(|n| {
            let mut r = ours;
            r[..2].copy_from_slice(&n.to_le_bytes());
            r
        })
        .find(|r| {
            *r != ours
                && winning_leaf(r, sector, 0) == winning_leaf(&ours, sector, 0)
                && (1..66)
                    .any(|slot| winning_leaf(r, sector, slot) != winning_leaf(&ours, sector, slot))
        })
        .expect("one randomness in 64 shares the first leaf");
    let mut moved = req.clone();
    moved.randomness = other.to_vec();
    let err = prepare(&ProofInput::WinningPost(moved)).unwrap_err();
    assert!(matches!(err, ProverError::InvalidRequest(_)), "{err}");
    assert!(
        err.to_string().contains("do not verify against randomness"),
        "{err}"
    );
    // The request's own randomness still passes every slot.
    prepare(&ProofInput::WinningPost(req.clone())).unwrap();
}

/// CPU steps, except that the first G1 multiexp comes back off by the generator: the wrong
/// numbers a faulty device could return without an error.
struct OneWrongMsm(std::cell::Cell<bool>);

impl snarkd_prover::groth16::DeviceOps for OneWrongMsm {
    fn compute_h(
        &self,
        abc: snarkd_prover::synthesis::Abc,
    ) -> snarkd_prover::Result<Vec<blstrs::Scalar>> {
        snarkd_prover::groth16::CpuOps.compute_h(abc)
    }
    fn msm_g1(
        &self,
        bases: &[blstrs::G1Affine],
        scalars: snarkd_prover::groth16::Scalars<'_>,
    ) -> snarkd_prover::Result<blstrs::G1Projective> {
        let sum = snarkd_prover::groth16::CpuOps.msm_g1(bases, scalars)?;
        Ok(if self.0.replace(false) {
            sum + <blstrs::G1Projective as group::Group>::generator()
        } else {
            sum
        })
    }
    fn msm_g2(
        &self,
        bases: &[blstrs::G2Affine],
        scalars: snarkd_prover::groth16::Scalars<'_>,
    ) -> snarkd_prover::Result<blstrs::G2Projective> {
        snarkd_prover::groth16::CpuOps.msm_g2(bases, scalars)
    }
}

#[test]
fn a_wrong_device_result_fails_the_partition_self_check() {
    let job = prepare(&env().fixtures.request(ProofKind::WinningPost)).unwrap();
    let params = params(ProofKind::WinningPost);
    let prove = |ops: &dyn snarkd_prover::groth16::DeviceOps| {
        snarkd_prover::groth16::prove_partition_with(
            ops,
            job.synthesize(0).unwrap(),
            &params,
            snarkd_prover::groth16::Randomness::random(),
            &mut |_| {},
        )
    };
    let err = prove(&OneWrongMsm(std::cell::Cell::new(true))).unwrap_err();
    assert!(
        matches!(&err, ProverError::PartitionProofInvalid(_))
            && err.to_string().contains("own public inputs"),
        "{err}"
    );
    // The same steps without the fault pass the check and the verifier.
    let (proof, _) = prove(&OneWrongMsm(std::cell::Cell::new(false))).unwrap();
    assert!(job.finalize(&[proof], &params).is_ok());
}

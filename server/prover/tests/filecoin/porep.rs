//! PoRep C2 at 2 KiB from a real C1 output (bare and in Curio's wrapper).

use base64::Engine;
use filecoin_proofs_api::seal::verify_seal;
use filecoin_proofs_api::SectorId;
use snarkd_prover::filecoin::registered::seal_proof;
use snarkd_prover::{prepare, prover_id_from_miner_id, ProofKind};

use super::common::{env, params, prove};

#[test]
fn porep_proof_is_accepted_by_filecoin_and_rejected_for_altered_inputs() {
    let fx = &env().fixtures;
    let req = &fx.porep;
    let job = prepare(&req.clone().into()).unwrap();
    assert_eq!(job.circuit_id().to_string(), "porep-2k");
    let params = params(ProofKind::PorepSealCommit);
    let proof = prove(&job, &params);
    assert_eq!(proof.len(), 192 * job.num_partitions());

    let sv = fx.seal_values().unwrap();
    let (comm_r, comm_d, ticket, seed) = (sv.comm_r, sv.comm_d, sv.ticket, sv.seed);
    let registered = seal_proof(req.registered.registered_proof).unwrap();
    let prover_id = prover_id_from_miner_id(req.miner_id);
    let sector = SectorId::from(req.sector_number);
    assert!(
        verify_seal(registered, comm_r, comm_d, prover_id, sector, ticket, seed, &proof).unwrap()
    );

    let other_sector = SectorId::from(req.sector_number + 1);
    assert!(!matches!(
        verify_seal(
            registered,
            comm_r,
            comm_d,
            prover_id,
            other_sector,
            ticket,
            seed,
            &proof
        ),
        Ok(true)
    ));
    let mut other_seed = seed;
    other_seed[0] ^= 1;
    assert!(!matches!(
        verify_seal(registered, comm_r, comm_d, prover_id, sector, ticket, other_seed, &proof),
        Ok(true)
    ));

    // Curio's wrapper decodes to the same job.
    let mut wrapped = req.clone();
    wrapped.vanilla_proof = serde_json::json!({
        "SectorNum": req.sector_number,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&req.vanilla_proof),
        "SectorSize": 2048,
    })
    .to_string()
    .into_bytes();
    let wrapped_job = prepare(&wrapped.into()).unwrap();
    assert!(wrapped_job.verify(&proof, &params).unwrap());
}

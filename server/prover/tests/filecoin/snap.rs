//! SnapDeals at 2 KiB from real partition proofs.

use filecoin_proofs_api::update::verify_empty_sector_update_proof;
use snarkd_prover::filecoin::registered::update_proof;
use snarkd_prover::{prepare, ProofKind};

use super::common::{env, params, prove};

#[test]
fn snap_proof_is_accepted_by_filecoin_and_rejected_for_altered_inputs() {
    let req = &env().fixtures.snap;
    let job = prepare(&req.clone().into()).unwrap();
    assert_eq!(job.circuit_id().to_string(), "snap-2k");
    let params = params(ProofKind::SnapDealsUpdate);
    let proof = prove(&job, &params);
    assert_eq!(proof.len(), 192 * job.num_partitions());

    let registered = update_proof(req.registered.registered_proof).unwrap();
    let c = |v: &Vec<u8>| -> [u8; 32] { v.clone().try_into().unwrap() };
    let (old, new, d) = (c(&req.comm_r_old), c(&req.comm_r_new), c(&req.comm_d_new));
    assert!(verify_empty_sector_update_proof(registered, &proof, old, new, d).unwrap());
    let mut other_d = d;
    other_d[0] ^= 1;
    assert!(!matches!(
        verify_empty_sector_update_proof(registered, &proof, old, new, other_d),
        Ok(true)
    ));
    assert!(!matches!(
        verify_empty_sector_update_proof(registered, &proof, new, old, d),
        Ok(true)
    ));
}

//! Bad inputs give typed errors, never panics.

use snarkd_prover::{prepare, DeviceBackend, ProofKind, ProverError};

use super::common::{env, params, prove};

#[test]
fn truncated_and_non_json_c1_are_decode_errors() {
    let mut req = env().fixtures.porep.clone();
    let full = req.vanilla_proof.clone();
    req.vanilla_proof = full[..full.len() / 2].to_vec();
    assert!(matches!(prepare(&req), Err(ProverError::Decode { .. })));
    req.vanilla_proof = b"not json at all".to_vec();
    assert!(matches!(prepare(&req), Err(ProverError::Decode { .. })));
    req.vanilla_proof = br#"{"registered_proof":"StackedDrg2KiBV1_1"}"#.to_vec();
    assert!(matches!(prepare(&req), Err(ProverError::Decode { .. })));
}

#[test]
fn registered_proof_for_another_sector_size_or_version_is_refused() {
    let mut req = env().fixtures.porep.clone();
    req.registered_proof = 8; // 32 GiB V1_1, but the C1 output is 2 KiB
    let err = prepare(&req).unwrap_err();
    assert!(
        matches!(err, ProverError::RegisteredProofMismatch { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("StackedDrg2KiBV1_1"), "{err}");
    req.registered_proof = 0; // 2 KiB V1: other porep id
    assert!(matches!(
        prepare(&req),
        Err(ProverError::RegisteredProofMismatch { .. })
    ));
    req.registered_proof = 99;
    assert!(matches!(
        prepare(&req),
        Err(ProverError::UnknownRegisteredProof { .. })
    ));

    let mut post = env().fixtures.window.clone();
    post.registered_proof = 13; // 32 GiB window: vanilla proofs are 2 KiB
    assert!(matches!(
        prepare(&post),
        Err(ProverError::Decode { .. } | ProverError::InvalidRequest(_))
    ));
    post.registered_proof = 0; // a winning proof type for a window request
    assert!(matches!(
        prepare(&post),
        Err(ProverError::RegisteredProofMismatch { .. })
    ));
}

#[test]
fn wrong_sector_or_miner_for_the_c1_output_is_refused() {
    let mut req = env().fixtures.porep.clone();
    req.sector_number += 1;
    assert!(matches!(prepare(&req), Err(ProverError::InvalidRequest(_))));
}

#[test]
fn advisory_sector_size_mismatch_is_only_a_warning() {
    let mut req = env().fixtures.winning.clone();
    req.sector_size = 32 << 30;
    assert_eq!(prepare(&req).unwrap().sector_size(), 2048);
}

#[test]
fn wrong_counts_and_lengths_are_typed_errors() {
    let fx = &env().fixtures;
    let mut w = fx.winning.clone();
    w.vanilla_proofs.push(w.vanilla_proofs[0].clone());
    assert!(matches!(prepare(&w), Err(ProverError::WrongCount { .. })));
    w.vanilla_proofs.clear();
    assert!(matches!(prepare(&w), Err(ProverError::WrongCount { .. })));

    let mut wp = fx.window.clone();
    wp.randomness.truncate(31);
    assert!(matches!(
        prepare(&wp),
        Err(ProverError::BadLength {
            field: "randomness",
            expected: 32,
            actual: 31
        })
    ));
    let mut wp = fx.window.clone();
    wp.vanilla_proofs = vec![wp.vanilla_proofs[0].clone(); 3]; // 2 KiB window partitions hold 2 sectors
    assert!(matches!(prepare(&wp), Err(ProverError::WrongCount { .. })));
    let mut wp = fx.window.clone();
    wp.vanilla_proofs[0].truncate(10);
    assert!(matches!(prepare(&wp), Err(ProverError::Decode { .. })));

    let mut s = fx.snap.clone();
    s.comm_d_new.push(0);
    assert!(matches!(
        prepare(&s),
        Err(ProverError::BadLength {
            field: "comm_d_new",
            ..
        })
    ));
    let mut s = fx.snap.clone();
    s.vanilla_proofs.push(s.vanilla_proofs[0].clone());
    assert!(matches!(prepare(&s), Err(ProverError::WrongCount { .. })));

    let job = prepare(&fx.winning).unwrap();
    assert!(matches!(
        job.synthesize(1),
        Err(ProverError::NoSuchPartition { index: 1, count: 1 })
    ));
}

#[test]
fn params_for_another_circuit_are_refused() {
    let fx = &env().fixtures;
    let window_params = params(ProofKind::WindowPost);
    let winning = prepare(&fx.winning).unwrap();
    let err = winning.verify(&[0u8; 192], &window_params).unwrap_err();
    assert!(matches!(err, ProverError::ParamsMismatch { .. }), "{err}");
    assert_eq!(err.to_string(), "parameters for circuit wpost-2k cannot prove a winning-2k job; load the winning-2k parameters");
    // The device phase checks shapes too.
    let p = winning.synthesize(0).unwrap();
    let err = snarkd_prover::CpuBackend::new()
        .prove(
            p,
            &window_params,
            snarkd_prover::groth16::Randomness::random(),
            &mut |_| {},
        )
        .unwrap_err();
    assert!(matches!(err, ProverError::ParamsShape(_)), "{err}");
    let _ = prove;
}

#[test]
fn missing_params_name_the_file_and_how_to_get_it() {
    let dir = tempfile::tempdir().unwrap();
    let c = snarkd_prover::CircuitId::parse("porep-2k").unwrap();
    let err = snarkd_prover::load_params(dir.path(), c).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains(&c.params_file_stem()) && msg.contains("snarkd params generate"),
        "{msg}"
    );
}

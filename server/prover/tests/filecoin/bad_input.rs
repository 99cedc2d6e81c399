//! Bad inputs give typed errors, never panics.

use snarkd_prover::{prepare, DeviceBackend, ProofKind, ProverError};

use snarkd_prover::{PoRepInput, PostInput, ProofInput, SnapInput};

use super::common::{env, params, prove};

fn porep(r: &PoRepInput) -> ProofInput {
    r.clone().into()
}

fn winning(r: &PostInput) -> ProofInput {
    ProofInput::WinningPost(r.clone())
}

fn window(r: &PostInput) -> ProofInput {
    env().fixtures.window_request(r.clone())
}

fn snap(r: &SnapInput) -> ProofInput {
    r.clone().into()
}

#[test]
fn truncated_and_non_json_c1_are_decode_errors() {
    let mut req = env().fixtures.porep.clone();
    let full = req.vanilla_proof.clone();
    req.vanilla_proof = full[..full.len() / 2].to_vec();
    assert!(matches!(
        prepare(&porep(&req)),
        Err(ProverError::Decode { .. })
    ));
    req.vanilla_proof = b"not json at all".to_vec();
    assert!(matches!(
        prepare(&porep(&req)),
        Err(ProverError::Decode { .. })
    ));
    req.vanilla_proof = br#"{"registered_proof":"StackedDrg2KiBV1_1"}"#.to_vec();
    assert!(matches!(
        prepare(&porep(&req)),
        Err(ProverError::Decode { .. })
    ));
}

#[test]
fn registered_proof_for_another_sector_size_or_version_is_refused() {
    let mut req = env().fixtures.porep.clone();
    req.registered.registered_proof = 8; // 32 GiB V1_1, but the C1 output is 2 KiB
    let err = prepare(&porep(&req)).unwrap_err();
    assert!(
        matches!(err, ProverError::RegisteredProofMismatch { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("StackedDrg2KiBV1_1"), "{err}");
    req.registered.registered_proof = 1; // 8 MiB V1
    assert!(matches!(
        prepare(&porep(&req)),
        Err(ProverError::RegisteredProofMismatch { .. })
    ));
    // Unset (0, what Curio's cuzk-bench sends) takes the C1 output's own proof type.
    req.registered.registered_proof = 0;
    let job = prepare(&porep(&req)).expect("0 means the c1 output's type");
    assert_eq!(job.registered_proof(), (5, "StackedDrg2KiBV1_1"));
    req.registered.registered_proof = 99;
    assert!(matches!(
        prepare(&porep(&req)),
        Err(ProverError::UnknownRegisteredProof { .. })
    ));

    let mut post = env().fixtures.window.clone();
    post.registered.registered_proof = 13; // 32 GiB window V1_2: the vanilla proofs are 2 KiB
    let err = prepare(&window(&post)).unwrap_err();
    assert!(
        matches!(err, ProverError::RegisteredProofMismatch { value: 13, .. }),
        "{err}"
    );
    assert_mentions(
        &err,
        &[
            "StackedDrgWindow32GiBV1_2",
            "Merkle paths of length 2",
            "32GiB",
        ],
    );
    let mut win = env().fixtures.winning.clone();
    win.registered.registered_proof = 1; // 8 MiB winning
    let err = prepare(&winning(&win)).unwrap_err();
    assert!(
        matches!(err, ProverError::RegisteredProofMismatch { value: 1, .. }),
        "{err}"
    );
    assert_mentions(&err, &["StackedDrgWinning8MiBV1", "8MiB"]);
    post.registered.registered_proof = 0; // a winning proof type for a window request
    let err = prepare(&window(&post)).unwrap_err();
    assert!(
        matches!(err, ProverError::RegisteredProofMismatch { value: 0, .. }),
        "{err}"
    );
    assert_mentions(&err, &["StackedDrgWinning2KiBV1", "not a wpost proof type"]);
}

#[test]
fn snap_registered_proof_for_another_sector_size_is_refused() {
    // 1: 8 MiB (one partition, same tree arity: the proofs decode), 3: 32 GiB (16 partitions).
    for (value, name, size) in [
        (1, "StackedDrg8MiBV1", "8MiB"),
        (3, "StackedDrg32GiBV1", "32GiB"),
    ] {
        let mut s = env().fixtures.snap.clone();
        s.registered.registered_proof = value;
        let err = prepare(&snap(&s)).unwrap_err();
        assert!(
            matches!(err, ProverError::RegisteredProofMismatch { value: v, .. } if v == value),
            "{value}: {err}"
        );
        assert_mentions(&err, &[name, "partition proof 0", size]);
    }
    let mut s = env().fixtures.snap.clone();
    s.registered.registered_proof = 5;
    assert!(matches!(
        prepare(&snap(&s)),
        Err(ProverError::UnknownRegisteredProof { value: 5, .. })
    ));
}

/// The error's message names every one of `parts` (field, expected and actual values).
fn assert_mentions(err: &ProverError, parts: &[&str]) {
    let msg = err.to_string();
    for part in parts {
        assert!(msg.contains(part), "message lacks {part:?}: {msg}");
    }
}

#[test]
fn wrong_sector_or_miner_for_the_c1_output_is_refused() {
    let mut req = env().fixtures.porep.clone();
    req.sector_number += 1;
    assert!(matches!(
        prepare(&porep(&req)),
        Err(ProverError::InvalidRequest(_))
    ));
}

#[test]
fn advisory_sector_size_mismatch_is_only_a_warning() {
    let mut req = env().fixtures.winning.clone();
    req.registered.sector_size = 32 << 30;
    assert_eq!(prepare(&winning(&req)).unwrap().sector_size(), 2048);
}

#[test]
fn wrong_counts_and_lengths_are_typed_errors() {
    let fx = &env().fixtures;
    let mut w = fx.winning.clone();
    w.vanilla_proofs.push(w.vanilla_proofs[0].clone());
    let err = prepare(&winning(&w)).unwrap_err();
    assert!(
        matches!(err, ProverError::WrongCount { actual: 2, .. }),
        "{err}"
    );
    assert_mentions(
        &err,
        &[
            "expected 1 vanilla proofs",
            "FallbackPoStSectorProof",
            "got 2",
        ],
    );
    w.vanilla_proofs.clear();
    let err = prepare(&winning(&w)).unwrap_err();
    assert!(
        matches!(err, ProverError::WrongCount { actual: 0, .. }),
        "{err}"
    );
    assert_mentions(&err, &["expected 1 vanilla proofs", "got 0"]);

    let mut wp = fx.window.clone();
    wp.randomness.truncate(31);
    let err = prepare(&window(&wp)).unwrap_err();
    assert!(
        matches!(
            err,
            ProverError::BadLength {
                field: "randomness",
                expected: 32,
                actual: 31
            }
        ),
        "{err}"
    );
    assert_eq!(err.to_string(), "randomness must be 32 bytes, got 31");
    let mut wp = fx.window.clone();
    wp.vanilla_proofs = vec![wp.vanilla_proofs[0].clone(); 3]; // 2 KiB window partitions hold 2 sectors
    let err = prepare(&window(&wp)).unwrap_err();
    assert!(
        matches!(err, ProverError::WrongCount { actual: 3, .. }),
        "{err}"
    );
    assert_mentions(&err, &["expected 1 to 2 vanilla proofs", "got 3"]);
    let mut wp = fx.window.clone();
    wp.vanilla_proofs[0].truncate(10);
    let err = prepare(&window(&wp)).unwrap_err();
    assert!(matches!(err, ProverError::Decode { .. }), "{err}");
    assert_mentions(
        &err,
        &["cannot decode vanilla_proofs[0]", "FallbackPoStSectorProof"],
    );

    let mut s = fx.snap.clone();
    s.comm_d_new.push(0);
    let err = prepare(&snap(&s)).unwrap_err();
    assert!(
        matches!(
            err,
            ProverError::BadLength {
                field: "comm_d_new",
                expected: 32,
                actual: 33
            }
        ),
        "{err}"
    );
    assert_eq!(err.to_string(), "comm_d_new must be 32 bytes, got 33");
    let mut s = fx.snap.clone();
    s.vanilla_proofs.push(s.vanilla_proofs[0].clone());
    let err = prepare(&snap(&s)).unwrap_err();
    assert!(
        matches!(err, ProverError::WrongCount { actual: 2, .. }),
        "{err}"
    );
    assert_mentions(
        &err,
        &["expected 1 partition proofs", "PartitionProof", "got 2"],
    );

    let job = prepare(&winning(&fx.winning)).unwrap();
    let err = job.synthesize(1).unwrap_err();
    assert!(
        matches!(err, ProverError::NoSuchPartition { index: 1, count: 1 }),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "partition 1 does not exist; this job has 1 partition(s)"
    );
}

#[test]
fn params_for_another_circuit_are_refused() {
    let fx = &env().fixtures;
    let window_params = params(ProofKind::WindowPost);
    let winning = prepare(&winning(&fx.winning)).unwrap();
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

//! Proof assembly across several partitions: 192 bytes each, in partition order, and a missing
//! partition is an error (all 2 KiB kinds have one partition, so this is the only place it is
//! checked with more).

use bellperson::groth16::Proof;
use blstrs::{Bls12, G1Projective, G2Projective};
use group::{Curve, Group};
use rand::rngs::OsRng;

use super::{parse_proofs, serialize_proofs, PARTITION_PROOF_BYTES};
use crate::error::ProverError;

/// Distinct well-formed proofs (random curve points; they prove nothing).
fn fake_proofs(n: usize) -> Vec<Proof<Bls12>> {
    (0..n)
        .map(|_| Proof {
            a: G1Projective::random(OsRng).to_affine(),
            b: G2Projective::random(OsRng).to_affine(),
            c: G1Projective::random(OsRng).to_affine(),
        })
        .collect()
}

fn bytes_of(p: &Proof<Bls12>) -> Vec<u8> {
    let mut out = Vec::new();
    p.write(&mut out).unwrap();
    out
}

#[test]
fn partition_proofs_are_concatenated_in_partition_order() {
    let proofs = fake_proofs(4);
    let out = serialize_proofs(&proofs);
    assert_eq!(out.len(), 4 * PARTITION_PROOF_BYTES);
    for (i, chunk) in out.chunks(PARTITION_PROOF_BYTES).enumerate() {
        assert_eq!(
            chunk,
            bytes_of(&proofs[i]),
            "chunk {i} is partition {i}'s proof"
        );
    }
    assert_eq!(parse_proofs(&out, 4).unwrap(), proofs);
}

#[test]
fn a_missing_partition_proof_is_an_error() {
    // The engine hands finalize one entry per partition, empty where a proof is missing.
    let proofs = fake_proofs(3);
    let parts = [bytes_of(&proofs[0]), Vec::new(), bytes_of(&proofs[2])];
    let err = parse_proofs(&parts.concat(), parts.len()).unwrap_err();
    assert!(
        matches!(
            err,
            ProverError::BadLength {
                field: "proof",
                expected: 576,
                actual: 384
            }
        ),
        "{err}"
    );
    // A truncated partition proof is caught the same way.
    let short = serialize_proofs(&proofs);
    assert!(parse_proofs(&short[..short.len() - 1], 3).is_err());
}

//! `registered_proof` numbers as the chain (and filecoin-proofs-api's enum declaration order)
//! assigns them. Zero is a real value; the proof kind says which enum applies.

use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

use super::ProofKind;
use crate::error::{ProverError, Result};

use RegisteredPoStProof as P;
use RegisteredSealProof as S;
use RegisteredUpdateProof as U;

/// Seal proofs, index = registered_proof value.
const SEAL: [S; 20] = [
    S::StackedDrg2KiBV1,
    S::StackedDrg8MiBV1,
    S::StackedDrg512MiBV1,
    S::StackedDrg32GiBV1,
    S::StackedDrg64GiBV1,
    S::StackedDrg2KiBV1_1,
    S::StackedDrg8MiBV1_1,
    S::StackedDrg512MiBV1_1,
    S::StackedDrg32GiBV1_1,
    S::StackedDrg64GiBV1_1,
    S::StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
    S::StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
    S::StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
    S::StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
    S::StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
    S::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
    S::StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
    S::StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
    S::StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
    S::StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
];

/// PoSt proofs, index = registered_proof value.
const POST: [P; 15] = [
    P::StackedDrgWinning2KiBV1,
    P::StackedDrgWinning8MiBV1,
    P::StackedDrgWinning512MiBV1,
    P::StackedDrgWinning32GiBV1,
    P::StackedDrgWinning64GiBV1,
    P::StackedDrgWindow2KiBV1,
    P::StackedDrgWindow8MiBV1,
    P::StackedDrgWindow512MiBV1,
    P::StackedDrgWindow32GiBV1,
    P::StackedDrgWindow64GiBV1,
    P::StackedDrgWindow2KiBV1_2,
    P::StackedDrgWindow8MiBV1_2,
    P::StackedDrgWindow512MiBV1_2,
    P::StackedDrgWindow32GiBV1_2,
    P::StackedDrgWindow64GiBV1_2,
];

/// Update proofs, index = registered_proof value.
const UPDATE: [U; 5] = [
    U::StackedDrg2KiBV1,
    U::StackedDrg8MiBV1,
    U::StackedDrg512MiBV1,
    U::StackedDrg32GiBV1,
    U::StackedDrg64GiBV1,
];

/// The registered seal proof numbered `value`. Non-interactive PoRep (15–19) is aggregated by
/// filecoin-proofs rather than returned per partition and is refused.
pub fn seal_proof(value: u64) -> Result<S> {
    let proof = *SEAL
        .get(value as usize)
        .ok_or(ProverError::UnknownRegisteredProof {
        kind: ProofKind::PorepSealCommit,
        value,
        hint:
            "seal: 0-4 StackedDrg{2KiB,8MiB,512MiB,32GiB,64GiB}V1, 5-9 V1_1, 10-14 V1_1 synthetic",
    })?;
    if value >= 15 {
        return Err(ProverError::UnsupportedRegisteredProof {
            value,
            name: format!("{proof:?}"),
            reason: "non-interactive porep proofs are aggregated; send the interactive (V1_1) proof type",
        });
    }
    Ok(proof)
}

/// The registered PoSt proof numbered `value`, which must be of the type `kind` asks for.
pub fn post_proof(kind: ProofKind, value: u64) -> Result<P> {
    let hint = "post: 0-4 StackedDrgWinning{2KiB..64GiB}V1, 5-9 StackedDrgWindow{..}V1, 10-14 StackedDrgWindow{..}V1_2";
    let proof = *POST
        .get(value as usize)
        .ok_or(ProverError::UnknownRegisteredProof { kind, value, hint })?;
    let winning = value < 5;
    if winning != (kind == ProofKind::WinningPost) {
        return Err(ProverError::RegisteredProofMismatch {
            value,
            name: format!("{proof:?}"),
            reason: format!("it is not a {kind} proof type"),
        });
    }
    Ok(proof)
}

/// The registered update proof numbered `value`.
pub fn update_proof(value: u64) -> Result<U> {
    UPDATE
        .get(value as usize)
        .copied()
        .ok_or(ProverError::UnknownRegisteredProof {
            kind: ProofKind::SnapDealsUpdate,
            value,
            hint: "update: 0-4 StackedDrg{2KiB,8MiB,512MiB,32GiB,64GiB}V1",
        })
}

/// The number `proof` has on chain (inverse of [`seal_proof`]).
pub fn seal_proof_number(proof: S) -> u64 {
    SEAL.iter()
        .position(|p| *p == proof)
        .expect("every variant is listed") as u64
}

/// The number `proof` has on chain (inverse of [`post_proof`]).
pub fn post_proof_number(proof: P) -> u64 {
    POST.iter()
        .position(|p| *p == proof)
        .expect("every variant is listed") as u64
}

/// The number `proof` has on chain (inverse of [`update_proof`]).
pub fn update_proof_number(proof: U) -> u64 {
    UPDATE
        .iter()
        .position(|p| *p == proof)
        .expect("every variant is listed") as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_matches_the_chain() {
        assert_eq!(seal_proof(5).unwrap(), S::StackedDrg2KiBV1_1);
        assert_eq!(seal_proof(8).unwrap(), S::StackedDrg32GiBV1_1);
        assert_eq!(
            post_proof(ProofKind::WinningPost, 0).unwrap(),
            P::StackedDrgWinning2KiBV1
        );
        assert_eq!(
            post_proof(ProofKind::WinningPost, 3).unwrap(),
            P::StackedDrgWinning32GiBV1
        );
        assert_eq!(
            post_proof(ProofKind::WindowPost, 10).unwrap(),
            P::StackedDrgWindow2KiBV1_2
        );
        assert_eq!(
            post_proof(ProofKind::WindowPost, 13).unwrap(),
            P::StackedDrgWindow32GiBV1_2
        );
        assert_eq!(update_proof(3).unwrap(), U::StackedDrg32GiBV1);
        // The enum's serde names follow declaration order too.
        for (i, p) in SEAL.iter().enumerate() {
            assert_eq!(seal_proof_number(*p), i as u64);
        }
    }

    #[test]
    fn kind_mismatch_and_unknown_values_are_errors() {
        assert!(matches!(
            post_proof(ProofKind::WindowPost, 0),
            Err(ProverError::RegisteredProofMismatch { .. })
        ));
        assert!(matches!(
            post_proof(ProofKind::WinningPost, 12),
            Err(ProverError::RegisteredProofMismatch { .. })
        ));
        assert!(matches!(
            seal_proof(20),
            Err(ProverError::UnknownRegisteredProof { .. })
        ));
        assert!(matches!(
            seal_proof(17),
            Err(ProverError::UnsupportedRegisteredProof { .. })
        ));
        assert!(matches!(
            update_proof(5),
            Err(ProverError::UnknownRegisteredProof { .. })
        ));
    }
}

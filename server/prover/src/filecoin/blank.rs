//! The blank circuit of each kind (no witness): what the Groth16 setup runs on, and what the
//! pre-compiled matrices are recorded from. Both go through [`with_blank`], so they always see
//! the same circuit.

use bellperson::groth16::Parameters;
use bellperson::Circuit;
use blstrs::{Bls12, Scalar as Fr};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::parameters::{
    public_params, window_post_public_params, winning_post_public_params,
};
use filecoin_proofs::{with_shape, MerkleTreeTrait};
use rand::rngs::OsRng;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_porep::stacked::StackedCompound;
use storage_proofs_post::fallback::FallbackPoStCompound;
use storage_proofs_update::EmptySectorUpdateCompound;

use super::{estimate, CircuitId, ProofKind};
use crate::circuit::{representative_post, representative_seal, representative_update};
use crate::error::{ProverError, Result};
use crate::setup::{groth16_setup, ToxicWaste};
use crate::synthesis::precompiled::{CircuitMatrices, FullR1cs};

/// What to do with a blank circuit.
#[derive(Clone, Copy)]
enum Use {
    Setup {
        rows: usize,
    },
    /// bellperson's own generator: the baseline of the setup benchmark.
    #[cfg(feature = "bench")]
    StockSetup,
    Record {
        rows: usize,
    },
}

enum Made {
    Params(Box<Parameters<Bls12>>),
    Matrices(Box<CircuitMatrices>),
}

/// Runs a local Groth16 setup (random toxic waste) on the blank circuit: test parameters.
pub(crate) fn setup(circuit: CircuitId) -> Result<Parameters<Bls12>> {
    let rows = estimate::shape(circuit.kind(), circuit.sector_size()).constraints;
    match with_blank(circuit, Use::Setup { rows })? {
        Made::Params(p) => Ok(*p),
        Made::Matrices(_) => unreachable!("a setup makes parameters"),
    }
}

/// Test parameters from bellperson's own generator (the setup benchmark's baseline).
#[cfg(feature = "bench")]
pub(crate) fn stock_setup(circuit: CircuitId) -> Result<Parameters<Bls12>> {
    match with_blank(circuit, Use::StockSetup)? {
        Made::Params(p) => Ok(*p),
        Made::Matrices(_) => unreachable!("a setup makes parameters"),
    }
}

/// Records the R1CS matrices of `circuit` from its blank circuit (CPU-heavy: about one
/// partition's synthesis).
pub fn record_matrices(circuit: CircuitId) -> Result<CircuitMatrices> {
    let rows = estimate::shape(circuit.kind(), circuit.sector_size()).constraints;
    match with_blank(circuit, Use::Record { rows })? {
        Made::Matrices(m) => Ok(*m),
        Made::Params(_) => unreachable!("a recording makes matrices"),
    }
}

fn with_blank(circuit: CircuitId, what: Use) -> Result<Made> {
    let sector_size = circuit.sector_size();
    with_shape!(sector_size, blank, circuit.kind(), sector_size, what)
}

fn apply<C: Circuit<Fr>>(circuit: C, what: Use) -> Result<Made> {
    match what {
        Use::Setup { rows } => {
            let r1cs = FullR1cs::record(circuit, rows)?;
            groth16_setup(&r1cs, &ToxicWaste::random(OsRng)).map(|p| Made::Params(Box::new(p)))
        }
        #[cfg(feature = "bench")]
        Use::StockSetup => {
            bellperson::groth16::generate_random_parameters::<Bls12, _, _>(circuit, &mut OsRng)
                .map(|p| Made::Params(Box::new(p)))
                .map_err(ProverError::filecoin)
        }
        Use::Record { rows } => {
            CircuitMatrices::record(circuit, rows).map(|m| Made::Matrices(Box::new(m)))
        }
    }
}

fn blank<Tree: 'static + MerkleTreeTrait<Hasher = filecoin_proofs::TreeRHasher>>(
    kind: ProofKind,
    sector_size: u64,
    what: Use,
) -> Result<Made> {
    match kind {
        ProofKind::PorepSealCommit => {
            let config = representative_seal(sector_size)?.as_v1_config();
            let pp = public_params::<Tree>(&config).map_err(ProverError::filecoin)?;
            let c =
                <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<_, _>>::blank_circuit(
                    &pp,
                );
            apply(c, what)
        }
        ProofKind::SnapDealsUpdate => {
            let _ = representative_update(sector_size)?;
            let pp = storage_proofs_update::PublicParams::from_sector_size(sector_size);
            apply(
                <EmptySectorUpdateCompound<Tree> as CompoundProof<_, _>>::blank_circuit(&pp),
                what,
            )
        }
        ProofKind::WinningPost => {
            let config = representative_post(kind, sector_size)?.as_v1_config();
            let pp = winning_post_public_params::<Tree>(&config).map_err(ProverError::filecoin)?;
            apply(
                <FallbackPoStCompound<Tree> as CompoundProof<_, _>>::blank_circuit(&pp),
                what,
            )
        }
        ProofKind::WindowPost => {
            let config = representative_post(kind, sector_size)?.as_v1_config();
            let pp = window_post_public_params::<Tree>(&config).map_err(ProverError::filecoin)?;
            apply(
                <FallbackPoStCompound<Tree> as CompoundProof<_, _>>::blank_circuit(&pp),
                what,
            )
        }
    }
}

//! PoRep C2: per-partition `StackedCircuit`s from a C1 output (filecoin-proofs-api's
//! `SealCommitPhase1Output` JSON), verified as `verify_seal` does.

use std::convert::TryInto;

use bellperson::groth16::{PreparedVerifyingKey, Proof};
use blstrs::Bls12;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::constants::{DefaultPieceDomain, DefaultPieceHasher};
use filecoin_proofs::parameters::setup_params;
use filecoin_proofs::{as_safe_commitment, with_shape, MerkleTreeTrait, PoRepConfig};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::multi_proof::MultiProof;
use storage_proofs_porep::stacked::{
    self, generate_replica_id, ChallengeRequirements, StackedCompound, StackedDrg, Tau,
};

use super::native::porep::PorepPartition;
use super::native::{NativeError, Witness};
use super::nodes::check_nodes;
use super::registered::{seal_proof, seal_proof_number};
use super::request::{prover_id_from_miner_id, unwrap_c1};
use super::{build_circuit, Decoded, KindJob, PoRepInput};
use crate::error::{ProverError, Result};
use crate::synthesis::precompiled::CircuitMatrices;
use storage_proofs_core::proof::ProofScheme;

type Inputs<Tree> = stacked::PublicInputs<
    <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain,
    DefaultPieceDomain,
>;

struct PorepJob<Tree: 'static + MerkleTreeTrait> {
    config: PoRepConfig,
    pub_params:
        compound_proof::PublicParams<'static, StackedDrg<'static, Tree, DefaultPieceHasher>>,
    /// Public inputs as the verifier derives them (replica id from prover id, sector, ticket).
    pub_inputs: Inputs<Tree>,
    vanilla: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>>,
}

pub(super) fn prepare(req: &PoRepInput) -> Result<Decoded> {
    let (json, wrapper_sector, wrapper_size) = unwrap_c1(&req.vanilla_proof)?;
    if let Some(n) = wrapper_sector {
        if n != req.sector_number {
            return Err(ProverError::InvalidRequest(format!(
                "sector_number {} differs from the curio wrapper's SectorNum {n}; send the sector the c1 output was made for",
                req.sector_number
            )));
        }
    }
    super::c1_shape::check(&json)?;
    let c1: SealCommitPhase1Output =
        serde_json::from_slice(&json).map_err(|e| ProverError::Decode {
            what: "porep c1 output (SealCommitPhase1Output json)".into(),
            reason: e.to_string(),
        })?;
    drop(json);
    // Unset (0) takes the C1 output's own proof type, as Curio's daemon does; any other value
    // must agree with it.
    let value = match req.registered.registered_proof {
        0 => seal_proof_number(c1.registered_proof),
        n => n,
    };
    let registered = seal_proof(value)?;
    let name = format!("{registered:?}");
    if c1.registered_proof != registered {
        return Err(ProverError::RegisteredProofMismatch {
            value,
            name,
            reason: format!(
                "the c1 output was made with {:?} (registered_proof {})",
                c1.registered_proof,
                seal_proof_number(c1.registered_proof)
            ),
        });
    }
    let sector_size = u64::from(registered.sector_size());
    if let Some(size) = wrapper_size.filter(|s| *s != sector_size) {
        tracing::warn!(
            wrapper = size,
            registered = sector_size,
            "curio wrapper SectorSize disagrees with the c1 output's proof type; using the proof type"
        );
    }
    let job = with_shape!(sector_size, build, registered, value, c1, req)?;
    Ok(Decoded {
        sector_size,
        registered_proof: value,
        registered_name: name,
        job,
    })
}

/// What a c1 output must hold before anything is sized by it: one non-empty list of vanilla
/// proofs per partition with every node canonical, and commitments and seed not all zero.
fn check_c1<Tree: 'static + MerkleTreeTrait>(
    vanilla: &[Vec<stacked::Proof<Tree, DefaultPieceHasher>>],
    partitions: usize,
    values: [(&str, &[u8; 32]); 3],
) -> Result<()> {
    for (k, partition) in vanilla.iter().enumerate() {
        check_nodes(
            &format!("the c1 output's vanilla proofs of partition {k}"),
            partition,
        )?;
    }
    if vanilla.len() != partitions || vanilla.iter().any(|p| p.is_empty()) {
        return Err(ProverError::WrongCount {
            what: "non-empty partitions of vanilla proofs in the c1 output",
            expected: partitions.to_string(),
            actual: vanilla.len(),
        });
    }
    for (field, v) in values {
        if *v == [0u8; 32] {
            return Err(ProverError::InvalidRequest(format!(
                "the c1 output's {field} is all zero"
            )));
        }
    }
    Ok(())
}

fn build<Tree: 'static + MerkleTreeTrait>(
    registered: filecoin_proofs_api::RegisteredSealProof,
    value: u64,
    c1: SealCommitPhase1Output,
    req: &PoRepInput,
) -> Result<Box<dyn KindJob>> {
    let mismatch = |reason: String| ProverError::RegisteredProofMismatch {
        value,
        name: format!("{registered:?}"),
        reason,
    };
    let config = registered.as_v1_config();
    let vanilla: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>> =
        c1.vanilla_proofs.try_into().map_err(|e: anyhow::Error| {
            mismatch(format!(
                "its vanilla proofs are for another sector size ({e})"
            ))
        })?;
    let partitions = usize::from(config.partitions);
    check_c1(
        &vanilla,
        partitions,
        [
            ("comm_r", &c1.comm_r),
            ("comm_d", &c1.comm_d),
            ("seed", &c1.seed),
        ],
    )?;
    let comm_r = as_safe_commitment::<<Tree::Hasher as Hasher>::Domain, _>(&c1.comm_r, "comm_r")
        .map_err(ProverError::filecoin)?;
    let comm_d = as_safe_commitment::<DefaultPieceDomain, _>(&c1.comm_d, "comm_d")
        .map_err(ProverError::filecoin)?;

    let prover_id = prover_id_from_miner_id(req.miner_id);
    let replica_id = generate_replica_id::<Tree::Hasher, _>(
        &prover_id,
        req.sector_number,
        &c1.ticket,
        comm_d,
        &config.porep_id,
    );
    let c1_replica: [u8; 32] = c1
        .replica_id
        .into_bytes()
        .try_into()
        .expect("32-byte domain");
    if replica_id.into_bytes() != c1_replica {
        return Err(ProverError::InvalidRequest(format!(
            "miner_id {} / sector_number {} / registered_proof {value} do not match the c1 output (its replica id differs); send the values the sector was sealed with",
            req.miner_id, req.sector_number
        )));
    }
    let setup = compound_proof::SetupParams {
        vanilla_params: setup_params(&config).map_err(ProverError::filecoin)?,
        partitions: Some(partitions),
        priority: false,
    };
    let pub_params = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'static, Tree, DefaultPieceHasher>,
        _,
    >>::setup(&setup)
    .map_err(ProverError::filecoin)?;
    let pub_inputs = stacked::PublicInputs {
        replica_id,
        tau: Some(Tau { comm_d, comm_r }),
        k: None,
        seed: Some(c1.seed),
    };
    // What the circuit would reject is refused now, naming the c1 output, not after synthesis.
    let fits = StackedDrg::<Tree, DefaultPieceHasher>::verify_all_partitions(
        &pub_params.vanilla_params,
        &pub_inputs,
        &vanilla,
    );
    if !matches!(fits, Ok(true)) {
        let why = fits.err().map(|e| format!(" ({e:#})")).unwrap_or_default();
        return Err(ProverError::InvalidRequest(format!(
            "the c1 output's vanilla proofs do not verify against its comm_r, comm_d, seed and \
             ticket{why}; send the unmodified commit phase 1 output of this sector"
        )));
    }
    Ok(Box::new(PorepJob::<Tree> {
        config,
        pub_params,
        pub_inputs,
        vanilla,
    }))
}

impl<Tree: 'static + MerkleTreeTrait> PorepJob<Tree> {
    /// The circuit of partition `index` (already range-checked).
    fn circuit(
        &self,
        index: usize,
    ) -> Result<impl bellperson::Circuit<blstrs::Scalar> + Send + '_> {
        build_circuit(index, || {
            <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
                StackedDrg<'_, Tree, DefaultPieceHasher>,
                _,
            >>::circuit(
                &self.pub_inputs,
                (),
                &self.vanilla[index],
                &self.pub_params.vanilla_params,
                Some(index),
            )
        })
    }
}

impl<Tree: 'static + MerkleTreeTrait> KindJob for PorepJob<Tree> {
    fn num_partitions(&self) -> usize {
        self.vanilla.len()
    }

    super::runs_its_circuit!();

    fn native_witness(
        &self,
        index: usize,
        room: &CircuitMatrices,
    ) -> Option<std::result::Result<Witness, NativeError>> {
        let tau = self.pub_inputs.tau.as_ref()?;
        let partition = PorepPartition {
            replica_id: self.pub_inputs.replica_id.into(),
            comm_d: tau.comm_d.into(),
            comm_r: tau.comm_r.into(),
            proofs: &self.vanilla[index],
            layers: self.pub_params.vanilla_params.num_layers,
        };
        let witness = partition.witness(room.num_inputs(), room.num_aux());
        // The public inputs as the verifier derives them, independently of the witness.
        let expected = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
        >>::generate_public_inputs(
            &self.pub_inputs,
            &self.pub_params.vanilla_params,
            Some(index),
        );
        Some(super::native::checked_inputs(witness, expected))
    }

    fn verify(&self, proofs: &[Proof<Bls12>], pvk: &PreparedVerifyingKey<Bls12>) -> Result<bool> {
        let multi = MultiProof::new(proofs.to_vec(), pvk);
        let requirements = ChallengeRequirements {
            minimum_challenges: self.config.minimum_challenges(),
        };
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
        >>::verify(&self.pub_params, &self.pub_inputs, &multi, &requirements)
        .map_err(ProverError::filecoin)
    }
}

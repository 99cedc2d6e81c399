//! SnapDeals (empty sector update): per-partition `EmptySectorUpdateCircuit`s from bincode
//! `PartitionProof`s and comm_r_old / comm_r_new / comm_d_new, verified as
//! `verify_empty_sector_update_proof` does.

use bellperson::groth16::{PreparedVerifyingKey, Proof};
use blstrs::Bls12;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::constants::DefaultPieceDomain;
use filecoin_proofs::{with_shape, MerkleTreeTrait, SectorUpdateConfig, TreeRHasher};
use filecoin_proofs_api::RegisteredUpdateProof;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::multi_proof::MultiProof;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_update::vanilla::PartitionProof;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PublicInputs,
    SetupParams,
};

use super::native::{self, NativeError, Witness};
use super::nodes::check_nodes;
use super::registered::update_proof;
use super::request::{bytes32, decode_bincode, field_element};
use super::{build_circuit, check_paths, Decoded, KindJob, SnapInput};
use crate::error::{ProverError, Result};
use crate::synthesis::precompiled::CircuitMatrices;

struct SnapJob<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    pub_params: compound_proof::PublicParams<'static, EmptySectorUpdate<Tree>>,
    pub_inputs: PublicInputs,
    vanilla: Vec<PartitionProof<Tree>>,
}

pub(super) fn prepare(req: &SnapInput) -> Result<Decoded> {
    let registered = update_proof(req.registered.registered_proof)?;
    let sector_size = u64::from(registered.sector_size());
    let job = with_shape!(sector_size, build, registered, req)?;
    Ok(Decoded {
        sector_size,
        registered_proof: req.registered.registered_proof,
        registered_name: format!("{registered:?}"),
        job,
    })
}

fn build<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    registered: RegisteredUpdateProof,
    req: &SnapInput,
) -> Result<Box<dyn KindJob>> {
    let comm_r_old = bytes32("comm_r_old", &req.comm_r_old)?;
    let comm_r_new = bytes32("comm_r_new", &req.comm_r_new)?;
    let comm_d_new = field_element("comm_d_new", &req.comm_d_new)?;
    let tree_r = |field: &str, b: &[u8; 32]| {
        <TreeRHasher as Hasher>::Domain::try_from_bytes(b).map_err(|e| {
            ProverError::InvalidRequest(format!("{field} is not a field element ({e:#})"))
        })
    };
    let comm_r_old = tree_r("comm_r_old", &comm_r_old)?;
    let comm_r_new = tree_r("comm_r_new", &comm_r_new)?;
    let comm_d_new = DefaultPieceDomain::try_from_bytes(&comm_d_new).map_err(|e| {
        ProverError::InvalidRequest(format!("comm_d_new is not a field element ({e:#})"))
    })?;

    let config = SectorUpdateConfig::from_porep_config(&registered.as_v1_config());
    let partitions = usize::from(config.update_partitions);
    // More entries than partitions is wrong whatever they hold: refuse before decoding any.
    if req.vanilla_proofs.len() > partitions {
        return Err(wrong_count(partitions, req.vanilla_proofs.len()));
    }
    let vanilla: Vec<PartitionProof<Tree>> = req
        .vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, b)| {
            decode_bincode(
                || format!("vanilla_proofs[{i}] (bincode PartitionProof for {registered:?})"),
                b,
            )
        })
        .collect::<Result<_>>()?;
    // Paths first: proofs of another sector size would otherwise show up as a wrong count.
    let sector_size = u64::from(config.sector_size);
    let value = req.registered.registered_proof;
    for (i, p) in vanilla.iter().enumerate() {
        let what = format!("partition proof {i}");
        let challenges = &p.challenge_proofs;
        let tree_r = challenges
            .iter()
            .flat_map(|c| [&c.proof_r_old, &c.proof_r_new]);
        check_paths(registered, value, &what, sector_size, tree_r)?;
        let tree_d = challenges.iter().map(|c| &c.proof_d_new);
        check_paths(registered, value, &what, sector_size, tree_d)?;
        check_nodes(&format!("vanilla_proofs[{i}]"), p)?;
    }
    if req.vanilla_proofs.len() != partitions {
        return Err(wrong_count(partitions, req.vanilla_proofs.len()));
    }
    let pub_inputs = PublicInputs {
        k: partitions,
        comm_r_old,
        comm_d_new,
        comm_r_new,
        h: config.h,
    };
    let setup = compound_proof::SetupParams {
        vanilla_params: SetupParams {
            sector_bytes: u64::from(config.sector_size),
        },
        partitions: Some(partitions),
        priority: false,
    };
    let pub_params =
        EmptySectorUpdateCompound::<Tree>::setup(&setup).map_err(ProverError::filecoin)?;
    check_vanilla(&pub_params.vanilla_params, &pub_inputs, &vanilla)?;
    Ok(Box::new(SnapJob::<Tree> {
        pub_params,
        pub_inputs,
        vanilla,
    }))
}

fn wrong_count(partitions: usize, actual: usize) -> ProverError {
    ProverError::WrongCount {
        what: "partition proofs (one bincode PartitionProof per partition)",
        expected: partitions.to_string(),
        actual,
    }
}

/// Verifies each partition's vanilla proof against the commitments, as the circuit will: a
/// proof that fails here could never be proved, so it is refused at submit.
fn check_vanilla<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    vanilla_params: &<EmptySectorUpdate<Tree> as ProofScheme<'static>>::PublicParams,
    pub_inputs: &PublicInputs,
    vanilla: &[PartitionProof<Tree>],
) -> Result<()> {
    for (k, proof) in vanilla.iter().enumerate() {
        let inputs = PublicInputs { k, ..*pub_inputs };
        let fits = EmptySectorUpdate::<Tree>::verify(vanilla_params, &inputs, proof);
        if !matches!(fits, Ok(true)) {
            let why = match fits {
                Err(e) => format!(" ({e:#})"),
                Ok(_) => String::new(),
            };
            return Err(ProverError::InvalidRequest(format!(
                "vanilla_proofs[{k}] does not verify against comm_r_old, comm_r_new and \
                 comm_d_new{why}; send the commitments of this update in their fields (old \
                 replica's comm_r in comm_r_old, the new one's in comm_r_new) with the partition \
                 proofs generated for them"
            )));
        }
    }
    Ok(())
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> SnapJob<Tree> {
    /// The circuit of partition `index` (already range-checked).
    fn circuit(&self, index: usize) -> Result<EmptySectorUpdateCircuit<Tree>> {
        build_circuit(index, || {
            <EmptySectorUpdateCompound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, _>>::circuit(
                &self.pub_inputs,
                (),
                &self.vanilla[index],
                &self.pub_params.vanilla_params,
                Some(index),
            )
        })
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> KindJob for SnapJob<Tree> {
    fn num_partitions(&self) -> usize {
        self.vanilla.len()
    }

    super::runs_its_circuit!();

    fn native_witness(
        &self,
        index: usize,
        room: &CircuitMatrices,
    ) -> Option<std::result::Result<Witness, NativeError>> {
        let made = self
            .circuit(index)
            .map_err(|e| NativeError::Shape(e.to_string()))
            .and_then(|c| native::snap::witness(c, room.num_inputs(), room.num_aux()));
        // The public inputs as the verifier derives them, independently of the witness.
        let expected = <EmptySectorUpdateCompound<Tree> as CompoundProof<
            EmptySectorUpdate<Tree>,
            _,
        >>::generate_public_inputs(
            &self.pub_inputs,
            &self.pub_params.vanilla_params,
            Some(index),
        );
        Some(native::checked_inputs(made, expected))
    }

    fn verify(&self, proofs: &[Proof<Bls12>], pvk: &PreparedVerifyingKey<Bls12>) -> Result<bool> {
        let multi = MultiProof::new(proofs.to_vec(), pvk);
        <EmptySectorUpdateCompound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, _>>::verify(
            &self.pub_params,
            &self.pub_inputs,
            &multi,
            &(),
        )
        .map_err(ProverError::filecoin)
    }
}

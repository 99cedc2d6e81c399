//! WinningPoSt and WindowPoSt (one partition per request): `FallbackPoStCircuit`s from bincode
//! `FallbackPoStSectorProof`s, randomness and miner id, verified with the fallback PoSt compound
//! verifier's public inputs.

use bellperson::groth16::{verify_proofs_batch, PreparedVerifyingKey, Proof};
use blstrs::Bls12;
use filecoin_hashers::Hasher;
use filecoin_proofs::parameters::{window_post_setup_params, winning_post_setup_params};
use filecoin_proofs::{
    as_safe_commitment, partition_vanilla_proofs, single_partition_vanilla_proofs, with_shape,
    FallbackPoStSectorProof, MerkleTreeTrait, PoStConfig,
};
use filecoin_proofs_api::RegisteredPoStProof;
use rand::rngs::OsRng;
use storage_proofs_core::api_version::ApiVersion;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_post::fallback::{self, FallbackPoSt, FallbackPoStCompound, PublicSector};

use super::check_paths;
use super::native::post::SectorValues;
use super::native::{self, NativeError, Witness};
use super::nodes::check_nodes;
use super::registered::post_proof;
use super::request::{bytes32, decode_bincode, prover_id_from_miner_id};
use super::{build_circuit, Decoded, KindJob, PostInput, ProofKind};
use crate::error::{ProverError, Result};
use crate::synthesis::precompiled::CircuitMatrices;

type Domain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

struct PostJob<Tree: 'static + MerkleTreeTrait> {
    vanilla_params: fallback::PublicParams,
    /// Inputs the circuit is built from: this partition's sectors only (as filecoin-proofs does).
    circuit_inputs: fallback::PublicInputs<Domain<Tree>>,
    /// Inputs the verifier derives: sectors placed at this partition's position.
    verify_inputs: fallback::PublicInputs<Domain<Tree>>,
    partition_index: usize,
    proof: fallback::Proof<Tree::Proof>,
}

/// A PoSt input with its kind and partition (0 for WinningPoSt, which has one).
pub(super) struct PostRequest<'a> {
    kind: ProofKind,
    post: &'a PostInput,
    partition_index: u32,
}

pub(super) fn prepare(kind: ProofKind, post: &PostInput, partition_index: u32) -> Result<Decoded> {
    let req = &PostRequest {
        kind,
        post,
        partition_index,
    };
    let registered = post_proof(req.kind, req.post.registered.registered_proof)?;
    let sector_size = u64::from(registered.sector_size());
    let job = with_shape!(sector_size, build, registered, req)?;
    Ok(Decoded {
        sector_size,
        registered_proof: req.post.registered.registered_proof,
        registered_name: format!("{registered:?}"),
        job,
    })
}

fn build<Tree: 'static + MerkleTreeTrait>(
    registered: RegisteredPoStProof,
    req: &PostRequest<'_>,
) -> Result<Box<dyn KindJob>> {
    let config: PoStConfig = registered.as_v1_config();
    let randomness = bytes32("randomness", &req.post.randomness)?;
    let randomness: Domain<Tree> =
        as_safe_commitment(&randomness, "randomness").map_err(ProverError::filecoin)?;
    let prover_id: Domain<Tree> =
        as_safe_commitment(&prover_id_from_miner_id(req.post.miner_id), "prover_id")
            .map_err(ProverError::filecoin)?;
    let winning = req.kind == ProofKind::WinningPost;
    check_partition_index(req.partition_index)?;
    let vanilla = vanilla_proofs::<Tree>(registered, &config, winning, req)?;
    let sectors: Vec<PublicSector<Domain<Tree>>> = vanilla
        .iter()
        .map(|p| PublicSector {
            id: p.sector_id,
            comm_r: p.comm_r,
        })
        .collect();
    let inputs = fallback::PublicInputs {
        randomness,
        prover_id,
        sectors,
        k: None,
    };
    let job = if winning {
        winning_job(&config, inputs, &vanilla, req)?
    } else {
        window_job(&config, inputs, &vanilla, req)?
    };
    Ok(Box::new(job))
}

/// The request's vanilla proofs, decoded and checked: as many as the proof type takes (exactly
/// its sector count for WinningPoSt, up to it for a WindowPoSt partition), each path, challenge
/// and node well formed, and one proof per sector.
fn vanilla_proofs<Tree: 'static + MerkleTreeTrait>(
    registered: RegisteredPoStProof,
    config: &PoStConfig,
    winning: bool,
    req: &PostRequest<'_>,
) -> Result<Vec<FallbackPoStSectorProof<Tree>>> {
    let max = config.sector_count;
    let (expected, count_ok) = if winning {
        (max.to_string(), req.post.vanilla_proofs.len() == max)
    } else {
        (
            format!("1 to {max}"),
            (1..=max).contains(&req.post.vanilla_proofs.len()),
        )
    };
    if !count_ok {
        return Err(ProverError::WrongCount {
            what: "vanilla proofs (one bincode FallbackPoStSectorProof per sector)",
            expected,
            actual: req.post.vanilla_proofs.len(),
        });
    }
    let vanilla: Vec<FallbackPoStSectorProof<Tree>> = req
        .post
        .vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, b)| {
            decode_bincode(
                || {
                    format!(
                        "vanilla_proofs[{i}] (bincode FallbackPoStSectorProof for {registered:?})"
                    )
                },
                b,
            )
        })
        .collect::<Result<_>>()?;
    for (i, p) in vanilla.iter().enumerate() {
        let paths = p
            .vanilla_proof
            .sectors
            .iter()
            .flat_map(|s| s.inclusion_proofs.iter());
        check_paths(
            registered,
            req.post.registered.registered_proof,
            &format!("vanilla proof {i}"),
            u64::from(config.sector_size),
            paths,
        )?;
        check_sector_proof(i, p, config.challenge_count)?;
        check_nodes(&format!("vanilla_proofs[{i}]"), p)?;
    }
    let mut ids: Vec<u64> = vanilla.iter().map(|p| u64::from(p.sector_id)).collect();
    ids.sort_unstable();
    if let Some(pair) = ids.windows(2).find(|w| w[0] == w[1]) {
        return Err(ProverError::InvalidRequest(format!(
            "vanilla_proofs holds two proofs for sector {}; send one proof per sector",
            pair[0]
        )));
    }
    Ok(vanilla)
}

/// A WinningPoSt: one partition over the challenged sectors, each challenge checked.
fn winning_job<Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
    inputs: fallback::PublicInputs<Domain<Tree>>,
    vanilla: &[FallbackPoStSectorProof<Tree>],
    req: &PostRequest<'_>,
) -> Result<PostJob<Tree>> {
    let setup = compound_proof::SetupParams {
        vanilla_params: winning_post_setup_params(config).map_err(ProverError::filecoin)?,
        partitions: None,
        priority: false,
    };
    let pub_params = FallbackPoStCompound::<Tree>::setup(&setup).map_err(ProverError::filecoin)?;
    let mut parts =
        partition_vanilla_proofs(config, &pub_params.vanilla_params, &inputs, 1, vanilla)
            .map_err(|e| not_for_challenge(&e, req))?;
    // The verifier lists the sector once per circuit sector slot (`verify_winning_post`).
    let verify_inputs = fallback::PublicInputs {
        sectors: (0..pub_params.vanilla_params.sector_count)
            .flat_map(|_| inputs.sectors.clone())
            .collect(),
        ..inputs.clone()
    };
    check_every_winning_challenge::<Tree>(&pub_params.vanilla_params, &verify_inputs, &parts[0])
        .map_err(|e| not_for_challenge(&e, req))?;
    Ok(PostJob {
        vanilla_params: pub_params.vanilla_params,
        circuit_inputs: inputs,
        verify_inputs,
        partition_index: 0,
        proof: parts.remove(0),
    })
}

/// One WindowPoSt partition, with the verifier's inputs placed where the chain's verifier puts
/// this partition's sectors.
fn window_job<Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
    inputs: fallback::PublicInputs<Domain<Tree>>,
    vanilla: &[FallbackPoStSectorProof<Tree>],
    req: &PostRequest<'_>,
) -> Result<PostJob<Tree>> {
    let partition_index = req.partition_index as usize;
    let setup = compound_proof::SetupParams {
        vanilla_params: window_post_setup_params(config),
        partitions: None,
        priority: false,
    };
    let vanilla_params = FallbackPoStCompound::<Tree>::setup(&setup)
        .map_err(ProverError::filecoin)?
        .vanilla_params;
    let inputs = fallback::PublicInputs {
        k: Some(partition_index),
        ..inputs
    };
    // Also checks the vanilla proofs against randomness and prover id.
    let proof = single_partition_vanilla_proofs(config, &vanilla_params, &inputs, vanilla)
        .map_err(|e| not_for_challenge(&e, req))?;
    // The verifier chunks all sectors of the deadline and, before api version 1.2, derives
    // challenges from a sector's place in the deadline: put ours at this partition's place
    // (a bounded copy: the index is below MAX_WINDOW_PARTITIONS). From 1.2 on the place does
    // not matter and the partition is verified on its own.
    let before_1_2 = config.api_version < ApiVersion::V1_2_0;
    let mut placed = Vec::new();
    if before_1_2 {
        placed = vec![inputs.sectors[0].clone(); partition_index * vanilla_params.sector_count];
    }
    placed.extend(inputs.sectors.iter().cloned());
    let verify_inputs = fallback::PublicInputs {
        randomness: inputs.randomness,
        prover_id: inputs.prover_id,
        sectors: placed,
        k: None,
    };
    Ok(PostJob {
        vanilla_params,
        circuit_inputs: inputs,
        verify_inputs,
        partition_index: if before_1_2 { partition_index } else { 0 },
        proof,
    })
}

/// Partitions one WindowPoSt deadline can have: the chain's `MAX_PARTITIONS_PER_DEADLINE`.
pub const MAX_WINDOW_PARTITIONS: u32 = 3000;

/// WinningPoSt has one partition; a WindowPoSt partition lies within a deadline's partitions.
/// A WindowPoSt partition's index (WinningPoSt's is always 0: its input has none).
fn check_partition_index(index: u32) -> Result<()> {
    if index >= MAX_WINDOW_PARTITIONS {
        return Err(ProverError::InvalidRequest(format!(
            "partition_index {index} is beyond the chain's {MAX_WINDOW_PARTITIONS} partitions per \
             deadline; send the partition's index within its deadline"
        )));
    }
    Ok(())
}

/// One sector's vanilla proof as filecoin-proofs makes it: a single sector proof holding one
/// inclusion proof per challenge. Anything else would make the circuit index past its inputs.
fn check_sector_proof<Tree: MerkleTreeTrait>(
    i: usize,
    p: &FallbackPoStSectorProof<Tree>,
    challenges: usize,
) -> Result<()> {
    let sectors = &p.vanilla_proof.sectors;
    if sectors.len() != 1 {
        return Err(ProverError::InvalidRequest(format!(
            "vanilla_proofs[{i}] holds {} sector proofs; a FallbackPoStSectorProof holds exactly 1 \
             (send the output of generate_single_vanilla_proof unchanged)",
            sectors.len()
        )));
    }
    let got = sectors[0].inclusion_proofs.len();
    if got != challenges {
        return Err(ProverError::InvalidRequest(format!(
            "vanilla_proofs[{i}] holds {got} inclusion proofs; this proof type challenges \
             {challenges} per sector"
        )));
    }
    Ok(())
}

/// Checks the unrolled WinningPoSt vanilla proof against every challenge the randomness makes.
/// `partition_vanilla_proofs` checks it against inputs that list the one sector once, and the
/// fallback verifier pairs listed sectors with the proof's slots: only the first of the 66
/// one-challenge slots is checked there. With a 2 KiB sector's 64 leaves, one request in 64 made
/// for other randomness passed that check and failed only after proving.
fn check_every_winning_challenge<Tree: 'static + MerkleTreeTrait>(
    vanilla_params: &fallback::PublicParams,
    every_slot: &fallback::PublicInputs<Domain<Tree>>,
    proof: &fallback::Proof<Tree::Proof>,
) -> anyhow::Result<()> {
    let inputs = fallback::PublicInputs {
        k: Some(0),
        ..every_slot.clone()
    };
    anyhow::ensure!(
        FallbackPoSt::<Tree>::verify(vanilla_params, &inputs, proof)?,
        "an inclusion proof is not for the leaf its challenge names"
    );
    Ok(())
}

/// The vanilla proofs do not answer the challenge the request's fields describe.
fn not_for_challenge(e: &anyhow::Error, req: &PostRequest<'_>) -> ProverError {
    ProverError::InvalidRequest(format!(
        "the vanilla proofs do not verify against randomness, miner_id {} and registered_proof {} \
         ({e:#}); send the vanilla proofs generated for this randomness, miner and proof type",
        req.post.miner_id, req.post.registered.registered_proof
    ))
}

impl<Tree: 'static + MerkleTreeTrait> PostJob<Tree> {
    /// The circuit of partition `index` (already range-checked).
    fn circuit(
        &self,
        index: usize,
    ) -> Result<impl bellperson::Circuit<blstrs::Scalar> + Send + '_> {
        build_circuit(index, || {
            <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::circuit(
                &self.circuit_inputs,
                Default::default(),
                &self.proof,
                &self.vanilla_params,
                Some(0),
            )
        })
    }
}

impl<Tree: 'static + MerkleTreeTrait> KindJob for PostJob<Tree> {
    fn num_partitions(&self) -> usize {
        1
    }

    super::runs_its_circuit!();

    fn native_witness(
        &self,
        _index: usize,
        room: &CircuitMatrices,
    ) -> Option<std::result::Result<Witness, NativeError>> {
        // The circuit's sectors as `FallbackPoStCompound::circuit` picks them: this partition's
        // (the circuit inputs hold only those), the last repeated to fill the partition.
        let sectors = &self.circuit_inputs.sectors;
        let made = match sectors.last() {
            None => Err(NativeError::Shape("a partition without sectors".into())),
            Some(last) => {
                let inputs: Vec<_> = self
                    .proof
                    .sectors
                    .iter()
                    .enumerate()
                    .map(|(i, proof)| {
                        SectorValues::new::<Tree>(sectors.get(i).unwrap_or(last), proof)
                    })
                    .collect();
                native::post::witness::<Tree>(&inputs, room.num_inputs(), room.num_aux())
            }
        };
        // The public inputs as the verifier derives them, independently of the witness.
        let expected = <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::generate_public_inputs(
            &self.verify_inputs,
            &self.vanilla_params,
            Some(self.partition_index),
        );
        Some(native::checked_inputs(made, expected))
    }

    fn verify(&self, proofs: &[Proof<Bls12>], pvk: &PreparedVerifyingKey<Bls12>) -> Result<bool> {
        let inputs = <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::generate_public_inputs(
            &self.verify_inputs,
            &self.vanilla_params,
            Some(self.partition_index),
        )
        .map_err(ProverError::filecoin)?;
        let refs: Vec<&Proof<Bls12>> = proofs.iter().collect();
        verify_proofs_batch(pvk, &mut OsRng, &refs, &[inputs]).map_err(ProverError::filecoin)
    }
}

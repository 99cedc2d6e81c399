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
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_post::fallback::{self, FallbackPoSt, FallbackPoStCompound, PublicSector};

use super::check_paths;
use super::registered::post_proof;
use super::request::{bytes32, prover_id_from_miner_id};
use super::{build_circuit, run_circuit, KindJob, ProofKind, ProofRequest, Ran, Run};
use crate::error::{ProverError, Result};

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

pub(super) fn prepare(req: &ProofRequest) -> Result<(u64, String, Box<dyn KindJob>)> {
    let registered = post_proof(req.kind, req.registered_proof)?;
    let sector_size = u64::from(registered.sector_size());
    let job = with_shape!(sector_size, build, registered, req)?;
    Ok((sector_size, format!("{registered:?}"), job))
}

fn build<Tree: 'static + MerkleTreeTrait>(
    registered: RegisteredPoStProof,
    req: &ProofRequest,
) -> Result<Box<dyn KindJob>> {
    let config: PoStConfig = registered.as_v1_config();
    let randomness = bytes32("randomness", &req.randomness)?;
    let randomness: Domain<Tree> =
        as_safe_commitment(&randomness, "randomness").map_err(ProverError::filecoin)?;
    let prover_id: Domain<Tree> =
        as_safe_commitment(&prover_id_from_miner_id(req.miner_id), "prover_id")
            .map_err(ProverError::filecoin)?;

    let winning = req.kind == ProofKind::WinningPost;
    let (expected, max) = if winning {
        (config.sector_count.to_string(), config.sector_count)
    } else {
        (format!("1 to {}", config.sector_count), config.sector_count)
    };
    let count_ok = if winning {
        req.vanilla_proofs.len() == max
    } else {
        (1..=max).contains(&req.vanilla_proofs.len())
    };
    if !count_ok {
        return Err(ProverError::WrongCount {
            what: "vanilla proofs (one bincode FallbackPoStSectorProof per sector)",
            expected,
            actual: req.vanilla_proofs.len(),
        });
    }
    let vanilla: Vec<FallbackPoStSectorProof<Tree>> = req
        .vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, b)| {
            bincode::deserialize(b).map_err(|e| ProverError::Decode {
                what: format!(
                    "vanilla proof {i} (bincode FallbackPoStSectorProof for {registered:?})"
                ),
                reason: e.to_string(),
            })
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
            req.registered_proof,
            &format!("vanilla proof {i}"),
            u64::from(config.sector_size),
            paths,
        )?;
    }
    let sectors: Vec<PublicSector<Domain<Tree>>> = vanilla
        .iter()
        .map(|p| PublicSector {
            id: p.sector_id,
            comm_r: p.comm_r,
        })
        .collect();

    let (vanilla_params, circuit_inputs, verify_inputs, partition_index, proof) = if winning {
        if req.partition_index != 0 {
            return Err(ProverError::InvalidRequest(format!(
                "partition_index {} given for winning post, which has one partition; send 0",
                req.partition_index
            )));
        }
        let setup = compound_proof::SetupParams {
            vanilla_params: winning_post_setup_params(&config).map_err(ProverError::filecoin)?,
            partitions: None,
            priority: false,
        };
        let pub_params =
            FallbackPoStCompound::<Tree>::setup(&setup).map_err(ProverError::filecoin)?;
        let inputs = fallback::PublicInputs {
            randomness,
            prover_id,
            sectors,
            k: None,
        };
        // Also checks the vanilla proofs against randomness and prover id.
        let mut parts = partition_vanilla_proofs(&config, &pub_params.vanilla_params, &inputs, 1, &vanilla)
            .map_err(|e| ProverError::InvalidRequest(format!(
                "the vanilla proofs do not match randomness / miner_id ({e:#}); send the vanilla proofs generated for this challenge"
            )))?;
        // The verifier lists the sector once per circuit sector slot (`verify_winning_post`).
        let verify_inputs = fallback::PublicInputs {
            sectors: (0..pub_params.vanilla_params.sector_count)
                .flat_map(|_| inputs.sectors.clone())
                .collect(),
            ..inputs.clone()
        };
        (
            pub_params.vanilla_params,
            inputs,
            verify_inputs,
            0,
            parts.remove(0),
        )
    } else {
        let partition_index = req.partition_index as usize;
        let setup = compound_proof::SetupParams {
            vanilla_params: window_post_setup_params(&config),
            partitions: None,
            priority: false,
        };
        let vanilla_params = FallbackPoStCompound::<Tree>::setup(&setup)
            .map_err(ProverError::filecoin)?
            .vanilla_params;
        let inputs = fallback::PublicInputs {
            randomness,
            prover_id,
            sectors: sectors.clone(),
            k: Some(partition_index),
        };
        let proof = single_partition_vanilla_proofs(&config, &vanilla_params, &inputs, &vanilla)
            .map_err(|e| {
                ProverError::InvalidRequest(format!(
                    "cannot assemble the window post partition: {e:#}"
                ))
            })?;
        // The verifier chunks all sectors of the deadline; put ours at this partition's place.
        let mut placed = vec![sectors[0].clone(); partition_index * vanilla_params.sector_count];
        placed.extend(sectors);
        let verify_inputs = fallback::PublicInputs {
            randomness,
            prover_id,
            sectors: placed,
            k: None,
        };
        (
            vanilla_params,
            inputs,
            verify_inputs,
            partition_index,
            proof,
        )
    };
    Ok(Box::new(PostJob::<Tree> {
        vanilla_params,
        circuit_inputs,
        verify_inputs,
        partition_index,
        proof,
    }))
}

impl<Tree: 'static + MerkleTreeTrait> KindJob for PostJob<Tree> {
    fn num_partitions(&self) -> usize {
        1
    }

    fn run(&self, index: usize, run: Run<'_>) -> Result<Ran> {
        let circuit = build_circuit(index, || {
            <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::circuit(
                &self.circuit_inputs,
                Default::default(),
                &self.proof,
                &self.vanilla_params,
                Some(0),
            )
        })?;
        run_circuit(index, circuit, run)
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

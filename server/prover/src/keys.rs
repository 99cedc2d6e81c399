//! A circuit's Groth16 keys as loaded: proving parameters, verifying key (raw and prepared) and,
//! when used, the circuit's pre-compiled matrices.

use std::sync::{Arc, Weak};

use bellperson::groth16::{prepare_verifying_key, Parameters, PreparedVerifyingKey, VerifyingKey};
use blstrs::Bls12;

use crate::circuit::CircuitId;
use crate::error::{ProverError, Result};
use crate::synthesis::precompiled::CircuitMatrices;

/// Groth16 proving parameters and verifying key of one circuit, fully in memory, with the
/// circuit's pre-compiled matrices when they are used.
pub struct LoadedParams {
    circuit: CircuitId,
    params: Parameters<Bls12>,
    vk: VerifyingKey<Bls12>,
    pvk: PreparedVerifyingKey<Bls12>,
    size_bytes: u64,
    precompiled: Option<CircuitMatrices>,
    /// False for parameters made up for timing (`bench`): their proofs cannot verify, so the
    /// device phase does not check them.
    checked: bool,
    /// Alive as long as these keys are: a device backend keeps copies of the bases while a
    /// weak reference to this upgrades (see [`LoadedParams::residency`]).
    residency: Arc<()>,
}

impl LoadedParams {
    /// Wraps parameters already in memory (tests, benchmarks); the verifying key is `params.vk`.
    pub fn from_parameters(circuit: CircuitId, params: Parameters<Bls12>) -> Self {
        let vk = params.vk.clone();
        LoadedParams::new(circuit, params, vk, None)
    }

    /// Keys read from files: `vk` is the `.vk` file's (equal to `params.vk`, checked by the
    /// loader), `precompiled` the circuit's matrices when they are used.
    pub(crate) fn new(
        circuit: CircuitId,
        params: Parameters<Bls12>,
        vk: VerifyingKey<Bls12>,
        precompiled: Option<CircuitMatrices>,
    ) -> Self {
        let size_bytes = parameters_size_bytes(&params);
        let pvk = prepare_verifying_key(&vk);
        LoadedParams {
            circuit,
            params,
            vk,
            pvk,
            size_bytes,
            precompiled,
            checked: true,
            residency: Arc::new(()),
        }
    }

    /// The circuit's pre-compiled matrices, when loaded with the parameters.
    pub fn precompiled(&self) -> Option<&CircuitMatrices> {
        self.precompiled.as_ref()
    }

    /// Bytes of the pre-compiled matrices (0 without them); part of [`LoadedParams::size_bytes`].
    pub fn precompiled_bytes(&self) -> u64 {
        self.precompiled
            .as_ref()
            .map_or(0, CircuitMatrices::size_bytes)
    }

    /// Parameters made up for timing the device phase at production shape (random bases of the
    /// real counts): the phase runs as with real ones, but its proofs are not checked, since
    /// they cannot verify.
    #[cfg(feature = "bench")]
    pub fn unchecked(circuit: CircuitId, params: Parameters<Bls12>) -> Self {
        let mut loaded = LoadedParams::from_parameters(circuit, params);
        loaded.checked = false;
        loaded
    }

    /// Whether the device phase checks its proofs against these keys (always, but for the
    /// benchmark's made-up parameters).
    pub fn checks_proofs(&self) -> bool {
        self.checked
    }

    /// A handle that stops upgrading once these keys are dropped: what device copies of the
    /// bases are keyed by and kept for.
    pub fn residency(&self) -> Weak<()> {
        Arc::downgrade(&self.residency)
    }

    /// The circuit these parameters belong to.
    pub fn circuit_id(&self) -> CircuitId {
        self.circuit
    }

    /// Bytes held in memory: the points of every query, and the pre-compiled matrices.
    pub fn size_bytes(&self) -> u64 {
        self.size_bytes + self.precompiled_bytes()
    }

    /// Proving parameters (bases of the H, L, A, B queries and the proving key's vk part).
    pub fn parameters(&self) -> &Parameters<Bls12> {
        &self.params
    }

    /// The verifying key read from the `.vk` file.
    pub fn verifying_key(&self) -> &VerifyingKey<Bls12> {
        &self.vk
    }

    /// The prepared verifying key used by [`crate::PreparedJob::finalize`].
    pub fn prepared_verifying_key(&self) -> &PreparedVerifyingKey<Bls12> {
        &self.pvk
    }

    /// Errors unless these parameters belong to `wanted`.
    pub fn ensure_circuit(&self, wanted: CircuitId) -> Result<()> {
        if self.circuit != wanted {
            return Err(ProverError::ParamsMismatch {
                loaded: self.circuit.to_string(),
                wanted: wanted.to_string(),
            });
        }
        Ok(())
    }
}

impl std::fmt::Debug for LoadedParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedParams")
            .field("circuit", &self.circuit.to_string())
            .field("size_bytes", &self.size_bytes)
            .field("precompiled_bytes", &self.precompiled_bytes())
            .finish()
    }
}

pub(crate) fn parameters_size_bytes(p: &Parameters<Bls12>) -> u64 {
    let g1 = std::mem::size_of::<blstrs::G1Affine>() as u64;
    let g2 = std::mem::size_of::<blstrs::G2Affine>() as u64;
    let g1_points = (p.h.len() + p.l.len() + p.a.len() + p.b_g1.len()) as u64;
    g1_points * g1 + p.b_g2.len() as u64 * g2 + p.vk.ic.len() as u64 * g1
}

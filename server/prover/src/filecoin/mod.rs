//! Filecoin jobs: a [`ProofInput`] (the wire request's fields as domain types) is decoded once
//! by [`prepare`] into a [`PreparedJob`] that synthesizes partition circuits on demand and
//! verifies and serializes the finished proof.
//!
//! Layout:
//! - `blank.rs`: each kind's blank circuit, for the parameter setup and the pre-compiled matrices.
//! - `registered.rs`: `registered_proof` numbers ↔ filecoin-proofs-api enums.
//! - `request.rs`: [`ProofInput`] and field decoding (C1 wrapper, prover id, lengths).
//! - `c1_shape.rs`: a C1 output's JSON walked before it is decoded (no more arrays and objects
//!   than a C1 output holds for its size).
//! - `estimate.rs`: [`MemoryEstimate`] per partition, before synthesis.
//! - `nodes.rs`: every hash node and Merkle path element of a decoded vanilla proof checked
//!   before filecoin's verifiers see it.
//! - `porep.rs`, `post.rs`, `snap.rs`: per-kind circuits, public inputs and verification.
//! - `native/`: per-kind drivers of the native witness (the circuit's values in its allocation
//!   order, SHA-256 natively, `synthesis::native`).
//! - `synthetic/` (feature `bench`): production-shaped partition circuits from seeded random
//!   values, for benchmarks and tests; no request reaches them.

pub mod blank;
mod c1_shape;
pub mod estimate;
pub mod load_cost;
mod native;
mod nodes;
mod porep;
mod post;
pub mod registered;
mod request;
mod snap;
#[cfg(feature = "bench")]
pub mod synthetic;

#[cfg(feature = "bench")]
use bellperson::groth16::Parameters;
use bellperson::groth16::{PreparedVerifyingKey, Proof};
use blstrs::Bls12;

use crate::error::{ProverError, Result};
use crate::keys::LoadedParams;
use crate::synthesis::precompiled::CircuitMatrices;
use crate::synthesis::SynthesizedPartition;

pub use crate::circuit::{parse_sector_size, sector_size_name, CircuitId, ProofKind, SECTOR_SIZES};
pub use estimate::{CircuitShape, MemoryEstimate};
pub use native::{count_fallback as count_native_fallback, NativeSwitch};
#[cfg(feature = "fixtures")]
pub(crate) use request::bytes32 as request_bytes32;
pub use request::{
    prover_id_from_miner_id, PoRepInput, PostInput, ProofInput, Registered, SnapInput,
};

/// Bytes of one serialized Groth16 proof (compressed A, B, C).
pub const PARTITION_PROOF_BYTES: usize = 192;

/// One partition's Groth16 proof, as the device phase makes it and `finalize` takes it.
pub type PartitionProof = Proof<Bls12>;

/// Per-kind behaviour behind [`PreparedJob`].
pub(crate) trait KindJob: Send + Sync {
    fn num_partitions(&self) -> usize;
    /// Builds the circuit of partition `index` (already range-checked) and synthesizes it `how`.
    fn synthesize(&self, index: usize, how: Synthesis<'_>) -> Result<SynthesizedPartition>;
    /// Builds the circuit of partition `index` and proves it with stock bellperson
    /// (`create_random_proof`), for comparison.
    #[cfg(feature = "bench")]
    fn prove_stock(&self, index: usize, params: &Parameters<Bls12>) -> Result<StockProof>;
    /// The witness of partition `index` (already range-checked) computed natively, with room for
    /// `room`'s inputs and aux values; `None` for a kind without a native witness.
    fn native_witness(
        &self,
        _index: usize,
        _room: &CircuitMatrices,
    ) -> Option<std::result::Result<native::Witness, native::NativeError>> {
        None
    }
    /// Verifies the partition proofs (in order) with filecoin's verifier for this kind.
    fn verify(&self, proofs: &[Proof<Bls12>], pvk: &PreparedVerifyingKey<Bls12>) -> Result<bool>;
}

/// How to synthesize a partition's circuit.
pub(crate) enum Synthesis<'a> {
    /// On our constraint system.
    Plain(CircuitShape),
    /// Its witness, multiplied by the circuit's pre-compiled matrices.
    Precompiled(&'a CircuitMatrices),
}

/// A stock bellperson proof and how long bellperson spent in the circuit's `synthesize` (timed
/// around the call, so the rest of `create_random_proof` is its proving phase).
#[cfg(feature = "bench")]
pub struct StockProof {
    pub proof: Proof<Bls12>,
    pub synthesis: std::time::Duration,
}

/// The two [`KindJob`] methods that run a partition's circuit, the same in every kind: each
/// builds it with the kind's own `circuit(index)` and synthesizes it, or (feature `bench`)
/// proves it with stock bellperson.
macro_rules! runs_its_circuit {
    () => {
        fn synthesize(
            &self,
            index: usize,
            how: $crate::filecoin::Synthesis<'_>,
        ) -> $crate::Result<$crate::SynthesizedPartition> {
            $crate::filecoin::synthesize(index, self.circuit(index)?, how)
        }

        #[cfg(feature = "bench")]
        fn prove_stock(
            &self,
            index: usize,
            params: &bellperson::groth16::Parameters<blstrs::Bls12>,
        ) -> $crate::Result<$crate::filecoin::StockProof> {
            $crate::filecoin::stock_prove(self.circuit(index)?, params)
        }
    };
}
pub(crate) use runs_its_circuit;

/// Synthesizes a circuit a kind has just built, `how`.
pub(crate) fn synthesize<C: bellperson::Circuit<blstrs::Scalar> + Send>(
    index: usize,
    circuit: C,
    how: Synthesis<'_>,
) -> Result<SynthesizedPartition> {
    match how {
        Synthesis::Plain(shape) => crate::synthesis::synthesize_circuit(index, circuit, shape),
        Synthesis::Precompiled(matrices) => {
            crate::synthesis::precompiled::synthesize_precompiled(index, circuit, matrices)
        }
    }
}

/// Stock bellperson proof of a circuit (reference for benchmarks).
#[cfg(feature = "bench")]
pub(crate) fn stock_prove<C: bellperson::Circuit<blstrs::Scalar> + Send>(
    circuit: C,
    params: &Parameters<Bls12>,
) -> Result<StockProof> {
    let spent = std::sync::Mutex::new(std::time::Duration::ZERO);
    let timed = TimedCircuit {
        inner: circuit,
        spent: &spent,
    };
    let proof = bellperson::groth16::create_random_proof(timed, params, &mut rand::rngs::OsRng)
        .map_err(|e| ProverError::Device {
            backend: "bellperson".into(),
            reason: e.to_string(),
        })?;
    let synthesis = spent.into_inner().unwrap_or_else(|e| e.into_inner());
    Ok(StockProof { proof, synthesis })
}

/// A circuit that records how long its `synthesize` took (bellperson does not report it apart).
#[cfg(feature = "bench")]
struct TimedCircuit<'a, C> {
    inner: C,
    spent: &'a std::sync::Mutex<std::time::Duration>,
}

#[cfg(feature = "bench")]
impl<C: bellperson::Circuit<blstrs::Scalar>> bellperson::Circuit<blstrs::Scalar>
    for TimedCircuit<'_, C>
{
    fn synthesize<CS: bellperson::ConstraintSystem<blstrs::Scalar>>(
        self,
        cs: &mut CS,
    ) -> std::result::Result<(), bellperson::SynthesisError> {
        let start = std::time::Instant::now();
        let done = self.inner.synthesize(cs);
        *self.spent.lock().unwrap_or_else(|e| e.into_inner()) += start.elapsed();
        done
    }
}

/// A decoded request: everything needed to synthesize its partitions and check its proof.
/// `Send + Sync`; share it as `Arc<PreparedJob>` between synthesis threads and the finalizer.
pub struct PreparedJob {
    kind: ProofKind,
    circuit: CircuitId,
    registered_proof: u64,
    registered_name: String,
    inner: Box<dyn KindJob>,
    /// On until a partition proof made from a native witness fails its check.
    native: NativeSwitch,
}

impl std::fmt::Debug for PreparedJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedJob")
            .field("kind", &self.kind)
            .field("circuit", &self.circuit.to_string())
            .field("registered_proof", &self.registered_name)
            .field("partitions", &self.num_partitions())
            .finish()
    }
}

/// What a kind's decoder makes of a request.
pub(crate) struct Decoded {
    sector_size: u64,
    /// The proof type in force: the request's, or for PoRep with 0 the C1 output's own.
    registered_proof: u64,
    registered_name: String,
    job: Box<dyn KindJob>,
}

/// Decodes and checks a request. Strict where a value changes the proof (registered proof vs
/// inputs, lengths, counts, the vanilla proofs against the public inputs); a `sector_size` that
/// disagrees with `registered_proof` only logs a warning (the registered proof wins). Nothing a
/// client sends can panic out of here: a panic inside a decoder is an `InvalidRequest`.
pub fn prepare(req: &ProofInput) -> Result<PreparedJob> {
    let kind = req.kind();
    let decode = || match req {
        ProofInput::PoRep(r) => porep::prepare(r),
        ProofInput::WinningPost(post) => post::prepare(kind, post, 0),
        ProofInput::WindowPost {
            post,
            partition_index,
        } => post::prepare(kind, post, *partition_index),
        ProofInput::SnapDeals(r) => snap::prepare(r),
    };
    let decoded = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(decode)) {
        Ok(decoded) => decoded?,
        Err(panic) => {
            return Err(ProverError::InvalidRequest(format!(
                "the {} inputs are malformed: decoding them failed ({}); send the unmodified \
                 output of the step that produced them",
                kind,
                crate::synthesis::panic_message(&panic).trim_start_matches("circuit panicked: ")
            )))
        }
    };
    let Decoded {
        sector_size,
        registered_proof,
        registered_name,
        job,
    } = decoded;
    let requested = req.registered().sector_size;
    if requested != 0 && requested != sector_size {
        tracing::warn!(
            requested,
            registered = sector_size,
            registered_proof = %registered_name,
            "sector_size disagrees with registered_proof; using the registered proof's size"
        );
    }
    Ok(PreparedJob {
        kind,
        circuit: CircuitId::new(kind, sector_size)?,
        registered_proof,
        registered_name,
        inner: job,
        native: NativeSwitch::default(),
    })
}

impl PreparedJob {
    pub fn kind(&self) -> ProofKind {
        self.kind
    }

    /// The circuit (and parameter files) this job needs, e.g. `porep-2k`;
    /// `circuit_id().params_file_stem()` gives the production file stem.
    pub fn circuit_id(&self) -> CircuitId {
        self.circuit
    }

    /// Sector size in bytes, from the registered proof.
    pub fn sector_size(&self) -> u64 {
        self.circuit.sector_size()
    }

    /// The `registered_proof` value and its filecoin-proofs-api name.
    pub fn registered_proof(&self) -> (u64, &str) {
        (self.registered_proof, &self.registered_name)
    }

    /// Partitions to synthesize and prove (the proof has this many 192-byte parts).
    pub fn num_partitions(&self) -> usize {
        self.inner.num_partitions()
    }

    /// Memory one synthesized partition will hold, known before synthesis, with its device
    /// phase on the host (the most any backend needs).
    pub fn partition_memory_estimate(&self) -> MemoryEstimate {
        estimate::estimate(self.kind, self.sector_size())
    }

    /// [`PreparedJob::partition_memory_estimate`] with the device phase `on` the host or a
    /// device.
    pub fn partition_memory_estimate_on(&self, on: estimate::PhaseOn) -> MemoryEstimate {
        estimate::estimate_on(self.kind, self.sector_size(), on)
    }

    /// Synthesizes partition `index` on the recording constraint system (CPU-heavy; call from
    /// a blocking thread, at the partition's priority: its parallel parts run on that priority's
    /// pool, [`crate::threads::install`]). A panic inside the circuit becomes
    /// [`ProverError::Synthesis`].
    pub fn synthesize(&self, index: usize) -> Result<SynthesizedPartition> {
        self.synthesize_with(index, None)
    }

    /// [`PreparedJob::synthesize`], from the circuit's pre-compiled `matrices` when given: a
    /// witness pass, two sparse products (a and b) and c = a∘b: the same partition, faster. Matrices
    /// that turn out not to fit the witness are logged and the recording path is taken instead.
    pub fn synthesize_with(
        &self,
        index: usize,
        matrices: Option<&CircuitMatrices>,
    ) -> Result<SynthesizedPartition> {
        let count = self.num_partitions();
        if index >= count {
            return Err(ProverError::NoSuchPartition { index, count });
        }
        let shape = estimate::shape(self.kind, self.sector_size());
        let span = tracing::debug_span!("synthesize", circuit = %self.circuit, partition = index,
            precompiled = matrices.is_some());
        let _enter = span.enter();
        crate::threads::install(|| match matrices {
            Some(m) => match self.inner.synthesize(index, Synthesis::Precompiled(m)) {
                Err(ProverError::Precompiled(reason)) => {
                    tracing::warn!(circuit = %self.circuit, partition = index, %reason,
                        "the pre-compiled circuit does not fit this partition; synthesizing it the plain way");
                    self.inner.synthesize(index, Synthesis::Plain(shape))
                }
                other => other,
            },
            None => self.inner.synthesize(index, Synthesis::Plain(shape)),
        })
    }

    /// Proves partition `index` with stock bellperson's `create_random_proof` (synthesis and
    /// proving in one call). For benchmarks and cross-checks (feature `bench`); the engine uses
    /// [`PreparedJob::synthesize`] and a [`crate::DeviceBackend`].
    #[cfg(feature = "bench")]
    pub fn prove_with_bellperson(&self, index: usize, params: &LoadedParams) -> Result<StockProof> {
        params.ensure_circuit(self.circuit)?;
        let count = self.num_partitions();
        if index >= count {
            return Err(ProverError::NoSuchPartition { index, count });
        }
        self.inner.prove_stock(index, params.parameters())
    }

    /// Checks `proof` (192 bytes per partition, in order) with the kind's filecoin verifier and
    /// the verifying key in `params`. `Ok(false)` when it does not verify.
    pub fn verify(&self, proof: &[u8], params: &LoadedParams) -> Result<bool> {
        params.ensure_circuit(self.circuit)?;
        let proofs = parse_proofs(proof, self.num_partitions())?;
        self.inner.verify(&proofs, params.prepared_verifying_key())
    }

    /// Serializes the partition proofs (in partition order) as filecoin-proofs does, 192 bytes
    /// each, after verifying them; a proof that does not verify is
    /// [`ProverError::VerificationFailed`].
    pub fn finalize(
        &self,
        partition_proofs: &[Proof<Bls12>],
        params: &LoadedParams,
    ) -> Result<Vec<u8>> {
        params.ensure_circuit(self.circuit)?;
        if partition_proofs.len() != self.num_partitions() {
            return Err(ProverError::WrongCount {
                what: "partition proofs",
                expected: self.num_partitions().to_string(),
                actual: partition_proofs.len(),
            });
        }
        if !self
            .inner
            .verify(partition_proofs, params.prepared_verifying_key())?
        {
            return Err(ProverError::VerificationFailed { kind: self.kind });
        }
        Ok(serialize_proofs(partition_proofs))
    }
}

/// Concatenates partition proofs, 192 compressed bytes each, in the order given (partition
/// order), as filecoin-proofs serializes a multi-partition proof. [`parse_proofs`] inverts it.
pub fn serialize_proofs(partition_proofs: &[Proof<Bls12>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(PARTITION_PROOF_BYTES * partition_proofs.len());
    for p in partition_proofs {
        p.write(&mut out).expect("writing to a Vec cannot fail");
    }
    out
}

/// Splits a concatenated proof into its partition proofs.
pub fn parse_proofs(bytes: &[u8], partitions: usize) -> Result<Vec<Proof<Bls12>>> {
    if bytes.len() != partitions * PARTITION_PROOF_BYTES {
        return Err(ProverError::BadLength {
            field: "proof",
            expected: partitions * PARTITION_PROOF_BYTES,
            actual: bytes.len(),
        });
    }
    bytes
        .chunks(PARTITION_PROOF_BYTES)
        .map(|c| {
            Proof::<Bls12>::read(c).map_err(|e| ProverError::Decode {
                what: "proof".into(),
                reason: e.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;

/// Refuses Merkle inclusion proofs whose path length is not that of a `sector_size` tree: the
/// vanilla proofs were made for another sector size than `registered_proof` says.
pub(crate) fn check_paths<'a, P: storage_proofs_core::merkle::MerkleProofTrait + 'a>(
    registered: impl std::fmt::Debug,
    value: u64,
    what: &str,
    sector_size: u64,
    proofs: impl IntoIterator<Item = &'a P>,
) -> Result<()> {
    let leaves = sector_size as usize / storage_proofs_core::util::NODE_SIZE;
    for p in proofs {
        let (expected, actual) = (p.expected_len(leaves), p.path().len());
        if expected != actual {
            return Err(ProverError::RegisteredProofMismatch {
                value,
                name: format!("{registered:?}"),
                reason: format!(
                    "{what} has Merkle paths of length {actual}, a {} sector's are {expected} long",
                    sector_size_name(sector_size)
                ),
            });
        }
    }
    Ok(())
}

/// Runs a circuit-building closure, turning an error or a panic into a synthesis error.
pub(crate) fn build_circuit<C>(
    index: usize,
    f: impl FnOnce() -> anyhow_like::Result<C>,
) -> Result<C> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(ProverError::Synthesis {
            partition: index,
            reason: format!("building the circuit: {e:#}"),
        }),
        Err(p) => Err(ProverError::Synthesis {
            partition: index,
            reason: crate::synthesis::panic_message(&p),
        }),
    }
}

/// filecoin-proofs reports `anyhow` errors; we only format them.
pub(crate) mod anyhow_like {
    pub type Result<T> = std::result::Result<T, anyhow::Error>;
}

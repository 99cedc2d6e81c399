//! Split Groth16 prover for Filecoin proofs (PoRep C2, SnapDeals, WindowPoSt, WinningPoSt) on
//! BLS12-381. A job is decoded once ([`prepare`]), each partition circuit is synthesized on a CPU
//! thread into a [`SynthesizedPartition`] (witness, a/b/c evaluations, densities), the device phase
//! (H polynomial FFTs, multi-scalar multiplications, proof assembly) runs behind a
//! [`DeviceBackend`], and [`PreparedJob::finalize`] concatenates the partition proofs and checks
//! them with the filecoin verifier. Nothing here knows gRPC.
//!
//! Layout:
//! - `error`: [`ProverError`], the typed errors of every layer.
//! - `circuit`: [`CircuitId`] (a kind at a sector size), its names and parameter file stems.
//! - `keys`: [`LoadedParams`], a circuit's Groth16 keys (and pre-compiled matrices) in memory.
//! - `files`: files written all at once or not at all.
//! - `synthesis`: our `ConstraintSystem` recording a circuit's witness and a/b/c evaluations.
//! - `groth16`: the device phase written from the Groth16 construction (FFT, MSM, assembly).
//! - `backend`: the [`DeviceBackend`] trait, its CPU implementation and (feature `opencl`) the
//!   OpenCL one.
//! - `filecoin`: request decoding, per-kind circuits, memory estimates, verification.
//! - `params`: finding and loading production-named parameter files, recording pre-compiled
//!   matrices, generating local test parameters.
//! - `setup`: the Groth16 setup of local test parameters, from a circuit's recorded R1CS.
//! - `huge_pages`: large vectors advised to be backed by transparent huge pages.
//! - `spare`: a finished partition's large buffers kept for the next one, once the daemon's
//!   budget counts them.
//! - `threads`: thread nice values and the per-priority pools synthesis and the device
//!   phase's host work run on.
//! - `bench` (feature `bench`): side-by-side timing of our prover and stock bellperson (for
//!   `snarkd-bench`).
//! - `rss` (feature `bench`): the process's peak resident set, read and reset, and its CPU
//!   seconds and page faults ([`rss::Usage`]).
//! - `fixtures` (feature `fixtures`): seals a random test sector and writes inputs for all kinds.
//!
//! Parameters are read from production-named files (`v28-<identifier>.params` / `.vk`) in a
//! directory ([`default_params_dir`]: `$FIL_PROOFS_PARAMETER_CACHE` or
//! `/var/tmp/filecoin-proof-parameters`). [`generate_params`] creates local *test* parameters that
//! verify only against their own `.vk`, never on chain. The integration tests generate the 2 KiB
//! set once into `$SNARKD_TEST_PARAMS_DIR` (default `$HOME/.cache/snarkd/params-2k`) and point
//! filecoin-proofs' verifiers at it.

pub mod backend;
#[cfg(feature = "bench")]
pub mod bench;
pub mod circuit;
pub mod error;
pub mod filecoin;
mod files;
#[cfg(feature = "fixtures")]
pub mod fixtures;
pub mod groth16;
mod huge_pages;
pub mod keys;
pub mod params;
#[cfg(feature = "bench")]
pub mod rss;
pub(crate) mod setup;
pub mod spare;
pub mod synthesis;
pub mod threads;

pub use backend::{CpuBackend, DeviceBackend, PciAddress, PoolUse};
#[cfg(feature = "opencl")]
pub use backend::{OpenClBackend, OpenClOptions};
pub use error::{ProverError, Result};
pub use filecoin::{
    prepare, prover_id_from_miner_id, CircuitId, MemoryEstimate, PoRepInput, PostInput,
    PreparedJob, ProofInput, ProofKind, Registered, SnapInput,
};
pub use keys::LoadedParams;
pub use params::{
    default_params_dir, generate_params, load_params, load_params_with, params_dir_from,
    test_params_dir,
};
pub use synthesis::SynthesizedPartition;

// The engine shares jobs and parameters across threads and moves partitions between them.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<PreparedJob>();
    send_sync::<LoadedParams>();
    send_sync::<SynthesizedPartition>();
    send_sync::<CpuBackend>();
    #[cfg(feature = "opencl")]
    send_sync::<backend::OpenClBackend>();
};

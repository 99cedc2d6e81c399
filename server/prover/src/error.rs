//! Typed errors of the prover library. Messages are lowercase, carry no trailing period and say
//! what to do about the problem.

use std::path::PathBuf;

use snarkd_types::{FailureClass, ProofKind};

/// The longest decoder's message an error repeats: serde's names the unknown value whole (a
/// C1 output's proof type can be megabytes of a client's text).
const DECODE_REASON_CHARS: usize = 400;

/// Everything that can go wrong between a request and a verified proof.
#[derive(Debug, thiserror::Error)]
pub enum ProverError {
    /// The vanilla proof / C1 output could not be decoded.
    /// The reason (a decoder's message, which may quote the input) is cut short.
    #[error(
        "cannot decode {what}: {}; send the unmodified output of the step that produced it",
        snarkd_types::clip(reason, DECODE_REASON_CHARS)
    )]
    Decode { what: String, reason: String },

    /// A registered proof number outside the chain's enum for this kind.
    #[error("registered_proof {value} is not a known {kind} proof type; use the filecoin-proofs-api numbering ({hint})")]
    UnknownRegisteredProof {
        kind: ProofKind,
        value: u64,
        hint: &'static str,
    },

    /// The registered proof is known but this prover cannot produce it.
    #[error("registered_proof {value} ({name}) is not supported: {reason}")]
    UnsupportedRegisteredProof {
        value: u64,
        name: String,
        reason: &'static str,
    },

    /// The inputs were made for another proof type or sector size than `registered_proof` says.
    #[error("registered_proof {value} ({name}) does not match the inputs: {reason}; send the registered proof the inputs were made with")]
    RegisteredProofMismatch {
        value: u64,
        name: String,
        reason: String,
    },

    /// A field of the request has the wrong length.
    #[error("{field} must be {expected} bytes, got {actual}")]
    BadLength {
        field: &'static str,
        expected: usize,
        actual: usize,
    },

    /// The number of vanilla proofs / partitions does not fit the proof type.
    #[error("expected {expected} {what}, got {actual}")]
    WrongCount {
        what: &'static str,
        expected: String,
        actual: usize,
    },

    /// Some other request field is invalid (the message names it; the API layer adds the one
    /// "invalid request" prefix).
    #[error("{0}")]
    InvalidRequest(String),

    /// A partition index outside `0..num_partitions`.
    #[error("partition {index} does not exist; this job has {count} partition(s)")]
    NoSuchPartition { index: usize, count: usize },

    /// A sector size rust-fil-proofs has no circuit for.
    #[error("unsupported sector size {0} bytes; supported: 2KiB, 8MiB, 512MiB, 32GiB, 64GiB")]
    UnsupportedSectorSize(u64),

    /// A circuit name that `CircuitId::parse` does not know.
    #[error("unknown circuit id {0:?}; expected <porep|snap|wpost|winning>-<2k|8m|512m|32g|64g>")]
    UnknownCircuit(String),

    /// A parameter or verifying-key file is not where it should be.
    #[error("parameter file {} is missing; {hint}", path.display())]
    ParamsMissing { path: PathBuf, hint: String },

    /// A parameter file exists but cannot be read.
    #[error("cannot read parameter file {}: {reason}; delete it and fetch or generate it again", path.display())]
    ParamsUnreadable { path: PathBuf, reason: String },

    /// The loaded parameters belong to another circuit than the job.
    #[error(
        "parameters for circuit {loaded} cannot prove a {wanted} job; load the {wanted} parameters"
    )]
    ParamsMismatch { loaded: String, wanted: String },

    /// The synthesized partition does not have the shape the parameters expect.
    #[error("parameters do not fit the synthesized circuit: {0}; the parameter files belong to another circuit version")]
    ParamsShape(String),

    /// Circuit synthesis failed (including a caught panic).
    #[error("synthesis of partition {partition} failed: {reason}")]
    Synthesis { partition: usize, reason: String },

    /// A pre-compiled circuit could not be recorded, read or used (it is rebuilt or left out;
    /// synthesis falls back to the recording constraint system).
    #[error("pre-compiled circuit: {0}")]
    Precompiled(String),

    /// A local (test) parameter setup could not be made for a circuit.
    #[error("local parameter setup: {0}")]
    Setup(String),

    /// The device phase stopped at a step boundary because its caller asked it to (its job
    /// ended): no proof, and nothing failed.
    #[error("the device phase stopped at a step boundary: its job ended")]
    Stopped,

    /// A partition's proof does not verify against the partition's own public inputs: wrong
    /// device results, a prover fault, or a witness that does not satisfy the circuit (a native
    /// witness in the wrong layout). Proving the partition again may succeed.
    #[error("the partition proof does not verify against the partition's own public inputs: {0}")]
    PartitionProofInvalid(String),

    /// The device phase (FFT/MSM) failed.
    #[error("device phase on backend {backend} failed: {reason}")]
    Device { backend: String, reason: String },

    /// The assembled proof does not verify.
    #[error("the {kind} proof does not verify against its public inputs; the inputs (C1 output, vanilla proofs, randomness, commitments, miner id, sector number) are inconsistent or the parameters do not match the verifying key")]
    VerificationFailed { kind: ProofKind },

    /// An error reported by filecoin-proofs / storage-proofs.
    #[error("filecoin-proofs: {0}")]
    Filecoin(String),

    /// Local file system trouble.
    #[error("i/o error on {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl ProverError {
    /// Whose fault it is: what a client, an operator or a retry can do about it.
    pub fn class(&self) -> FailureClass {
        match self {
            ProverError::Decode { .. }
            | ProverError::UnknownRegisteredProof { .. }
            | ProverError::UnsupportedRegisteredProof { .. }
            | ProverError::RegisteredProofMismatch { .. }
            | ProverError::BadLength { .. }
            | ProverError::WrongCount { .. }
            | ProverError::InvalidRequest(_)
            | ProverError::NoSuchPartition { .. }
            | ProverError::UnsupportedSectorSize(_)
            | ProverError::UnknownCircuit(_)
            // A witness the circuit rejects, or a final proof that does not verify: the
            // request's parts do not belong together (each was checked alone at submit).
            | ProverError::Synthesis { .. }
            | ProverError::VerificationFailed { .. }
            // filecoin-proofs' own checks of the request's vanilla proofs and commitments.
            | ProverError::Filecoin(_) => FailureClass::Input,
            ProverError::ParamsMissing { .. }
            | ProverError::ParamsUnreadable { .. }
            | ProverError::ParamsMismatch { .. }
            | ProverError::ParamsShape(_)
            | ProverError::Precompiled(_)
            | ProverError::Setup(_)
            | ProverError::Io { .. } => FailureClass::Setup,
            // A wrong result from the device, or a native witness in the wrong layout (whose job
            // then synthesizes from the gadgets): proving the partition again may succeed.
            ProverError::PartitionProofInvalid(_) | ProverError::Device { .. } => {
                FailureClass::Device
            }
            // Not a failure: a phase stopped because its job ended. Asked for a class, it is
            // one only a bug could have made a failure.
            ProverError::Stopped => FailureClass::Bug,
        }
    }

    pub(crate) fn filecoin(e: impl std::fmt::Display) -> Self {
        ProverError::Filecoin(format!("{e:#}"))
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        ProverError::Io {
            path: path.into(),
            source,
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = ProverError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_requests_are_input_missing_parameters_setup_and_device_errors_device() {
        let table = [
            (
                ProverError::BadLength {
                    field: "randomness",
                    expected: 32,
                    actual: 3,
                },
                FailureClass::Input,
            ),
            (
                ProverError::VerificationFailed {
                    kind: ProofKind::WinningPost,
                },
                FailureClass::Input,
            ),
            (
                ProverError::ParamsMissing {
                    path: "v28-x.params".into(),
                    hint: "fetch it".into(),
                },
                FailureClass::Setup,
            ),
            (
                ProverError::ParamsShape("6 != 7".into()),
                FailureClass::Setup,
            ),
            (
                ProverError::Device {
                    backend: "opencl:0".into(),
                    reason: "CL_OUT_OF_RESOURCES".into(),
                },
                FailureClass::Device,
            ),
            (
                ProverError::PartitionProofInvalid("pairing".into()),
                FailureClass::Device,
            ),
        ];
        for (error, class) in table {
            assert_eq!(error.class(), class, "{error}");
        }
    }

    #[test]
    fn a_decoders_message_quoting_the_input_is_cut_short() {
        let quoted = format!(
            "unknown variant `{}`, expected one of …",
            "Z".repeat(262_144)
        );
        let error = ProverError::Decode {
            what: "porep c1 output".into(),
            reason: quoted,
        };
        let message = error.to_string();
        assert!(message.len() < 600, "{} bytes", message.len());
        assert!(message.contains("unknown variant `ZZZ"), "{message}");
        assert!(message.ends_with("send the unmodified output of the step that produced it"));
    }
}

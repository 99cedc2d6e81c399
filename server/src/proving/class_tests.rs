//! Every prover error's class, and what the bridge makes of it: a step's retry, a refusal's
//! gRPC code.

use super::*;

/// Every prover error, one of each variant: the `match` in `every_variant_is_here` fails to
/// compile when a variant is added without a row here.
fn one_of_each() -> Vec<ProverError> {
    use snarkd_prover::ProofKind as Kind;
    vec![
        ProverError::Decode {
            what: "c1 output".into(),
            reason: "eof".into(),
        },
        ProverError::UnknownRegisteredProof {
            kind: Kind::WinningPost,
            value: 99,
            hint: "0-4",
        },
        ProverError::UnsupportedRegisteredProof {
            value: 5,
            name: "v1".into(),
            reason: "old",
        },
        ProverError::RegisteredProofMismatch {
            value: 3,
            name: "2KiB".into(),
            reason: "32GiB inputs".into(),
        },
        ProverError::BadLength {
            field: "randomness",
            expected: 32,
            actual: 3,
        },
        ProverError::WrongCount {
            what: "vanilla proofs",
            expected: "1".into(),
            actual: 2,
        },
        ProverError::InvalidRequest("prover id".into()),
        ProverError::NoSuchPartition { index: 9, count: 1 },
        ProverError::UnsupportedSectorSize(3),
        ProverError::UnknownCircuit("porep-3k".into()),
        ProverError::ParamsMissing {
            path: "v28-x.params".into(),
            hint: "fetch it".into(),
        },
        ProverError::ParamsUnreadable {
            path: "v28-x.params".into(),
            reason: "eof".into(),
        },
        ProverError::ParamsMismatch {
            loaded: "porep-2k".into(),
            wanted: "winning-2k".into(),
        },
        ProverError::ParamsShape("6 != 7".into()),
        ProverError::Synthesis {
            partition: 0,
            reason: "unsatisfied".into(),
        },
        ProverError::Precompiled("truncated".into()),
        ProverError::Setup("no room".into()),
        ProverError::Stopped,
        ProverError::PartitionProofInvalid("pairing".into()),
        ProverError::Device {
            backend: "opencl:0".into(),
            reason: "CL_OUT_OF_RESOURCES".into(),
        },
        ProverError::VerificationFailed {
            kind: Kind::WindowPost,
        },
        ProverError::Filecoin("bad comm_r".into()),
        ProverError::Io {
            path: "x".into(),
            source: std::io::Error::other("disk"),
        },
    ]
}

#[test]
fn every_variant_is_here() {
    for e in one_of_each() {
        match e {
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
            | ProverError::ParamsMissing { .. }
            | ProverError::ParamsUnreadable { .. }
            | ProverError::ParamsMismatch { .. }
            | ProverError::ParamsShape(_)
            | ProverError::Synthesis { .. }
            | ProverError::Precompiled(_)
            | ProverError::Setup(_)
            | ProverError::Stopped
            | ProverError::PartitionProofInvalid(_)
            | ProverError::Device { .. }
            | ProverError::VerificationFailed { .. }
            | ProverError::Filecoin(_)
            | ProverError::Io { .. } => {}
        }
    }
}

#[test]
fn each_prover_error_lands_in_its_class_and_grpc_code_and_only_a_devices_is_retried() {
    use crate::api::error::code_of;
    use tonic::Code;
    for (e, again) in one_of_each().into_iter().zip(one_of_each()) {
        let (text, class) = (e.to_string(), e.class());
        let stopped = matches!(e, ProverError::Stopped);
        // Met in a step: the class travels with it; only a device's is worth another try.
        let step = step_error(again);
        match (stopped, &step) {
            (true, StepError::Stopped) => {}
            (false, StepError::Failed { class: c, message }) => {
                assert_eq!((*c, message.as_str()), (class, text.as_str()));
                assert_eq!(step.is_retryable(), class == FailureClass::Device, "{text}");
            }
            _ => panic!("{text}: {step:?}"),
        }
        // Met at submit or a parameter load: the gRPC code of its class.
        let refused = engine_error(e);
        let code = match class {
            FailureClass::Input => Code::InvalidArgument,
            FailureClass::Setup => Code::FailedPrecondition,
            _ => Code::Internal,
        };
        assert_eq!(code_of(&refused), code, "{text}");
        if class != FailureClass::Bug && class != FailureClass::Device {
            assert_eq!(refused.class(), class, "{text}");
        }
    }
}

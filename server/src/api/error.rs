//! The one place an engine error becomes a gRPC status: each variant has exactly one code, and
//! the message is the error's own text (what is wrong and what to do).

use snarkd_engine::EngineError;
use tonic::{Code, Status};

/// The gRPC code of an engine error.
pub fn code_of(err: &EngineError) -> Code {
    match err {
        EngineError::InvalidRequest(_) => Code::InvalidArgument,
        EngineError::UnknownJob(_) => Code::NotFound,
        // The set of circuits is fixed: an unknown id is a wrong argument, not a missing entity.
        EngineError::UnknownCircuit(_) => Code::InvalidArgument,
        EngineError::TooLarge { .. } => Code::ResourceExhausted,
        // The params are held by jobs: evicting them must wait until those jobs end.
        EngineError::ParamsInUse(_) => Code::FailedPrecondition,
        // The budget is full right now; the same call can succeed once jobs end.
        EngineError::NoRoom { .. } => Code::ResourceExhausted,
        // An intake limit: the same call can succeed once work ends.
        EngineError::LimitReached { .. } => Code::ResourceExhausted,
        EngineError::ShuttingDown => Code::Unavailable,
        // The disk under [jobs] dir failed; the request itself was fine.
        EngineError::Journal(_) => Code::Unavailable,
        // Outside a job, prover failures are about this machine's state (params missing or
        // unreadable): the operator fixes them, the same call then succeeds.
        EngineError::Prover(_) => Code::FailedPrecondition,
    }
}

/// The gRPC status of an engine error.
pub fn status_of(err: EngineError) -> Status {
    Status::new(code_of(&err), err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_engine_error_has_its_code_and_keeps_its_message() {
        let table = [
            (
                EngineError::InvalidRequest("randomness is 3 bytes".into()),
                Code::InvalidArgument,
            ),
            (EngineError::UnknownJob("j1".into()), Code::NotFound),
            (
                EngineError::UnknownCircuit("porep-99g".into()),
                Code::InvalidArgument,
            ),
            (
                EngineError::TooLarge {
                    needed: "14 GiB".into(),
                    budget: "8 GiB".into(),
                },
                Code::ResourceExhausted,
            ),
            (
                EngineError::ParamsInUse("porep-2k".into()),
                Code::FailedPrecondition,
            ),
            (
                EngineError::NoRoom {
                    circuit_id: "porep-32g".into(),
                    needed: "47 GiB".into(),
                    free: "3 GiB".into(),
                },
                Code::ResourceExhausted,
            ),
            (
                EngineError::LimitReached {
                    limit: "queued_jobs",
                    value: "256".into(),
                    detail: "256 LOW jobs are queued or running".into(),
                },
                Code::ResourceExhausted,
            ),
            (EngineError::ShuttingDown, Code::Unavailable),
            (EngineError::Journal("disk full".into()), Code::Unavailable),
            (
                EngineError::Prover("params file missing".into()),
                Code::FailedPrecondition,
            ),
        ];
        for (err, code) in table {
            let text = err.to_string();
            let status = status_of(err);
            assert_eq!(status.code(), code, "{text}");
            assert_eq!(status.message(), text);
        }
    }
}

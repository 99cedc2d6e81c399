//! The one place an engine error becomes a gRPC status: each variant has exactly one code, and
//! the message is the error's own text (what is wrong and what to do). By class: a client's
//! fault is INVALID_ARGUMENT or NOT_FOUND (never worth a retry), an operator's FAILED_PRECONDITION
//! (the message names what to fix), a resource's RESOURCE_EXHAUSTED, UNAVAILABLE or
//! FAILED_PRECONDITION (the message says what to wait for or raise), a bug INTERNAL (and logged).

use snarkd_engine::error::FailureClass;
use snarkd_engine::EngineError;
use tonic::{Code, Status};

/// The gRPC code of an engine error.
pub fn code_of(err: &EngineError) -> Code {
    match err {
        EngineError::InvalidRequest(_) => Code::InvalidArgument,
        EngineError::UnknownJob(_) => Code::NotFound,
        // The set of circuits is fixed: an unknown id is a wrong argument, not a missing entity.
        EngineError::UnknownCircuit(_) => Code::InvalidArgument,
        // Never fits this machine's budget: retrying cannot help until the operator raises it.
        EngineError::TooLarge { .. } => Code::FailedPrecondition,
        // The params are held by jobs: evicting them must wait until those jobs end.
        EngineError::ParamsInUse(_) => Code::FailedPrecondition,
        // The budget is full right now; the same call can succeed once jobs end.
        EngineError::NoRoom { .. } => Code::ResourceExhausted,
        // An intake limit: the same call can succeed once work ends.
        EngineError::LimitReached { .. } => Code::ResourceExhausted,
        EngineError::ShuttingDown => Code::Unavailable,
        // The disk under [jobs] dir failed; the request itself was fine.
        EngineError::Journal(_) => Code::Unavailable,
        // This machine's state (params missing or unreadable): the operator fixes it, the
        // same call then succeeds.
        EngineError::Setup(_) => Code::FailedPrecondition,
        EngineError::Internal(_) => Code::Internal,
    }
}

/// Whose fault a refusal answered with `code` is: the class whose errors get that code (a
/// refusal made before the engine saw the request, an intake limit say, has no engine error).
pub fn class_of_code(code: Code) -> FailureClass {
    match code {
        Code::InvalidArgument | Code::NotFound | Code::AlreadyExists | Code::OutOfRange => {
            FailureClass::Input
        }
        Code::FailedPrecondition | Code::Unauthenticated | Code::PermissionDenied => {
            FailureClass::Setup
        }
        Code::ResourceExhausted | Code::Unavailable | Code::DeadlineExceeded | Code::Aborted => {
            FailureClass::Resource
        }
        _ => FailureClass::Bug,
    }
}

/// The gRPC status of an engine error; a bug is logged with its message.
pub fn status_of(err: EngineError) -> Status {
    if err.class() == FailureClass::Bug {
        tracing::error!(error = %err, "a request failed on a bug in snarkd");
    }
    Status::new(code_of(&err), err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_engine_error_has_its_code_and_class_and_keeps_its_message() {
        use FailureClass::*;
        let table = [
            (
                EngineError::InvalidRequest("randomness is 3 bytes".into()),
                Code::InvalidArgument,
                Input,
            ),
            (EngineError::UnknownJob("j1".into()), Code::NotFound, Input),
            (
                EngineError::UnknownCircuit("porep-99g".into()),
                Code::InvalidArgument,
                Input,
            ),
            (
                EngineError::TooLarge {
                    needed: "14 GiB".into(),
                    budget: "8 GiB".into(),
                },
                Code::FailedPrecondition,
                Setup,
            ),
            (
                EngineError::ParamsInUse("porep-2k".into()),
                Code::FailedPrecondition,
                Resource,
            ),
            (
                EngineError::NoRoom {
                    circuit_id: "porep-32g".into(),
                    needed: "47 GiB".into(),
                    free: "3 GiB".into(),
                },
                Code::ResourceExhausted,
                Resource,
            ),
            (
                EngineError::LimitReached {
                    limit: "queued_jobs",
                    value: "256".into(),
                    detail: "256 LOW jobs are queued or running".into(),
                },
                Code::ResourceExhausted,
                Resource,
            ),
            (EngineError::ShuttingDown, Code::Unavailable, Resource),
            (
                EngineError::Journal("disk full".into()),
                Code::Unavailable,
                Resource,
            ),
            (
                EngineError::Setup("parameter file v28-x.params is missing".into()),
                Code::FailedPrecondition,
                Setup,
            ),
            (
                EngineError::Internal("the planner panicked".into()),
                Code::Internal,
                Bug,
            ),
        ];
        for (err, code, class) in table {
            let text = err.to_string();
            assert_eq!(err.class(), class, "{text}");
            let status = status_of(err);
            assert_eq!(status.code(), code, "{text}");
            assert_eq!(status.message(), text);
        }
    }
}

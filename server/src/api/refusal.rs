//! A request refused at submit becomes an entry of the engine's failure log, so that the monitor
//! and every status reader see it although it never became a job. What the client sent is
//! cut to a bounded length first: the log must not hold a client's megabytes.

use snarkd_engine::failures::{Failed, Failure};
use snarkd_engine::ProofKind;
use snarkd_proto::v1 as pb;
use snarkd_types::clip;
use tonic::Status;

use super::request;
use super::status::now_unix_ms;

/// The longest request id the log keeps (longer ones are cut, with a mark).
const REQUEST_ID_CHARS: usize = 200;
/// The longest message the log keeps.
const MESSAGE_CHARS: usize = 2000;

/// What a refusal is logged with: the request's id and kind as sent, read before any check.
pub struct Sent {
    request_id: String,
    kind: Option<ProofKind>,
}

impl Sent {
    /// From the submit request as it arrived (None when a Prove call carried none).
    pub fn of(req: Option<&pb::SubmitProofRequest>) -> Sent {
        match req {
            Some(r) => Sent::new(&r.request_id, request::proof_kind(r.proof_kind).ok()),
            None => Sent::new("", None),
        }
    }

    /// From what is known of a request: its id (as far as it arrived) and kind.
    pub fn new(request_id: &str, kind: Option<ProofKind>) -> Sent {
        Sent {
            request_id: clip(request_id, REQUEST_ID_CHARS).into_owned(),
            kind,
        }
    }

    /// The log entry for this request, refused with `status`.
    pub fn refused(self, status: &Status) -> Failure {
        Failure {
            at_unix_ms: now_unix_ms(),
            kind: self.kind,
            request_id: self.request_id,
            what: Failed::Refused {
                code: code_name(status.code()),
            },
            class: super::error::class_of_code(status.code()),
            message: clip(status.message(), MESSAGE_CHARS).into_owned(),
        }
    }
}

/// A gRPC code as the protocol spells it: `InvalidArgument` → `INVALID_ARGUMENT`.
fn code_name(code: tonic::Code) -> String {
    let mut name = String::new();
    for (i, c) in format!("{code:?}").chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            name.push('_');
        }
        name.push(c.to_ascii_uppercase());
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_keeps_what_was_sent_cut_to_size_and_names_its_code() {
        let req = pb::SubmitProofRequest {
            request_id: "x".repeat(10_000),
            proof_kind: pb::ProofKind::WinningPost as i32,
            ..Default::default()
        };
        let failure = Sent::of(Some(&req)).refused(&Status::resource_exhausted("é".repeat(5_000)));
        let kept = |text: &str| text.split('…').next().unwrap().chars().count();
        assert_eq!(kept(&failure.request_id), REQUEST_ID_CHARS);
        assert!(failure.request_id.ends_with("… (9800 more characters)"));
        assert_eq!(kept(&failure.message), MESSAGE_CHARS);
        assert_eq!(failure.what.code(), Some("RESOURCE_EXHAUSTED"));
        assert_eq!(failure.kind, Some(ProofKind::WinningPost));
        assert_eq!(
            (failure.what.stage_name(), failure.what.job_id()),
            ("refused", None)
        );

        let unknown = pb::SubmitProofRequest {
            request_id: "r".into(),
            proof_kind: 99,
            ..Default::default()
        };
        let failure = Sent::of(Some(&unknown)).refused(&Status::invalid_argument("bad kind"));
        assert_eq!(
            (failure.kind, failure.what.code()),
            (None, Some("INVALID_ARGUMENT"))
        );
        assert_eq!(
            Sent::of(None)
                .refused(&Status::unavailable("x"))
                .what
                .code(),
            Some("UNAVAILABLE")
        );
    }
}

//! What every ProvingEngine call's request may be, checked before tonic decodes it, on both
//! ports. [`MessageLimit`] reads each request's body itself ([`BodyReader`]): one gRPC message
//! (a second is INVALID_ARGUMENT), no larger than its method takes (256 MiB for SubmitProof and
//! Prove, what `[limits] stream_job_ids` ids need for StreamStatus, 64 KiB for the others), and
//! whole within `[limits] body_read_timeout`. A SubmitProof or Prove first gets a decoding slot
//! ([`DecodeSlots`]) by the kind its first bytes name, so at most that many inputs are buffered
//! and decoded at once and the deadline kinds always have slots of their own. Every refusal
//! here is counted, logged (at most once a second) and, for proof requests, put in the failure
//! log. tonic's own OUT_OF_RANGE for an oversized message is rewritten to gRPC's convention
//! (and what Curio's Go client reports), RESOURCE_EXHAUSTED.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response};
use snarkd_engine::failures::Failure;
use snarkd_proto::v1::proving_engine_server::{ProvingEngine, ProvingEngineServer};
use tonic::body::Body;
use tonic::server::NamedService;
use tonic::{Code, Status};

use super::decode_slots::DecodeSlots;
use super::refusal::Sent;
use super::request::proof_kind;
use super::request_body::{BodyError, BodyReader};
use super::{stream, wire_scan};
use crate::once_per_second::OncePerSecond;

pub use super::decode_slots::DecodeSlot;
pub use snarkd_proto::MAX_MESSAGE_BYTES;

/// The generated server for `service`, taking and sending messages of up to [`MAX_MESSAGE_BYTES`]
/// (tonic's defaults are 4 MiB in and unlimited out).
pub fn sized<T: ProvingEngine>(service: T) -> ProvingEngineServer<T> {
    ProvingEngineServer::new(service)
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES)
}

/// The calls that carry no inputs: their fields are ids and numbers.
pub const SMALL_CALLS: [&str; 6] = [
    "GetStatus",
    "AwaitProof",
    "CancelProof",
    "GetMetrics",
    "PreloadSRS",
    "EvictSRS",
];
/// Largest request of the [`SMALL_CALLS`].
pub const SMALL_REQUEST_BYTES: usize = 64 * 1024;
/// Bytes one followed job id may take in a StreamStatus request: key, length and the id (a job
/// id is 36 characters).
const JOB_ID_WIRE_BYTES: usize = 67;

/// What the limit layer knows of a call, by its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    /// SubmitProof, or Prove when `prove`.
    Input {
        prove: bool,
    },
    StreamStatus,
    Small,
}

impl Call {
    fn of(path: &str) -> Call {
        match path.rsplit('/').next() {
            Some("SubmitProof") => Call::Input { prove: false },
            Some("Prove") => Call::Input { prove: true },
            Some("StreamStatus") => Call::StreamStatus,
            _ => Call::Small,
        }
    }
}

/// The part of `[limits]` the layer applies, and where its refusals of proof requests go.
#[derive(Clone)]
pub struct Intake {
    pub slots: DecodeSlots,
    pub body_read_timeout: Duration,
    pub stream_job_ids: usize,
    pub request_id_bytes: usize,
    /// Adds a refused proof request to the engine's failure log.
    pub note_refusal: Arc<dyn Fn(Failure) + Send + Sync>,
}

/// A refusal, with the `[limits]` key (or rule) it comes from, for the metric.
struct Refused {
    limit: &'static str,
    status: Status,
}

impl Intake {
    /// A call's largest message.
    fn limit(&self, call: Call) -> usize {
        match call {
            Call::Input { .. } => MAX_MESSAGE_BYTES,
            Call::StreamStatus => SMALL_REQUEST_BYTES + self.stream_job_ids * JOB_ID_WIRE_BYTES,
            Call::Small => SMALL_REQUEST_BYTES,
        }
    }

    /// Reads and checks `req`'s body (taking a decoding slot for a proof request), and hands the
    /// request on with the body read, or says why not.
    async fn admit(&self, req: Request<Body>) -> Result<Request<Body>, Status> {
        let call = Call::of(req.uri().path());
        let method = method_name(req.uri().path());
        let (mut parts, body) = req.into_parts();
        let mut reader = BodyReader::new(body, self.limit(call), self.body_read_timeout);
        let mut sent = None;
        let read = async {
            if let Call::Input { prove } = call {
                reader
                    .fill(self.request_id_bytes + 32)
                    .await
                    .map_err(|e| self.body_refusal(e, call, &method))?;
                let (request_id, kind) = wire_scan::submit_head(reader.buffered(), prove);
                let kind = kind.and_then(|k| proof_kind(k).ok());
                sent = Some(Sent::new(request_id.as_deref().unwrap_or(""), kind));
                let slot = self.slots.take(kind).map_err(|status| Refused {
                    limit: "decoding_requests",
                    status,
                })?;
                parts.extensions.insert(slot);
            }
            let bytes = reader
                .finish()
                .await
                .map_err(|e| self.body_refusal(e, call, &method))?;
            self.check_counts(call, &bytes)?;
            Ok(bytes)
        };
        match read.await {
            Ok(bytes) => Ok(Request::from_parts(
                parts,
                Body::new(http_body_util::Full::new(bytes)),
            )),
            Err(Refused { limit, status }) => {
                observe_refusal(&method, limit, &status);
                if let Some(sent) = sent {
                    (self.note_refusal)(sent.refused(&status));
                }
                Err(status)
            }
        }
    }

    fn body_refusal(&self, error: BodyError, call: Call, method: &str) -> Refused {
        let (limit, status) = match error {
            BodyError::TooLarge(found) => match call {
                Call::Input { .. } => (
                    "message_size",
                    Status::resource_exhausted(oversized_message(&found.to_string())),
                ),
                Call::StreamStatus => (
                    "stream_job_ids",
                    Status::resource_exhausted(format!(
                    "a StreamStatus request is at most {} bytes (what [limits] stream_job_ids = {} \
                     job ids take), and this one is {found}: follow fewer jobs per stream",
                    self.limit(call), self.stream_job_ids
                )),
                ),
                Call::Small => (
                    "message_size",
                    Status::resource_exhausted(format!(
                    "{method} requests are at most {SMALL_REQUEST_BYTES} bytes, and this one is \
                     {found}: its fields are ids and numbers, send only those"
                )),
                ),
            },
            BodyError::MoreThanOne => (
                "one_message",
                Status::invalid_argument(format!(
                    "the {method} request body holds more than one message, and the call takes \
                 exactly one: send one message per call"
                )),
            ),
            BodyError::Late => (
                "body_read_timeout",
                Status::resource_exhausted(format!(
                "the request body did not arrive within the body_read_timeout limit ({}): send \
                 it over a faster link, or raise [limits] body_read_timeout",
                humantime::format_duration(self.body_read_timeout)
            )),
            ),
            BodyError::Broken(err) => (
                "broken_body",
                Status::cancelled(format!(
                    "the request body could not be read ({err}); send it again"
                )),
            ),
        };
        Refused { limit, status }
    }

    /// Counts on the wire what prost would make one allocation each of.
    fn check_counts(&self, call: Call, bytes: &[u8]) -> Result<(), Refused> {
        match call {
            Call::Input { prove } => match wire_scan::vanilla_proofs_in_frame(bytes, prove) {
                Some(n) if n > wire_scan::MAX_VANILLA_PROOFS => Err(Refused {
                    limit: "vanilla_proofs",
                    status: Status::invalid_argument(format!(
                        "invalid request: vanilla_proofs has {n} entries, and no proof kind takes \
                         more than {} (a 32 GiB WindowPoSt partition's sectors): send one entry \
                         per sector (PoSt) or per partition (SnapDeals)",
                        wire_scan::MAX_VANILLA_PROOFS
                    )),
                }),
                _ => Ok(()),
            },
            Call::StreamStatus => match wire_scan::job_ids_in_frame(bytes) {
                Some(n) if n > self.stream_job_ids => Err(Refused {
                    limit: "stream_job_ids",
                    status: stream::too_many_job_ids(n, self.stream_job_ids),
                }),
                _ => Ok(()),
            },
            Call::Small => Ok(()),
        }
    }
}

/// The method a path names, cut short: a client chooses the path.
fn method_name(path: &str) -> String {
    path.rsplit('/')
        .next()
        .unwrap_or("")
        .chars()
        .take(40)
        .collect()
}

/// Refusals before a call is decoded: counted on their own (and with the calls, by
/// [`super::grpc_metrics`]), logged.
fn observe_refusal(method: &str, limit: &'static str, status: &Status) {
    metrics::counter!("snarkd_intake_refusals_total", "limit" => limit).increment(1);
    if let Some(suppressed) = LOG_REFUSALS.allow() {
        tracing::warn!(method, limit, code = ?status.code(), message = status.message(),
            suppressed, "request refused before decoding (logged at most once a second)");
    }
}

static LOG_REFUSALS: OncePerSecond = OncePerSecond::new();

/// Wraps the ProvingEngine service so every request is read and checked by [`Intake`] first.
#[derive(Clone)]
pub struct MessageLimit<S> {
    inner: S,
    intake: Arc<Intake>,
}

impl<S> MessageLimit<S> {
    pub fn new(inner: S, intake: Intake) -> Self {
        MessageLimit {
            inner,
            intake: Arc::new(intake),
        }
    }
}

impl<S: NamedService> NamedService for MessageLimit<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> tower::Service<Request<Body>> for MessageLimit<S>
where
    S: tower::Service<Request<Body>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let intake = self.intake.clone();
        // The ready service goes into the future; a clone stays for the next call.
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        Box::pin(async move {
            let req = match intake.admit(req).await {
                Ok(req) => req,
                Err(refused) => return Ok(refused.into_http()),
            };
            let mut response = inner.call(req).await?;
            rewrite_oversized(&mut response);
            Ok(response)
        })
    }
}

/// tonic's text for a request over the decoding limit.
const TONIC_TOO_LARGE: &str = "decoded message length too large: found ";

fn rewrite_oversized<R>(response: &mut Response<R>) {
    let Some(status) = Status::from_header_map(response.headers()) else {
        return;
    };
    if status.code() != Code::OutOfRange {
        return;
    }
    let Some(rest) = status.message().split(TONIC_TOO_LARGE).nth(1) else {
        return;
    };
    let found: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let ours = Status::resource_exhausted(oversized_message(&found));
    let headers = response.headers_mut();
    headers.remove("grpc-status");
    headers.remove("grpc-message");
    headers.remove("grpc-status-details-bin");
    let _ = ours.add_header(headers);
}

/// What an oversized request is told.
pub fn oversized_message(found_bytes: &str) -> String {
    format!(
        "request message is {found_bytes} bytes, over snarkd's limit of {MAX_MESSAGE_BYTES} bytes (256 MiB): \
         send smaller inputs (Curio's requests stay under this limit)"
    )
}

#[cfg(test)]
#[path = "limits_tests.rs"]
mod served;

#[cfg(test)]
#[path = "limits_admit_tests.rs"]
mod admitted;

#[cfg(test)]
mod tests {
    use super::*;

    fn response_with(status: Status) -> Response<()> {
        status.into_http()
    }

    #[test]
    fn oversized_requests_become_resource_exhausted() {
        let mut r = response_with(Status::out_of_range(
            "Error, decoded message length too large: found 268435460 bytes, the limit is: 268435456 bytes",
        ));
        rewrite_oversized(&mut r);
        let status = Status::from_header_map(r.headers()).unwrap();
        assert_eq!(status.code(), Code::ResourceExhausted);
        assert!(
            status.message().contains("268435460 bytes"),
            "{}",
            status.message()
        );
        assert!(status.message().contains("256 MiB"), "{}", status.message());
    }

    #[test]
    fn other_statuses_pass_through() {
        for status in [
            Status::out_of_range("index 9 out of range"),
            Status::not_found("no job"),
        ] {
            let code = status.code();
            let mut r = response_with(status);
            rewrite_oversized(&mut r);
            assert_eq!(Status::from_header_map(r.headers()).unwrap().code(), code);
        }
    }
}

//! The message-size limit and the decoding slots. tonic rejects an oversized request with
//! OUT_OF_RANGE; gRPC's own convention (and what Curio's Go client reports) is
//! RESOURCE_EXHAUSTED, so [`MessageLimit`] rewrites that one status and says what to do about it.
//! It also hands each SubmitProof and Prove request one of `[limits] decoding_requests` slots
//! before tonic reads its body, so at most that many inputs (each up to 256 MiB) are buffered and
//! decoded at once; a request finding none free is answered RESOURCE_EXHAUSTED unread.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response};
use snarkd_proto::v1::proving_engine_server::{ProvingEngine, ProvingEngineServer};

use super::wire_scan;
use http_body_util::BodyExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::body::Body;
use tonic::server::NamedService;
use tonic::{Code, Status};

pub use snarkd_proto::MAX_MESSAGE_BYTES;

/// The generated server for `service`, taking and sending messages of up to [`MAX_MESSAGE_BYTES`]
/// (tonic's defaults are 4 MiB in and unlimited out). Wrapped in [`MessageLimit`], an oversized
/// request is answered RESOURCE_EXHAUSTED and at most `decoding_requests` SubmitProof and Prove
/// requests are read and decoded at once.
pub fn sized<T: ProvingEngine>(service: T) -> ProvingEngineServer<T> {
    ProvingEngineServer::new(service)
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES)
}

/// The methods whose requests carry proof inputs.
const INPUT_PATHS: [&str; 2] = [
    "/cuzk.v1.ProvingEngine/SubmitProof",
    "/cuzk.v1.ProvingEngine/Prove",
];

/// One `[limits] decoding_requests` slot, in the request's extensions from [`MessageLimit`] to
/// the handler: the slot is free again once every clone is dropped, which the handler does when
/// the request is decoded and submitted (a Prove call then waits for its proof without one).
#[derive(Clone)]
pub struct DecodeSlot(#[allow(dead_code)] Arc<OwnedSemaphorePermit>);

/// Wraps a gRPC service so an oversized request is answered RESOURCE_EXHAUSTED, and input
/// requests take a decoding slot first.
#[derive(Debug, Clone)]
pub struct MessageLimit<S> {
    inner: S,
    decoding: Arc<Semaphore>,
    decoding_requests: usize,
}

impl<S> MessageLimit<S> {
    pub fn new(inner: S, decoding_requests: usize) -> Self {
        MessageLimit {
            inner,
            decoding: Arc::new(Semaphore::new(decoding_requests)),
            decoding_requests,
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

    fn call(&mut self, mut req: Request<Body>) -> Self::Future {
        let Some(prove) = input_method(req.uri().path()) else {
            let fut = self.inner.call(req);
            return Box::pin(async move {
                let mut response = fut.await?;
                rewrite_oversized(&mut response);
                Ok(response)
            });
        };
        let Ok(slot) = self.decoding.clone().try_acquire_owned() else {
            let refused = Status::resource_exhausted(format!(
                "the decoding_requests limit ({}) is reached: that many proof requests are being \
                 received and decoded; retry in a moment, or raise [limits] decoding_requests",
                self.decoding_requests
            ));
            return Box::pin(async move { Ok(refused.into_http()) });
        };
        req.extensions_mut().insert(DecodeSlot(Arc::new(slot)));
        // The ready service goes into the future; a clone stays for the next call.
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        Box::pin(async move {
            let req = match checked_input(req, prove).await {
                Ok(req) => req,
                Err(refused) => return Ok(refused.into_http()),
            };
            let mut response = inner.call(req).await?;
            rewrite_oversized(&mut response);
            Ok(response)
        })
    }
}

/// `Some(is_prove)` for the methods whose requests carry proof inputs.
fn input_method(path: &str) -> Option<bool> {
    match INPUT_PATHS.iter().position(|p| *p == path)? {
        0 => Some(false),
        _ => Some(true),
    }
}

/// Reads an input request's body (within the message limit) and counts its `vanilla_proofs`
/// on the wire, so a request no proof kind could take is refused before prost allocates one
/// `Vec` per entry; then hands the same bytes on to tonic.
async fn checked_input(req: Request<Body>, prove: bool) -> Result<Request<Body>, Status> {
    let (parts, body) = req.into_parts();
    // The 5-byte gRPC frame header comes on top of the message.
    let limited = http_body_util::Limited::new(body, MAX_MESSAGE_BYTES + 5);
    let bytes = match limited.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(err)
            if err
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            return Err(Status::resource_exhausted(oversized_message(&format!(
                "over {MAX_MESSAGE_BYTES}"
            ))))
        }
        Err(err) => {
            return Err(Status::cancelled(format!(
                "the request body could not be read ({err}); send it again"
            )))
        }
    };
    if let Some(n) = wire_scan::vanilla_proofs_in_frame(&bytes, prove) {
        if n > wire_scan::MAX_VANILLA_PROOFS {
            return Err(Status::invalid_argument(format!(
                "invalid request: vanilla_proofs has {n} entries, and no proof kind takes more \
                 than {} (a 32 GiB WindowPoSt partition's sectors): send one entry per sector \
                 (PoSt) or per partition (SnapDeals)",
                wire_scan::MAX_VANILLA_PROOFS
            )));
        }
    }
    Ok(Request::from_parts(
        parts,
        Body::new(http_body_util::Full::new(bytes)),
    ))
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

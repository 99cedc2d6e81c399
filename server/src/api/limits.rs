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
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::server::NamedService;
use tonic::{Code, Status};

pub use snarkd_proto::MAX_MESSAGE_BYTES;

/// `service` as a tonic service taking and sending messages of up to [`MAX_MESSAGE_BYTES`] (tonic's
/// defaults are 4 MiB in and unlimited out), an oversized request answered RESOURCE_EXHAUSTED.
/// At most `decoding_requests` SubmitProof and Prove requests are read and decoded at once.
pub fn limited<T: ProvingEngine>(
    service: T,
    decoding_requests: usize,
) -> MessageLimit<ProvingEngineServer<T>> {
    MessageLimit::new(
        ProvingEngineServer::new(service)
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES),
        decoding_requests,
    )
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

impl<S, B, R> tower::Service<Request<B>> for MessageLimit<S>
where
    S: tower::Service<Request<B>, Response = Response<R>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    R: Default + Send + 'static,
{
    type Response = Response<R>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<R>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        if INPUT_PATHS.contains(&req.uri().path()) {
            match self.decoding.clone().try_acquire_owned() {
                Ok(slot) => {
                    req.extensions_mut().insert(DecodeSlot(Arc::new(slot)));
                }
                Err(_) => {
                    let refused = Status::resource_exhausted(format!(
                        "the decoding_requests limit ({}) is reached: that many proof requests are \
                         being received and decoded; retry in a moment, or raise [limits] \
                         decoding_requests",
                        self.decoding_requests
                    ));
                    return Box::pin(async move { Ok(refused.into_http()) });
                }
            }
        }
        let fut = self.inner.call(req);
        Box::pin(async move {
            let mut response = fut.await?;
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

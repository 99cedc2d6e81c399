//! The StreamStatus route. tonic's generated server encodes every message of every stream with
//! prost; snarkd's streams send messages encoded once for all of them ([`super::encoded`]), so
//! this route takes StreamStatus calls before the generated server sees them and answers them
//! with [`EncodedCodec`]. Every other call goes on to the generated server.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{Request, Response};
use snarkd_proto::v1 as pb;
use tonic::body::Body;
use tonic::server::{Grpc, NamedService, ServerStreamingService};
use tonic::Status;

use super::encoded::{EncodedCodec, EncodedSnapshot};
use super::limits::MAX_MESSAGE_BYTES;
use super::stream::StatusStream;
use super::{observe, ProvingService};

/// The path of the call this route answers.
pub const STREAM_STATUS: &str = "/cuzk.v1.ProvingEngine/StreamStatus";

/// `inner` (the generated server), with StreamStatus answered by `service` through
/// [`EncodedCodec`].
#[derive(Clone)]
pub struct StatusRoute<S> {
    inner: S,
    service: ProvingService,
}

impl<S> StatusRoute<S> {
    pub fn new(inner: S, service: ProvingService) -> Self {
        StatusRoute { inner, service }
    }
}

impl<S: NamedService> NamedService for StatusRoute<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> tower::Service<Request<Body>> for StatusRoute<S>
where
    S: tower::Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        if req.uri().path() != STREAM_STATUS {
            return Box::pin(self.inner.call(req));
        }
        let call = StreamStatusCall(self.service.clone());
        Box::pin(async move {
            let mut grpc = Grpc::new(EncodedCodec)
                .apply_max_message_size_config(Some(MAX_MESSAGE_BYTES), Some(MAX_MESSAGE_BYTES));
            Ok(grpc.server_streaming(call, req).await)
        })
    }
}

/// One StreamStatus call.
struct StreamStatusCall(ProvingService);

impl ServerStreamingService<pb::StreamStatusRequest> for StreamStatusCall {
    type Response = EncodedSnapshot;
    type ResponseStream = StatusStream;
    type Future = std::future::Ready<Result<tonic::Response<StatusStream>, Status>>;

    fn call(&mut self, request: tonic::Request<pb::StreamStatusRequest>) -> Self::Future {
        let result = self.0.open_stream(request.into_inner());
        std::future::ready(observe("StreamStatus", result))
    }
}

//! gRPC server metrics under the names every gRPC dashboard and alert already knows
//! (go-grpc-prometheus' and grpc-ecosystem's): `grpc_server_started_total`,
//! `grpc_server_handled_total` with `grpc_code` as grpc-go spells it (`OK`, `Canceled`,
//! `ResourceExhausted`, …) and `grpc_server_handling_seconds`, each by `grpc_type`,
//! `grpc_service` and `grpc_method`. [`GrpcMetrics`] wraps the ProvingEngine service outside
//! the intake limits, so a call refused before decoding is counted like any other. A call is
//! handled when its response ends: at the trailers (or the headers of a trailers-only error), so
//! a StreamStatus stream is timed until it closes, as those libraries do. A call whose client
//! went away first counts as `Canceled`.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http::{HeaderMap, Request, Response};
use http_body::{Body as HttpBody, Frame, SizeHint};
use tonic::body::Body;
use tonic::server::NamedService;
use tonic::Code;

/// The ProvingEngine's methods (a label takes only these: the path is the client's).
const METHODS: [&str; 9] = [
    "SubmitProof",
    "AwaitProof",
    "Prove",
    "CancelProof",
    "GetStatus",
    "GetMetrics",
    "PreloadSRS",
    "EvictSRS",
    "StreamStatus",
];

/// `inner` with its calls counted and timed.
#[derive(Clone)]
pub struct GrpcMetrics<S> {
    inner: S,
}

impl<S> GrpcMetrics<S> {
    pub fn new(inner: S) -> Self {
        GrpcMetrics { inner }
    }
}

impl<S: NamedService> NamedService for GrpcMetrics<S> {
    const NAME: &'static str = S::NAME;
}

/// One call in flight: its labels and when it started. Dropped unfinished, it is `Canceled`.
struct Call {
    service: &'static str,
    method: &'static str,
    kind: &'static str,
    started: Instant,
    done: bool,
}

impl Call {
    fn start(service: &'static str, path: &str) -> Call {
        let method = path
            .rsplit('/')
            .next()
            .and_then(|m| METHODS.iter().find(|known| **known == m).copied())
            .unwrap_or("unknown");
        let kind = if method == "StreamStatus" {
            "server_stream"
        } else {
            "unary"
        };
        metrics::counter!("grpc_server_started_total", "grpc_type" => kind,
            "grpc_service" => service, "grpc_method" => method)
        .increment(1);
        Call {
            service,
            method,
            kind,
            started: Instant::now(),
            done: false,
        }
    }

    fn finish(&mut self, code: Code) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        metrics::counter!("grpc_server_handled_total", "grpc_type" => self.kind,
            "grpc_service" => self.service, "grpc_method" => self.method,
            "grpc_code" => code_name(code))
        .increment(1);
        metrics::histogram!("grpc_server_handling_seconds", "grpc_type" => self.kind,
            "grpc_service" => self.service, "grpc_method" => self.method)
        .record(self.started.elapsed().as_secs_f64());
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        self.finish(Code::Cancelled);
    }
}

/// The code grpc-go's `codes.Code.String()` gives, which the usual dashboards match.
pub fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "Canceled",
        Code::Unknown => "Unknown",
        Code::InvalidArgument => "InvalidArgument",
        Code::DeadlineExceeded => "DeadlineExceeded",
        Code::NotFound => "NotFound",
        Code::AlreadyExists => "AlreadyExists",
        Code::PermissionDenied => "PermissionDenied",
        Code::ResourceExhausted => "ResourceExhausted",
        Code::FailedPrecondition => "FailedPrecondition",
        Code::Aborted => "Aborted",
        Code::OutOfRange => "OutOfRange",
        Code::Unimplemented => "Unimplemented",
        Code::Internal => "Internal",
        Code::Unavailable => "Unavailable",
        Code::DataLoss => "DataLoss",
        Code::Unauthenticated => "Unauthenticated",
    }
}

/// The `grpc-status` of a header or trailer block, if it has one.
fn status_in(headers: &HeaderMap) -> Option<Code> {
    let value = headers.get("grpc-status")?.to_str().ok()?;
    Some(Code::from_i32(value.parse().ok()?))
}

impl<S> tower::Service<Request<Body>> for GrpcMetrics<S>
where
    S: tower::Service<Request<Body>, Response = Response<Body>> + NamedService,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let mut call = Call::start(S::NAME, req.uri().path());
        let response = self.inner.call(req);
        Box::pin(async move {
            let response = match response.await {
                Ok(response) => response,
                Err(e) => {
                    call.finish(Code::Unknown);
                    return Err(e);
                }
            };
            // A trailers-only response (an error before any message) has its status here.
            if let Some(code) = status_in(response.headers()) {
                call.finish(code);
            }
            Ok(response.map(|body| Body::new(Observed { inner: body, call })))
        })
    }
}

pin_project_lite::pin_project! {
    /// A response body that finishes its call at the trailers or the end.
    struct Observed {
        #[pin]
        inner: Body,
        call: Call,
    }
}

impl HttpBody for Observed {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.project();
        let frame = ready!(this.inner.poll_frame(cx));
        match &frame {
            Some(Ok(frame)) => {
                if let Some(trailers) = frame.trailers_ref() {
                    this.call
                        .finish(status_in(trailers).unwrap_or(Code::Unknown));
                }
            }
            Some(Err(_)) => this.call.finish(Code::Unknown),
            // The end without trailers: a trailers-only response was finished at its headers.
            None => this.call.finish(Code::Unknown),
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_spelled_as_grpc_go_does() {
        assert_eq!(code_name(Code::Ok), "OK");
        assert_eq!(code_name(Code::Cancelled), "Canceled");
        assert_eq!(code_name(Code::ResourceExhausted), "ResourceExhausted");
        // Every code has its own name.
        let names: std::collections::HashSet<_> =
            (0..=16).map(|i| code_name(Code::from_i32(i))).collect();
        assert_eq!(names.len(), 17);
    }

    #[test]
    fn a_method_outside_the_service_is_one_label() {
        let call = Call::start(
            "cuzk.v1.ProvingEngine",
            "/cuzk.v1.ProvingEngine/Anything-at-all",
        );
        assert_eq!(call.method, "unknown");
        let call = Call::start(
            "cuzk.v1.ProvingEngine",
            "/cuzk.v1.ProvingEngine/StreamStatus",
        );
        assert_eq!((call.method, call.kind), ("StreamStatus", "server_stream"));
    }
}

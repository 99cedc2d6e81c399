//! The response side of the limit and the decoding slots, through a real server and client: no
//! RPC of the real service can be made to answer 256 MiB, or to stay inside a SubmitProof, on
//! demand, so a stand-in service whose GetMetrics text has a chosen length and whose SubmitProof
//! waits for a permit is served in [`MessageLimit`] around [`sized`], the wrapping
//! `ProvingService::into_server` puts around its status route and the generated server.

use std::net::SocketAddr;

use snarkd_proto::v1 as pb;
use snarkd_proto::v1::proving_engine_client::ProvingEngineClient;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::{Request, Response, Status};

use super::*;

/// Answers GetMetrics with this many bytes of text; SubmitProof signals the `Notify` and waits
/// for a permit of the semaphore (while holding its request, so its decoding slot); every other
/// RPC is unimplemented.
struct MetricsOfLength(usize, Arc<tokio::sync::Semaphore>, Arc<tokio::sync::Notify>);

impl MetricsOfLength {
    fn new(text_bytes: usize) -> Self {
        MetricsOfLength(
            text_bytes,
            Arc::new(tokio::sync::Semaphore::new(0)),
            Arc::new(tokio::sync::Notify::new()),
        )
    }
}

fn none<T>() -> Result<Response<T>, Status> {
    Err(Status::unimplemented("not part of this test"))
}

#[tonic::async_trait]
impl ProvingEngine for MetricsOfLength {
    async fn submit_proof(
        &self,
        request: Request<pb::SubmitProofRequest>,
    ) -> Result<Response<pb::SubmitProofResponse>, Status> {
        self.2.notify_one();
        let _permit = self.1.acquire().await;
        drop(request);
        Ok(Response::new(pb::SubmitProofResponse::default()))
    }
    async fn await_proof(
        &self,
        _: Request<pb::AwaitProofRequest>,
    ) -> Result<Response<pb::AwaitProofResponse>, Status> {
        none()
    }
    async fn prove(
        &self,
        _: Request<pb::ProveRequest>,
    ) -> Result<Response<pb::ProveResponse>, Status> {
        none()
    }
    async fn cancel_proof(
        &self,
        _: Request<pb::CancelProofRequest>,
    ) -> Result<Response<pb::CancelProofResponse>, Status> {
        none()
    }
    async fn get_status(
        &self,
        _: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        none()
    }
    async fn get_metrics(
        &self,
        _: Request<pb::GetMetricsRequest>,
    ) -> Result<Response<pb::GetMetricsResponse>, Status> {
        Ok(Response::new(pb::GetMetricsResponse {
            prometheus_text: "#".repeat(self.0),
        }))
    }
    async fn preload_srs(
        &self,
        _: Request<pb::PreloadSrsRequest>,
    ) -> Result<Response<pb::PreloadSrsResponse>, Status> {
        none()
    }
    async fn evict_srs(
        &self,
        _: Request<pb::EvictSrsRequest>,
    ) -> Result<Response<pb::EvictSrsResponse>, Status> {
        none()
    }
    type StreamStatusStream =
        futures::stream::Empty<Result<snarkd_proto::EncodedStatusSnapshot, Status>>;
    async fn stream_status(
        &self,
        _: Request<pb::StreamStatusRequest>,
    ) -> Result<Response<Self::StreamStatusStream>, Status> {
        none()
    }
}

/// The daemon's default limits, with `decoding_requests` slots and none kept apart.
fn intake(decoding_requests: usize) -> Intake {
    Intake {
        slots: DecodeSlots::with(decoding_requests, 0, vec![]),
        body_read_timeout: std::time::Duration::from_secs(60),
        stream_job_ids: 1024,
        request_id_bytes: 256,
        note_refusal: Arc::new(|_| {}),
    }
}

/// Serves `service` through [`MessageLimit`] on 127.0.0.1:0 and returns a client that accepts any size.
async fn serve(service: MetricsOfLength) -> ProvingEngineClient<tonic::transport::Channel> {
    serve_with(service, 16).await
}

/// As [`serve`], with `decoding_requests` slots.
async fn serve_with(
    service: MetricsOfLength,
    decoding_requests: usize,
) -> ProvingEngineClient<tonic::transport::Channel> {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(MessageLimit::new(sized(service), intake(decoding_requests)))
            .serve_with_incoming(TcpListenerStream::new(listener)),
    );
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    ProvingEngineClient::new(channel).max_decoding_message_size(usize::MAX)
}

#[tokio::test]
async fn a_response_over_256_mib_is_refused_naming_the_limit() {
    let mib = 1024 * 1024;
    // The stand-in works: an ordinary response goes out whole.
    let mut small = serve(MetricsOfLength::new(mib)).await;
    let text = small
        .get_metrics(pb::GetMetricsRequest {})
        .await
        .expect("a 1 MiB response goes out")
        .into_inner()
        .prometheus_text;
    assert_eq!(text.len(), mib);

    // Field tag and length prefix add 6 bytes to the 256 MiB text.
    let mut big = serve(MetricsOfLength::new(256 * mib)).await;
    let err = big
        .get_metrics(pb::GetMetricsRequest {})
        .await
        .expect_err("a response of 256 MiB plus its framing is over the limit");
    assert_eq!(err.code(), tonic::Code::OutOfRange, "{err:?}");
    assert!(
        err.message()
            .contains("found 268435462 bytes, the limit is: 268435456 bytes"),
        "{}",
        err.message()
    );
}

#[tokio::test]
async fn a_submit_past_decoding_requests_is_refused_until_a_slot_is_free() {
    let service = MetricsOfLength::new(0);
    let (gate, entered) = (service.1.clone(), service.2.clone());
    let client = serve_with(service, 1).await;
    let mut first = client.clone();
    let held =
        tokio::spawn(async move { first.submit_proof(pb::SubmitProofRequest::default()).await });
    // The first call is inside the service, holding the one slot.
    let soon = std::time::Duration::from_secs(30);
    tokio::time::timeout(soon, entered.notified())
        .await
        .expect("the first submit reaches the service");
    let mut probe = client.clone();
    let refused = tokio::time::timeout(soon, probe.submit_proof(pb::SubmitProofRequest::default()))
        .await
        .expect("the second submit is answered at once (refused), not let in to wait")
        .unwrap_err();
    assert_eq!(
        refused.code(),
        tonic::Code::ResourceExhausted,
        "{refused:?}"
    );
    assert!(
        refused.message().contains("decoding_requests limit (1)")
            && refused.message().contains("[limits] decoding_requests"),
        "{}",
        refused.message()
    );
    // Other methods take no slot.
    probe
        .get_metrics(pb::GetMetricsRequest {})
        .await
        .expect("GetMetrics needs no decoding slot");
    gate.add_permits(2);
    held.await.unwrap().expect("the first submit completes");
    probe
        .submit_proof(pb::SubmitProofRequest::default())
        .await
        .expect("the slot is free again");
}

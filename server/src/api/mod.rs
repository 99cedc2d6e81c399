//! The gRPC API: snarkd's implementation of `cuzk.v1.ProvingEngine`. This is the only layer
//! that knows protobuf: it checks and converts requests into engine calls and engine results
//! back into responses, and maps every engine error to one gRPC code.
//!
//! Layout:
//! - `mod.rs`: [`ProvingService`], one method per RPC.
//! - `request`: protobuf requests → domain requests, with the checks that need no decoding.
//! - `client_request`: a prover request → the protobuf request a client sends (bench, tests).
//! - `outcome`: submit and await results → responses.
//! - `refusal`: a request refused at submit → an entry of the engine's failure log.
//! - `status`: engine snapshots → GetStatus and StatusSnapshot.
//! - `stream`: StreamStatus's coalescing, heartbeat and end.
//! - `encoded`: StreamStatus messages encoded once per snapshot and second for every stream
//!   (the generated server sends them as they are: `snarkd_proto::EncodedStatusSnapshot`).
//! - `summary`: per-kind summary, jobs ended per minute and worker busy share, as of a message.
//! - `error`: engine error → gRPC status, in one place.
//! - `limits`: what each call's request may be (one message, its method's size, read within
//!   `[limits] body_read_timeout`), checked before tonic decodes it; the 256 MiB RESOURCE_EXHAUSTED.
//! - `request_body`: reading one request body by its deadline.
//! - `decode_slots`: the SubmitProof/Prove decoding slots, some kept for the deadline kinds.
//! - `wire_scan`: counting `vanilla_proofs` entries on the wire before prost decodes them.

pub mod client_request;
pub mod decode_slots;
pub mod encoded;
pub mod error;
pub mod grpc_metrics;
pub mod limits;
pub mod outcome;
pub mod refusal;
pub mod request;
pub mod request_body;
pub mod status;
pub mod stream;
pub mod summary;
pub mod wire_scan;

use std::sync::Arc;
use std::time::Duration;

use metrics_exporter_prometheus::PrometheusHandle;
use snarkd_engine::{Engine, EngineError, ProofRequest};
use snarkd_proto::v1 as pb;
use snarkd_proto::v1::proving_engine_server::{ProvingEngine, ProvingEngineServer};
use tokio::sync::{watch, Semaphore};
use tonic::{Request, Response, Status};

use crate::config::{LimitsSection, SchedulerSection};
use decode_slots::{DecodeSlot, DecodeSlots};
use error::status_of;
use grpc_metrics::GrpcMetrics;
use limits::MessageLimit;

/// `cuzk.v1.ProvingEngine` on top of an [`Engine`].
#[derive(Clone)]
pub struct ProvingService {
    engine: Engine,
    scheduler: SchedulerSection,
    limits: LimitsSection,
    /// One permit per StreamStatus stream that may be open (`[limits] status_streams`).
    streams: Arc<Semaphore>,
    /// The messages of every stream, encoded once.
    encodings: Arc<encoded::Encodings>,
    metrics: PrometheusHandle,
    closing: watch::Receiver<bool>,
}

impl ProvingService {
    /// `closing` turning true ends every StreamStatus stream (the daemon is shutting down).
    pub fn new(
        engine: Engine,
        scheduler: SchedulerSection,
        limits: LimitsSection,
        metrics: PrometheusHandle,
        closing: watch::Receiver<bool>,
    ) -> Self {
        ProvingService {
            engine,
            scheduler,
            streams: Arc::new(Semaphore::new(limits.status_streams)),
            encodings: Arc::default(),
            limits,
            metrics,
            closing,
        }
    }

    /// The tonic service with snarkd's message limits, ready to add to a server.
    pub fn into_server(self) -> GrpcMetrics<MessageLimit<ProvingEngineServer<ProvingService>>> {
        let engine = self.engine.clone();
        let intake = limits::Intake {
            slots: DecodeSlots::new(&self.limits, &self.scheduler),
            body_read_timeout: self.limits.body_read_timeout,
            stream_job_ids: self.limits.stream_job_ids,
            request_id_bytes: self.limits.request_id_bytes,
            note_refusal: Arc::new(move |failure| engine.note_refusal(failure)),
        };
        GrpcMetrics::new(MessageLimit::new(limits::sized(self), intake))
    }

    /// Submits a converted request, giving it its kind's usual priority when it has none and
    /// lowering a claim above its kind's ceiling. The decoding slot is held until the engine has
    /// decoded (planned) the request, even when the client goes away first.
    async fn submit(
        &self,
        request: Result<ProofRequest, EngineError>,
        slot: Option<DecodeSlot>,
        sent: refusal::Sent,
    ) -> Result<pb::SubmitProofResponse, Status> {
        let result = self.try_submit(request, slot).await;
        if let Err(status) = &result {
            self.engine.note_refusal(sent.refused(status));
        }
        result
    }

    async fn try_submit(
        &self,
        request: Result<ProofRequest, EngineError>,
        slot: Option<DecodeSlot>,
    ) -> Result<pb::SubmitProofResponse, Status> {
        let mut request = request.map_err(status_of)?;
        request::check_request_id(&request.request_id, self.limits.request_id_bytes)?;
        let kind = request.kind();
        let asked = request.priority;
        let (priority, lowered) = self.scheduler.effective_priority(kind, asked);
        if lowered {
            tracing::info!(%kind, asked = ?asked, priority = priority.as_str(),
                "priority lowered to the kind's ceiling ([scheduler] {kind}_max_priority)");
            metrics::counter!("snarkd_priority_lowered_total", "kind" => kind.name()).increment(1);
        }
        request.priority = Some(priority);
        let request_id = snarkd_types::logged_request_id(&request.request_id).into_owned();
        // The slot goes with the submit: held until it returns, or, if the client goes away
        // first, until the decoding already begun for it ends.
        let submitted = self
            .engine
            .submit_holding(request, slot)
            .await
            .map_err(status_of)?;
        tracing::info!(job_id = %submitted.job_id, request_id, queue_position = submitted.queue_position, existing = submitted.existing, "proof submitted");
        Ok(outcome::submitted(submitted))
    }

    /// AwaitProof: a job id from a client, checked first.
    async fn await_job(
        &self,
        job_id: &str,
        timeout: Option<Duration>,
    ) -> Result<pb::AwaitProofResponse, Status> {
        let job_id = request::job_id(job_id).map_err(status_of)?;
        self.await_known(job_id, timeout).await
    }

    /// Waits for a job by an id the engine made (Prove's own submit): nothing to check.
    async fn await_known(
        &self,
        job_id: &str,
        timeout: Option<Duration>,
    ) -> Result<pb::AwaitProofResponse, Status> {
        let outcome = self
            .engine
            .await_job_within(job_id, timeout)
            .await
            .map_err(status_of)?;
        Ok(outcome::awaited(job_id, outcome))
    }
}

impl ProvingService {
    /// A StreamStatus stream, if a `[limits] status_streams` slot is free.
    fn open_stream(&self, req: pb::StreamStatusRequest) -> Result<stream::StatusStream, Status> {
        let options = stream::StreamOptions::from_request(self.limits.stream_job_ids, req)?;
        let slot = self.streams.clone().try_acquire_owned().map_err(|_| {
            Status::resource_exhausted(format!(
                "the status_streams limit ({}) is reached: that many StreamStatus streams are open; \
                 close one (each monitor page holds one), or raise [limits] status_streams",
                self.limits.status_streams
            ))
        })?;
        Ok(stream::status_stream(
            self.engine.subscribe(),
            self.encodings.clone(),
            options,
            self.closing.clone(),
        )
        .holding(slot))
    }
}

/// Logs failed calls ([`GrpcMetrics`] counts every call).
fn observe<T>(method: &'static str, result: Result<T, Status>) -> Result<Response<T>, Status> {
    if let Err(status) = &result {
        tracing::info!(method, code = ?status.code(), message = status.message(), "request refused");
    }
    result.map(Response::new)
}

#[tonic::async_trait]
impl ProvingEngine for ProvingService {
    async fn submit_proof(
        &self,
        request: Request<pb::SubmitProofRequest>,
    ) -> Result<Response<pb::SubmitProofResponse>, Status> {
        let slot = request.extensions().get::<DecodeSlot>().cloned();
        let req = request.into_inner();
        let sent = refusal::Sent::of(Some(&req));
        let request = request::proof_request(req);
        observe("SubmitProof", self.submit(request, slot, sent).await)
    }

    async fn await_proof(
        &self,
        request: Request<pb::AwaitProofRequest>,
    ) -> Result<Response<pb::AwaitProofResponse>, Status> {
        let req = request.into_inner();
        let timeout = (req.timeout_ms > 0).then(|| Duration::from_millis(req.timeout_ms));
        observe("AwaitProof", self.await_job(&req.job_id, timeout).await)
    }

    /// Submit then wait with no timeout. If the client goes away the job goes on; submitting the
    /// same `request_id` again picks it up.
    async fn prove(
        &self,
        request: Request<pb::ProveRequest>,
    ) -> Result<Response<pb::ProveResponse>, Status> {
        let slot = request.extensions().get::<DecodeSlot>().cloned();
        let req = request.into_inner();
        let sent = refusal::Sent::of(req.submit.as_ref());
        let result = async {
            let submitted = self.submit(request::prove_request(req), slot, sent).await?;
            let result = self.await_known(&submitted.job_id, None).await?;
            Ok(pb::ProveResponse {
                result: Some(result),
            })
        }
        .await;
        observe("Prove", result)
    }

    async fn cancel_proof(
        &self,
        request: Request<pb::CancelProofRequest>,
    ) -> Result<Response<pb::CancelProofResponse>, Status> {
        let req = request.into_inner();
        let result = match request::job_id(&req.job_id) {
            Ok(id) => self.engine.cancel(id).await,
            Err(err) => Err(err),
        };
        let result = result
            .map(|was_running| pb::CancelProofResponse { was_running })
            .map_err(status_of);
        if result.is_ok() {
            tracing::info!(job_id = %req.job_id, "proof cancelled");
        }
        observe("CancelProof", result)
    }

    async fn get_status(
        &self,
        _request: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        let snapshot = self.engine.snapshot();
        observe(
            "GetStatus",
            Ok(status::get_status(&snapshot, status::now_unix_ms())),
        )
    }

    async fn get_metrics(
        &self,
        _request: Request<pb::GetMetricsRequest>,
    ) -> Result<Response<pb::GetMetricsResponse>, Status> {
        observe(
            "GetMetrics",
            Ok(pb::GetMetricsResponse {
                prometheus_text: crate::telemetry::render(&self.metrics),
            }),
        )
    }

    async fn preload_srs(
        &self,
        request: Request<pb::PreloadSrsRequest>,
    ) -> Result<Response<pb::PreloadSrsResponse>, Status> {
        let req = request.into_inner();
        let result = match request::circuit_id(&req.circuit_id) {
            Ok(id) => self.engine.preload_params(id).await,
            Err(err) => Err(err),
        };
        let result = result.map_err(status_of).map(|p| pb::PreloadSrsResponse {
            already_loaded: p.already_loaded,
            load_time_ms: outcome::ms(p.load_time),
        });
        observe("PreloadSRS", result)
    }

    async fn evict_srs(
        &self,
        request: Request<pb::EvictSrsRequest>,
    ) -> Result<Response<pb::EvictSrsResponse>, Status> {
        let req = request.into_inner();
        let result = match request::circuit_id(&req.circuit_id) {
            Ok(id) => self.engine.evict_params(id).await,
            Err(err) => Err(err),
        };
        let result = result.map_err(status_of).map(|e| pb::EvictSrsResponse {
            was_loaded: e.was_loaded,
            freed_bytes: e.freed_bytes,
        });
        observe("EvictSRS", result)
    }

    type StreamStatusStream = stream::StatusStream;

    /// Each message encoded once for every stream (see [`ProvingService::open_stream`]).
    async fn stream_status(
        &self,
        request: Request<pb::StreamStatusRequest>,
    ) -> Result<Response<Self::StreamStatusStream>, Status> {
        observe("StreamStatus", self.open_stream(request.into_inner()))
    }
}

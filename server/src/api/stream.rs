//! StreamStatus: adapts the engine's `watch` of snapshots to a gRPC server stream. The first
//! message is the current snapshot; after a change the next one goes out no sooner than
//! `min_interval` after the previous message (changes in between are coalesced into it); with no
//! change a heartbeat repeats the latest snapshot every `HEARTBEAT`. The stream ends when the
//! client goes away, when the engine stops, or when the daemon shuts down.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use snarkd_engine::StatusSnapshot;
use snarkd_proto::v1 as pb;
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit};
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::Stream;
use tonic::Status;

use super::encoded::{EncodedSnapshot, Encodings};
use super::status::now_unix_ms;

/// Least time between two messages when the request leaves `min_interval_ms` at 0.
pub const DEFAULT_MIN_INTERVAL: Duration = Duration::from_millis(250);
/// Longest time between two messages, change or not.
pub const HEARTBEAT: Duration = Duration::from_secs(5);

/// The stream's items, holding one of the `[limits] status_streams` slots (when it was given
/// one) until the client goes away and tonic drops it.
pub struct StatusStream {
    inner: ReceiverStream<Result<EncodedSnapshot, Status>>,
    _slot: Option<OwnedSemaphorePermit>,
}

impl StatusStream {
    /// The same stream, holding `slot` for its life.
    pub fn holding(self, slot: OwnedSemaphorePermit) -> StatusStream {
        StatusStream {
            _slot: Some(slot),
            ..self
        }
    }
}

impl Stream for StatusStream {
    type Item = Result<EncodedSnapshot, Status>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        std::pin::Pin::new(&mut self.inner).poll_next(cx)
    }
}

/// A checked StreamStatus request.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamOptions {
    pub min_interval: Duration,
    /// The jobs to list (all when empty).
    pub job_ids: HashSet<String>,
}

impl StreamOptions {
    /// Checks a request; it may follow at most `max_job_ids` ids (`[limits] stream_job_ids`).
    pub fn from_request(
        max_job_ids: usize,
        req: pb::StreamStatusRequest,
    ) -> Result<StreamOptions, Status> {
        if req.job_ids.len() > max_job_ids {
            return Err(too_many_job_ids(req.job_ids.len(), max_job_ids));
        }
        let min_interval = match req.min_interval_ms {
            0 => DEFAULT_MIN_INTERVAL,
            ms => Duration::from_millis(u64::from(ms)),
        };
        if min_interval > HEARTBEAT {
            return Err(Status::invalid_argument(format!(
                "min_interval_ms {} is above the {} ms heartbeat, so it could never apply: ask for at most {}",
                req.min_interval_ms,
                HEARTBEAT.as_millis(),
                HEARTBEAT.as_millis()
            )));
        }
        if let Some(i) = req.job_ids.iter().position(String::is_empty) {
            return Err(Status::invalid_argument(format!(
                "job_ids[{i}] is empty: list the job ids to follow, or none to follow every job"
            )));
        }
        Ok(StreamOptions {
            min_interval,
            job_ids: req.job_ids.into_iter().collect(),
        })
    }
}

/// What a request following `listed` jobs, over `[limits] stream_job_ids`, is told.
pub fn too_many_job_ids(listed: usize, max_job_ids: usize) -> Status {
    Status::resource_exhausted(format!(
        "job_ids lists {listed} ids, over the stream_job_ids limit of {max_job_ids}: follow \
         fewer jobs per stream, none to follow every job, or raise [limits] stream_job_ids"
    ))
}

/// Starts feeding a stream from `snapshots`, its messages taken from `encodings`; it stops when
/// `closing` turns true.
pub fn status_stream(
    snapshots: watch::Receiver<Arc<StatusSnapshot>>,
    encodings: Arc<Encodings>,
    options: StreamOptions,
    closing: watch::Receiver<bool>,
) -> StatusStream {
    // One slot: a slow client holds the feeder back, and it then sends the newest snapshot.
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(feed(snapshots, encodings, options, closing, tx));
    StatusStream {
        inner: ReceiverStream::new(rx),
        _slot: None,
    }
}

async fn feed(
    mut snapshots: watch::Receiver<Arc<StatusSnapshot>>,
    encodings: Arc<Encodings>,
    options: StreamOptions,
    mut closing: watch::Receiver<bool>,
    tx: mpsc::Sender<Result<EncodedSnapshot, Status>>,
) {
    loop {
        let latest = snapshots.borrow_and_update().clone();
        if tx
            .send(Ok(encodings.message(
                &latest,
                &options.job_ids,
                now_unix_ms(),
            )))
            .await
            .is_err()
        {
            return; // the client went away
        }
        let sent_at = Instant::now();
        let next = tokio::select! {
            changed = snapshots.changed() => match changed {
                // Coalesce: whatever else changes until then goes out in one message.
                Ok(()) => Wake::At(sent_at + options.min_interval),
                Err(_) => Wake::EngineGone,
            },
            _ = tokio::time::sleep_until(sent_at + HEARTBEAT) => Wake::Now,
            _ = tx.closed() => return,
            _ = shut_down(&mut closing) => Wake::Closing,
        };
        match next {
            Wake::Now => {}
            Wake::At(at) => tokio::select! {
                _ = tokio::time::sleep_until(at) => {}
                _ = tx.closed() => return,
                _ = shut_down(&mut closing) => return end(&tx).await,
            },
            Wake::EngineGone | Wake::Closing => return end(&tx).await,
        }
    }
}

enum Wake {
    Now,
    At(Instant),
    EngineGone,
    Closing,
}

/// Resolves once the daemon shuts down (or whoever signals it is gone).
async fn shut_down(closing: &mut watch::Receiver<bool>) {
    let _ = closing.wait_for(|c| *c).await;
}

async fn end(tx: &mpsc::Sender<Result<EncodedSnapshot, Status>>) {
    let _ = tx
        .send(Err(Status::unavailable(
            "snarkd is shutting down: reconnect to the restarted daemon to follow its status",
        )))
        .await;
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;

//! One daemon's `StreamStatus` over gRPC-web. Runs for the page's lifetime: opens the stream,
//! publishes every snapshot, and when the stream fails, ends or goes silent, waits the model's
//! backoff (or until the user asks to retry now) and opens it again.

use futures::channel::mpsc::UnboundedReceiver;
use futures::future::{select, Either};
use futures::StreamExt;
use leptos::prelude::*;
use snarkd_monitor_model::{backoff_ms, Connection};
use snarkd_proto::v1::proving_engine_client::ProvingEngineClient;
use snarkd_proto::v1::{StatusSnapshot, StreamStatusRequest};

use crate::clock::{now_ms, sleep_ms};

/// Least time between two snapshots the page asks for.
const MIN_INTERVAL_MS: u32 = 250;
/// The daemon sends a heartbeat at least every 5 s; three missed ones mean the link is dead
/// (a tunnel can stall without closing the connection).
const SILENCE_MS: u64 = 15_000;

/// A snapshot and when it arrived on the browser's clock.
#[derive(Clone, PartialEq)]
pub struct Received {
    pub snapshot: StatusSnapshot,
    pub at_ms: u64,
}

/// Watches the daemon at `url` until the page closes; a message on `retry_now` cuts a wait
/// between tries short.
pub fn watch(
    url: String,
    latest: RwSignal<Option<Received>>,
    connection: RwSignal<Connection>,
    mut retry_now: UnboundedReceiver<()>,
) {
    leptos::task::spawn_local(async move {
        let mut attempt = 0;
        loop {
            connection.set(Connection::Connecting { attempt });
            let error = follow(&url, latest, connection, &mut attempt).await;
            connection.set(Connection::failed(attempt, &error, now_ms()));
            // Clicks from before this wait do not cut it short.
            while retry_now.try_recv().is_ok() {}
            let wait = Box::pin(sleep_ms(backoff_ms(attempt)));
            select(wait, retry_now.next()).await;
            attempt = attempt.saturating_add(1);
        }
    });
}

/// Follows one stream until it fails; returns why. A snapshot resets `attempt`.
async fn follow(
    url: &str,
    latest: RwSignal<Option<Received>>,
    connection: RwSignal<Connection>,
    attempt: &mut u32,
) -> String {
    let mut client = ProvingEngineClient::new(tonic_web_wasm_client::Client::new(url.to_string()));
    let request = StreamStatusRequest {
        min_interval_ms: MIN_INTERVAL_MS,
        job_ids: Vec::new(),
    };
    let mut stream = match client.stream_status(request).await {
        Ok(response) => response.into_inner(),
        Err(status) => return describe(&status),
    };
    loop {
        let next = Box::pin(stream.message());
        let silence = Box::pin(sleep_ms(SILENCE_MS));
        match select(next, silence).await {
            Either::Left((Ok(Some(snapshot)), _)) => {
                *attempt = 0;
                if connection.with_untracked(|c| *c != Connection::Live) {
                    connection.set(Connection::Live);
                }
                latest.set(Some(Received {
                    snapshot,
                    at_ms: now_ms(),
                }));
            }
            Either::Left((Ok(None), _)) => return "the daemon ended the stream".to_string(),
            Either::Left((Err(status), _)) => return describe(&status),
            Either::Right(_) => return format!("no message for {} s", SILENCE_MS / 1000),
        }
    }
}

fn describe(status: &tonic::Status) -> String {
    let message = status.message();
    if message.is_empty() {
        format!("{:?}", status.code())
    } else {
        message.to_string()
    }
}

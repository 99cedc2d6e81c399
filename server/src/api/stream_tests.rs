use std::collections::HashSet;

use tokio_stream::StreamExt;

use super::*;
use crate::api::encoded::decode;

fn snap(sequence: u64) -> Arc<StatusSnapshot> {
    Arc::new(StatusSnapshot {
        sequence,
        ..crate::fixture::busy()
    })
}

fn options(min_interval_ms: u64) -> StreamOptions {
    StreamOptions {
        min_interval: Duration::from_millis(min_interval_ms),
        job_ids: HashSet::new(),
    }
}

async fn next_seq(stream: &mut StatusStream) -> u64 {
    let message = stream.next().await.expect("stream ended");
    decode(&message.expect("stream failed"))
        .expect("a message decodes")
        .sequence
}

#[tokio::test(start_paused = true)]
async fn first_message_at_once_then_changes_coalesced_to_the_interval() {
    let (tx, rx) = watch::channel(snap(1));
    let (_closing_tx, closing) = watch::channel(false);
    let start = Instant::now();
    let mut stream = status_stream(rx, Default::default(), options(250), closing);

    assert_eq!(next_seq(&mut stream).await, 1);
    assert_eq!(start.elapsed(), Duration::ZERO);

    // Four changes within 40 ms arrive as one message, 250 ms after the first.
    for seq in 2..=5 {
        tx.send(snap(seq)).unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(next_seq(&mut stream).await, 5);
    assert_eq!(start.elapsed(), Duration::from_millis(250));

    // A change long after the last message goes out at once.
    tokio::time::sleep(Duration::from_secs(1)).await;
    tx.send(snap(6)).unwrap();
    let changed_at = Instant::now();
    assert_eq!(next_seq(&mut stream).await, 6);
    assert_eq!(changed_at.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn heartbeat_repeats_the_latest_snapshot_every_five_seconds() {
    let (_tx, rx) = watch::channel(snap(9));
    let (_closing_tx, closing) = watch::channel(false);
    let mut stream = status_stream(rx, Default::default(), options(250), closing);
    assert_eq!(next_seq(&mut stream).await, 9);
    let start = Instant::now();
    for beat in 1..=3 {
        assert_eq!(next_seq(&mut stream).await, 9);
        assert_eq!(start.elapsed(), Duration::from_secs(5) * beat);
    }
}

/// The numbers, written out: a request without `min_interval_ms` gets changes no sooner
/// than 250 ms after the previous message, and a heartbeat every 5 s.
#[tokio::test(start_paused = true)]
async fn a_default_request_coalesces_to_250_ms_and_beats_every_5_s() {
    let (tx, rx) = watch::channel(snap(1));
    let (_closing_tx, closing) = watch::channel(false);
    let defaults = StreamOptions::from_request(1024, pb::StreamStatusRequest::default()).unwrap();
    let mut stream = status_stream(rx, Default::default(), defaults, closing);
    assert_eq!(next_seq(&mut stream).await, 1);
    let first_at = Instant::now();

    tx.send(snap(2)).unwrap();
    assert_eq!(next_seq(&mut stream).await, 2);
    assert_eq!(first_at.elapsed(), Duration::from_millis(250));

    let second_at = Instant::now();
    assert_eq!(next_seq(&mut stream).await, 2);
    assert_eq!(second_at.elapsed(), Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn a_dropped_client_ends_the_feed() {
    let (tx, rx) = watch::channel(snap(1));
    let (_closing_tx, closing) = watch::channel(false);
    let mut stream = status_stream(rx, Default::default(), options(250), closing);
    assert_eq!(next_seq(&mut stream).await, 1);
    assert_eq!(tx.receiver_count(), 1);
    drop(stream);
    // Resolves only once the feeder has dropped its receiver.
    tx.closed().await;
    assert_eq!(tx.receiver_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn shutdown_ends_the_stream_with_unavailable() {
    let (_tx, rx) = watch::channel(snap(1));
    let (closing_tx, closing) = watch::channel(false);
    let mut stream = status_stream(rx, Default::default(), options(250), closing);
    assert_eq!(next_seq(&mut stream).await, 1);
    closing_tx.send(true).unwrap();
    let err = stream.next().await.unwrap().unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unavailable);
    assert!(err.message().contains("shutting down"), "{}", err.message());
    assert!(stream.next().await.is_none());
}

#[tokio::test(start_paused = true)]
async fn the_job_filter_applies_to_every_message() {
    let (tx, rx) = watch::channel(snap(1));
    let (_closing_tx, closing) = watch::channel(false);
    let only = vec![crate::fixture::DONE_JOB.to_string()];
    let mut stream = status_stream(
        rx,
        Default::default(),
        StreamOptions {
            job_ids: only.iter().cloned().collect(),
            ..options(250)
        },
        closing,
    );
    for seq in 1..=2 {
        let msg = decode(&stream.next().await.unwrap().unwrap()).unwrap();
        let ids: Vec<_> = msg.jobs.iter().map(|j| j.job_id.clone()).collect();
        assert_eq!(ids, only);
        tx.send(snap(seq + 1)).unwrap();
    }
}

#[test]
fn request_options_are_checked() {
    let default = StreamOptions::from_request(1024, pb::StreamStatusRequest::default()).unwrap();
    assert_eq!(default.min_interval, Duration::from_millis(250));
    let fast = StreamOptions::from_request(
        1024,
        pb::StreamStatusRequest {
            min_interval_ms: 20,
            job_ids: vec![],
        },
    )
    .unwrap();
    assert_eq!(fast.min_interval, Duration::from_millis(20));

    // Up to the 5 s heartbeat is accepted; beyond it the interval could never apply.
    let slowest = StreamOptions::from_request(
        1024,
        pb::StreamStatusRequest {
            min_interval_ms: 5_000,
            job_ids: vec![],
        },
    )
    .unwrap();
    assert_eq!(slowest.min_interval, Duration::from_secs(5));
    assert!(StreamOptions::from_request(
        1024,
        pb::StreamStatusRequest {
            min_interval_ms: 5_001,
            job_ids: vec![],
        }
    )
    .is_err());
    let err = StreamOptions::from_request(
        1024,
        pb::StreamStatusRequest {
            min_interval_ms: 60_000,
            job_ids: vec![],
        },
    )
    .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert!(
        err.message().contains("min_interval_ms 60000"),
        "{}",
        err.message()
    );

    let err = StreamOptions::from_request(
        1024,
        pb::StreamStatusRequest {
            min_interval_ms: 0,
            job_ids: vec!["a".into(), String::new()],
        },
    )
    .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert!(
        err.message().contains("job_ids[1] is empty"),
        "{}",
        err.message()
    );
}

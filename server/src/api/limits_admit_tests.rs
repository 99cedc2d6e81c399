//! [`Intake::admit`] on requests made here, frame by frame: each call's largest message to the
//! byte, the decoding slot taken from a proof request's first bytes (before the rest arrives),
//! and the counts checked on the wire. The clock is paused, so a read that waits for bytes that
//! never come ends at the body deadline instead of hanging the test.

use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::StreamBody;
use hyper::body::Frame;
use prost::Message;
use snarkd_proto::v1 as pb;
use tokio_stream::wrappers::ReceiverStream;

use super::*;

const SERVICE: &str = "/cuzk.v1.ProvingEngine/";
const STREAM_JOB_IDS: usize = 10;
const REQUEST_ID_BYTES: usize = 100;

/// An intake of `shared` decoding slots whose refusals of proof requests land in the vector.
fn intake(shared: usize) -> (Intake, Arc<Mutex<Vec<Failure>>>) {
    let noted = Arc::new(Mutex::new(Vec::new()));
    let log = noted.clone();
    let intake = Intake {
        slots: DecodeSlots::with(shared, 0, vec![]),
        body_read_timeout: Duration::from_secs(60),
        stream_job_ids: STREAM_JOB_IDS,
        request_id_bytes: REQUEST_ID_BYTES,
        note_refusal: Arc::new(move |failure| log.lock().unwrap().push(failure)),
    };
    (intake, noted)
}

/// `message` as one gRPC frame: compression flag, big-endian length, the bytes.
fn framed(message: &[u8]) -> Vec<u8> {
    let mut out = vec![0];
    out.extend((message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// A request for `method` whose body is `frame`, sent whole.
fn request(method: &str, frame: Vec<u8>) -> Request<Body> {
    let body = Body::new(http_body_util::Full::new(Bytes::from(frame)));
    Request::builder()
        .uri(format!("{SERVICE}{method}"))
        .body(body)
        .unwrap()
}

async fn admit(intake: &Intake, method: &str, frame: Vec<u8>) -> Result<Request<Body>, Status> {
    intake.admit(request(method, frame)).await
}

/// A ProveRequest for a WinningPoSt with this id and `entries` empty vanilla proofs, its PoRep
/// input field `padding` bytes long.
fn prove(request_id: &str, entries: usize, padding: usize) -> Vec<u8> {
    pb::ProveRequest {
        submit: Some(submit(request_id, entries, padding)),
    }
    .encode_to_vec()
}

fn submit(request_id: &str, entries: usize, padding: usize) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: pb::ProofKind::WinningPost as i32,
        vanilla_proof: vec![7; padding],
        vanilla_proofs: vec![Vec::new(); entries],
        ..Default::default()
    }
}

fn stream_status(job_ids: usize) -> Vec<u8> {
    pb::StreamStatusRequest {
        min_interval_ms: 0,
        job_ids: vec![String::new(); job_ids],
    }
    .encode_to_vec()
}

fn assert_refused(result: Result<Request<Body>, Status>, code: Code, says: &str) {
    let Err(status) = result else {
        panic!("expected a refusal naming {says:?}")
    };
    assert_eq!(status.code(), code, "{}", status.message());
    assert!(
        status.message().contains(says),
        "the refusal should say {says:?}: {}",
        status.message()
    );
}

#[tokio::test(start_paused = true)]
async fn each_call_takes_messages_up_to_its_own_limit_to_the_byte() {
    let (intake, _) = intake(4);
    // The small calls: 64 KiB.
    let small = SMALL_REQUEST_BYTES;
    assert_eq!(small, 65_536);
    for method in SMALL_CALLS {
        assert!(admit(&intake, method, framed(&vec![0; small]))
            .await
            .is_ok());
        let over = admit(&intake, method, framed(&vec![0; small + 1])).await;
        let says = format!("{method} requests are at most 65536 bytes");
        assert_refused(over, Code::ResourceExhausted, &says);
    }
    // A path the client made up is named, cut to 40 characters.
    let made_up = "M".repeat(100);
    let over = admit(&intake, &made_up, framed(&vec![0; small + 1])).await;
    let Err(status) = over else {
        panic!("a made-up method's oversized request is refused")
    };
    assert!(
        status
            .message()
            .starts_with(&format!("{} requests", "M".repeat(40))),
        "{}",
        status.message()
    );
    // StreamStatus: the small calls' room and what the followed job ids take.
    let stream = small + STREAM_JOB_IDS * 67;
    assert!(admit(&intake, "StreamStatus", framed(&vec![0; stream]))
        .await
        .is_ok());
    let over = admit(&intake, "StreamStatus", framed(&vec![0; stream + 1])).await;
    assert_refused(over, Code::ResourceExhausted, "stream_job_ids = 10");
    // SubmitProof and Prove: well past the others' limits, each holding a decoding slot.
    let mib = 1 << 20;
    let big_submit = submit("s", 0, mib).encode_to_vec();
    for (method, message) in [("SubmitProof", big_submit), ("Prove", prove("p", 0, mib))] {
        let admitted = admit(&intake, method, framed(&message)).await.unwrap();
        assert!(
            admitted.extensions().get::<DecodeSlot>().is_some(),
            "{method} holds a decoding slot"
        );
    }
    // The small calls take none: with every slot gone, they still pass.
    let (none_left, _) = self::intake(0);
    assert!(admit(&none_left, "GetStatus", framed(&[])).await.is_ok());
    let refused = admit(&none_left, "Prove", framed(&prove("p", 0, 10))).await;
    assert_refused(
        refused,
        Code::ResourceExhausted,
        "decoding_requests limit (0)",
    );
}

#[tokio::test(start_paused = true)]
async fn a_proof_request_is_refused_a_slot_from_its_first_bytes_naming_its_whole_id() {
    let (intake, noted) = intake(0);
    let id = "w".repeat(REQUEST_ID_BYTES);
    let whole = framed(&prove(&id, 0, 4096));
    // The id and kind lie within the first request_id_bytes + 32 bytes; they arrive a byte at
    // a time and the rest never does.
    let head = whole[..REQUEST_ID_BYTES + 32].to_vec();
    let (send, frames) = tokio::sync::mpsc::channel(head.len());
    for byte in head {
        send.try_send(Ok::<_, std::convert::Infallible>(Frame::data(Bytes::from(
            vec![byte],
        ))))
        .unwrap();
    }
    let body = Body::new(StreamBody::new(ReceiverStream::new(frames)));
    let req = Request::builder()
        .uri(format!("{SERVICE}Prove"))
        .body(body)
        .unwrap();
    let refused = intake.admit(req).await;
    assert_refused(refused, Code::ResourceExhausted, "decoding_requests limit");
    let noted = noted.lock().unwrap();
    assert_eq!(noted.len(), 1, "the refusal is in the failure log");
    assert_eq!(noted[0].request_id, id, "with the id as sent, whole");
    assert_eq!(noted[0].kind, Some(snarkd_engine::ProofKind::WinningPost));
    drop(send);
}

#[tokio::test(start_paused = true)]
async fn entries_are_counted_on_the_wire_up_to_each_limit() {
    let (intake, noted) = intake(4);
    let most = wire_scan::MAX_VANILLA_PROOFS;
    assert!(admit(&intake, "Prove", framed(&prove("p", most, 0)))
        .await
        .is_ok());
    let over = admit(&intake, "Prove", framed(&prove("p", most + 1, 0))).await;
    assert_refused(
        over,
        Code::InvalidArgument,
        "vanilla_proofs has 2350 entries",
    );
    let over = submit("s", most + 1, 0).encode_to_vec();
    let over = admit(&intake, "SubmitProof", framed(&over)).await;
    assert_refused(
        over,
        Code::InvalidArgument,
        "vanilla_proofs has 2350 entries",
    );
    assert_eq!(noted.lock().unwrap().len(), 2, "both in the failure log");

    let ids = STREAM_JOB_IDS;
    assert!(admit(&intake, "StreamStatus", framed(&stream_status(ids)))
        .await
        .is_ok());
    let over = admit(&intake, "StreamStatus", framed(&stream_status(ids + 1))).await;
    assert_refused(over, Code::ResourceExhausted, "job_ids lists 11 ids");
    assert_eq!(noted.lock().unwrap().len(), 2, "not a proof request");
}

#[test]
fn each_refusal_is_counted_by_its_limit() {
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::with_local_recorder(&recorder, || {
        let full = Status::resource_exhausted("the decoding_requests limit (0) is reached");
        observe_refusal("Prove", "decoding_requests", &full);
        observe_refusal("SubmitProof", "decoding_requests", &full);
        observe_refusal(
            "GetStatus",
            "message_size",
            &Status::resource_exhausted("64 KiB"),
        );
    });
    let text = handle.render();
    assert!(
        text.contains(r#"snarkd_intake_refusals_total{limit="decoding_requests"} 2"#)
            && text.contains(r#"snarkd_intake_refusals_total{limit="message_size"} 1"#),
        "{text}"
    );
}

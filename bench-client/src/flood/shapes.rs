//! The hostile requests `flood` sends, each about `size` bytes: proof requests a generated client
//! can send (through tonic), and bodies only a hand-written client sends (frame by frame over
//! HTTP/2 on either port, or gRPC-web on the HTTP port): two messages in one body, an upload
//! that stalls, millions of job ids, and small calls of the whole size.

use prost::Message;
use snarkd::api::limits::SMALL_CALLS;
use snarkd_proto::v1 as pb;

use super::raw_grpc::{frame_announcing, Then};

/// Which of the daemon's ports a shape goes to.
#[derive(Clone, Copy, Debug)]
pub enum Port {
    Grpc,
    Http,
}

/// How a shape's copies are sent.
pub enum Sent {
    /// SubmitProof through tonic's generated client, on the gRPC port.
    Submit(fn(usize) -> pb::SubmitProofRequest),
    /// A body written frame by frame over HTTP/2 to `/cuzk.v1.ProvingEngine/<method>`.
    Raw {
        port: Port,
        method: &'static str,
        body: fn(usize) -> Vec<u8>,
        then: Then,
    },
    /// A gRPC-web body over HTTP/1.1 on the HTTP port.
    Web {
        method: &'static str,
        body: fn(usize) -> Vec<u8>,
    },
}

pub struct Shape {
    pub name: String,
    pub sent: Sent,
    /// Settings of the daemon started for this shape.
    pub env: &'static [(&'static str, &'static str)],
}

/// The small calls the read-only HTTP port serves.
const HTTP_SMALL_CALLS: [&str; 2] = ["GetStatus", "GetMetrics"];

/// A stalled upload is cut off at `[limits] body_read_timeout`; 5 s instead of the default 60 s
/// keeps the run short and holds the same memory.
const STALL_CUT_OFF: &[(&str, &str)] = &[("SNARKD_LIMITS_BODY_READ_TIMEOUT", "5s")];

/// A WindowPoSt SubmitProof of one-byte `vanilla_proofs` entries (a tag, a length and one byte
/// each), `size` bytes encoded.
fn one_byte_entries(size: usize) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        proof_kind: pb::ProofKind::WindowPostPartition as i32,
        vanilla_proofs: vec![vec![1]; size / 3],
        ..Default::default()
    }
}

/// `message` in one gRPC frame.
fn framed(message: &[u8]) -> Vec<u8> {
    frame_announcing(message.len() as u32, message)
}

/// One frame of one-byte entries, then a second, empty message.
fn two_messages(size: usize) -> Vec<u8> {
    let first = one_byte_entries(size - 10).encode_to_vec();
    [framed(&first), frame_announcing(0, &[])].concat()
}

/// A frame announcing one-byte entries of the whole size, all but its last byte sent.
fn stalled_upload(size: usize) -> Vec<u8> {
    let mut body = framed(&one_byte_entries(size - 5).encode_to_vec());
    body.pop();
    body
}

/// StreamStatus with one-byte job ids.
fn job_ids(size: usize) -> Vec<u8> {
    framed(
        &pb::StreamStatusRequest {
            min_interval_ms: 0,
            job_ids: vec!["j".into(); (size - 5) / 3],
        }
        .encode_to_vec(),
    )
}

/// A small call's request of the whole size: a job id (AwaitProof's first field; an unknown
/// field to the calls that take none).
fn whole_size_id(size: usize) -> Vec<u8> {
    framed(
        &pb::AwaitProofRequest {
            job_id: "j".repeat(size - 16),
            timeout_ms: 0,
        }
        .encode_to_vec(),
    )
}

/// A WindowPoSt of 2349 vanilla proofs of garbage filling `size`.
fn garbage_entries(size: usize) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        proof_kind: pb::ProofKind::WindowPostPartition as i32,
        vanilla_proofs: vec![vec![0xa5; size / 2349 - 4]; 2349],
        randomness: vec![1; 32],
        ..Default::default()
    }
}

/// A PoRep whose C1 output starts as JSON and never ends its string.
fn c1_not_json(size: usize) -> pb::SubmitProofRequest {
    let mut c1 = br#"{"registered_proof":"StackedDrg2KiBV1_1","x":""#.to_vec();
    c1.resize(size - 8, b'a');
    pb::SubmitProofRequest {
        proof_kind: pb::ProofKind::PorepSealCommit as i32,
        vanilla_proof: c1,
        ..Default::default()
    }
}

/// JSON a C1 decoder takes, with a vector per three bytes (the proof type's variant holds a list
/// of lists of proofs).
fn c1_nested_arrays(size: usize) -> pb::SubmitProofRequest {
    let mut c1 = br#"{"vanilla_proofs":{"StackedDrg2KiBV1":["#.to_vec();
    while c1.len() + 4 < size - 8 {
        c1.extend_from_slice(b"[],");
    }
    c1.extend_from_slice(b"[]]}}");
    pb::SubmitProofRequest {
        proof_kind: pb::ProofKind::PorepSealCommit as i32,
        vanilla_proof: c1,
        ..Default::default()
    }
}

/// A WinningPoSt whose request id is the whole size.
fn whole_size_request_id(size: usize) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        request_id: "r".repeat(size - 8),
        proof_kind: pb::ProofKind::WinningPost as i32,
        ..Default::default()
    }
}

/// Every shape, in the order the table lists them.
pub fn all() -> Vec<Shape> {
    let submit = |name: &str, build| Shape {
        name: name.into(),
        sent: Sent::Submit(build),
        env: &[],
    };
    let raw = |name: String, port, method, body, then| Shape {
        name,
        sent: Sent::Raw {
            port,
            method,
            body,
            then,
        },
        env: &[],
    };
    let web = |name: String, method, body| Shape {
        name,
        sent: Sent::Web { method, body },
        env: &[],
    };
    let mut shapes = vec![
        submit("one-byte vanilla_proofs entries", one_byte_entries),
        submit("2349 vanilla_proofs entries of garbage", garbage_entries),
        submit("one C1 output of JSON that is not one", c1_not_json),
        submit("one C1 output of nested empty arrays", c1_nested_arrays),
        submit("a request_id of the whole size", whole_size_request_id),
        raw(
            "SubmitProof of two messages, one-byte entries then an empty one".into(),
            Port::Grpc,
            "SubmitProof",
            two_messages,
            Then::End,
        ),
        Shape {
            env: STALL_CUT_OFF,
            ..raw(
                "SubmitProof upload stalled one byte short".into(),
                Port::Grpc,
                "SubmitProof",
                stalled_upload,
                Then::Stall,
            )
        },
        raw(
            "SubmitProof of one-byte entries on the read-only HTTP port".into(),
            Port::Http,
            "SubmitProof",
            |size| framed(&one_byte_entries(size - 5).encode_to_vec()),
            Then::End,
        ),
    ];
    for port in [Port::Grpc, Port::Http] {
        shapes.push(raw(
            format!("StreamStatus of one-byte job ids ({port:?} port)"),
            port,
            "StreamStatus",
            job_ids,
            Then::End,
        ));
    }
    shapes.push(web(
        "StreamStatus of one-byte job ids (gRPC-web)".into(),
        "StreamStatus",
        job_ids,
    ));
    for method in SMALL_CALLS {
        shapes.push(raw(
            format!("{method} of the whole size (Grpc port)"),
            Port::Grpc,
            method,
            whole_size_id,
            Then::End,
        ));
    }
    for method in HTTP_SMALL_CALLS {
        shapes.push(raw(
            format!("{method} of the whole size (Http port)"),
            Port::Http,
            method,
            whole_size_id,
            Then::End,
        ));
        shapes.push(web(
            format!("{method} of the whole size (gRPC-web)"),
            method,
            whole_size_id,
        ));
    }
    shapes
}

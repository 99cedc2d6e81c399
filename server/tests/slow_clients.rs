//! Slow, stalled and malformed request bodies through the real daemon (stand-in prover): they
//! cannot keep a deadline proof from its decoding slot, are cut off at `[limits]
//! body_read_timeout`, and a body holding more than its call takes is refused before it is
//! decoded, on both ports.

mod common;

use std::time::Duration;

use common::raw_grpc::{call, call_web, frame_announcing, Then};
use common::{start_with, test_config, wait_for_status, winning, StandInProver};
use prost::Message;
use snarkd_proto::v1 as pb;
use tonic::Code;

const SUBMIT: &str = "/cuzk.v1.ProvingEngine/SubmitProof";

/// The first 4 KiB of a 1 MiB PoRep SubmitProof, as a slow link would have delivered them.
fn porep_head(request_id: &str) -> Vec<u8> {
    let request = pb::SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: pb::ProofKind::PorepSealCommit as i32,
        vanilla_proof: vec![b'{'; 1 << 20],
        ..Default::default()
    };
    let message = request.encode_to_vec();
    frame_announcing(message.len() as u32, &message[..4096])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_uploads_filling_every_slot_leave_a_winning_post_its_own_and_are_cut_off() {
    let mut config = test_config();
    config.limits.body_read_timeout = Duration::from_secs(10);
    let shared = config.limits.decoding_requests;
    let mut d = start_with(config, StandInProver::new()).await;

    // One more stalled upload than there are shared slots: exactly one is refused at once.
    let addr = d.grpc_addr;
    let (done, mut answers) = tokio::sync::mpsc::unbounded_channel();
    for i in 0..=shared {
        let done = done.clone();
        tokio::spawn(async move {
            let head = porep_head(&format!("porep-1000-{i}"));
            let _ = done.send(call(addr, SUBMIT, vec![head], Then::Stall).await);
        });
    }
    let first = answers.recv().await.unwrap();
    assert_eq!(first.code(), Code::ResourceExhausted, "{first:?}");
    assert!(
        first.message().contains("[limits] decoding_requests"),
        "{}",
        first.message()
    );

    // A CRITICAL WinningPoSt is received, decoded and proved meanwhile.
    let proved = d
        .grpc
        .prove(pb::ProveRequest {
            submit: Some(winning("winpost-1000-1")),
        })
        .await
        .expect("a WinningPoSt is not refused while PoRep uploads hold every shared slot")
        .into_inner();
    assert_eq!(
        proved.result.unwrap().status,
        pb::await_proof_response::Status::Completed as i32
    );
    // A PoRep upload is still refused meanwhile: for want of a slot, not by the body deadline.
    let refused = call(addr, SUBMIT, vec![porep_head("porep-1000-x")], Then::Stall).await;
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(
        refused.message().contains("[limits] decoding_requests")
            && !refused.message().contains("body_read_timeout"),
        "{}",
        refused.message()
    );

    // The stalled ones are cut off at the body deadline, each told which limit it ran into.
    for _ in 0..shared {
        let status = answers.recv().await.unwrap();
        assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
        assert!(
            status.message().contains("[limits] body_read_timeout")
                && status.message().contains("10s"),
            "{}",
            status.message()
        );
    }
    // Their slots are free again: an upload is taken in (and, stalled, cut off in turn).
    let again = call(addr, SUBMIT, vec![porep_head("porep-1000-y")], Then::Stall).await;
    assert!(
        again.message().contains("body_read_timeout"),
        "{}",
        again.message()
    );
    // Each refusal is in the failure log under the request id Curio sent.
    let status = wait_for_status(&mut d.grpc, |s| {
        s.failures
            .iter()
            .filter(|f| f.request_id.starts_with("porep-1000-") && f.code == "RESOURCE_EXHAUSTED")
            .count()
            >= shared + 3
    })
    .await;
    let kinds: Vec<i32> = status.failures.iter().map(|f| f.proof_kind).collect();
    assert!(kinds.contains(&(pb::ProofKind::PorepSealCommit as i32)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_of_two_messages_is_refused_before_it_is_decoded() {
    let d = start_with(test_config(), StandInProver::new()).await;
    let one = frame_announcing(0, &[]);
    let submit = winning("winpost-1-2").encode_to_vec();
    let two = [frame_announcing(submit.len() as u32, &submit), one.clone()].concat();
    for (addr, path) in [
        (d.grpc_addr, SUBMIT),
        (d.grpc_addr, "/cuzk.v1.ProvingEngine/GetStatus"),
        (d.http, "/cuzk.v1.ProvingEngine/GetStatus"),
    ] {
        let status = call(addr, path, vec![two.clone()], Then::End).await;
        assert_eq!(status.code(), Code::InvalidArgument, "{path}: {status:?}");
        assert!(
            status.message().contains("more than one message"),
            "{}",
            status.message()
        );
    }
    let web = call_web(
        d.http,
        "/cuzk.v1.ProvingEngine/GetStatus",
        [one.clone(), one].concat(),
    )
    .await;
    assert_eq!(web.code(), Code::InvalidArgument, "{web:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_is_refused_by_size_on_both_ports_before_its_body_is_read() {
    let d = start_with(test_config(), StandInProver::new()).await;
    // 256 MiB announced, 1 KiB sent, then nothing: refused on the announcement, not by the
    // body deadline (60 s) nor after buffering.
    let huge = || vec![frame_announcing(256 << 20, &[0; 1024])];
    for method in snarkd::api::limits::SMALL_CALLS {
        let status = call(
            d.grpc_addr,
            &format!("/cuzk.v1.ProvingEngine/{method}"),
            huge(),
            Then::Stall,
        )
        .await;
        assert_eq!(
            status.code(),
            Code::ResourceExhausted,
            "{method}: {status:?}"
        );
        assert!(
            status
                .message()
                .contains(&format!("{method} requests are at most 65536 bytes")),
            "{}",
            status.message()
        );
    }
    for method in ["GetStatus", "GetMetrics"] {
        let path = format!("/cuzk.v1.ProvingEngine/{method}");
        let status = call(d.http, &path, huge(), Then::Stall).await;
        assert_eq!(
            status.code(),
            Code::ResourceExhausted,
            "HTTP port {method}: {status:?}"
        );
        let web = call_web(d.http, &path, huge().concat()).await;
        assert_eq!(
            web.code(),
            Code::ResourceExhausted,
            "gRPC-web {method}: {web:?}"
        );
    }

    // StreamStatus with millions of one-byte job ids (16 MiB on the wire), sent whole.
    let ids = pb::StreamStatusRequest {
        min_interval_ms: 0,
        job_ids: vec!["j".into(); 5_600_000],
    }
    .encode_to_vec();
    let ids = frame_announcing(ids.len() as u32, &ids);
    let path = "/cuzk.v1.ProvingEngine/StreamStatus";
    for addr in [d.grpc_addr, d.http] {
        let status = call(addr, path, vec![ids.clone()], Then::End).await;
        assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
        assert!(
            status.message().contains("[limits] stream_job_ids = 1024"),
            "{}",
            status.message()
        );
    }
    let web = call_web(d.http, path, ids).await;
    assert_eq!(web.code(), Code::ResourceExhausted, "{web:?}");
    // Within the size, the count of ids is checked on the wire too.
    let many = pb::StreamStatusRequest {
        min_interval_ms: 0,
        job_ids: vec!["j".into(); 1025],
    }
    .encode_to_vec();
    let status = call(
        d.grpc_addr,
        path,
        vec![frame_announcing(many.len() as u32, &many)],
        Then::End,
    )
    .await;
    assert!(
        status.message().contains("job_ids lists 1025 ids"),
        "{}",
        status.message()
    );
}

//! Every `[limits]` key through the real daemon and the generated client: one past the limit is
//! RESOURCE_EXHAUSTED naming the key and its value, and the limits of one priority never refuse
//! or hold back another's work.

mod common;

use bytesize::ByteSize;
use common::{start_with, test_config, winning, StandInProver};
use snarkd_proto::v1 as pb;
use tonic::Code;

fn at(priority: pb::Priority) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        priority: priority as i32,
        ..winning("")
    }
}

/// A request at `priority` whose one partition's input is `input` (so the order the device took
/// it in can be read back: [`StandInProver::proved`]).
fn marked(priority: pb::Priority, input: u32) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        vanilla_proofs: vec![common::prover::vanilla(input)],
        ..at(priority)
    }
}

fn assert_limit(status: &tonic::Status, key: &str, value: &str) {
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    let msg = status.message();
    assert!(msg.contains(key), "{msg}");
    assert!(msg.contains(value), "{msg}");
    assert!(msg.contains(&format!("[limits] {key}")), "{msg}");
}

/// The partition inputs that tell the flood's jobs from the CRITICAL one (the held job's is 0).
const LOW_INPUT: u32 = 1;
const CRITICAL_INPUT: u32 = 9;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_low_work_is_refused_past_queued_jobs_and_critical_work_still_goes_first() {
    let mut config = test_config();
    config.limits.queued_jobs = 3;
    let mut d = start_with(config, StandInProver::new()).await;
    // The first job holds the one worker, so everything after it stays queued.
    let running = common::hold_running_job(&mut d).await; // CRITICAL (the kind's default)
    let mut low = Vec::new();
    for _ in 0..3 {
        let r = d
            .grpc
            .submit_proof(marked(pb::Priority::Low, LOW_INPUT))
            .await
            .expect("within the limit");
        low.push(r.into_inner().job_id);
    }
    let refused = d
        .grpc
        .submit_proof(at(pb::Priority::Low))
        .await
        .unwrap_err();
    assert_limit(&refused, "queued_jobs", "3");
    assert!(
        refused.message().contains("3 LOW jobs"),
        "{}",
        refused.message()
    );

    // Another priority has its own count: a CRITICAL WinningPoSt is accepted behind the flood
    // and is next in line, ahead of every queued LOW job.
    let critical = d
        .grpc
        .submit_proof(marked(pb::Priority::Critical, CRITICAL_INPUT))
        .await
        .expect("critical is not refused by the LOW flood")
        .into_inner();
    assert_eq!(critical.queue_position, 1, "only the running job is ahead");
    // queue_position 1 is the order the device takes it in (the engine's scheduling tests
    // show a synthesized partition goes to an idle worker in that order): it waits only for
    // the device phase already running, not for any LOW job. Once it is synthesized (as the
    // LOW ones are), the running phase is let go.
    let id = critical.job_id.clone();
    common::wait_for_status(&mut d.grpc, |s| {
        s.jobs.iter().any(|j| {
            j.job_id == id
                && j.partitions.first().map(|p| p.state)
                    == Some(pb::PartitionState::SynthDone as i32)
        })
    })
    .await;
    d.prover.open();
    let done = common::await_job(&mut d.grpc, &critical.job_id, 0)
        .await
        .unwrap();
    assert_eq!(
        done.status,
        pb::await_proof_response::Status::Completed as i32
    );
    // Once the flood drains, LOW work is accepted again.
    for id in low.iter().chain([&running]) {
        common::await_job(&mut d.grpc, id, 0).await.unwrap();
    }
    // The device took the CRITICAL job right after the one it was proving, before every LOW.
    assert_eq!(
        d.prover.proved(),
        [0, CRITICAL_INPUT, LOW_INPUT, LOW_INPUT, LOW_INPUT],
        "the order the device proved the partitions in (inputs)"
    );
    d.grpc
        .submit_proof(at(pb::Priority::Low))
        .await
        .expect("room again once LOW jobs ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_input_bytes_are_counted_per_priority() {
    let mut config = test_config();
    let one = at(pb::Priority::Low);
    let size = (one.vanilla_proofs[0].len() + one.randomness.len()) as u64;
    config.limits.queued_input_bytes = ByteSize::b(2 * size);
    let mut d = start_with(config, StandInProver::new()).await;
    let _running = common::hold_running_job(&mut d).await;
    for _ in 0..2 {
        d.grpc
            .submit_proof(at(pb::Priority::Low))
            .await
            .expect("within the limit");
    }
    let refused = d
        .grpc
        .submit_proof(at(pb::Priority::Low))
        .await
        .unwrap_err();
    assert_limit(&refused, "queued_input_bytes", &format!("{} B", 2 * size));
    d.grpc
        .submit_proof(at(pb::Priority::Normal))
        .await
        .expect("NORMAL has its own input budget");
    d.prover.open();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_ids_past_request_id_bytes_are_refused_without_being_echoed() {
    let mut d = start_with(test_config(), StandInProver::new()).await;
    d.grpc
        .submit_proof(winning(&"a".repeat(256)))
        .await
        .expect("256 bytes is the default limit");
    let long = "b".repeat(257);
    for status in [
        d.grpc.submit_proof(winning(&long)).await.unwrap_err(),
        d.grpc
            .prove(pb::ProveRequest {
                submit: Some(winning(&long)),
            })
            .await
            .unwrap_err(),
    ] {
        assert_limit(&status, "request_id_bytes", "256");
        assert!(!status.message().contains("bbbb"), "{}", status.message());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_job_ids_are_refused_short_and_unknown_ones_echo_at_most_64_bytes() {
    let mut d = start_with(test_config(), StandInProver::new()).await;
    // Over the size of a small call's request: refused by size before it is decoded.
    let huge = "j".repeat(1 << 20);
    let awaited = common::await_job(&mut d.grpc, &huge, 1).await.unwrap_err();
    let cancel = pb::CancelProofRequest { job_id: huge };
    let cancelled = d.grpc.cancel_proof(cancel).await.unwrap_err();
    for status in [awaited, cancelled] {
        assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
        let message = status.message();
        assert!(message.contains("at most 65536 bytes"), "{message}");
        assert!(message.len() < 200, "{message}");
    }
    // Within it, but longer than any job id: invalid, and not echoed whole.
    let long = "j".repeat(10_000);
    let awaited = common::await_job(&mut d.grpc, &long, 1).await.unwrap_err();
    let cancel = pb::CancelProofRequest { job_id: long };
    let cancelled = d.grpc.cancel_proof(cancel).await.unwrap_err();
    for status in [awaited, cancelled] {
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert!(status.message().len() < 200, "{}", status.message());
    }
    let unknown = common::await_job(&mut d.grpc, &"k".repeat(64), 1)
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_streams_and_their_job_ids_are_bounded() {
    let mut config = test_config();
    config.limits.status_streams = 2;
    let mut d = start_with(config, StandInProver::new()).await;
    let open = |job_ids: Vec<String>| pb::StreamStatusRequest {
        min_interval_ms: 0,
        job_ids,
    };
    let too_many_ids = (0..1025).map(|i| format!("job-{i}")).collect();
    let refused = d.grpc.stream_status(open(too_many_ids)).await.unwrap_err();
    assert_limit(&refused, "stream_job_ids", "1024");

    let first = d
        .grpc
        .stream_status(open(vec![]))
        .await
        .expect("first stream");
    let _second = d
        .grpc
        .stream_status(open(vec![]))
        .await
        .expect("second stream");
    let refused = d.grpc.stream_status(open(vec![])).await.unwrap_err();
    assert_limit(&refused, "status_streams", "2");

    // A stream's slot is free again once its client goes away (the server notices the reset).
    drop(first);
    let mut again = None;
    for _ in 0..500 {
        match d.grpc.stream_status(open(vec![])).await {
            Ok(stream) => {
                again = Some(stream);
                break;
            }
            Err(status) => {
                assert_limit(&status, "status_streams", "2");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        }
    }
    assert!(again.is_some(), "the closed stream's slot never came back");
}

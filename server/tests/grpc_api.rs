//! Every RPC of `cuzk.v1.ProvingEngine`, called with the generated client against a running
//! daemon: the happy paths first, then each bad input with its code and message.

mod common;

use common::prover::{vanilla, PARAMS_BYTES, PROOF_BYTES};
use common::{hold_running_job, snap, start, wait_for_status, winning};
use snarkd_proto::v1 as pb;
use tonic::Code;

use pb::await_proof_response::Status as AwaitStatus;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_await_prove_and_status_round_trip() {
    let mut d = start().await;
    let c = &mut d.grpc;

    let idle = c
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        idle.queues
            .iter()
            .map(|q| q.pending + q.in_progress)
            .sum::<u32>(),
        0
    );
    assert_eq!(idle.gpus.len(), 1);
    assert_eq!(idle.gpus[0].name, "stand-in cpu");
    assert_eq!(idle.pinned_memory_limit_bytes, 1 << 30);

    let submitted = c
        .submit_proof(winning("winning-1"))
        .await
        .unwrap()
        .into_inner();
    assert!(!submitted.job_id.is_empty());
    let done = c
        .await_proof(pb::AwaitProofRequest {
            job_id: submitted.job_id.clone(),
            timeout_ms: 0,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        done.status,
        AwaitStatus::Completed as i32,
        "{}",
        done.error_message
    );
    assert_eq!(done.job_id, submitted.job_id);
    assert_eq!(done.proof, vec![0; PROOF_BYTES]);

    // The same request id is the same job.
    let again = c
        .submit_proof(winning("winning-1"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again.job_id, submitted.job_id);

    // Prove: partition proofs concatenated in partition order.
    let proved = c
        .prove(pb::ProveRequest {
            submit: Some(snap(3)),
        })
        .await
        .unwrap()
        .into_inner();
    let result = proved.result.unwrap();
    assert_eq!(
        result.status,
        AwaitStatus::Completed as i32,
        "{}",
        result.error_message
    );
    let expected: Vec<u8> = (0u8..3).flat_map(|i| vec![i; PROOF_BYTES]).collect();
    assert_eq!(result.proof, expected);

    let status = c
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(status.total_proofs_completed, 2);
    assert_eq!(status.total_proofs_failed, 0);
    assert!(
        status
            .loaded_srs
            .iter()
            .any(|s| s.circuit_id == "winning-2k"),
        "{:?}",
        status.loaded_srs
    );

    // The stream's first message is the full current state, jobs included by full id.
    let mut stream = c
        .stream_status(pb::StreamStatusRequest::default())
        .await
        .unwrap()
        .into_inner();
    let first = stream.message().await.unwrap().unwrap();
    let daemon = first.daemon.unwrap();
    assert_eq!(daemon.version, snarkd::build_info::VERSION);
    assert_eq!(daemon.build_id, snarkd::build_info::BUILD_ID);
    let job = first
        .jobs
        .iter()
        .find(|j| j.job_id == submitted.job_id)
        .expect("finished job listed");
    assert_eq!(job.state, pb::JobState::Completed as i32);
    assert_eq!(job.request_id, "winning-1");
    assert_eq!(
        job.priority,
        pb::Priority::Critical as i32,
        "unspecified priority → the kind's default"
    );
    assert_eq!(first.counters.unwrap().total_completed, 2);

    // A filtered stream lists only the asked-for job.
    let mut filtered = c
        .stream_status(pb::StreamStatusRequest {
            min_interval_ms: 0,
            job_ids: vec![submitted.job_id.clone()],
        })
        .await
        .unwrap()
        .into_inner();
    let only = filtered.message().await.unwrap().unwrap();
    assert_eq!(
        only.jobs
            .iter()
            .map(|j| j.job_id.as_str())
            .collect::<Vec<_>>(),
        [submitted.job_id.as_str()]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_daemon_streams_nothing_but_heartbeats() {
    let mut d = start().await;
    let mut stream = d
        .grpc
        .stream_status(pb::StreamStatusRequest::default())
        .await
        .unwrap()
        .into_inner();
    let first = stream.message().await.unwrap().unwrap();
    let next = tokio::time::timeout(std::time::Duration::from_secs(30), stream.message())
        .await
        .expect("no heartbeat within 30 s")
        .unwrap()
        .unwrap();
    // Nothing changes in an idle daemon, so the next message is the heartbeat repeating the
    // state (any change would come first, with a later sequence). Its timing is the stream's
    // own, tested under a paused clock (`api/stream_tests.rs`).
    assert_eq!(
        next.sequence, first.sequence,
        "an idle daemon's next message repeats the state"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_and_await_timeout_on_a_running_job() {
    let mut d = start().await;
    let job = hold_running_job(&mut d).await;
    let running = d.daemon.engine().snapshot();
    assert_eq!(
        running.jobs.iter().find(|j| j.job_id == job).unwrap().state,
        snarkd_engine::status::JobState::Running
    );

    let waited = d
        .grpc
        .await_proof(pb::AwaitProofRequest {
            job_id: job.clone(),
            timeout_ms: 20,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(waited.status, AwaitStatus::Timeout as i32);
    assert!(
        waited.error_message.contains("AwaitProof again"),
        "{}",
        waited.error_message
    );

    let cancelled = d
        .grpc
        .cancel_proof(pb::CancelProofRequest {
            job_id: job.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(cancelled.was_running);
    let ended = d
        .grpc
        .await_proof(pb::AwaitProofRequest {
            job_id: job.clone(),
            timeout_ms: 0,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(ended.status, AwaitStatus::Cancelled as i32);
    d.prover.open();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn params_preload_evict_and_metrics() {
    let mut d = start().await;
    let c = &mut d.grpc;
    let first = c
        .preload_srs(pb::PreloadSrsRequest {
            circuit_id: "porep-2k".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!first.already_loaded);
    let second = c
        .preload_srs(pb::PreloadSrsRequest {
            circuit_id: "porep-2k".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(second.already_loaded);

    let status = c
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    let entry = status
        .loaded_srs
        .iter()
        .find(|s| s.circuit_id == "porep-2k")
        .expect("listed after preload");
    assert_eq!(entry.size_bytes, PARAMS_BYTES);

    let evicted = c
        .evict_srs(pb::EvictSrsRequest {
            circuit_id: "porep-2k".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(evicted.was_loaded);
    assert_eq!(evicted.freed_bytes, PARAMS_BYTES);
    let again = c
        .evict_srs(pb::EvictSrsRequest {
            circuit_id: "porep-2k".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!again.was_loaded);

    let metrics = c
        .get_metrics(pb::GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner()
        .prometheus_text;
    assert!(
        metrics.contains(
            r#"grpc_server_handled_total{grpc_type="unary",grpc_service="cuzk.v1.ProvingEngine",grpc_method="PreloadSRS",grpc_code="OK"}"#
        ),
        "{metrics}"
    );
    assert!(metrics.contains("snarkd_build_info"), "{metrics}");
}

/// Asserts a call failed with `code` and a message containing every one of `words`.
fn assert_refused<T: std::fmt::Debug>(
    what: &str,
    result: Result<T, tonic::Status>,
    code: Code,
    words: &[&str],
) {
    let status = match result {
        Ok(ok) => panic!("{what}: expected {code:?}, got {ok:?}"),
        Err(status) => status,
    };
    assert_eq!(status.code(), code, "{what}: {}", status.message());
    for word in words {
        assert!(
            status.message().contains(word),
            "{what}: {:?} lacks {word:?}",
            status.message()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_inputs_get_the_right_code_and_say_what_is_wrong() {
    let mut d = start().await;
    let c = &mut d.grpc;
    let invalid = Code::InvalidArgument;

    let cases: Vec<(&str, pb::SubmitProofRequest, &[&str])> = vec![
        (
            "unspecified kind",
            pb::SubmitProofRequest {
                proof_kind: 0,
                ..winning("")
            },
            &["proof_kind is unspecified"],
        ),
        (
            "unknown kind",
            pb::SubmitProofRequest {
                proof_kind: 42,
                ..winning("")
            },
            &["proof_kind 42"],
        ),
        (
            "no vanilla proofs",
            pb::SubmitProofRequest {
                vanilla_proofs: vec![],
                ..winning("")
            },
            &["vanilla_proofs is empty"],
        ),
        (
            "no randomness",
            pb::SubmitProofRequest {
                randomness: vec![],
                ..winning("")
            },
            &["randomness is missing"],
        ),
        (
            "short randomness",
            pb::SubmitProofRequest {
                randomness: vec![1; 31],
                ..winning("")
            },
            &["randomness is 31 bytes", "32"],
        ),
        (
            "long commitment",
            pb::SubmitProofRequest {
                comm_r_new: vec![1; 33],
                ..snap(1)
            },
            &["comm_r_new is 33 bytes"],
        ),
        (
            "missing commitment",
            pb::SubmitProofRequest {
                comm_d_new: vec![],
                ..snap(1)
            },
            &["comm_d_new is missing"],
        ),
        (
            "porep without c1",
            pb::SubmitProofRequest {
                proof_kind: pb::ProofKind::PorepSealCommit as i32,
                registered_proof: 5,
                ..Default::default()
            },
            &["vanilla_proof is empty"],
        ),
        (
            "undecodable vanilla proof",
            pb::SubmitProofRequest {
                vanilla_proofs: vec![vanilla(0), b"garbage".to_vec()],
                ..snap(2)
            },
            &["vanilla_proofs[1] does not decode"],
        ),
    ];
    for (what, req, words) in cases {
        assert_refused(what, c.submit_proof(req.clone()).await, invalid, words);
        assert_refused(
            what,
            c.prove(pb::ProveRequest { submit: Some(req) }).await,
            invalid,
            words,
        );
    }
    assert_refused(
        "prove without submit",
        c.prove(pb::ProveRequest { submit: None }).await,
        invalid,
        &["submit is missing"],
    );

    let unknown = "00000000-0000-4000-8000-000000000000".to_string();
    assert_refused(
        "await unknown job",
        c.await_proof(pb::AwaitProofRequest {
            job_id: unknown.clone(),
            timeout_ms: 0,
        })
        .await,
        Code::NotFound,
        &["unknown job id", &unknown],
    );
    assert_refused(
        "cancel unknown job",
        c.cancel_proof(pb::CancelProofRequest {
            job_id: unknown.clone(),
        })
        .await,
        Code::NotFound,
        &["unknown job id", &unknown],
    );
    assert_refused(
        "await empty job id",
        c.await_proof(pb::AwaitProofRequest {
            job_id: String::new(),
            timeout_ms: 0,
        })
        .await,
        invalid,
        &["job_id is empty"],
    );
    assert_refused(
        "cancel empty job id",
        c.cancel_proof(pb::CancelProofRequest {
            job_id: String::new(),
        })
        .await,
        invalid,
        &["job_id is empty"],
    );
    assert_refused(
        "preload unknown circuit",
        c.preload_srs(pb::PreloadSrsRequest {
            circuit_id: "porep-99g".into(),
        })
        .await,
        invalid,
        &["porep-99g"],
    );
    assert_refused(
        "evict empty circuit",
        c.evict_srs(pb::EvictSrsRequest {
            circuit_id: String::new(),
        })
        .await,
        invalid,
        &["circuit_id is empty"],
    );
    assert_refused(
        "stream interval above the heartbeat",
        c.stream_status(pb::StreamStatusRequest {
            min_interval_ms: 10_000,
            job_ids: vec![],
        })
        .await,
        invalid,
        &["min_interval_ms 10000"],
    );

    // Over 256 MiB: refused before the body is read, and the connection stays usable.
    let huge = pb::SubmitProofRequest {
        proof_kind: pb::ProofKind::PorepSealCommit as i32,
        registered_proof: 5,
        vanilla_proof: vec![b'{'; snarkd_proto::MAX_MESSAGE_BYTES + 1],
        ..Default::default()
    };
    assert_refused(
        "oversized message",
        c.submit_proof(huge).await,
        Code::ResourceExhausted,
        &["256 MiB", "bytes"],
    );
    c.get_status(pb::GetStatusRequest {})
        .await
        .expect("daemon still answers");
}

/// A request refused at submit never becomes a job, but it is in the failure log every status
/// reader gets, with what was sent and the answer given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_refused_at_submit_is_in_the_failure_log() {
    let mut d = start().await;
    let refused = d
        .grpc
        .prove(pb::ProveRequest {
            submit: Some(pb::SubmitProofRequest {
                vanilla_proofs: vec![],
                ..winning("winpost-1000-refused")
            }),
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument);
    let snapshot = wait_for_status(&mut d.grpc, |s| !s.failures.is_empty()).await;
    let [logged] = &snapshot.failures[..] else {
        panic!("one failure: {:?}", snapshot.failures)
    };
    assert_eq!(logged.request_id, "winpost-1000-refused");
    assert_eq!(logged.proof_kind, pb::ProofKind::WinningPost as i32);
    assert_eq!(
        (logged.stage.as_str(), logged.code.as_str()),
        ("refused", "INVALID_ARGUMENT")
    );
    assert_eq!(logged.message, refused.message());
    assert!(logged.job_id.is_empty() && logged.at_unix_ms > 0);
    assert!(snapshot.jobs.is_empty(), "it never became a job");
}

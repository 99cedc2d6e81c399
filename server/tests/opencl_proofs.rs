//! Real 2 KiB proofs through the daemon with `backend = "opencl"`, on whatever OpenCL device is
//! present (PoCL's CPU device in CI), and a device fault injected mid-proof: the step runs again
//! (on the CPU once the device's tries are used up, beside B's G2 multiexp on the host), the proof
//! still verifies, and the fault is counted in the metrics. A device still being set up: the daemon
//! serves meanwhile, proves WinningPoSt on the CPU, keeps other kinds for the device, and the
//! device joins when ready.
#![cfg(feature = "opencl")]

mod common;
#[path = "common/real.rs"]
mod real;

use std::sync::Arc;

use real::{prove_and_check, real_config, start_with};
use snarkd::config::Backend;
use snarkd::proving::devices::device_info;
use snarkd::proving::FilecoinProver;
use snarkd_engine::prover::{DeviceInfo, Prover};
use snarkd_proto::v1 as pb;
use snarkd_prover::backend::opencl::list_devices;
use snarkd_prover::backend::warming::{Known, WarmingBackend};
use snarkd_prover::groth16::G2On;
use snarkd_prover::{DeviceBackend, OpenClBackend, OpenClOptions, ProofKind};

/// The daemon tests share the process's metrics (same device, same backend name): one at a time.
static ONE_DAEMON: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn metrics(d: &mut real::RealDaemon) -> String {
    d.grpc
        .get_metrics(pb::GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner()
        .prometheus_text
}

#[tokio::test(flavor = "multi_thread")]
async fn post_proofs_on_opencl_verify_and_status_names_the_device() {
    let _one = ONE_DAEMON.lock().await;
    let mut config = real_config(2);
    config.gpus.backend = Backend::Opencl;
    // Small launches, so the real MSMs take several chunks each.
    config.gpus.max_chunk_terms = 4096;
    // The recorder first, as the daemon's main does: choosing the devices sets their gauges.
    let _ = snarkd::telemetry::prometheus();
    let prover = snarkd::proving::from_config(&config).expect("an OpenCL device (PoCL in CI)");
    let device = prover.devices()[0].clone();
    let mut d = start_with(
        &[ProofKind::WinningPost, ProofKind::WindowPost],
        &config,
        prover,
    )
    .await;
    prove_and_check(&mut d, ProofKind::WinningPost).await;
    prove_and_check(&mut d, ProofKind::WindowPost).await;

    let status = d
        .grpc
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    let gpu = &status.gpus[0];
    assert_eq!(
        (gpu.ordinal, gpu.name.as_str(), gpu.vram_total_bytes),
        (device.ordinal, device.name.as_str(), device.memory_bytes)
    );
    assert!(gpu.vram_total_bytes > 0);
    let first = list_devices().into_iter().next().unwrap();
    assert!(gpu.name.contains(&first.info.name), "{}", gpu.name);

    // The device's info series (PoCL has no PCI bus id or NVML UUID: empty, not made up).
    let text = metrics(&mut d).await;
    let info = format!(
        r#"snarkd_device_info{{device="opencl:0",backend="opencl",ordinal="0",name="{}",pci_bus_id="",UUID=""}} 1"#,
        device.name
    );
    assert!(text.contains(&info), "metrics lack {info}:\n{text}");
    assert!(text.contains("snarkd_gpu_expected 1"), "{text}");
    d.daemon.shutdown(std::time::Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_injected_device_fault_still_ends_in_a_verified_proof_and_is_counted() {
    let _one = ONE_DAEMON.lock().await;
    let config = real_config(1);
    let device = list_devices()
        .into_iter()
        .next()
        .expect("an OpenCL device (PoCL in CI)");
    let info: DeviceInfo = device_info(&device.info, 1);
    let backend = Arc::new(
        OpenClBackend::new(
            device,
            OpenClOptions {
                device_attempts: 1,
                unhealthy_after: 4,
                kernel_cache: config.gpus.kernel_cache.clone(),
                // B's G2 multiexp on the host beside the device's G1 steps, so a G1 step
                // falls back to the CPU while it runs (its memory asked of the daemon's budget
                // on top of B's).
                b_g2: G2On::Cpu,
                ..OpenClOptions::default()
            },
        )
        .expect("kernels build"),
    );
    let name = backend.name().to_string();
    let prover = Arc::new(FilecoinProver::new(
        config.params.dir.clone(),
        vec![(info, backend.clone() as Arc<dyn DeviceBackend>)],
    ));
    let mut d = start_with(&[ProofKind::WindowPost], &config, prover).await;
    // The H FFTs, the H multiexp and L's fail on the device; with one try each they run on the
    // CPU (L's beside B's G2 multiexp, which starts at the H multiexp's end).
    backend.inject_faults(3);
    prove_and_check(&mut d, ProofKind::WindowPost).await;
    assert!(
        backend.is_healthy(),
        "three faults, then successes: under unhealthy_after"
    );
    let line = format!("snarkd_device_faults_total{{device=\"{name}\"}} ");
    let text = metrics(&mut d).await;
    let counted = text
        .lines()
        .find_map(|l| l.strip_prefix(&line))
        .unwrap_or_else(|| panic!("metrics lack {line}:\n{text}"));
    assert_eq!(counted.trim().parse::<f64>().unwrap(), 3.0, "{counted}");

    // A device that keeps failing is marked unhealthy after 4 steps in a row and skipped for
    // the rest (the partition has 5 on the device: the H FFTs and 4 G1 multiexps); the proof
    // still verifies.
    backend.inject_faults(u32::MAX);
    prove_and_check(&mut d, ProofKind::WindowPost).await;
    assert!(
        !backend.is_healthy(),
        "4 failures in a row mark the device unhealthy"
    );
    backend.inject_faults(0);
    let text = metrics(&mut d).await;
    let counted = text.lines().find_map(|l| l.strip_prefix(&line)).unwrap();
    assert_eq!(counted.trim().parse::<f64>().unwrap(), 7.0, "3 + 4 faults");
    let unhealthy = format!("snarkd_device_healthy{{device=\"{name}\"}} 0");
    assert!(
        text.lines().any(|l| l == unhealthy),
        "metrics lack {unhealthy}:\n{text}"
    );
    d.daemon.shutdown(std::time::Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_device_pool_is_read_while_a_proof_runs_and_nvml_readings_only_where_nvidia_has_a_driver(
) {
    let _one = ONE_DAEMON.lock().await;
    let mut config = real_config(1);
    config.gpus.backend = Backend::Opencl;
    config.gpus.telemetry_interval = std::time::Duration::from_millis(20);
    let prover = snarkd::proving::from_config(&config).expect("an OpenCL device (PoCL in CI)");
    let mut d = start_with(&[ProofKind::WindowPost], &config, prover).await;
    let mut stream = d
        .grpc
        .clone()
        .stream_status(pb::StreamStatusRequest::default())
        .await
        .unwrap()
        .into_inner();
    // Every reading the stream carries while the proof runs.
    let seen = tokio::spawn(async move {
        let mut seen: Vec<pb::DeviceTelemetry> = Vec::new();
        while let Ok(Some(message)) = stream.message().await {
            seen.extend(message.devices);
        }
        seen
    });
    prove_and_check(&mut d, ProofKind::WindowPost).await;
    // The proof is done: the pool holds the circuit's bases, kept on the device while its
    // parameters are loaded; evicted, they leave the device too and the pool reads empty.
    let evicted = d
        .grpc
        .evict_srs(pb::EvictSrsRequest {
            circuit_id: "wpost-2k".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(evicted.was_loaded, "{evicted:?}");
    let mut after = d
        .grpc
        .stream_status(pb::StreamStatusRequest::default())
        .await
        .unwrap()
        .into_inner();
    tokio::time::timeout(std::time::Duration::from_secs(30), async {
        while let Some(m) = after.message().await.unwrap() {
            if m.devices.iter().any(|t| t.pool_used_bytes == Some(0)) {
                return;
            }
        }
    })
    .await
    .expect("a reading of the empty pool after the proof");
    let text = metrics(&mut d).await;
    d.daemon.shutdown(std::time::Duration::from_secs(5)).await;
    let seen = seen.await.unwrap();

    let device = list_devices().into_iter().next().unwrap();
    assert!(!seen.is_empty(), "no device readings were streamed");
    assert!(seen.iter().all(|t| t.device_ordinal == device.info.ordinal));
    // Readings taken while the device was still being set up say so, and have no pool yet.
    let limit = (seen.iter())
        .find_map(|t| t.pool_limit_bytes)
        .expect("the pool's limit");
    assert!(
        (seen.iter()).all(|t| t.pool_limit_bytes.is_some() || t.warming.is_some()),
        "a reading with neither a pool nor a warming device: {seen:?}"
    );
    assert!(limit > 0 && limit <= device.info.memory_bytes, "{limit}");
    let most = seen.iter().filter_map(|t| t.pool_used_bytes).max().unwrap();
    assert!(
        most > 0 && most <= limit,
        "the pool held device buffers while the proof ran: {most} of {limit}"
    );
    let name = format!("opencl:{}", device.info.ordinal);
    let gauge = |metric: &str| {
        let prefix = format!("{metric}{{device=\"{name}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .map(str::to_string)
    };
    assert_eq!(
        gauge("snarkd_device_pool_limit_bytes").map(|v| v.parse::<f64>().unwrap()),
        Some(limit as f64)
    );
    // NVML is NVIDIA's: its readings are there for a GPU on NVIDIA's driver and absent (not
    // zero) for any other device, such as PoCL's CPU device in CI.
    let nvidia = device.info.platform.contains("NVIDIA") && device.info.pci.is_some();
    for t in &seen {
        assert_eq!(t.memory_total_bytes.is_some(), nvidia, "{t:?}");
        assert_eq!(t.utilization_percent.is_some(), nvidia, "{t:?}");
        assert_eq!(t.temperature_celsius.is_some(), nvidia, "{t:?}");
    }
    for metric in [
        "snarkd_device_utilization_ratio",
        "snarkd_device_memory_total_bytes",
        "snarkd_device_temperature_celsius",
    ] {
        assert_eq!(gauge(metric).is_some(), nvidia, "{metric} in:\n{text}");
    }
}

#[test]
fn snarkd_devices_lists_every_opencl_device_and_the_cpu() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_snarkd"))
        .arg("devices")
        .output()
        .expect("snarkd runs");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("ordinal\tplatform\tname\ttype\tmemory\tcompute units"));
    for d in list_devices() {
        let row = format!(
            "{}\t{}\t{}\t{}\t",
            d.info.ordinal, d.info.platform, d.info.name, d.info.kind
        );
        assert!(
            lines.iter().any(|l| l.starts_with(&row)),
            "{row:?} missing:\n{text}"
        );
    }
    assert!(lines.last().unwrap().starts_with("cpu\t"), "{text}");
}

/// The value of the series `line` (`name{labels}`) in the daemon's metrics, 0 when absent.
async fn series(d: &mut real::RealDaemon, line: &str) -> f64 {
    let text = metrics(d).await;
    text.lines()
        .find_map(|l| l.strip_prefix(line))
        .map_or(0.0, |v| v.trim().parse().unwrap())
}

/// Reads StreamStatus until `seen` says yes to a snapshot; panics after a minute.
async fn until_status(d: &real::RealDaemon, mut seen: impl FnMut(&pb::StatusSnapshot) -> bool) {
    let mut stream = (d.grpc.clone())
        .stream_status(pb::StreamStatusRequest::default())
        .await
        .unwrap()
        .into_inner();
    tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while let Some(m) = stream.message().await.unwrap() {
            if seen(&m) {
                return;
            }
        }
        panic!("the status stream ended");
    })
    .await
    .expect("the awaited status within a minute");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_daemon_serves_while_its_device_warms_proving_winning_post_on_the_cpu_and_the_device_joins_when_ready(
) {
    let _one = ONE_DAEMON.lock().await;
    let mut config = real_config(1);
    config.gpus.telemetry_interval = std::time::Duration::from_millis(20);
    let device = list_devices()
        .into_iter()
        .next()
        .expect("an OpenCL device (PoCL in CI)");
    let info = device_info(&device.info, 1);
    let name = device.info.backend_name();
    let known = Known {
        name: name.clone(),
        pci: device.info.pci,
        driver: Some(device.info.driver()),
    };
    // The device's set-up is held until the test lets it go.
    let (release, held) = std::sync::mpsc::channel::<()>();
    let backend = WarmingBackend::start(known, vec![], "building its kernels", move || {
        let _ = held.recv();
        Ok(Arc::new(OpenClBackend::new(device, OpenClOptions::default())?) as _)
    });
    let prover = Arc::new(FilecoinProver::new(
        config.params.dir.clone(),
        vec![(info, backend.clone() as Arc<dyn DeviceBackend>)],
    ));
    let mut d = start_with(
        &[ProofKind::WinningPost, ProofKind::WindowPost],
        &config,
        prover,
    )
    .await;
    let launches = format!("snarkd_device_launches_total{{device=\"{name}\"}} ");
    let on_cpu = |kind: &str| format!("snarkd_cpu_while_warming_total{{kind=\"{kind}\"}} ");
    let launched_before = series(&mut d, &launches).await;
    let winning_before = series(&mut d, &on_cpu("winning-post")).await;

    // Serving while the device warms: status says so, and a WinningPoSt is proved on the CPU.
    until_status(&d, |s| {
        s.devices
            .iter()
            .any(|t| t.warming.as_deref() == Some("building its kernels"))
    })
    .await;
    prove_and_check(&mut d, ProofKind::WinningPost).await;
    assert!(backend.warming().is_some(), "still held");
    assert_eq!(
        series(&mut d, &on_cpu("winning-post")).await,
        winning_before + 1.0
    );
    assert_eq!(
        series(&mut d, &launches).await,
        launched_before,
        "nothing on the device"
    );
    let warming_gauge = format!("snarkd_device_warming{{device=\"{name}\"}} 1");
    assert!(metrics(&mut d).await.lines().any(|l| l == warming_gauge));

    // A WindowPoSt waits for the device: it reaches a worker and stays there, not on the CPU.
    let request = real::env().fixtures.request(ProofKind::WindowPost);
    let job = d
        .grpc
        .submit_proof(real::wire(&request, pb::Priority::Unspecified))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    until_status(&d, |s| s.workers.iter().any(|w| w.current_job_id == job)).await;
    assert_eq!(series(&mut d, &on_cpu("window-post")).await, 0.0);

    // The device joins: the waiting WindowPoSt and the next WinningPoSt are proved on it.
    release.send(()).unwrap();
    let done = d
        .grpc
        .await_proof(pb::AwaitProofRequest {
            job_id: job,
            timeout_ms: 0,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        done.status,
        pb::await_proof_response::Status::Completed as i32,
        "{}",
        done.error_message
    );
    real::assert_verifies(&request, &done.proof);
    assert!(backend.warming().is_none());
    let after_wpost = series(&mut d, &launches).await;
    assert!(
        after_wpost > launched_before,
        "the WindowPoSt ran on the device"
    );
    prove_and_check(&mut d, ProofKind::WinningPost).await;
    assert!(
        series(&mut d, &launches).await > after_wpost,
        "so did the WinningPoSt"
    );
    assert_eq!(
        series(&mut d, &on_cpu("winning-post")).await,
        winning_before + 1.0
    );
    until_status(&d, |s| s.devices.iter().all(|t| t.warming.is_none())).await;
    d.daemon.shutdown(std::time::Duration::from_secs(5)).await;
}

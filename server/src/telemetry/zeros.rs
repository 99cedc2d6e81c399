//! Counters at zero from the start, for every label set known then: a counter that appears only
//! at its first event gives `rate()` and `increase()` a single sample, so the first failure
//! after a restart would go unseen by an alert. Kinds and intake limits are fixed sets; devices
//! are the backends chosen at startup. Left to appear at their first event: the gRPC call
//! counters (one series per method and code) and the native-witness fallbacks (per circuit).

use snarkd_types::{FailureClass, ProofKind};

/// The `limit` label values of `snarkd_intake_refusals_total`.
const INTAKE_LIMITS: [&str; 5] = [
    "decoding_requests",
    "queued_jobs",
    "queued_input_bytes",
    "stream_job_ids",
    "vanilla_proofs",
];

/// Registers every counter of a known label set at zero; `devices` are the backends' names
/// (`opencl:0`, `cpu`).
pub fn zero_counters(devices: &[&str]) {
    for kind in ProofKind::ALL.map(ProofKind::name) {
        metrics::counter!("snarkd_proofs_completed_total", "kind" => kind).increment(0);
        for class in FailureClass::ALL.map(FailureClass::as_str) {
            metrics::counter!("snarkd_proofs_failed_total", "kind" => kind, "class" => class)
                .increment(0);
        }
        metrics::counter!("snarkd_proofs_cancelled_total", "kind" => kind).increment(0);
        metrics::counter!("snarkd_preemptions_total", "kind" => kind).increment(0);
        metrics::counter!("snarkd_partition_retries_total", "kind" => kind).increment(0);
        metrics::counter!("snarkd_priority_lowered_total", "kind" => kind).increment(0);
        metrics::counter!("snarkd_cpu_while_warming_total", "kind" => kind).increment(0);
    }
    for limit in INTAKE_LIMITS {
        metrics::counter!("snarkd_intake_refusals_total", "limit" => limit).increment(0);
    }
    for device in devices.iter().map(|d| d.to_string()) {
        metrics::counter!("snarkd_device_faults_total", "device" => device.clone()).increment(0);
        for direction in ["to_device", "from_device"] {
            metrics::counter!("snarkd_device_transfer_bytes_total", "device" => device.clone(), "direction" => direction)
                .increment(0);
        }
        metrics::counter!("snarkd_device_launches_total", "device" => device.clone()).increment(0);
        metrics::counter!("snarkd_device_point_additions_total", "device" => device.clone())
            .increment(0);
        metrics::counter!("snarkd_device_host_waits_total", "device" => device.clone())
            .increment(0);
        metrics::counter!("snarkd_device_idle_waits_total", "device" => device).increment(0);
    }
}

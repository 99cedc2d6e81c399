//! The HELP text and unit of every metric snarkd registers, in one place, so that `/metrics`
//! carries a `# HELP` line for each (`docker/check_metrics.py` checks that every metric the
//! sources register is described here; the process metrics describe themselves).

use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};

/// Describes every metric; called once, when the recorder is installed.
pub(super) fn describe_all() {
    describe_daemon();
    describe_jobs();
    describe_resources();
    describe_intake();
    describe_devices();
}

/// The daemon itself.
fn describe_daemon() {
    describe_gauge!(
        "snarkd_build_info",
        "Always 1; the version and build id of the running daemon as labels."
    );
    describe_gauge!(
        "snarkd_journal_writable",
        "1 while the job journal can be written; 0 while writes fail and new work is refused."
    );
    describe_gauge!("snarkd_gpu_expected", "1 when [gpus] backend asks for a GPU (opencl or auto), 0 when it is cpu: with snarkd_device_info{backend=\"cpu\"}, a GPU box proving on its CPU.");
}

/// Jobs, proofs and their partitions.
fn describe_jobs() {
    describe_gauge!(
        "snarkd_jobs_pending",
        "Jobs accepted and waiting for their first partition to start, by proof kind."
    );
    describe_gauge!(
        "snarkd_jobs_in_progress",
        "Jobs with at least one partition started and not yet ended, by proof kind."
    );
    describe_gauge!("snarkd_queue_depth", "Partitions waiting: pending synthesis, or synthesized and waiting for a device, all kinds.");
    describe_counter!(
        "snarkd_proofs_completed_total",
        "Proofs returned COMPLETED (verified), by proof kind."
    );
    describe_counter!(
        "snarkd_proofs_failed_total",
        "Proofs that ended FAILED, by proof kind and class (whose fault: input, setup, resource, device, bug)."
    );
    describe_counter!(
        "snarkd_proofs_cancelled_total",
        "Proofs cancelled by a client before they ended, by proof kind."
    );
    describe_counter!(
        "snarkd_preemptions_total",
        "Partitions paused on a device for a deadline proof, by the paused job's kind."
    );
    describe_counter!("snarkd_partition_retries_total", "Partitions synthesized and proved again after a device fault or a failed partition check, by proof kind.");
    describe_counter!("snarkd_priority_lowered_total", "Requests whose claimed priority was above their kind's ceiling and was lowered, by proof kind.");
    describe_histogram!(
        "snarkd_proof_seconds",
        Unit::Seconds,
        "Time from a proof's acceptance to its end, by proof kind."
    );
    describe_histogram!(
        "snarkd_synthesis_seconds",
        Unit::Seconds,
        "CPU synthesis time of one partition, by proof kind."
    );
    describe_histogram!(
        "snarkd_device_seconds",
        Unit::Seconds,
        "Device phase (FFTs and multi-exponentiations) of one partition, by proof kind."
    );
}

/// Memory, syntheses and parameters.
fn describe_resources() {
    describe_gauge!(
        "snarkd_memory_budget_bytes",
        Unit::Bytes,
        "The memory budget work is admitted under ([memory] budget), not the machine's memory."
    );
    describe_gauge!(
        "snarkd_memory_used_bytes",
        Unit::Bytes,
        "Memory reserved under the budget by loaded parameters and running partitions."
    );
    describe_gauge!(
        "snarkd_memory_params_bytes",
        Unit::Bytes,
        "Memory reserved under the budget by loaded Groth16 parameters."
    );
    describe_gauge!(
        "snarkd_memory_spare_bytes",
        Unit::Bytes,
        "Buffers of finished partitions kept for the next ones, counted under the budget and given back before work waits for room."
    );
    describe_gauge!(
        "snarkd_synthesis_active",
        "Partitions being synthesized now."
    );
    describe_counter!(
        "snarkd_worker_busy_seconds_total",
        Unit::Seconds,
        "Seconds each device worker has spent on device phases; rate() is its busy share."
    );
}

/// Requests taken in and the gRPC calls.
fn describe_intake() {
    describe_counter!(
        "snarkd_intake_refusals_total",
        "Requests refused before decoding, by the limit that refused them ([limits] keys)."
    );
    describe_counter!(
        "grpc_server_started_total",
        "ProvingEngine calls started, by type, service and method."
    );
    describe_counter!(
        "grpc_server_handled_total",
        "ProvingEngine calls ended, by type, service, method and gRPC status code."
    );
    describe_histogram!("grpc_server_handling_seconds", Unit::Seconds, "Time from a ProvingEngine call's start to the end of its response (a StreamStatus stream: until it closes).");
}

/// The proving devices.
fn describe_devices() {
    describe_gauge!("snarkd_device_info", "Always 1, one per proving device: its backend, ordinal, name, PCI bus id and NVML UUID (labels that join with DCGM's series).");
    describe_gauge!(
        "snarkd_device_healthy",
        "1 while the device proves; 0 once it failed too often and its steps run on the CPU."
    );
    describe_counter!(
        "snarkd_partitions_synthesized_total",
        "Partitions synthesized, by kind and path: precompiled (from the circuit's matrices, once its parameters are loaded) or plain (its gadgets, while they load)."
    );
    describe_gauge!(
        "snarkd_device_warming",
        "1 while the device is being set up (its kernels built or loaded): WinningPoSt is proved on the CPU meanwhile, other kinds wait for it."
    );
    describe_counter!(
        "snarkd_cpu_while_warming_total",
        "Partitions proved on the CPU because their device was still being set up, by kind."
    );
    describe_counter!(
        "snarkd_device_faults_total",
        "Device steps that failed and were run again, by device."
    );
    describe_counter!(
        "snarkd_device_transfer_bytes_total",
        Unit::Bytes,
        "Bytes the device phase copied between host memory and a device, by device and direction (to_device, from_device). With parameters kept on the device, a partition sends about its a, b and witness."
    );
    describe_counter!(
        "snarkd_device_launches_total",
        "Kernel launches of the device phase, by device."
    );
    describe_counter!(
        "snarkd_device_point_additions_total",
        "Curve-point additions of the device phase's multiexp kernels (one a term whose scalar is one, one a nonzero digit of the others, two a bucket to weigh it), by device."
    );
    describe_counter!(
        "snarkd_device_host_waits_total",
        "Times the device phase's host thread blocked on a device (a blocking copy or a wait for its queue), by device."
    );
    describe_counter!(
        "snarkd_device_idle_waits_total",
        "Host waits of the device phase with nothing enqueued behind what they waited for, so the device idled until the host gave it more (a multiexp step's last read-back, a finish, a blocking copy), by device."
    );
    describe_counter!(
        "snarkd_native_witness_fallbacks_total",
        "Partitions whose native witness was given up for the circuit's gadgets, by circuit and stage: synthesis (it could not be made, or its public inputs differed from the verifier's) or proof_check (the proof made from it failed its check; the partition was proved again)."
    );
    describe_gauge!(
        "snarkd_device_utilization_ratio",
        "Share of the last sample period the device ran a kernel (NVML), 0 to 1."
    );
    describe_gauge!(
        "snarkd_device_memory_used_bytes",
        Unit::Bytes,
        "Device memory in use, by every process (NVML)."
    );
    describe_gauge!(
        "snarkd_device_memory_total_bytes",
        Unit::Bytes,
        "Device memory in all (NVML)."
    );
    describe_gauge!(
        "snarkd_device_pool_used_bytes",
        Unit::Bytes,
        "Device memory reserved in snarkd's own pool."
    );
    describe_gauge!(
        "snarkd_device_pool_limit_bytes",
        Unit::Bytes,
        "The most device memory snarkd's pool hands out."
    );
    describe_gauge!(
        "snarkd_device_temperature_celsius",
        "GPU temperature in degrees Celsius (NVML)."
    );
    describe_gauge!(
        "snarkd_device_power_watts",
        "Power the device draws, in watts (NVML)."
    );
}

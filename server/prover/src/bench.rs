//! Side-by-side measurement of our split prover and stock bellperson on the same partitions
//! (used by `snarkd-bench bench`; a measurement, not a test). Per kind: synthesis time, device
//! time (FFT / MSM split), the synthesized partition's size, peak RSS, and stock bellperson's
//! `create_random_proof` on the same circuit, split into its synthesis (timed around the
//! circuit's `synthesize` call) and the rest, its proving phase. Both proofs are verified.
//! [`bench_synthesis`] times synthesis alone three ways on a pool of a chosen size: stock
//! bellperson's, our recording constraint system's and the pre-compiled path's.
//! [`bench_setup`] times the local test parameters' Groth16 setup: bellperson's generator and
//! ours on the same blank circuit. [`bench_native_label`] times PoRep label hashes through
//! bellperson's gadgets (witness only) and natively.

use std::time::{Duration, Instant};

use crate::error::Result;
use crate::filecoin::{CircuitId, PreparedJob, ProofKind};
use crate::groth16::{DeviceCounters, DeviceTimings, Randomness};
pub use crate::rss::{peak_rss, reset_peak_rss};
use crate::synthesis::precompiled::CircuitMatrices;
use crate::synthesis::SynthesizedPartition;
use crate::{DeviceBackend, LoadedParams};
use bellperson::groth16::Proof;
use blstrs::Bls12;

/// Figures for one job (all partitions).
#[derive(Clone, Debug)]
pub struct KindBench {
    pub kind: ProofKind,
    pub circuit: CircuitId,
    pub partitions: usize,
    pub constraints: usize,
    pub partition_bytes: u64,
    pub synthesis: Duration,
    pub device: Duration,
    pub fft: Duration,
    pub msm: Duration,
    /// Peak resident set while our prover ran (Linux; `None` elsewhere).
    pub peak_rss_bytes: Option<u64>,
    /// Stock bellperson `create_random_proof` (synthesis + proving) on the same partitions.
    pub bellperson_total: Duration,
    /// The part of `bellperson_total` spent in the circuits' `synthesize`.
    pub bellperson_synthesis: Duration,
    pub bellperson_peak_rss_bytes: Option<u64>,
}

impl KindBench {
    /// Bellperson's proving phase: its total minus the time inside the circuits' `synthesize`.
    pub fn bellperson_prove(&self) -> Duration {
        self.bellperson_total
            .saturating_sub(self.bellperson_synthesis)
    }

    /// Our device phase over bellperson's proving phase on the same circuit.
    pub fn device_ratio(&self) -> f64 {
        self.device.as_secs_f64() / self.bellperson_prove().as_secs_f64().max(1e-9)
    }

    /// (our synthesis + device) / bellperson total.
    pub fn total_ratio(&self) -> f64 {
        (self.synthesis + self.device).as_secs_f64() / self.bellperson_total.as_secs_f64().max(1e-9)
    }
}

/// Proves every partition of `job` with `backend`, then with stock bellperson, verifying both.
pub fn bench_job(
    job: &PreparedJob,
    params: &LoadedParams,
    backend: &dyn DeviceBackend,
) -> Result<KindBench> {
    let mut r = KindBench {
        kind: job.kind(),
        circuit: job.circuit_id(),
        partitions: job.num_partitions(),
        constraints: 0,
        partition_bytes: 0,
        synthesis: Duration::ZERO,
        device: Duration::ZERO,
        fft: Duration::ZERO,
        msm: Duration::ZERO,
        peak_rss_bytes: None,
        bellperson_total: Duration::ZERO,
        bellperson_synthesis: Duration::ZERO,
        bellperson_peak_rss_bytes: None,
    };
    reset_peak_rss();
    let mut proofs = Vec::with_capacity(job.num_partitions());
    for i in 0..job.num_partitions() {
        let t = Instant::now();
        let p = job.synthesize(i)?;
        r.synthesis += t.elapsed();
        r.constraints = p.num_constraints();
        r.partition_bytes = p.size_bytes();
        let t = Instant::now();
        let (proof, timings) = backend.prove(p, params, Randomness::random(), &mut |_| {})?;
        r.device += t.elapsed();
        r.fft += timings.fft;
        r.msm += timings.msm;
        proofs.push(proof);
    }
    r.peak_rss_bytes = peak_rss();
    job.finalize(&proofs, params)?;

    reset_peak_rss();
    let mut stock = Vec::with_capacity(job.num_partitions());
    for i in 0..job.num_partitions() {
        let t = Instant::now();
        let run = job.prove_with_bellperson(i, params)?;
        r.bellperson_total += t.elapsed();
        r.bellperson_synthesis += run.synthesis;
        stock.push(run.proof);
    }
    r.bellperson_peak_rss_bytes = peak_rss();
    job.finalize(&stock, params)?;
    Ok(r)
}

/// Device-phase figures of one path on one job (all partitions).
#[derive(Clone, Debug)]
pub struct DevicePhaseBench {
    /// The path's name (`cpu`, `opencl`, `opencl-before`, ...).
    pub path: String,
    /// The whole device phase (H FFTs, MSMs, assembly).
    pub device: Duration,
    pub fft: Duration,
    pub msm: Duration,
    /// Device faults met (steps rerun); 0 on a healthy device.
    pub faults: u32,
    /// Bytes each way, launches and host waits, summed over the partitions.
    pub counters: DeviceCounters,
}

/// One way of running a partition's device phase.
pub type DevicePath<'a> =
    &'a dyn Fn(SynthesizedPartition, &LoadedParams) -> Result<(Proof<Bls12>, DeviceTimings)>;

/// Proves every partition of `job` on each of `paths` in turn — the same circuit and witness,
/// synthesized again for each — and checks each path's proofs with the verifier. For a side by
/// side of backends and paths; synthesis is not timed.
pub fn bench_device_phase(
    job: &PreparedJob,
    params: &LoadedParams,
    paths: &[(&str, DevicePath<'_>)],
) -> Result<Vec<DevicePhaseBench>> {
    let mut out = Vec::with_capacity(paths.len());
    for (name, prove) in paths {
        let mut r = DevicePhaseBench {
            path: name.to_string(),
            device: Duration::ZERO,
            fft: Duration::ZERO,
            msm: Duration::ZERO,
            faults: 0,
            counters: DeviceCounters::default(),
        };
        let mut proofs = Vec::with_capacity(job.num_partitions());
        for i in 0..job.num_partitions() {
            let p = job.synthesize(i)?;
            let t = Instant::now();
            let (proof, timings) = prove(p, params)?;
            r.device += t.elapsed();
            r.fft += timings.fft;
            r.msm += timings.msm;
            r.faults += timings.faults;
            r.counters += timings.counters;
            proofs.push(proof);
        }
        job.finalize(&proofs, params)?;
        out.push(r);
    }
    Ok(out)
}

/// Synthesis of every partition of a job, three ways, on a pool of `threads` threads: the
/// median of the runs of each (`runs` each, interleaved so drift hits all three alike).
#[derive(Clone, Debug)]
pub struct SynthesisBench {
    pub circuit: CircuitId,
    pub partitions: usize,
    pub threads: usize,
    /// Stock bellperson: the time inside the circuit's `synthesize` under
    /// `create_random_proof` (its `ProvingAssignment` evaluates every linear combination).
    pub bellperson: Duration,
    /// Our recording constraint system (the plain path).
    pub recording: Duration,
    /// The witness pass and the sparse products from `matrices`.
    pub precompiled: Duration,
    /// The native witness and the same products.
    pub native: Duration,
}

impl SynthesisBench {
    /// Pre-compiled over stock bellperson.
    pub fn precompiled_ratio(&self) -> f64 {
        self.precompiled.as_secs_f64() / self.bellperson.as_secs_f64().max(1e-9)
    }

    /// The native witness with the products over stock bellperson.
    pub fn native_ratio(&self) -> f64 {
        self.native.as_secs_f64() / self.bellperson.as_secs_f64().max(1e-9)
    }

    /// Our recording path over stock bellperson.
    pub fn recording_ratio(&self) -> f64 {
        self.recording.as_secs_f64() / self.bellperson.as_secs_f64().max(1e-9)
    }
}

/// Times the synthesis of `job`'s partitions on a fresh pool of `threads` threads; the
/// partitions from both of our paths are compared (the same witness and a/b/c, or an error).
pub fn bench_synthesis(
    job: &PreparedJob,
    params: &LoadedParams,
    matrices: &CircuitMatrices,
    threads: usize,
    runs: usize,
) -> Result<SynthesisBench> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("snarkd-bench-synth-{i}"))
        .build()
        .map_err(|e| crate::ProverError::Device {
            backend: "bench".into(),
            reason: e.to_string(),
        })?;
    let (mut bp, mut rec, mut pre, mut nat) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs.max(1) {
        let [mut b, mut r, mut p, mut n] = [Duration::ZERO; 4];
        for i in 0..job.num_partitions() {
            b += pool
                .install(|| job.prove_with_bellperson(i, params))?
                .synthesis;
            let t = Instant::now();
            let recorded = pool.install(|| job.synthesize(i))?;
            r += t.elapsed();
            let t = Instant::now();
            let fast = pool.install(|| job.synthesize_with(i, Some(matrices)))?;
            p += t.elapsed();
            let t = Instant::now();
            let native = pool.install(|| job.synthesize_native(i, matrices))?;
            n += t.elapsed();
            for (path, made) in [("pre-compiled", &fast), ("native", &native)] {
                if made.witness() != recorded.witness()
                    || made.densities() != recorded.densities()
                    || !same_abc(made.abc(), recorded.abc())
                {
                    return Err(crate::ProverError::Precompiled(format!(
                        "{} partition {i}: the {path} partition differs from the recorded one",
                        job.circuit_id()
                    )));
                }
            }
            if native.native().is_none() {
                return Err(crate::ProverError::Precompiled(format!(
                    "{} partition {i}: the native witness fell back to the gadgets",
                    job.circuit_id()
                )));
            }
        }
        bp.push(b);
        rec.push(r);
        pre.push(p);
        nat.push(n);
    }
    Ok(SynthesisBench {
        circuit: job.circuit_id(),
        partitions: job.num_partitions(),
        threads,
        bellperson: median(bp),
        recording: median(rec),
        precompiled: median(pre),
        native: median(nat),
    })
}

fn same_abc(x: &crate::synthesis::Abc, y: &crate::synthesis::Abc) -> bool {
    x.a == y.a && x.b == y.b && x.c_values() == y.c_values()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// One circuit's Groth16 setup both ways (each on the global rayon pool, one after the other).
#[derive(Clone, Debug)]
pub struct SetupBench {
    pub circuit: CircuitId,
    /// bellperson's `generate_random_parameters` on the blank circuit.
    pub bellperson: Duration,
    /// Ours: recording the R1CS, then [`crate::setup::groth16_setup`].
    pub ours: Duration,
}

/// Runs bellperson's setup and ours on `circuit`'s blank circuit and checks that both made
/// parameters of the same shape (the unit tests show they are equal for equal toxic waste).
pub fn bench_setup(circuit: CircuitId) -> Result<SetupBench> {
    let t = Instant::now();
    let theirs = crate::filecoin::blank::stock_setup(circuit)?;
    let bellperson = t.elapsed();
    let t = Instant::now();
    let ours = crate::filecoin::blank::setup(circuit)?;
    let ours_time = t.elapsed();
    let shape = |p: &bellperson::groth16::Parameters<blstrs::Bls12>| {
        [
            p.vk.ic.len(),
            p.h.len(),
            p.l.len(),
            p.a.len(),
            p.b_g1.len(),
            p.b_g2.len(),
        ]
    };
    if shape(&theirs) != shape(&ours) {
        return Err(crate::ProverError::Setup(format!(
            "{circuit}: the two setups made parameters of different shapes: {:?} and {:?}",
            shape(&theirs),
            shape(&ours)
        )));
    }
    Ok(SetupBench {
        circuit,
        bellperson,
        ours: ours_time,
    })
}

/// Label hashes (`create_label_circuit`: SHA-256 over 1,248 bytes, then the packing) computed
/// by bellperson's gadgets on its witness-only constraint system and natively
/// ([`crate::synthesis::native`]): the median over the runs of the time per label.
#[derive(Clone, Debug)]
pub struct NativeLabelBench {
    /// Labels per run.
    pub labels: usize,
    /// The gadgets on `WitnessCS`, per label.
    pub gadget: Duration,
    /// The native computation, per label.
    pub native: Duration,
}

impl NativeLabelBench {
    /// Native over gadgets (below 1: native is faster).
    pub fn ratio(&self) -> f64 {
        self.native.as_secs_f64() / self.gadget.as_secs_f64().max(1e-9)
    }
}

/// Times `labels` label hashes both ways, `runs` times, on random inputs laid out as in the PoRep
/// circuit (allocated replica id, node and parent bits, a constant layer); each label's aux values
/// must be equal both ways.
pub fn bench_native_label(labels: usize, runs: usize) -> Result<NativeLabelBench> {
    use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
    use bellperson::gadgets::uint32::UInt32;
    use bellperson::util_cs::witness_cs::WitnessCS;
    use bellperson::ConstraintSystem;
    use blstrs::Scalar as Fr;
    use rand::{Rng, SeedableRng};
    use storage_proofs_core::gadgets::uint64::UInt64;
    use storage_proofs_porep::stacked::{create_label_circuit, TOTAL_PARENTS};

    use crate::synthesis::native::bit::Bit;
    use crate::synthesis::native::label::label;
    use crate::synthesis::precompiled::Column;

    let failed = |reason: String| crate::ProverError::Synthesis {
        partition: 0,
        reason,
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut inputs = WitnessCS::<Fr>::new();
    let mut random_bits = |n: usize| -> Result<(Vec<Boolean>, Vec<Bit>)> {
        let values: Vec<bool> = (0..n).map(|_| rng.gen()).collect();
        let gadget = values
            .iter()
            .map(|&v| AllocatedBit::alloc(&mut inputs, Some(v)).map(Boolean::Is))
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| failed(e.to_string()))?;
        Ok((gadget, values.into_iter().map(Bit::Var).collect()))
    };
    let (replica_gadget, replica) = random_bits(256)?;
    let (node_bits, node) = random_bits(64)?;
    let node_gadget = UInt64::from_bits(&node_bits);
    let mut parents_gadget = Vec::new();
    let mut parents = Vec::new();
    for _ in 0..TOTAL_PARENTS {
        let (g, n) = random_bits(256)?;
        parents_gadget.push(g);
        parents.push(n);
    }
    let node: [Bit; 64] = node
        .try_into()
        .map_err(|_| failed("the node is not 64 bits".into()))?;
    let layer: [Bit; 32] = Bit::constants_le(2);

    let (mut gadget_times, mut native_times) = (Vec::new(), Vec::new());
    for _ in 0..runs.max(1) {
        let copies: Vec<_> = (0..labels).map(|_| parents_gadget.clone()).collect();
        let t = Instant::now();
        let mut gadget_cs = WitnessCS::<Fr>::new();
        for copy in copies {
            gadget_cs = WitnessCS::<Fr>::new();
            create_label_circuit(
                &mut gadget_cs,
                &replica_gadget,
                copy,
                UInt32::constant(2),
                node_gadget.clone(),
            )
            .map_err(|e| failed(e.to_string()))?;
        }
        gadget_times.push(t.elapsed() / labels.max(1) as u32);

        let t = Instant::now();
        let mut native_aux = Column::with_capacity(0);
        for _ in 0..labels {
            native_aux = Column::with_capacity(0);
            std::hint::black_box(label(&mut native_aux, &replica, &parents, &layer, &node));
        }
        native_times.push(t.elapsed() / labels.max(1) as u32);
        if native_aux[..] != gadget_cs.aux_slice()[..] {
            return Err(failed(
                "the native label's aux values differ from the gadgets'".into(),
            ));
        }
    }
    Ok(NativeLabelBench {
        labels,
        gadget: median(gadget_times),
        native: median(native_times),
    })
}

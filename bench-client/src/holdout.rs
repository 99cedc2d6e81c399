//! `holdout`: the daemon's synthesis of a real request, through gRPC, against bellperson's own
//! synthesis of the same request, best of RUNS each, as an outside check would measure it. Per
//! kind: a daemon (the snarkd binary beside snarkd-bench, CPU backend) proves the fixture's
//! request RUNS times with `Prove`, each under its own request id; its synthesis per partition
//! is the response's `synthesis_ms` over the partitions (192 proof bytes each). Then, in this
//! process, stock bellperson's `create_random_proof` proves each partition of the same request
//! RUNS times, timing the time inside the circuit's `synthesize`. The daemon's first job of a
//! circuit loads its parameters and pre-compiled circuit; a job admitted before they are loaded
//! synthesizes the plain way, so each run is printed, not only the best.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use snarkd_proto::v1 as pb;
use snarkd_prover::{load_params, prepare, CircuitId, ProofKind};

use crate::report::daemon::Daemon;
use crate::request::to_wire;

#[derive(clap::Args)]
pub struct Options {
    #[command(flatten)]
    pub inputs: crate::local::RealInputs,
    /// Kinds to run (default: porep and snap, the synthesis-bound ones).
    #[arg(long = "kind", value_parser = crate::request::parse_kind)]
    pub kinds: Vec<ProofKind>,
    /// Runs of each side; the best is compared.
    #[arg(long, default_value_t = 2)]
    pub runs: usize,
    /// The snarkd binary [default: beside snarkd-bench].
    #[arg(long)]
    pub snarkd: Option<PathBuf>,
}

pub fn holdout(o: Options) -> Result<()> {
    if o.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let snarkd = Daemon::binary(o.snarkd.as_deref())?;
    let (fixtures, _tmp) = o.inputs.read()?;
    let kinds = if o.kinds.is_empty() {
        vec![ProofKind::PorepSealCommit, ProofKind::SnapDealsUpdate]
    } else {
        o.kinds.clone()
    };
    let runtime = tokio::runtime::Runtime::new()?;
    println!(
        "| circuit | daemon synthesis per partition, each run (ms) | bellperson's, each run (ms) | best ÷ best |"
    );
    println!("|---|---|---|---|");
    for kind in kinds {
        let request = &fixtures.request(kind);
        let circuit = CircuitId::new(kind, fixtures.sector_size)?;
        let daemon = Daemon::start(
            &snarkd,
            &[
                (
                    "SNARKD_PARAMS_DIR",
                    o.inputs.params_dir.display().to_string(),
                ),
                ("SNARKD_GPUS_BACKEND", "cpu".into()),
            ],
        )?;
        let ours = runtime.block_on(async {
            let mut client = daemon.client().await?;
            let mut per_partition = Vec::with_capacity(o.runs);
            for run in 0..o.runs {
                let submit = to_wire(
                    request,
                    pb::Priority::Unspecified,
                    format!("holdout-{circuit}-{run}"),
                );
                let done = client
                    .prove(pb::ProveRequest {
                        submit: Some(submit),
                    })
                    .await?
                    .into_inner()
                    .result
                    .unwrap_or_default();
                if done.status != pb::await_proof_response::Status::Completed as i32 {
                    bail!("{circuit} run {run}: {}", done.error_message);
                }
                let partitions = (done.proof.len() / 192).max(1) as u64;
                per_partition.push(Duration::from_millis(done.synthesis_ms / partitions));
            }
            anyhow::Ok(per_partition)
        })?;
        daemon.stop()?;

        let job = prepare(request)?;
        let params = load_params(&o.inputs.params_dir, circuit)?;
        let mut stock = Vec::with_capacity(o.runs);
        for _ in 0..o.runs {
            let mut total = Duration::ZERO;
            for i in 0..job.num_partitions() {
                total += job.prove_with_bellperson(i, &params)?.synthesis;
            }
            stock.push(total / job.num_partitions() as u32);
        }
        let list = |runs: &[Duration]| -> String {
            let ms: Vec<String> = runs.iter().map(|d| d.as_millis().to_string()).collect();
            ms.join(", ")
        };
        let best = |runs: &[Duration]| runs.iter().min().copied().unwrap_or_default();
        println!(
            "| {circuit} | {} | {} | {:.2} |",
            list(&ours),
            list(&stock),
            best(&ours).as_secs_f64() / best(&stock).as_secs_f64().max(1e-9)
        );
    }
    Ok(())
}

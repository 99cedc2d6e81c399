use std::path::Path;
use std::time::Duration;

use bytesize::ByteSize;
use snarkd_engine::sim::{simulate, Report, Workload};
use snarkd_prover::ProofKind;

use super::table::{self, BoxFile, Built, CostFile, Settings};
use super::workload;

fn read<T: serde::de::DeserializeOwned>(name: &str) -> T {
    table::read_toml(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("plan")
            .join(name),
    )
    .unwrap()
}

fn porep_box(machine: &BoxFile, memory: &str, costs: &CostFile, seed: u64) -> Report {
    let every = [(ProofKind::PorepSealCommit, Duration::from_secs(300))];
    let workload = Workload {
        duration: Duration::from_secs(3600),
        warmup: Duration::from_secs(600),
        arrivals: workload::arrivals(&every, Duration::from_secs(3600), seed),
        in_flight: vec![(ProofKind::PorepSealCommit, 10)],
        sample_every: Duration::from_secs(60),
    };
    let memory = Some(memory.parse::<ByteSize>().unwrap());
    let kinds = [ProofKind::PorepSealCommit];
    match table::setup(machine, memory, &Settings::default(), costs, &kinds).unwrap() {
        Built::Setup(setup) => simulate(&setup, &workload),
        Built::Missing(why) => panic!("{why}"),
    }
}

#[test]
fn the_bundled_tables_simulate_and_a_device_not_measured_is_said_missing() {
    let costs: CostFile = read("costs-32g.toml");
    let threadripper: BoxFile = read("box-threadripper-5070ti.toml");
    let report = porep_box(&threadripper, "128GiB", &costs, 1);
    let porep = report.kind(ProofKind::PorepSealCommit).unwrap();
    assert!(
        porep.per_hour > 0.0 && report.device_busy_share[0] > 0.9,
        "{report:?}"
    );
    assert!(report.peak_memory_bytes <= report.budget_bytes);
    let h200: BoxFile = read("box-h200.toml");
    let kinds = [ProofKind::PorepSealCommit];
    match table::setup(&h200, None, &Settings::default(), &costs, &kinds).unwrap() {
        Built::Missing(why) => assert!(why.contains("not measured"), "{why}"),
        Built::Setup(_) => panic!("the H200's device phase has no measured time"),
    }
}

#[test]
fn a_seed_gives_the_same_plan_and_a_slower_synthesis_never_more_proofs() {
    let mut costs: CostFile = read("costs-32g.toml");
    let mut machine: BoxFile = read("box-h200.toml");
    machine.gpu = Some("h200-target".into());
    // Four times the table's synthesis (past fresh memory's): the cores, not the GPU, the limit.
    for wall in &mut costs.kind[0].synthesis.work.walls {
        wall.1 *= 4.0;
    }
    let first = porep_box(&machine, "128GiB", &costs, 3);
    assert_eq!(first, porep_box(&machine, "128GiB", &costs, 3));
    assert_ne!(first, porep_box(&machine, "128GiB", &costs, 4));
    for wall in &mut costs.kind[0].synthesis.work.walls {
        wall.1 *= 2.0;
    }
    let slower = porep_box(&machine, "128GiB", &costs, 3);
    let per_hour = |r: &Report| r.kind(ProofKind::PorepSealCommit).unwrap().per_hour;
    assert!(
        per_hour(&slower) < per_hour(&first),
        "{} {}",
        per_hour(&slower),
        per_hour(&first)
    );
}

#[test]
fn the_measured_2kib_table_reads_back_and_simulates_the_check_mix() {
    let costs: CostFile = read("costs-2k-dev-vm.toml");
    let machine: BoxFile = read("box-dev-vm.toml");
    assert_eq!(costs.sector_size.as_u64(), 2048);
    let every = [
        (ProofKind::WindowPost, Duration::from_secs(20)),
        (ProofKind::WinningPost, Duration::from_secs(15)),
    ];
    let duration = Duration::from_secs(420);
    let workload = Workload {
        duration,
        warmup: Duration::from_secs(60),
        arrivals: workload::arrivals(&every, duration, 1),
        in_flight: vec![(ProofKind::PorepSealCommit, 2)],
        sample_every: Duration::from_secs(5),
    };
    let kinds = [
        ProofKind::PorepSealCommit,
        ProofKind::WindowPost,
        ProofKind::WinningPost,
    ];
    let Built::Setup(setup) =
        table::setup(&machine, None, &Settings::default(), &costs, &kinds).unwrap()
    else {
        panic!("the measured table has every figure");
    };
    let report = simulate(&setup, &workload);
    // About 80 PoRep proofs an hour on two cores with deadline work between them.
    let porep = report.kind(ProofKind::PorepSealCommit).unwrap();
    assert!((60.0..100.0).contains(&porep.per_hour), "{porep:?}");
    let winning = report.kind(ProofKind::WinningPost).unwrap();
    assert!(winning.completed >= 15, "{winning:?}");
    // The CPU backend's one device is busy whenever a device phase runs on the cores: always,
    // with two PoRep jobs in flight.
    assert!(
        report.device_busy_share[0] > 0.95,
        "{:?}",
        report.device_busy_share
    );
}

#[test]
fn the_page_draws_the_load_and_memory_of_each_simulated_row() {
    let costs: CostFile = read("costs-32g.toml");
    let machine: BoxFile = read("box-threadripper-5070ti.toml");
    let report = porep_box(&machine, "128GiB", &costs, 1);
    let rows = vec![
        super::output::Row {
            machine: machine.name.clone(),
            gpu: "rtx-5070-ti".into(),
            memory: ByteSize::gib(128),
            published_s: Some(152.0),
            result: super::output::Simulated::Ran {
                budget: report.budget_bytes,
                report,
                real_s: 0.1,
            },
        },
        super::output::Row {
            machine: machine.name.clone(),
            gpu: "h200".into(),
            memory: ByteSize::gib(128),
            published_s: None,
            result: super::output::Simulated::Missing("porep on h200: not measured".into()),
        },
    ];
    let dir = tempfile::tempdir().unwrap();
    super::output::write(dir.path(), "# plan <text>\n", &rows).unwrap();
    let page = std::fs::read_to_string(dir.path().join("plan.html")).unwrap();
    assert_eq!(
        page.matches("<svg").count(),
        2,
        "two charts for the one simulated row"
    );
    assert_eq!(page.matches("</svg>").count(), 2);
    assert!(page.contains("&lt;text&gt;") && page.contains("data-chart=\"partitions\""));
    let json = std::fs::read_to_string(dir.path().join("plan.json")).unwrap();
    let lines: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["limit"], "GPU");
    assert_eq!(lines[1]["missing"], "porep on h200: not measured");
}

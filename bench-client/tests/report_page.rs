//! `snarkd-bench report --only latency` against real snarkd daemons (the binary, CPU prover,
//! 2 KiB test parameters, a sector it seals itself): the page it writes, as Chromium parses and
//! draws it, has one latency chart per deadline kind; `proofs.csv` has a row per timed proof and
//! `report.json` names the daemon measured.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use snarkd_prover::{test_params_dir, ProofKind};

/// The snarkd binary beside snarkd-bench (where `report` looks for it), built when this test runs
/// without the rest of the workspace.
fn snarkd_binary() -> PathBuf {
    let path = Path::new(env!("CARGO_BIN_EXE_snarkd-bench")).with_file_name("snarkd");
    if !path.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-p", "snarkd", "--bin", "snarkd"])
            .status()
            .expect("cargo runs");
        assert!(status.success(), "cargo build -p snarkd failed");
    }
    path
}

/// Runs Debian's Chromium headless on `page` with `args`: its stdout.
fn chromium(page: &Path, args: &[&str]) -> String {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let out = Command::new(&chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"])
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap_or_else(|e| {
            panic!("{chromium}: {e} (scripts/setup.sh installs Debian's chromium; CHROMIUM names another)")
        });
    assert!(
        out.status.success(),
        "{chromium} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn report_latency_writes_a_page_with_a_chart_per_deadline_kind() {
    snarkd_prover::generate_params(&test_params_dir(), 2 << 10, &ProofKind::ALL)
        .expect("generating 2 KiB test params");
    let snarkd = snarkd_binary();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-latency");
    let _ = std::fs::remove_dir_all(&out);
    let run = Command::new(env!("CARGO_BIN_EXE_snarkd-bench"))
        .arg("report")
        .arg("--params-dir")
        .arg(test_params_dir())
        .arg("--snarkd")
        .arg(&snarkd)
        .arg("--out")
        .arg(&out)
        .args(["--only", "latency", "--latency-samples", "1"])
        .output()
        .expect("snarkd-bench runs");
    assert!(
        run.status.success(),
        "snarkd-bench report: {}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );

    // The page as Chromium parsed it: one latency chart per kind, each with a line per side.
    let page = out.join("report.html");
    let dom = chromium(&page, &["--dump-dom"]);
    for kind in ["WinningPoSt", "WindowPoSt"] {
        let tag = format!("data-chart=\"latency\" data-kind=\"{kind}\"");
        assert_eq!(dom.matches(&tag).count(), 1, "{tag} in\n{dom}");
        let chart = &dom[dom.find(&tag).unwrap()..];
        let chart = &chart[..chart.find("</svg>").expect("the chart ends")];
        assert_eq!(
            chart.matches("stroke-width=\"2\"").count(),
            2,
            "idle and loaded lines in {chart}"
        );
    }
    assert_eq!(dom.matches("data-chart=\"phases\"").count(), 2, "{dom}");
    assert_eq!(dom.matches("data-chart=\"throughput\"").count(), 2, "{dom}");

    // And as it draws it: a screenshot beside the report, for people to look at.
    let shot = out.join("report.png");
    chromium(
        &page,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1200,2600",
            "--hide-scrollbars",
        ],
    );
    let png = std::fs::read(&shot).expect("the screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "{} bytes",
        png.len()
    );
    eprintln!("the page and its screenshot: {}", out.display());

    // A row per timed proof: two kinds, idle and loaded, one proof each.
    let csv = std::fs::read_to_string(out.join("proofs.csv")).expect("proofs.csv");
    for kind in ["WinningPoSt", "WindowPoSt"] {
        let rows = csv.lines().filter(|l| l.starts_with(&format!("{kind},")));
        assert_eq!(
            rows.filter(|l| l.contains(",COMPLETED,")).count(),
            2,
            "{csv}"
        );
    }
    let report: Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["daemon"]["backend"], "cpu", "{report}");
    assert!(report["machine"]["cores"].as_u64() >= Some(1), "{report}");
}

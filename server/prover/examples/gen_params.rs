//! Generates local 2 KiB test parameters for the given kinds (default: all four, small first).
//!
//! `cargo run --release -p snarkd-prover --example gen_params -- [DIR] [winning wpost snap porep]`
//! DIR defaults to `$SNARKD_TEST_PARAMS_DIR` or `$HOME/.cache/snarkd/params-2k`.
//! These parameters verify only against their own `.vk`, never on chain.

use std::path::PathBuf;

use snarkd_prover::{generate_params, CircuitId};

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_env_filter("info").init();
    let mut args = std::env::args().skip(1);
    let dir = args.next().map(PathBuf::from).unwrap_or_else(default_dir);
    let mut kinds: Vec<String> = args.collect();
    if kinds.first().map(String::as_str) == Some("stems") {
        for k in ["porep", "snap", "wpost", "winning"] {
            let c = CircuitId::parse(&format!("{k}-2k"))?;
            println!("{c} {}", c.params_file_stem());
        }
        return Ok(());
    }
    if kinds.is_empty() {
        kinds = ["winning", "wpost", "snap", "porep"]
            .map(String::from)
            .to_vec();
    }
    for k in kinds {
        let circuit = CircuitId::parse(&format!("{k}-2k"))?;
        let out = generate_params(&dir, circuit.sector_size(), &[circuit.kind()])?;
        for g in out {
            println!(
                "{} generated={} in {:.1}s: {}",
                g.circuit,
                g.generated,
                g.elapsed.as_secs_f64(),
                g.params_path.display()
            );
        }
    }
    Ok(())
}

fn default_dir() -> PathBuf {
    std::env::var_os("SNARKD_TEST_PARAMS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into()))
                .join(".cache/snarkd/params-2k")
        })
}

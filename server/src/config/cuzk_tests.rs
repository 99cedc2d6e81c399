//! A cuzk config read as snarkd's: the keys of cuzk's example config (a fixture written from
//! its documented keys) moved, dropped with notes, or refused; `config from-cuzk` printing a
//! config that loads to the same settings.

use bytesize::ByteSize;

use super::tests::{load_err, load_ok};
use super::*;

const EXAMPLE: &str = include_str!("fixtures/cuzk.example.toml");
/// What a cuzk config listening on every interface needs to start.
const REMOTE_ALLOWED: &[(&str, &str)] = &[("SNARKD_AUTH_ALLOW_UNAUTHENTICATED_REMOTE", "true")];

#[test]
fn cuzks_example_config_is_accepted_with_its_keys_mapped_and_the_rest_noted() {
    // cuzk's documented address takes calls from every interface, with no token: refused
    // unless that is asked for (where a firewall keeps the port private).
    let refused = load_err(EXAMPLE, &[]);
    assert!(
        refused.contains("daemon.listen") && refused.contains("0.0.0.0:9820"),
        "{refused}"
    );
    let config = load_ok(EXAMPLE, REMOTE_ALLOWED);
    assert_eq!(config.daemon.listen, "0.0.0.0:9820".parse().unwrap());
    assert_eq!(config.params.dir, PathBuf::from("/data/zk/params"));
    assert_eq!(config.memory.budget, MemoryBudget::Auto);
    assert_eq!(config.memory.safety_margin, ByteSize::gib(5));
    assert_eq!(config.gpus.workers_per_device, Workers::Fixed(2));
    assert!(config.gpus.devices.is_empty());
    // cuzk's thread-pool size and minimum lookahead mean something else here: defaults kept.
    assert_eq!(config.synthesis.threads, 0);
    assert_eq!(config.pipeline.synthesis_lookahead, Lookahead::Auto);
    assert_eq!(config.logging.level, "info");

    let notes = config.carried_over.join("\n");
    for expected in [
        "this is a cuzk config",
        "[srs] param_cache is read as [params] dir = \"/data/zk/params\"",
        "[memory] total_budget is read as [memory] budget = \"auto\"",
        "[gpus] gpu_workers_per_device is read as [gpus] workers_per_device = 2",
        "[memory] eviction_min_idle = \"5m\" is not carried over",
        "[gpus] gpu_threads = 32 is not carried over",
        "[scheduler] max_batch_size = 1 is not carried over",
        "[pipeline] synthesis_lookahead = 1 is not carried over: cuzk's is a minimum buffer",
        "[pipeline] synthesis_concurrency = 1 is not carried over",
        "[synthesis] threads = 0 is not carried over",
    ] {
        assert!(notes.contains(expected), "{expected:?} not in:\n{notes}");
    }
}

#[test]
fn cuzk_keys_with_a_snarkd_counterpart_carry_their_values() {
    let config = load_ok(
        "[daemon]\nstatus_listen = \"127.0.0.1:9900\"\n[memory]\ntotal_budget = \"256GiB\"\n\
         [pipeline]\nmax_parallel_synthesis = 8\n[synthesis]\nthreads = 32\n",
        &[],
    );
    assert_eq!(
        config.daemon.http_listen.0,
        "127.0.0.1:9900".parse().unwrap()
    );
    assert_eq!(
        config.memory.budget,
        MemoryBudget::Fixed(ByteSize::gib(256))
    );
    assert_eq!(
        config.synthesis.threads, 8,
        "max_parallel_synthesis, not the pool size"
    );
    // cuzk's "" (no status server) and 0 (its default of 18) leave snarkd's defaults.
    let config = load_ok(
        "[daemon]\nstatus_listen = \"\"\n[pipeline]\nmax_parallel_synthesis = 0\n",
        &[],
    );
    assert_eq!(
        config.daemon.http_listen,
        Config::default().daemon.http_listen
    );
    assert_eq!(config.synthesis.threads, 0);
}

#[test]
fn cuzks_gpu_indices_are_refused_with_how_to_name_devices() {
    let err = load_err(
        "[srs]\nparam_cache = \"/p\"\n[gpus]\ndevices = [0, 1]\n",
        &[],
    );
    assert!(
        err.contains("gpus.devices") && err.contains("nvidia-smi"),
        "{err}"
    );
    assert!(err.contains("snarkd devices"), "{err}");
}

#[test]
fn a_snarkd_config_is_not_taken_for_cuzks() {
    let config = load_ok(
        "[synthesis]\nthreads = 4\n[pipeline]\nsynthesis_lookahead = 2\n",
        &[],
    );
    assert_eq!(config.synthesis.threads, 4);
    assert_eq!(config.pipeline.synthesis_lookahead, Lookahead::Limit(2));
    assert!(config.carried_over.is_empty());
}

#[test]
fn from_cuzk_prints_a_snarkd_config_that_loads_to_the_same_settings() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cuzk.toml");
    std::fs::write(&path, EXAMPLE).unwrap();
    let text = Config::from_cuzk(&path).unwrap();
    assert!(
        text.contains("# [gpus] gpu_threads = 32 is not carried over"),
        "{text}"
    );
    assert!(!text.lines().any(|l| l.trim() == "[srs]"), "{text}");
    // cuzk's address is kept, and the output says what it needs.
    assert!(text.contains("listen = \"0.0.0.0:9820\""), "{text}");
    assert!(
        text.contains("# [daemon] listen = \"0.0.0.0:9820\" takes calls from beyond this machine")
            && text.contains("allow_unauthenticated_remote = true"),
        "{text}"
    );
    let converted = load_ok(&text, REMOTE_ALLOWED);
    assert!(converted.carried_over.is_empty(), "a snarkd config now");
    let direct = load_ok(EXAMPLE, REMOTE_ALLOWED);
    assert_eq!(
        Config {
            carried_over: Vec::new(),
            ..direct
        },
        converted
    );

    std::fs::write(&path, "[daemon]\nlisten = \"127.0.0.1:1\"\n").unwrap();
    let err = Config::from_cuzk(&path).unwrap_err().to_string();
    assert!(err.contains("is it a cuzk config"), "{err}");
}

use std::io::Write;
use std::time::Duration;

use bytesize::ByteSize;

use super::sources::load;
use super::*;

fn load_with(
    file: Option<&str>,
    env: &[(&str, &str)],
    overrides: &Overrides,
) -> Result<Config, String> {
    let env = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect::<Vec<_>>();
    let tmp = file.map(|text| {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    });
    load(tmp.as_ref().map(|f| f.path()), env, overrides).map_err(|e| e.to_string())
}

pub(super) fn load_ok(file: &str, env: &[(&str, &str)]) -> Config {
    load_with(Some(file), env, &Overrides::default()).unwrap_or_else(|e| panic!("{e}"))
}

pub(super) fn load_err(file: &str, env: &[(&str, &str)]) -> String {
    match load_with(Some(file), env, &Overrides::default()) {
        Ok(config) => panic!("expected an error, got {config:?}"),
        Err(e) => e,
    }
}

#[test]
fn the_printed_default_config_is_the_default() {
    assert_eq!(load_ok(DEFAULT_TOML, &[]), Config::default());
    assert_eq!(
        load_with(None, &[], &Overrides::default()).unwrap(),
        Config::default()
    );
}

#[test]
fn by_default_both_ports_listen_on_loopback_only() {
    let config = Config::default();
    assert_eq!(config.daemon.listen.to_string(), "127.0.0.1:9820");
    assert_eq!(config.daemon.http_listen.0.to_string(), "127.0.0.1:9821");
    assert!(DEFAULT_TOML.contains("listen = \"127.0.0.1:9820\"\n"));
    assert!(DEFAULT_TOML.contains("http_listen = \"127.0.0.1:9821\"\n"));
}

#[test]
fn the_pipeline_section_reaches_the_engine() {
    let defaults = Config::default().pipeline;
    assert_eq!(
        (defaults.partition_retries, defaults.synthesis_lookahead),
        (1, Lookahead::Auto)
    );
    let config = load_ok(
        "[pipeline]\npartition_retries = 4\nsynthesis_lookahead = 2\n[memory]\nbudget = \"8GiB\"\n",
        &[],
    );
    let engine = config.engine_config().unwrap();
    assert_eq!(
        (engine.partition_retries, engine.synthesis_lookahead),
        (4, Lookahead::Limit(2))
    );

    let config = load_ok(
        "[pipeline]\nsynthesis_lookahead = 2\n",
        &[
            ("SNARKD_PIPELINE_SYNTHESIS_LOOKAHEAD", "6"),
            ("SNARKD_PIPELINE_PARTITION_RETRIES", "0"),
        ],
    );
    assert_eq!(config.pipeline.synthesis_lookahead, Lookahead::Limit(6));
    assert_eq!(config.pipeline.partition_retries, 0);
    let config = load_ok(
        "[pipeline]\nsynthesis_lookahead = 2\n",
        &[("SNARKD_PIPELINE_SYNTHESIS_LOOKAHEAD", "auto")],
    );
    assert_eq!(config.pipeline.synthesis_lookahead, Lookahead::Auto);
}

#[test]
fn b_g2_runs_on_the_device_unless_the_cpu_is_named() {
    use snarkd_prover::groth16::G2On;
    assert_eq!(Config::default().gpus.b_g2, G2On::Device);
    let file = load_ok("[gpus]\nb_g2 = \"cpu\"\n", &[]);
    assert_eq!(file.gpus.b_g2, G2On::Cpu);
    let env = load_ok("", &[("SNARKD_GPUS_B_G2", "cpu")]);
    assert_eq!(env.gpus.b_g2, G2On::Cpu);
}

#[test]
fn workers_per_device_is_left_to_the_device_unless_a_number_is_given() {
    assert_eq!(Config::default().gpus.workers_per_device, Workers::Auto);
    assert_eq!(
        load_ok("[gpus]\nworkers_per_device = 3\n", &[])
            .gpus
            .workers_per_device,
        Workers::Fixed(3)
    );
    let config = load_ok(
        "[gpus]\nworkers_per_device = 3\n",
        &[("SNARKD_GPUS_WORKERS_PER_DEVICE", "auto")],
    );
    assert_eq!(config.gpus.workers_per_device, Workers::Auto);
    // A number is taken as it is on every device; "auto" gives the CPU one.
    use snarkd_prover::groth16::G2On;
    assert_eq!(Workers::Fixed(3).on("cpu", 1 << 40, G2On::Device), 3);
    assert_eq!(Workers::Auto.on("cpu", 1 << 40, G2On::Cpu), 1);
}

#[test]
fn every_default_key_is_documented_in_the_printed_config() {
    for key in [
        "listen",
        "http_listen",
        "retention",
        "drain_timeout",
        "monitor_dir",
        "socket_mode",
        "dir",
        "budget",
        "safety_margin",
        "keep_buffers_from",
        "backend",
        "devices",
        "workers_per_device",
        "max_chunk_terms",
        "work_groups_per_unit",
        "device_attempts",
        "unhealthy_after",
        "keep_params",
        "limb_bits",
        "b_g2",
        "telemetry_interval",
        "cpu_while_warming",
        "preload",
        "porep_priority",
        "snap_priority",
        "wpost_priority",
        "winning_priority",
        "background_nice",
        "preempt",
        "threads",
        "partition_retries",
        "synthesis_lookahead",
        "level",
        "format",
    ] {
        assert!(
            DEFAULT_TOML.contains(&format!("{key} = ")),
            "{key} missing from default.toml"
        );
    }
}

#[test]
fn values_parse_from_the_file() {
    let config = load_ok(
        r#"
        [daemon]
        listen = "unix:///run/snarkd.sock"
        http_listen = "0.0.0.0:9000"
        retention = "2m"
        drain_timeout = "1h 30m"
        [params]
        dir = "/srv/params"
        [memory]
        budget = "64GiB"
        safety_margin = "512MiB"
        [gpus]
        backend = "cuda"
        devices = [0, "A100"]
        workers_per_device = 2
        [scheduler]
        porep_priority = "low"
        [synthesis]
        threads = 3
        [logging]
        level = "snarkd=debug,info"
        format = "json"
        "#,
        &[],
    );
    assert_eq!(
        config.daemon.listen,
        ListenAddr::Unix("/run/snarkd.sock".into())
    );
    assert_eq!(
        config.daemon.http_listen,
        TcpAddr(([0, 0, 0, 0], 9000).into())
    );
    assert_eq!(config.daemon.retention, Duration::from_secs(120));
    assert_eq!(config.daemon.drain_timeout, Duration::from_secs(5400));
    assert_eq!(config.params.dir, std::path::PathBuf::from("/srv/params"));
    assert_eq!(config.memory.budget, MemoryBudget::Fixed(ByteSize::gib(64)));
    assert_eq!(config.memory.safety_margin, ByteSize::mib(512));
    assert_eq!(config.gpus.backend, Backend::Cuda);
    assert_eq!(config.gpus.devices, vec!["0", "A100"]);
    assert_eq!(config.gpus.workers_per_device, Workers::Fixed(2));
    assert_eq!(
        config
            .scheduler
            .default_priority(snarkd_engine::ProofKind::PorepSealCommit),
        snarkd_engine::Priority::Low
    );
    assert_eq!(
        config
            .scheduler
            .default_priority(snarkd_engine::ProofKind::WinningPost),
        snarkd_engine::Priority::Critical
    );
    assert_eq!(config.synthesis_threads(), 3);
    assert_eq!(config.logging.format, LogFormat::Json);
}

#[test]
fn environment_overrides_the_file_and_flags_override_both() {
    let file = "[daemon]\nlisten = \"127.0.0.1:1000\"\nhttp_listen = \"127.0.0.1:1001\"\n[gpus]\nworkers_per_device = 3\n";
    let env = [
        ("SNARKD_DAEMON_LISTEN", "127.0.0.1:2000"),
        ("SNARKD_DAEMON_HTTP_LISTEN", "127.0.0.1:2001"),
        ("SNARKD_GPUS_DEVICES", "1,3"),
        ("SNARKD_GPUS_WORKERS_PER_DEVICE", "2"),
        ("SNARKD_MEMORY_BUDGET", "8GiB"),
        ("SNARKD_DAEMON_RETENTION", "45s"),
        // Not a config key: another tool's variable, left alone.
        ("SNARKD_CONFIG", "/elsewhere.toml"),
        ("PATH", "/usr/bin"),
    ];
    let config = load_ok(file, &env);
    assert_eq!(
        config.daemon.listen,
        ListenAddr::Tcp(([127, 0, 0, 1], 2000).into())
    );
    assert_eq!(config.gpus.devices, vec!["1", "3"]);
    assert_eq!(config.gpus.workers_per_device, Workers::Fixed(2));
    assert_eq!(config.memory.budget, MemoryBudget::Fixed(ByteSize::gib(8)));
    assert_eq!(config.daemon.retention, Duration::from_secs(45));

    let flags = Overrides {
        listen: Some("unix:///tmp/s.sock".parse().unwrap()),
        http_listen: Some("127.0.0.1:3001".parse().unwrap()),
    };
    let config = load_with(Some(file), &env, &flags).unwrap();
    assert_eq!(config.daemon.listen, ListenAddr::Unix("/tmp/s.sock".into()));
    assert_eq!(
        config.daemon.http_listen,
        TcpAddr(([127, 0, 0, 1], 3001).into())
    );
}

/// A bad config: (file, environment, words the error must contain).
type Bad = (
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static [&'static str],
);

const BAD: &[Bad] = &[
    (
        "[daemon]\nlisen = \"127.0.0.1:1\"\n",
        &[],
        &["lisen", "listen"],
    ),
    ("[deamon]\n", &[], &["deamon", "daemon"]),
    (
        "[daemon]\nsocket_mode = \"rw-rw----\"\n",
        &[],
        &["daemon.socket_mode", "rw-rw----", "octal"],
    ),
    (
        "[daemon]\nlisten = \"nowhere\"\n",
        &[],
        &["daemon.listen", "nowhere", "host:port"],
    ),
    (
        "[daemon]\nlisten = \"unix://relative.sock\"\n",
        &[],
        &["daemon.listen", "unix:///"],
    ),
    (
        "[daemon]\nhttp_listen = \"unix:///x.sock\"\n",
        &[],
        &["daemon.http_listen", "host:port"],
    ),
    (
        "[daemon]\nretention = \"soon\"\n",
        &[],
        &["daemon.retention"],
    ),
    (
        "[daemon]\nretention = \"0s\"\n",
        &[],
        &["daemon.retention", "at least 1s"],
    ),
    (
        "[memory]\nbudget = \"lots\"\n",
        &[],
        &["memory.budget", "lots", "64GiB"],
    ),
    (
        "[memory]\nbudget = \"0B\"\n",
        &[],
        &["memory.budget", "auto"],
    ),
    (
        "[memory]\nsafety_margin = \"big\"\n",
        &[],
        &["memory.safety_margin"],
    ),
    (
        "[gpus]\nbackend = \"metal\"\n",
        &[],
        &["gpus.backend", "metal", "cuda"],
    ),
    (
        "[gpus]\ndevices = \"0,,1\"\n",
        &[],
        &["gpus.devices", "empty entry"],
    ),
    (
        "[gpus]\ndevices = [-1]\n",
        &[],
        &["gpus.devices", "-1 is not a device ordinal"],
    ),
    (
        "[gpus]\nworkers_per_device = 0\n",
        &[],
        &["gpus.workers_per_device", "at least 1"],
    ),
    (
        "[gpus]\nwork_groups_per_unit = 65\n",
        &[],
        &["gpus.work_groups_per_unit", "at most 64"],
    ),
    (
        "[gpus]\nworkers_per_device = \"two\"\n",
        &[],
        &["gpus.workers_per_device", "write \"auto\" or a number"],
    ),
    (
        "[scheduler]\nporep_priority = \"urgent\"\n",
        &[],
        &["scheduler.porep_priority", "critical"],
    ),
    (
        "[scheduler]\nbackground_nice = 20\n",
        &[],
        &["scheduler.background_nice", "0 to 19"],
    ),
    (
        "[scheduler]\nwpost_priority = \"critical\"\n",
        &[],
        &["scheduler.wpost_priority", "wpost_max_priority (high)"],
    ),
    (
        "[logging]\nformat = \"xml\"\n",
        &[],
        &["logging.format", "json"],
    ),
    ("[logging]\nlevel = \"info,[[\"\n", &[], &["logging.level"]),
    (
        "[gpus]\nb_g2 = \"gpu\"\n",
        &[],
        &["gpus.b_g2", "device", "cpu"],
    ),
    (
        "[pipeline]\nsynthesis_lookahead = -1\n",
        &[],
        &["pipeline.synthesis_lookahead"],
    ),
    (
        "[pipeline]\npartition_retries = \"twice\"\n",
        &[],
        &["pipeline.partition_retries"],
    ),
    (
        "[gpus]\npartition_retries = 2\n",
        &[],
        &[
            "gpus.partition_retries",
            "[pipeline]",
            "SNARKD_PIPELINE_PARTITION_RETRIES",
        ],
    ),
    (
        "",
        &[("SNARKD_GPUS_PARTITION_RETRIES", "2")],
        &[
            "gpus.partition_retries",
            "SNARKD_GPUS_PARTITION_RETRIES",
            "[pipeline]",
        ],
    ),
    ("listen = 1\n", &[], &["listen"]),
    ("[daemon\n", &[], &["not valid TOML"]),
    (
        "",
        &[("SNARKD_DAEMON_LISTN", "127.0.0.1:1")],
        &["listn", "SNARKD_DAEMON_LISTN"],
    ),
    (
        "",
        &[("SNARKD_MEMORY_BUDGET", "huge")],
        &["memory.budget", "SNARKD_MEMORY_BUDGET"],
    ),
];

#[test]
fn bad_keys_and_values_are_errors_naming_the_key() {
    for (file, env, words) in BAD {
        let err = load_err(file, env);
        for word in *words {
            assert!(
                err.contains(word),
                "error for {file:?} {env:?} lacks {word:?}: {err}"
            );
        }
    }
}

#[test]
fn a_missing_file_says_how_to_make_one() {
    let err = load(
        Some(std::path::Path::new("/nonexistent/snarkd.toml")),
        Vec::new(),
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("/nonexistent/snarkd.toml") && err.contains("snarkd config default"),
        "{err}"
    );
}

#[test]
fn auto_budget_is_usable_memory_less_the_margin_and_the_reserve() {
    let gib = 1u64 << 30;
    let none = ByteSize::b(0);
    assert_eq!(
        MemoryBudget::Auto.resolve(24 * gib, ByteSize::gib(4), none),
        Ok(20 * gib)
    );
    assert_eq!(
        MemoryBudget::Auto.resolve(256 * gib, ByteSize::gib(4), ByteSize::gib(96)),
        Ok(156 * gib),
        "Curio's share beside it"
    );
    assert_eq!(
        MemoryBudget::Fixed(ByteSize::gib(64)).resolve(24 * gib, ByteSize::gib(4), none),
        Ok(64 * gib)
    );
    let err = MemoryBudget::Auto
        .resolve(8 * gib, ByteSize::gib(4), ByteSize::gib(4))
        .unwrap_err();
    assert!(
        err.contains("safety_margin") && err.contains("reserve"),
        "{err}"
    );
}

#[test]
fn listen_addresses_print_as_they_parse() {
    for text in ["127.0.0.1:9820", "unix:///run/snarkd.sock", "[::1]:9820"] {
        assert_eq!(text.parse::<ListenAddr>().unwrap().to_string(), text);
    }
    assert!(
        matches!("localhost:9820".parse::<ListenAddr>(), Ok(ListenAddr::Tcp(a)) if a.port() == 9820)
    );
}

#[test]
fn preloaded_circuits_and_the_kinds_proved_on_the_cpu_while_devices_warm_are_named() {
    let config = load_ok(
        "[params]\npreload = [\"porep-32g\", \"winning-2k\"]\n[gpus]\ncpu_while_warming = [\"wpost\"]\n",
        &[],
    );
    assert_eq!(config.params.preload, ["porep-32g", "winning-2k"]);
    assert_eq!(
        config.gpus.cpu_while_warming,
        [snarkd_prover::ProofKind::WindowPost]
    );
    let from_env = load_ok("", &[("SNARKD_GPUS_CPU_WHILE_WARMING", "wpost,snap")]);
    assert_eq!(
        from_env.gpus.cpu_while_warming,
        [
            snarkd_prover::ProofKind::WindowPost,
            snarkd_prover::ProofKind::SnapDealsUpdate
        ]
    );
    let e = load_err("[params]\npreload = [\"porep-33g\"]\n", &[]);
    assert!(
        e.contains("params.preload") && e.contains("porep-33g"),
        "{e}"
    );
    let e = load_err("[gpus]\ncpu_while_warming = [\"c2\"]\n", &[]);
    assert!(e.contains("unknown proof kind \"c2\""), "{e}");
}

#[test]
fn the_configuration_reference_is_the_default_config() {
    let doc = include_str!("../../../docs/configuration.md");
    let block = doc
        .split_once("```toml\n")
        .and_then(|(_, rest)| rest.rsplit_once("```"))
        .map(|(toml, _)| toml)
        .expect("docs/configuration.md has the default config in a toml block");
    assert!(
        block == DEFAULT_TOML,
        "docs/configuration.md differs from server/src/config/default.toml: copy it over \
         (`snarkd config default` prints it)"
    );
}

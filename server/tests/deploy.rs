//! The deployment files: the systemd unit passes `systemd-analyze verify` and scores 4.0 or
//! less in `systemd-analyze security`, the sysusers.d and
//! tmpfiles.d entries their tools' checks; every `SNARKD_*` setting in the Dockerfile and the
//! compose file is accepted by the daemon (the unit's are run as the unit runs them in
//! `service_install.rs`); and the upgrade path of `install.sh` replaces a running binary by
//! rename, where a plain copy fails.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::process::{self, SNARKD};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// `SNARKD_KEY=value` settings in a file: Dockerfile `ENV` lines (with continuations), compose
/// `environment:` maps (`${VAR:-default}` read as the default), and unit `Environment=` lines.
fn snarkd_settings(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for token in text.split_whitespace() {
        let token = token.trim_start_matches("Environment=");
        if let Some((k, v)) = token.split_once('=') {
            if k.starts_with("SNARKD_") && k != "SNARKD_BUILD_ID" {
                out.push((k.to_string(), v.trim_end_matches('\\').to_string()));
            }
        }
    }
    for line in text.lines() {
        let line = line.trim();
        if let Some((k, v)) = line.split_once(": ") {
            if k.starts_with("SNARKD_") && k != "SNARKD_BUILD_ID" {
                let v = v.trim();
                let v = match v.strip_prefix("${").and_then(|r| r.split_once(":-")) {
                    Some((_, default)) => default.trim_end_matches('}'),
                    None => v,
                };
                out.push((k.to_string(), v.to_string()));
            }
        }
    }
    out
}

/// Starts `snarkd run` with `settings` on loopback ports; Ok once it serves (then stops it with
/// SIGTERM and expects exit 0), Err(its log) when it refuses to start.
fn start_with(settings: &[(String, String)]) -> Result<(), String> {
    // The files' job journal dir is a host's state directory, a path any value of which parses;
    // here each daemon gets its own (the spawn helper's), so no other snarkd's is touched.
    let settings = settings
        .iter()
        .filter(|(k, _)| k != "SNARKD_JOBS_DIR")
        .cloned();
    let mut p = process::spawn(Path::new(SNARKD), settings);
    if let Err(log) = p.try_ready() {
        assert!(
            !p.wait().success(),
            "snarkd exited 0 without serving: {log}"
        );
        return Err(log);
    }
    p.sigterm();
    assert_eq!(p.wait().code(), Some(0));
    Ok(())
}

#[test]
fn every_snarkd_setting_in_the_deploy_files_is_accepted() {
    for file in ["docker/Dockerfile", "docker/compose.yaml"] {
        let settings = snarkd_settings(&read(file));
        assert!(!settings.is_empty(), "{file} sets no SNARKD_ variable");
        if let Err(stderr) = start_with(&settings) {
            panic!("{file}: snarkd refuses its settings {settings:?}: {stderr}");
        }
    }
}

#[test]
fn the_systemd_unit_verifies() {
    let dir = tempfile::tempdir().unwrap();
    // Point the unit at the binary under test; systemd checks that ExecStart exists.
    let unit = read("server/deploy/snarkd.service").replace("/usr/local/bin/snarkd", SNARKD);
    let path = dir.path().join("snarkd.service");
    std::fs::write(&path, unit).unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .expect("systemd-analyze (Debian package systemd) is needed to check the unit");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    // systemd only warns about unknown or malformed settings: there must be none.
    assert!(said.trim().is_empty(), "{said}");

    // Sandboxed: systemd's own exposure score of the unit, 10 fully exposed, 0 locked down.
    let out = Command::new("systemd-analyze")
        .args(["security", "--offline=true", "--no-pager"])
        .arg(&path)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    let score: f64 = said
        .lines()
        .find_map(|l| l.split("exposure level for snarkd.service: ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no exposure level in:\n{said}"));
    assert!(score <= 4.0, "exposure {score}, above 4.0:\n{said}");
}

#[test]
fn install_upgrades_a_running_binary_by_rename_where_a_copy_fails() {
    let (src, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::copy(SNARKD, src.path().join("snarkd")).unwrap();
    let dest = root.path().join("usr/local/bin");
    let install = |what: &str| {
        let out = Command::new(repo().join("server/deploy/install.sh"))
            .arg("--root")
            .arg(root.path())
            .arg(src.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let installed = dest.join("snarkd");
    assert!(install("first install").contains("installed"));

    let mut running = process::spawn(&installed, [("RUST_LOG", "info")]);
    running.ready();

    // Writing into the running executable is refused by the kernel ("text file busy").
    let copy = std::fs::OpenOptions::new().write(true).open(&installed);
    assert_eq!(
        copy.map(|_| ()).unwrap_err().raw_os_error(),
        Some(26), // ETXTBSY
        "overwriting a running binary in place must not be the upgrade path"
    );
    let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let before = inode(&installed);
    assert!(install("upgrade while running").contains(&installed.display().to_string()));
    assert_ne!(inode(&installed), before, "the new binary is a new file");
    assert!(
        running.child.try_wait().unwrap().is_none(),
        "the running daemon is untouched"
    );
    let version = Command::new(&installed).arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("snarkd "));

    running.sigterm();
    assert_eq!(running.wait().code(), Some(0));
    let leftovers: Vec<_> = std::fs::read_dir(&dest)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().contains(".new."))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn settings_are_read_from_each_file_format() {
    let docker = "ENV A=1 \\\n    SNARKD_DAEMON_LISTEN=0.0.0.0:9820 \\\n    SNARKD_PARAMS_DIR=/p\n";
    let compose = "    environment:\n      SNARKD_MEMORY_BUDGET: ${SNARKD_MEMORY_BUDGET:-auto}\n";
    let unit = "Environment=SNARKD_LOGGING_FORMAT=json\n";
    let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
    assert_eq!(
        snarkd_settings(docker),
        vec![
            pair("SNARKD_DAEMON_LISTEN", "0.0.0.0:9820"),
            pair("SNARKD_PARAMS_DIR", "/p")
        ]
    );
    assert_eq!(
        snarkd_settings(compose),
        vec![pair("SNARKD_MEMORY_BUDGET", "auto")]
    );
    assert_eq!(
        snarkd_settings(unit),
        vec![pair("SNARKD_LOGGING_FORMAT", "json")]
    );
}

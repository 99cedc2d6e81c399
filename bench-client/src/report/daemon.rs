//! A `snarkd` child process for one benchmark: started with its own settings on loopback ports,
//! its peak RSS read from `/proc`, stopped with SIGTERM.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{bail, Context, Result};

use crate::client::{connect, Client};

pub struct Daemon {
    child: Child,
    pub addr: String,
    /// The job journal's directory, unless `env` named one (one daemon per journal).
    _jobs: tempfile::TempDir,
    /// The JSON log events up to "snarkd is serving".
    startup: Vec<serde_json::Value>,
}

impl Daemon {
    /// The snarkd binary: `given`, or the one beside snarkd-bench.
    pub fn binary(given: Option<&Path>) -> Result<PathBuf> {
        match given {
            Some(p) => Ok(p.to_path_buf()),
            None => Ok(std::env::current_exe()?.with_file_name("snarkd")),
        }
    }

    /// Starts `snarkd run` with `env` (`SNARKD_*` settings) and waits until it serves. Its job
    /// journal goes to a fresh directory unless `env` sets `SNARKD_JOBS_DIR`.
    pub fn start(snarkd: &Path, env: &[(&str, String)]) -> Result<Daemon> {
        let jobs = tempfile::tempdir()?;
        let mut child = Command::new(snarkd)
            .args([
                "run",
                "--listen",
                "127.0.0.1:0",
                "--http-listen",
                "127.0.0.1:0",
            ])
            .env("SNARKD_JOBS_DIR", jobs.path())
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .env("SNARKD_LOGGING_FORMAT", "json")
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {}", snarkd.display()))?;
        let mut stderr = BufReader::new(child.stderr.take().expect("piped stderr"));
        let mut seen = String::new();
        let mut startup = Vec::new();
        let addr = loop {
            let mut line = String::new();
            if stderr.read_line(&mut line)? == 0 {
                bail!("snarkd exited before serving:\n{seen}");
            }
            seen.push_str(&line);
            let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            if event["message"] == "snarkd is serving" {
                break format!("http://{}", event["grpc"].as_str().unwrap_or_default());
            }
            startup.push(event);
        };
        // Keep draining the log so the daemon never blocks on a full pipe; kept in a file when
        // SNARKD_BENCH_DAEMON_LOGS names a directory (one file per daemon, by pid).
        let mut keep = match std::env::var_os("SNARKD_BENCH_DAEMON_LOGS") {
            Some(dir) => {
                let path = Path::new(&dir).join(format!("snarkd-{}.log", child.id()));
                let mut file = std::fs::File::create(&path)
                    .with_context(|| format!("creating {}", path.display()))?;
                file.write_all(seen.as_bytes())?;
                Some(file)
            }
            None => None,
        };
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                if let Some(file) = keep.as_mut() {
                    let _ = writeln!(file, "{line}");
                }
            }
        });
        Ok(Daemon {
            child,
            addr,
            _jobs: jobs,
            startup,
        })
    }

    /// The first startup log event whose message is `message`.
    pub fn startup_event(&self, message: &str) -> Option<&serde_json::Value> {
        self.startup.iter().find(|e| e["message"] == message)
    }

    /// SIGKILL: nothing is drained or flushed, as in a crash.
    pub fn kill(mut self) -> Result<()> {
        self.child.kill()?;
        self.child.wait()?;
        Ok(())
    }

    pub async fn client(&self) -> Result<Client> {
        connect(&self.addr).await
    }

    /// The most resident memory the process has had (VmHWM), in bytes.
    pub fn peak_rss(&self) -> Result<u64> {
        self.proc_status("VmHWM:")
    }

    /// The resident memory now (VmRSS), in bytes.
    pub fn rss(&self) -> Result<u64> {
        self.proc_status("VmRSS:")
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    fn proc_status(&self, key: &str) -> Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| kib * 1024)
            .with_context(|| format!("no {key} in /proc/<pid>/status"))
    }

    /// SIGTERM, then waits; the daemon drains whatever still runs.
    pub fn stop(mut self) -> Result<()> {
        Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()?;
        let status = self.child.wait()?;
        if !status.success() {
            bail!("snarkd exited with {status}");
        }
        Ok(())
    }
}

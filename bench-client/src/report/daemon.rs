//! A `snarkd` child process for one benchmark: started with its own settings on loopback ports,
//! its peak RSS read from `/proc`, stopped with SIGTERM.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use crate::client::{connect, Client};

pub struct Daemon {
    child: Child,
    pub addr: String,
    /// What its ready file said: both ports.
    pub ready: snarkd::ready::Ready,
    /// The job journal's directory (unless `env` named one) and the ready file.
    _dir: tempfile::TempDir,
    /// Every log line so far (kept by a thread that drains the daemon's stderr).
    log: Arc<Mutex<Vec<String>>>,
}

impl Daemon {
    /// The snarkd binary: `given`, or the one beside snarkd-bench.
    pub fn binary(given: Option<&Path>) -> Result<PathBuf> {
        match given {
            Some(p) => Ok(p.to_path_buf()),
            None => Ok(std::env::current_exe()?.with_file_name("snarkd")),
        }
    }

    /// Starts `snarkd run` with `env` (`SNARKD_*` settings) on loopback ports it picks and waits
    /// until it serves (its ready file, then `/healthz`: `snarkd::ready`). Its job journal goes
    /// to a fresh directory unless `env` sets `SNARKD_JOBS_DIR`. With SNARKD_BENCH_DAEMON_LOGS
    /// naming a directory, its log is kept there too (one file per daemon, by pid).
    pub fn start(snarkd: &Path, env: &[(&str, String)]) -> Result<Daemon> {
        Daemon::start_on(snarkd, env, None)
    }

    /// [`Daemon::start`] on the first `cpus` CPUs only (its threads, pools and synthesis
    /// threads sized for them, as on a machine of that many cores), or on all of them.
    pub fn start_on(snarkd: &Path, env: &[(&str, String)], cpus: Option<usize>) -> Result<Daemon> {
        let dir = tempfile::tempdir()?;
        let ready_file = dir.path().join("ready.json");
        let mut command = snarkd::ready::command(snarkd, &ready_file);
        if let Some(cpus) = cpus {
            use std::os::unix::process::CommandExt;
            // SAFETY: between fork and exec only the async-signal-safe sched_setaffinity runs,
            // on a set built before the fork.
            let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            for cpu in 0..cpus {
                unsafe { libc::CPU_SET(cpu, &mut set) };
            }
            unsafe {
                command.pre_exec(move || {
                    if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let mut child = command
            .env("SNARKD_JOBS_DIR", dir.path().join("jobs"))
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {}", snarkd.display()))?;
        let stderr = BufReader::new(child.stderr.take().expect("piped stderr"));
        let mut keep = match std::env::var_os("SNARKD_BENCH_DAEMON_LOGS") {
            Some(logs) => {
                let path = Path::new(&logs).join(format!("snarkd-{}.log", child.id()));
                let file = std::fs::File::create(&path)
                    .with_context(|| format!("creating {}", path.display()))?;
                Some(file)
            }
            None => None,
        };
        let log = Arc::new(Mutex::new(Vec::new()));
        let lines = log.clone();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                if let Some(file) = keep.as_mut() {
                    let _ = writeln!(file, "{line}");
                }
                lines.lock().expect("log lock").push(line);
            }
        });
        let ready = snarkd::ready::wait(&mut child, &ready_file, Duration::from_secs(600))
            .map_err(|e| anyhow!("{e:#}\n{}", log.lock().expect("log lock").join("\n")))?;
        let addr = ready
            .grpc_url()
            .context("snarkd serves gRPC on a unix socket, not on a TCP port")?;
        Ok(Daemon {
            child,
            addr,
            ready,
            _dir: dir,
            log,
        })
    }

    /// The first log event whose message is `message`.
    pub fn startup_event(&self, message: &str) -> Option<serde_json::Value> {
        self.log
            .lock()
            .expect("log lock")
            .iter()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|e| e["message"] == message)
    }

    /// The first log event whose message is `message`, waiting up to `limit` for it.
    pub fn wait_for_event(&self, message: &str, limit: Duration) -> Result<serde_json::Value> {
        let deadline = std::time::Instant::now() + limit;
        loop {
            if let Some(event) = self.startup_event(message) {
                return Ok(event);
            }
            if std::time::Instant::now() > deadline {
                bail!("no {message:?} in the daemon's log after {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
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

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
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

/// A benchmark that fails half-way leaves no daemon behind.
impl Drop for Daemon {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

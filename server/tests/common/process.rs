//! The `snarkd` binary as a child process: started with JSON logs, followed through its log
//! lines, stopped with SIGTERM or SIGINT.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};

pub const SNARKD: &str = env!("CARGO_BIN_EXE_snarkd");

/// A running `snarkd` and its stderr, read line by line.
pub struct Proc {
    pub child: Child,
    pub stderr: BufReader<ChildStderr>,
    /// The job journal's directory, unless `env` named one.
    _jobs: tempfile::TempDir,
}

/// Starts `binary run` on loopback ports with JSON logs at info and `env` set. The job journal
/// goes to a fresh directory unless `env` sets `SNARKD_JOBS_DIR` (one daemon per journal).
pub fn spawn<K, V>(binary: &Path, env: impl IntoIterator<Item = (K, V)>) -> Proc
where
    K: AsRef<OsStr>,
    V: AsRef<OsStr>,
{
    let jobs = tempfile::tempdir().unwrap();
    let mut child = Command::new(binary)
        .args([
            "run",
            "--listen",
            "127.0.0.1:0",
            "--http-listen",
            "127.0.0.1:0",
        ])
        .env("RUST_LOG", "info")
        .env("SNARKD_JOBS_DIR", jobs.path())
        .envs(env)
        .env("SNARKD_LOGGING_FORMAT", "json")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    Proc {
        child,
        stderr,
        _jobs: jobs,
    }
}

impl Proc {
    /// The next log event whose message is `message`; None when the process ended first. The
    /// lines read meanwhile are appended to `seen` (startup errors are plain text, not JSON).
    pub fn next_log(&mut self, message: &str, seen: &mut String) -> Option<serde_json::Value> {
        loop {
            let mut line = String::new();
            if self.stderr.read_line(&mut line).unwrap() == 0 {
                return None;
            }
            seen.push_str(&line);
            match serde_json::from_str::<serde_json::Value>(&line) {
                Ok(event) if event["message"] == message => return Some(event),
                _ => {}
            }
        }
    }

    /// Like [`Proc::next_log`], failing the test when the process ends first or logs a line
    /// that is not JSON.
    pub fn wait_for_log(&mut self, message: &str) -> serde_json::Value {
        let mut seen = String::new();
        let event = self
            .next_log(message, &mut seen)
            .unwrap_or_else(|| panic!("snarkd exited before logging {message:?}: {seen}"));
        for line in seen.lines() {
            assert!(
                serde_json::from_str::<serde_json::Value>(line).is_ok(),
                "a log line that is not JSON: {line}"
            );
        }
        event
    }

    /// Sends SIGTERM.
    pub fn sigterm(&self) {
        self.signal("TERM");
    }

    /// Sends SIGINT, as Ctrl-C in a terminal does.
    pub fn sigint(&self) {
        self.signal("INT");
    }

    fn signal(&self, name: &str) {
        let kill = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(kill.success(), "kill -{name} failed");
    }

    /// Waits for the exit (blocking).
    pub fn wait(&mut self) -> ExitStatus {
        self.child.wait().unwrap()
    }

    /// The log lines left, once the process has exited.
    pub fn rest(self) -> Vec<String> {
        self.stderr.lines().map(Result::unwrap).collect()
    }

    /// Waits off the async runtime for the exit, and checks the clean stop SIGTERM and SIGINT
    /// must give: exit code 0 and the final "snarkd stopped" log line. Returns the lines logged
    /// after the last one read.
    pub async fn expect_clean_exit(mut self) -> Vec<String> {
        let (exit, rest) = tokio::task::spawn_blocking(move || (self.wait(), self.rest()))
            .await
            .unwrap();
        assert_eq!(exit.code(), Some(0), "{rest:?}");
        assert!(
            rest.iter().any(|l| l.contains("snarkd stopped")),
            "{rest:?}"
        );
        rest
    }
}

/// A `snarkd` whose log is read on a thread from "snarkd is serving" on, every line kept.
pub struct Serving {
    pub child: Child,
    pub grpc: std::net::SocketAddr,
    pub http: String,
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
    _jobs: tempfile::TempDir,
}

impl Proc {
    /// Waits until the daemon serves, then keeps reading its log in the background.
    pub fn serving(mut self) -> Serving {
        let mut seen = String::new();
        let event = self
            .next_log("snarkd is serving", &mut seen)
            .unwrap_or_else(|| panic!("snarkd exited before serving: {seen}"));
        let startup: Vec<String> = seen.lines().map(str::to_string).collect();
        let log = std::sync::Arc::new(std::sync::Mutex::new(startup));
        let lines = log.clone();
        let stderr = self.stderr;
        let reader = std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                lines.lock().unwrap().push(line);
            }
        });
        Serving {
            child: self.child,
            grpc: event["grpc"].as_str().unwrap().parse().unwrap(),
            http: event["http"].as_str().unwrap().to_string(),
            log,
            reader: Some(reader),
            _jobs: self._jobs,
        }
    }
}

impl Serving {
    /// The log events so far whose message is `message`.
    pub fn events(&self, message: &str) -> Vec<serde_json::Value> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|e| e["message"] == message)
            .collect()
    }

    /// `kill -9`: the daemon gets no chance to drain or write anything. Returns its log.
    pub fn kill(mut self) -> Vec<String> {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.finish_log()
    }

    /// SIGTERM, then waits for a clean exit (code 0). Returns its log.
    pub fn stop(mut self) -> Vec<String> {
        let term = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(term.success());
        let status = self.child.wait().unwrap();
        let log = self.finish_log();
        assert_eq!(status.code(), Some(0), "{log:?}");
        log
    }

    fn finish_log(&mut self) -> Vec<String> {
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        std::mem::take(&mut *self.log.lock().unwrap())
    }
}

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
}

/// Starts `binary run` on loopback ports with JSON logs at info and `env` set.
pub fn spawn<K, V>(binary: &Path, env: impl IntoIterator<Item = (K, V)>) -> Proc
where
    K: AsRef<OsStr>,
    V: AsRef<OsStr>,
{
    let mut child = Command::new(binary)
        .args([
            "run",
            "--listen",
            "127.0.0.1:0",
            "--http-listen",
            "127.0.0.1:0",
        ])
        .env("RUST_LOG", "info")
        .envs(env)
        .env("SNARKD_LOGGING_FORMAT", "json")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    Proc { child, stderr }
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

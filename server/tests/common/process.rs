//! The `snarkd` binary as a child process: started with JSON logs and a ready file, followed
//! through its log lines, stopped with SIGTERM or SIGINT.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use snarkd::ready::Ready;

pub const SNARKD: &str = env!("CARGO_BIN_EXE_snarkd");

/// A running `snarkd` and its stderr lines, read on a thread as they come (so the pipe never
/// fills while a test waits for something else).
pub struct Proc {
    pub child: Reaper,
    lines: mpsc::Receiver<String>,
    /// The job journal's directory (unless `env` named one) and the ready file.
    dir: tempfile::TempDir,
}

/// Starts `binary run` on loopback ports the OS picks, with JSON logs at info, a ready file
/// (see `snarkd::ready`) and `env` set. The job journal goes to a fresh directory unless `env`
/// sets `SNARKD_JOBS_DIR` (one daemon per journal).
pub fn spawn<K, V>(binary: &Path, env: impl IntoIterator<Item = (K, V)>) -> Proc
where
    K: AsRef<OsStr>,
    V: AsRef<OsStr>,
{
    let dir = tempfile::tempdir().unwrap();
    let mut child = snarkd::ready::command(binary, &dir.path().join("ready.json"))
        .env("RUST_LOG", "info")
        .env("SNARKD_JOBS_DIR", dir.path().join("jobs"))
        // Its own state directory: no test's pre-compiled matrices reach another's daemon.
        .env("STATE_DIRECTORY", dir.path().join("state"))
        .envs(env)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    Proc {
        child: Reaper(child),
        lines,
        dir,
    }
}

/// The daemon's process, killed when dropped: a test that fails half-way leaves no daemon
/// behind (one would keep the test run's output pipe open).
pub struct Reaper(pub Child);

impl std::ops::Deref for Reaper {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Reaper {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

impl Proc {
    /// Waits until the daemon serves (its ready file, then `/healthz`); Err(its log so far)
    /// when it exits first.
    pub fn try_ready(&mut self) -> Result<Ready, String> {
        let path = self.dir.path().join("ready.json");
        snarkd::ready::wait(&mut self.child, &path, Duration::from_secs(300)).map_err(|e| {
            let log: Vec<String> = self.lines.try_iter().collect();
            format!("{e:#}\n{}", log.join("\n"))
        })
    }

    /// [`Proc::try_ready`], failing the test when the daemon does not come up.
    pub fn ready(&mut self) -> Ready {
        self.try_ready()
            .unwrap_or_else(|log| panic!("snarkd did not start: {log}"))
    }

    /// The next log event whose message is `message`; None when the process ended first. The
    /// lines read meanwhile are appended to `seen` (startup errors are plain text, not JSON).
    /// Fails the test, with those lines, when none comes within [`super::WAIT_LIMIT`].
    pub fn next_log(&mut self, message: &str, seen: &mut String) -> Option<serde_json::Value> {
        let deadline = std::time::Instant::now() + super::WAIT_LIMIT;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(line) => line,
                Err(mpsc::RecvTimeoutError::Disconnected) => return None,
                Err(mpsc::RecvTimeoutError::Timeout) => panic!(
                    "snarkd logged no {message:?} within {:?}: {seen}",
                    super::WAIT_LIMIT
                ),
            };
            seen.push_str(&line);
            seen.push('\n');
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

    /// Waits for the exit (blocking); fails the test when it has not come within
    /// [`super::WAIT_LIMIT`].
    pub fn wait(&mut self) -> ExitStatus {
        exit_within(&mut self.child.0)
    }

    /// The log lines not read yet, up to the process's exit (the end of its stderr); fails the
    /// test when its stderr has not ended within [`super::WAIT_LIMIT`].
    pub fn rest(self) -> Vec<String> {
        let deadline = std::time::Instant::now() + super::WAIT_LIMIT;
        let mut rest = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => rest.push(line),
                Err(mpsc::RecvTimeoutError::Disconnected) => return rest,
                Err(mpsc::RecvTimeoutError::Timeout) => panic!(
                    "snarkd's stderr did not end within {:?}: {rest:?}",
                    super::WAIT_LIMIT
                ),
            }
        }
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

/// A serving `snarkd` whose log is kept, every line.
pub struct Serving {
    child: Reaper,
    pub grpc: std::net::SocketAddr,
    pub http: String,
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl Proc {
    /// Waits until the daemon serves, then keeps its log (from the first line) on a thread. The
    /// startup lines (recovered jobs among them) are all kept before this returns: they precede
    /// "snarkd is serving", logged just before the ready file is written, so they are read up to
    /// that line here (readiness itself is the ready file's).
    pub fn serving(mut self) -> Serving {
        let ready = self.ready();
        let mut startup = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(30)) {
            let last = line.contains("snarkd is serving");
            startup.push(line);
            if last {
                break;
            }
        }
        let log = std::sync::Arc::new(std::sync::Mutex::new(startup));
        let kept = log.clone();
        let lines = self.lines;
        let reader = std::thread::spawn(move || {
            for line in lines.iter() {
                kept.lock().unwrap().push(line);
            }
        });
        Serving {
            child: self.child,
            grpc: ready.grpc.parse().unwrap(),
            http: ready.http.to_string(),
            log,
            reader: Some(reader),
            _dir: self.dir,
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

    /// Waits (at most a minute) for the first log event whose message is `message`: one the
    /// daemon logs after it serves, such as a job recovery planned in the background.
    pub fn wait_for_event(&self, message: &str) -> serde_json::Value {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(event) = self.events(message).into_iter().next() {
                return event;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no log event {message:?} within a minute"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `kill -9`: the daemon gets no chance to drain or write anything. Returns its log.
    pub fn kill(mut self) -> Vec<String> {
        self.child.kill().unwrap();
        exit_within(&mut self.child.0);
        self.finish_log()
    }

    /// SIGTERM, then waits for a clean exit (code 0). Returns its log.
    pub fn stop(mut self) -> Vec<String> {
        let term = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(term.success());
        let status = exit_within(&mut self.child.0);
        let log = self.finish_log();
        assert_eq!(status.code(), Some(0), "{log:?}");
        log
    }

    fn finish_log(&mut self) -> Vec<String> {
        if let Some(reader) = self.reader.take() {
            poll_until("snarkd's stderr did not end", || reader.is_finished());
            reader.join().unwrap();
        }
        std::mem::take(&mut *self.log.lock().unwrap())
    }
}

/// Polls `done` every 20 ms until it holds; fails the test with "{what} within
/// [`super::WAIT_LIMIT`]" when it does not hold by then.
pub fn poll_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + super::WAIT_LIMIT;
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what} within {:?}",
            super::WAIT_LIMIT
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for `child`'s exit (blocking); fails the test when it has not come within
/// [`super::WAIT_LIMIT`].
fn exit_within(child: &mut Child) -> ExitStatus {
    let mut exit = None;
    poll_until("snarkd did not exit", || {
        exit = child.try_wait().unwrap();
        exit.is_some()
    });
    exit.expect("exited")
}

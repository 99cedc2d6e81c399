// The real snarkd binary on loopback ports, and real proofs submitted with snarkd-bench.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { BENCH, FIXTURES, MONITOR_DIR, PARAMS_DIR, SNARKD } from "./env.mjs";

/** A loopback port that was free a moment ago. */
export async function freePort() {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address();
  server.close();
  await once(server, "close");
  return port;
}

/** Starts snarkd (CPU backend, the built monitor, a job journal of its own) and waits until
 * /healthz answers. Pass the ports (and jobsDir) of an earlier daemon to restart it in the same
 * place. */
export async function startDaemon(ports = {}) {
  const grpcPort = ports.grpcPort ?? (await freePort());
  const httpPort = ports.httpPort ?? (await freePort());
  const jobsDir = ports.jobsDir ?? mkdtempSync(join(tmpdir(), "snarkd-e2e-jobs-"));
  const child = spawn(
    SNARKD,
    ["run", "--listen", `127.0.0.1:${grpcPort}`, "--http-listen", `127.0.0.1:${httpPort}`],
    {
      env: {
        ...process.env,
        SNARKD_PARAMS_DIR: PARAMS_DIR,
        SNARKD_DAEMON_MONITOR_DIR: MONITOR_DIR,
        SNARKD_GPUS_BACKEND: "cpu",
        SNARKD_JOBS_DIR: jobsDir,
        SNARKD_DAEMON_DRAIN_TIMEOUT: "2s",
        // Keep finished jobs on the page until every one of a batch has been checked.
        SNARKD_DAEMON_RETENTION: "10m",
      },
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let log = "";
  child.stderr.on("data", (chunk) => (log = (log + chunk).slice(-20_000)));
  const exited = once(child, "exit");
  const daemon = {
    grpcPort,
    httpPort,
    jobsDir,
    grpcAddr: `http://127.0.0.1:${grpcPort}`,
    httpUrl: `http://127.0.0.1:${httpPort}`,
    log: () => log,
    /** SIGTERM, then waits for the process to end. */
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`snarkd exited at startup:\n${log}`);
    try {
      if ((await fetch(`${daemon.httpUrl}/healthz`)).ok) return daemon;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await daemon.stop();
  throw new Error(`snarkd did not answer /healthz:\n${log}`);
}

/** Proves `count` copies of a real 2 KiB `kind` proof (wpost, winning), all at once, through
 * the daemon's gRPC port. Resolves with the bench client's JSON summary; rejects when a proof
 * fails. */
export function prove(daemon, kind, count) {
  const child = spawn(
    BENCH,
    ["--addr", daemon.grpcAddr, "--json", "batch", "--count", String(count), "--concurrency",
      String(count), "--type", kind, "--input", FIXTURES],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  let err = "";
  child.stdout.on("data", (c) => (out += c));
  child.stderr.on("data", (c) => (err += c));
  return new Promise((resolve, reject) => {
    child.on("exit", (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`snarkd-bench ${kind}: ${code}\n${err}`)));
  });
}

/** The daemon's /status JSON (the original schema). */
export async function status(daemon) {
  return (await fetch(`${daemon.httpUrl}/status`)).json();
}

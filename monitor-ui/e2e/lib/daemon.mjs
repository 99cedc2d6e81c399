// The real snarkd binary on loopback ports, and real proofs submitted with snarkd-bench.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { BENCH, FIXTURES, MONITOR_DIR, PARAMS_DIR, SNARKD } from "./env.mjs";

/** The port of a `host:port` address. */
const portOf = (addr) => Number(addr.slice(addr.lastIndexOf(":") + 1));

/** Starts snarkd (CPU backend, the built monitor, a job journal of its own) on ports it picks
 * itself, and waits for its ready file (`snarkd run --ready-file`) and then /healthz. Pass an
 * earlier daemon's ports and jobsDir to restart it in the same place, paramsDir to give it
 * other parameters, and env for settings of its own (SNARKD_<SECTION>_<KEY>). */
export async function startDaemon(previous = {}) {
  const jobsDir = previous.jobsDir ?? mkdtempSync(join(tmpdir(), "snarkd-e2e-jobs-"));
  const readyFile = join(mkdtempSync(join(tmpdir(), "snarkd-e2e-ready-")), "ready.json");
  const child = spawn(
    SNARKD,
    ["run", "--listen", `127.0.0.1:${previous.grpcPort ?? 0}`,
      "--http-listen", `127.0.0.1:${previous.httpPort ?? 0}`, "--ready-file", readyFile],
    {
      env: {
        ...process.env,
        SNARKD_PARAMS_DIR: previous.paramsDir ?? PARAMS_DIR,
        SNARKD_DAEMON_MONITOR_DIR: MONITOR_DIR,
        SNARKD_GPUS_BACKEND: "cpu",
        SNARKD_JOBS_DIR: jobsDir,
        SNARKD_DAEMON_DRAIN_TIMEOUT: "2s",
        // Keep finished jobs on the page until every one of a batch has been checked.
        SNARKD_DAEMON_RETENTION: "10m",
        ...previous.env,
      },
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let log = "";
  child.stderr.on("data", (chunk) => (log = (log + chunk).slice(-20_000)));
  const exited = once(child, "exit");
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
  };
  let ready = null;
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`snarkd exited at startup:\n${log}`);
    try {
      ready ??= JSON.parse(readFileSync(readyFile, "utf8"));
      if ((await fetch(`http://${ready.http}/healthz`)).ok) {
        const grpcPort = portOf(ready.grpc);
        const httpPort = portOf(ready.http);
        return {
          grpcPort,
          httpPort,
          jobsDir,
          grpcAddr: `http://127.0.0.1:${grpcPort}`,
          httpUrl: `http://127.0.0.1:${httpPort}`,
          log: () => log,
          /** SIGTERM, then waits for the process to end. */
          stop,
        };
      }
    } catch {
      // no ready file yet, or not answering yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await stop();
  throw new Error(`snarkd wrote no ready file or did not answer /healthz:\n${log}`);
}

/** Proves `count` copies of a real 2 KiB `kind` proof (wpost, winning) through the daemon's
 * gRPC port, `concurrency` at a time (all at once by default; the daemon decodes at most 16
 * requests at once). Resolves with the bench client's JSON summary; rejects when a proof fails. */
export function prove(daemon, kind, count, concurrency = count) {
  const child = spawn(
    BENCH,
    ["--addr", daemon.grpcAddr, "--json", "batch", "--count", String(count), "--concurrency",
      String(concurrency), "--type", kind, "--input", FIXTURES],
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

/** Sends a WinningPoSt whose randomness no longer matches its vanilla proof (a copy of the
 * fixtures with the manifest changed): the daemon refuses it at submit. Resolves with the bench
 * client's error output; rejects if the proof was accepted. */
export function proveRefused(daemon, requestDir) {
  mkdirSync(requestDir, { recursive: true });
  for (const name of readdirSync(FIXTURES)) copyFileSync(join(FIXTURES, name), join(requestDir, name));
  const manifest = JSON.parse(readFileSync(join(requestDir, "manifest.json"), "utf8"));
  manifest.winning.randomness = "11".repeat(32);
  writeFileSync(join(requestDir, "manifest.json"), JSON.stringify(manifest));
  const child = spawn(BENCH, ["--addr", daemon.grpcAddr, "single", "-t", "winning", "--input", requestDir],
    { stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  child.stderr.on("data", (c) => (err += c));
  return new Promise((resolve, reject) => {
    child.on("exit", (code) => (code !== 0 ? resolve(err) : reject(new Error("the bad request was accepted"))));
  });
}

/** The daemon's /status JSON (the original schema). */
export async function status(daemon) {
  return (await fetch(`${daemon.httpUrl}/status`)).json();
}

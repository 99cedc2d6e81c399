// Where the tests find the binaries, the built monitor, parameters and fixtures, and where they
// write artifacts. Every path can be overridden from the environment (scripts/test.sh does).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";

export const ROOT = resolve(import.meta.dirname, "../../..");
export const BIN_DIR = process.env.SNARKD_BIN_DIR ?? join(ROOT, "target/debug");
export const SNARKD = join(BIN_DIR, "snarkd");
export const BENCH = join(BIN_DIR, "snarkd-bench");
export const MONITOR_DIR = process.env.SNARKD_MONITOR_DIR ?? join(ROOT, "monitor-ui/dist");
export const ARTIFACTS = process.env.SNARKD_E2E_ARTIFACTS ?? join(ROOT, "target/monitor-e2e");
export const PARAMS_DIR =
  process.env.SNARKD_TEST_PARAMS_DIR ?? join(homedir(), ".cache/snarkd/params-2k");
export const FIXTURES = process.env.SNARKD_E2E_FIXTURES ?? join(ARTIFACTS, "fixtures-2k");
export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

/** Checks what the tests need and makes what is missing: PoSt params (about a minute, once)
 * and a sealed 2 KiB sector's fixtures (seconds). */
export function prepare() {
  for (const [path, hint] of [
    [SNARKD, "cargo build -p snarkd -p snarkd-bench"],
    [BENCH, "cargo build -p snarkd -p snarkd-bench"],
    [join(MONITOR_DIR, "index.html"), "scripts/build-monitor.sh"],
    [CHROMIUM, "scripts/setup.sh (Debian's chromium)"],
  ]) {
    if (!existsSync(path)) throw new Error(`missing ${path}: run ${hint}`);
  }
  mkdirSync(ARTIFACTS, { recursive: true });
  execFileSync(SNARKD, ["params", "generate", "--sector-size", "2KiB", "--kind", "winning",
    "--kind", "wpost", "--dir", PARAMS_DIR], { stdio: "inherit" });
  if (!existsSync(join(FIXTURES, "manifest.json"))) {
    execFileSync(BENCH, ["gen", "--sector-size", "2KiB", "--out", FIXTURES], { stdio: "ignore" });
  }
}

// A benchmark, not a test: what the monitor costs the browser while 50 jobs are on the page
// and proofs run (real daemon, real 2 KiB WindowPoSt proofs, Debian's headless Chromium).
// Reports the CPU time all of this Chromium's processes used (renderer, GPU, browser; from
// /proc, so proofs running beside it on the same cores do not inflate it) and the page's script
// time (Chromium's ScriptDuration), each as a share of one core over a 20 s window; its JS heap
// before and after; what the first load transferred; the bundle's files as served. Rerun:
//   cd monitor-ui/e2e && SNARKD_BIN_DIR=... npm run bench
// Writes target/monitor-e2e/page-bench.json.
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { launch, waitLive } from "./lib/browser.mjs";
import { prove, startDaemon } from "./lib/daemon.mjs";
import { ARTIFACTS, MONITOR_DIR, prepare } from "./lib/env.mjs";

const JOBS = Number(process.env.BENCH_JOBS ?? 50);
const WINDOW_MS = Number(process.env.BENCH_WINDOW_MS ?? 20_000);

/** CPU seconds used so far by this process's Chromium descendants (utime + stime). */
function chromiumCpuSeconds() {
  const procs = [];
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const [comm, rest] = [stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")), stat.slice(stat.lastIndexOf(")") + 2).split(" ")];
      procs.push({ pid: Number(pid), comm, ppid: Number(rest[1]), ticks: Number(rest[11]) + Number(rest[12]) });
    } catch {
      // gone meanwhile
    }
  }
  const ours = new Set([process.pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of procs) if (!ours.has(p.pid) && ours.has(p.ppid)) { ours.add(p.pid); grew = true; }
  }
  return procs.filter((p) => ours.has(p.pid) && /chrom/i.test(p.comm)).reduce((n, p) => n + p.ticks, 0) / 100;
}

const metrics = async (cdp) =>
  Object.fromEntries((await cdp.send("Performance.getMetrics")).metrics.map((m) => [m.name, m.value]));

prepare();
const browser = await launch();
// All the jobs submitted at once (more than the default 16 requests decoded at a time), so that
// they are all unfinished on the page while the window runs.
const daemon = await startDaemon({ env: { SNARKD_LIMITS_DECODING_REQUESTS: String(Math.max(JOBS, 16)) } });
try {
  const page = await browser.page(`${daemon.httpUrl}/`);
  await waitLive(page);
  const transferred = await page.evaluate(() =>
    [...performance.getEntriesByType("navigation"), ...performance.getEntriesByType("resource")]
      .reduce((n, e) => n + e.transferSize, 0));
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Performance.enable");
  const idle = await metrics(cdp);

  const work = JOBS > 0 ? prove(daemon, "wpost", JOBS) : Promise.resolve();
  await page.waitForFunction((n) => document.querySelectorAll(".job").length >= n, JOBS,
    { timeout: 120_000 });
  const start = await metrics(cdp);
  const cpuAtStart = chromiumCpuSeconds();
  const startedAt = Date.now();
  const running = () => page.evaluate(() =>
    [...document.querySelectorAll(".job")].filter((r) => !r.classList.contains("finished")).length);
  const unfinishedAtStart = await running();
  await new Promise((r) => setTimeout(r, WINDOW_MS));
  const end = await metrics(cdp);
  const seconds = (Date.now() - startedAt) / 1000;
  const chromiumCpu = chromiumCpuSeconds() - cpuAtStart;
  const unfinishedAtEnd = await running();
  await work;

  const bundle = Object.fromEntries(readdirSync(MONITOR_DIR)
    .filter((f) => !f.endsWith(".gz") && !f.endsWith(".br"))
    .map((f) => [f, {
      bytes: statSync(join(MONITOR_DIR, f)).size,
      brotli: (() => { try { return statSync(join(MONITOR_DIR, `${f}.br`)).size; } catch { return null; } })(),
    }]));
  const result = {
    jobs_on_page: JOBS,
    window_s: Number(seconds.toFixed(1)),
    unfinished_jobs: [unfinishedAtStart, unfinishedAtEnd],
    chromium_cpu_share_of_a_core: Number((chromiumCpu / seconds).toFixed(4)),
    // Wall time of the page's main-thread tasks: inflated when proofs share the cores.
    main_thread_busy_share: Number(((end.TaskDuration - start.TaskDuration) / seconds).toFixed(4)),
    script_share_of_a_core: Number(((end.ScriptDuration - start.ScriptDuration) / seconds).toFixed(4)),
    layouts_per_s: Number(((end.LayoutCount - start.LayoutCount) / seconds).toFixed(1)),
    js_heap_used_mib: [idle, end].map((m) => Number((m.JSHeapUsedSize / 2 ** 20).toFixed(2))),
    first_load_transferred_kib: Number((transferred / 1024).toFixed(1)),
    bundle,
  };
  writeFileSync(join(ARTIFACTS, "page-bench.json"), `${JSON.stringify(result, null, 2)}\n`);
  console.log(JSON.stringify(result, null, 2));
  await page.close();
} finally {
  await daemon.stop();
  await browser.close();
}

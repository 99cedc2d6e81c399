// The monitor in a real browser against the real daemon proving real 2 KiB proofs.
// Run: (cd monitor-ui/e2e && npm test), after building snarkd, snarkd-bench and the monitor.
import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, afterEach, before, test } from "node:test";

import { launch, waitLive } from "./lib/browser.mjs";
import { prove, proveRefused, startDaemon, status } from "./lib/daemon.mjs";
import { ARTIFACTS, PARAMS_DIR, prepare } from "./lib/env.mjs";
import { forward } from "./lib/forwarder.mjs";

const STEP = { timeout: 240_000 };
let browser;

before(async () => {
  prepare();
  browser = await launch();
});
after(async () => browser?.close());
// Whatever a test does, no script on any of its pages may throw.
afterEach(() => assert.deepEqual(browser.pageErrors.splice(0), [], "uncaught errors on the page"));

/** The page as it is now, at the two window sizes the monitor is built for (1400×900, a laptop;
 * 1920×1080, a desktop): `target/monitor-e2e/monitor-<state>-<width>x<height>.png`. */
async function screenshots(page, state) {
  const was = page.viewportSize();
  for (const [width, height] of [[1400, 900], [1920, 1080]]) {
    await page.setViewportSize({ width, height });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    await page.screenshot({ path: join(ARTIFACTS, `monitor-${state}-${width}x${height}.png`) });
  }
  await page.setViewportSize(was);
}

/** Every job id the daemon reports while `work` runs (the daemon's own /status JSON). */
async function jobIdsDuring(daemon, work) {
  const ids = new Set();
  let running = true;
  const poll = (async () => {
    while (running) {
      for (const p of (await status(daemon)).pipelines) ids.add(p.job_id);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  try {
    return { result: await work, ids };
  } finally {
    running = false;
    await poll;
  }
}

/** Waits until the page shows job `id` completed with every partition done. */
async function waitJobDone(page, id, timeout = 120_000) {
  await page.waitForFunction(
    (id) => {
      const row = [...document.querySelectorAll(".job")].find((r) => r.dataset.jobId === id);
      const cells = row ? [...row.querySelectorAll(".cell")] : [];
      return row?.dataset.state === "completed" && cells.length > 0
        && cells.every((c) => c.dataset.state === "done");
    },
    id,
    { timeout },
  );
}

test("shows real proofs: full job ids, a proving worker on a gpu partition, partitions done", STEP, async () => {
  const daemon = await startDaemon();
  try {
    const page = await browser.page(`${daemon.httpUrl}/`);
    await waitLive(page);
    assert.match(await page.locator(".header").innerText(), /backend\s+cpu/);
    await screenshots(page, "idle");

    // Several jobs at once keep the one worker busy long enough to catch it on the device.
    const work = Promise.all([prove(daemon, "wpost", 4), prove(daemon, "winning", 4)]);
    const onDevice = page.waitForFunction(() => {
      for (const chip of document.querySelectorAll('.chip[data-state="proving"]')) {
        const row = [...document.querySelectorAll(".job")].find(
          (r) => r.dataset.jobId === chip.dataset.jobId,
        );
        const cell = row?.querySelector(`.cell[data-partition="${chip.dataset.partition}"]`);
        if (cell?.dataset.state === "gpu") {
          return { job: chip.dataset.jobId, partition: chip.dataset.partition, chip: chip.innerText };
        }
      }
      return null;
    }, null, { polling: "raf", timeout: 180_000 });
    const caught = onDevice.then(async (handle) => {
      await page.screenshot({ path: join(ARTIFACTS, "monitor-proving.png"), fullPage: true });
      const seen = await handle.jsonValue();
      await screenshots(page, "loaded");
      return seen;
    });
    const [seen, { ids }] = await Promise.all([caught, jobIdsDuring(daemon, work)]);

    assert.equal(ids.size, 8, "the daemon ran 8 jobs");
    assert.ok(ids.has(seen.job), "the proving chip names one of the daemon's jobs");
    assert.ok(seen.chip.includes(seen.job), "the chip shows the full job id");
    for (const id of ids) {
      await waitJobDone(page, id);
      const shown = await page.locator(`.job[data-job-id="${id}"] .job-id`).innerText();
      assert.equal(shown, id, "the row shows the full job id");
    }
    const counters = await page.locator(".counters").innerText();
    assert.match(counters, /completed\s+8/);

    // The summary strip agrees with the daemon's /status: nothing left in any state, and the
    // minute bars hold the 8 completed proofs.
    const json = await status(daemon);
    const states = ["waiting_for_admission", "synthesizing", "waiting_for_worker", "on_worker"];
    const open = json.pipelines.flatMap((p) => p.partitions).filter((p) => p.state !== "done").length;
    await page.waitForFunction((n) => [...document.querySelectorAll(".minute")]
      .reduce((sum, m) => sum + Number(m.dataset.completed), 0) === n, json.counters.total_completed);
    const strip = await page.locator(".summary-row").evaluateAll((rows, states) => rows.map((r) => ({
      kind: r.dataset.kind,
      waiting: states.reduce((n, s) => n + Number(r.querySelector(`[data-count="${s}"]`).innerText), 0),
      text: r.innerText,
    })), states);
    assert.deepEqual(strip.map((r) => r.kind).sort(), ["window-post", "winning-post"]);
    assert.equal(strip.reduce((n, r) => n + r.waiting, 0), open);
    for (const r of strip) assert.match(r.text, /\d+(\.\d)? (ms|s) \/ \d+(\.\d)? (ms|s)/, "p50 / p99 shown");
    // The load charts drew the batch: memory in use and partitions over the hour, each a line
    // with a point per 10 s column since the daemon started, partitions having run at some point.
    const lines = await page.evaluate(() => Object.fromEntries(["memory", "waiting", "running"].map((c) => {
      const points = document.querySelector(`.chart .${c}`).getAttribute("points").trim();
      return [c, points ? points.split(" ").map((p) => Number(p.split(",")[1])) : []];
    })));
    for (const [c, ys] of Object.entries(lines)) assert.ok(ys.length >= 1, `the ${c} line has points`);
    assert.ok(lines.running.some((y) => y < 40), "some partitions ran during the batch");
    assert.ok(lines.memory.every((y) => y < 40), "memory was in use throughout");
    await page.screenshot({ path: join(ARTIFACTS, "monitor.png"), fullPage: true });

    // The copy button puts the whole id on the clipboard.
    const first = [...ids][0];
    await browser.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: daemon.httpUrl });
    await page.locator(`.job[data-job-id="${first}"] .copy`).click();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), first);
    await page.close();
  } finally {
    await daemon.stop();
  }
  assert.deepEqual(browser.errors, []);
});

test("recovers when the daemon restarts, with the last hour's history", STEP, async () => {
  let daemon = await startDaemon();
  try {
    const page = await browser.page(`${daemon.httpUrl}/`);
    await waitLive(page);
    const before = await jobIdsDuring(daemon, prove(daemon, "wpost", 2));
    for (const id of before.ids) await waitJobDone(page, id);
    await daemon.stop();
    // The stream's end is an event, not a timeout: the page marks what it shows as stale at once.
    await page.locator(".stale-mark").waitFor({ timeout: 1_000 });
    assert.match(await page.locator(".stale-mark").innerText(), /stale · last update \d+(\.\d)? (ms|s) ago/);
    await page.locator('[data-connection="conn-lost"]').waitFor({ timeout: 5_000 });
    assert.match(await page.locator(".conn").innerText(), /^connection lost: .*; retrying (in \d+ s|now)$/);
    assert.match(await page.title(), /^snarkd · disconnected/);
    await page.screenshot({ path: join(ARTIFACTS, "monitor-disconnected.png") });
    await screenshots(page, "disconnected");

    daemon = await startDaemon({ grpcPort: daemon.grpcPort, httpPort: daemon.httpPort, jobsDir: daemon.jobsDir });
    // Retry now instead of waiting out the backoff (unless a retry of its own got there first).
    await page.locator(".retry").click({ timeout: 5_000 }).catch(async (e) => {
      if ((await page.locator('[data-connection="conn-live"]').count()) === 0) throw e;
    });
    await waitLive(page, 0, 60_000);
    assert.equal(await page.locator(".stale-mark").count(), 0, "live again: no stale mark");
    // The restarted daemon's history still holds the jobs, the worker's busy time and the load
    // from before it (read back from its journal).
    assert.notEqual(await page.locator(".busy-1h").innerText(), "0 %", "the worker was busy before the restart");
    assert.match(daemon.log(), /job journal recovered.*\bjobs=0\b/, "both jobs ended before the restart: none resumes");
    const completedInBars = () =>
      [...document.querySelectorAll(".minute")].reduce((n, b) => n + Number(b.dataset.completed), 0);
    await page.waitForFunction(`(${completedInBars})() === ${before.ids.size}`, null, { timeout: 10_000 })
      .catch(async () => assert.fail(`the minute bars count ${await page.evaluate(completedInBars)} ` +
        `jobs, not the ${before.ids.size} that ended before the restart`));
    assert.match(await page.locator(".load-queue + p").innerText(), /most [1-9]/, "the partitions that ran are in the chart");
    const { ids } = await jobIdsDuring(daemon, prove(daemon, "winning", 1));
    assert.equal(ids.size, 1);
    await waitJobDone(page, [...ids][0]);
    await page.close();
  } finally {
    await daemon.stop();
  }
});

test("works through a forwarded port (as through ssh -L)", STEP, async () => {
  const daemon = await startDaemon();
  const tunnel = await forward(daemon.httpPort);
  try {
    const page = await browser.page(`http://127.0.0.1:${tunnel.port}/`);
    await waitLive(page);
    const before = Number(await page.locator(".header").getAttribute("data-sequence"));
    const { ids } = await jobIdsDuring(daemon, prove(daemon, "wpost", 1));
    await waitJobDone(page, [...ids][0]);
    const after = Number(await page.locator(".header").getAttribute("data-sequence"));
    assert.ok(after > before, `the stream moved on (sequence ${before} -> ${after})`);
    assert.ok(tunnel.connections() > 0, "the page's stream goes through the forwarder");
    await page.close();
  } finally {
    await tunnel.close();
    await daemon.stop();
  }
});

test("shows several daemons side by side (?daemon=URL&daemon=URL)", STEP, async () => {
  const [a, b] = [await startDaemon(), await startDaemon()];
  try {
    const query = [a, b].map((d) => `daemon=${encodeURIComponent(d.httpUrl)}`).join("&");
    // Served by a, reading b's stream cross-origin (another loopback port, as a second tunnel is).
    const page = await browser.page(`${a.httpUrl}/?${query}`);
    await waitLive(page, 0);
    await waitLive(page, 1);
    const panels = page.locator(".daemon");
    assert.equal(await panels.count(), 2);
    assert.equal(await panels.nth(1).getAttribute("data-url"), b.httpUrl);
    const { ids } = await jobIdsDuring(b, prove(b, "winning", 1));
    const id = [...ids][0];
    await waitJobDone(page, id);
    assert.equal(await panels.nth(1).locator(`.job[data-job-id="${id}"]`).count(), 1, "b's job in b's panel");
    assert.equal(await panels.nth(0).locator(".job").count(), 0, "a has no jobs");
    await page.screenshot({ path: join(ARTIFACTS, "monitor-two-daemons.png") });
    await page.close();
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
});

test("arrives brotli-compressed within 250 KB, and a reload only revalidates", STEP, async () => {
  const STATIC = ["/", "/snarkd_monitor.js", "/snarkd_monitor_bg.wasm", "/style.css"];
  const daemon = await startDaemon();
  const fresh = await launch(); // an empty cache, whatever the other tests fetched
  try {
    const encodings = new Map();
    const page = await fresh.context.newPage();
    page.on("response", (r) => {
      encodings.set(new URL(r.url()).pathname, r.headers()["content-encoding"] ?? "identity");
    });
    // What crossed the wire for the page's own files (headers included), by path.
    const transferred = () => page.evaluate((paths) => {
      const sizes = Object.fromEntries(paths.map((p) => [p, 0]));
      for (const e of [...performance.getEntriesByType("navigation"),
        ...performance.getEntriesByType("resource")]) {
        const path = new URL(e.name).pathname;
        if (path in sizes) sizes[path] += e.transferSize;
      }
      return sizes;
    }, STATIC);

    await page.goto(`${daemon.httpUrl}/`);
    await waitLive(page);
    assert.equal(await page.locator("#loading").count(), 0, "the loading placeholder is gone");
    for (const path of STATIC) assert.equal(encodings.get(path), "br", `${path} is sent as brotli`);
    const first = await transferred();
    const total = Object.values(first).reduce((a, b) => a + b, 0);
    assert.ok(total > 0 && total <= 250_000, `the first load moved ${total} bytes: ${JSON.stringify(first)}`);

    await page.reload();
    await waitLive(page);
    const again = await transferred();
    for (const path of STATIC) {
      assert.ok(again[path] < 2_000, `${path} is revalidated (304), not sent again: ${JSON.stringify(again)}`);
    }
    await page.close();
  } finally {
    await fresh.close();
    await daemon.stop();
  }
  assert.deepEqual(fresh.errors, []);
});

test("a daemon never reached collapses beside a live one and says so", STEP, async () => {
  const daemon = await startDaemon();
  const nobody = "http://127.0.0.1:9"; // the discard port: nothing answers gRPC-web there
  try {
    const query = [daemon.httpUrl, nobody].map((u) => `daemon=${encodeURIComponent(u)}`).join("&");
    const page = await browser.page(`${daemon.httpUrl}/?${query}`);
    await waitLive(page, 0);
    const dead = page.locator(".daemon").nth(1);
    await dead.locator('[data-connection="conn-never"]').waitFor({ timeout: 30_000 });
    assert.match(await dead.locator(".conn").innerText(), /^cannot reach the daemon: .+; retrying/);
    const classes = (await dead.getAttribute("class")).split(/\s+/).sort();
    assert.deepEqual(classes, ["collapsed", "daemon", "stale"]);
    assert.equal(await dead.locator(".stale-mark").count(), 0, "nothing was shown, so nothing is stale");
    const [live, down] = await Promise.all([0, 1].map((i) =>
      page.locator(".daemon").nth(i).evaluate((e) => e.getBoundingClientRect().height)));
    assert.ok(down < 80 && down < live / 3, `the dead daemon's card is compact (${down} px vs ${live} px)`);
    assert.equal(await page.title(), "snarkd · 1 of 2 disconnected");
    await page.screenshot({ path: join(ARTIFACTS, "monitor-never-reached.png") });
    await page.close();
  } finally {
    await daemon.stop();
  }
});

test("a worker chip shows what its device reports and leaves out what it does not", STEP, async () => {
  // PoCL's CPU device (an OpenCL device without NVIDIA's driver): snarkd's pool, no NVML.
  const daemon = await startDaemon({
    env: { SNARKD_GPUS_BACKEND: "opencl", SNARKD_GPUS_TELEMETRY_INTERVAL: "200ms" },
  });
  try {
    const page = await browser.page(`${daemon.httpUrl}/`);
    await waitLive(page);
    // The device may first be shown warming (its kernels built or loaded): wait until it proves.
    const shown = await (await page.waitForFunction(() => {
      const spans = [...document.querySelectorAll(".chip [data-reading]")];
      const ready = spans.length && !spans.some((s) => s.dataset.reading === "warming");
      return ready ? spans.map((s) => [s.dataset.reading, s.innerText]) : null;
    }, null, { timeout: 60_000 })).jsonValue();
    const [device] = (await status(daemon)).devices;
    assert.deepEqual(Object.keys(device).sort(), ["ordinal", "pool_limit_bytes", "pool_used_bytes"],
      "/status lists the pool and leaves out what NVML would read");
    assert.deepEqual(shown.map(([what]) => what), ["pool"], "the chip shows the pool alone");
    assert.match(shown[0][1], /^pool 0 B of \d+(\.\d+)? [KMG]iB$/);
    await page.screenshot({ path: join(ARTIFACTS, "monitor-device-readings.png") });
    await page.close();
  } finally {
    await daemon.stop();
  }
});

test("a daemon that asked for a GPU and proves on the CPU is marked; one set to the CPU is not", STEP, async () => {
  // backend "auto" on a box whose OpenCL driver finds nothing (no ICD at all).
  const noIcds = mkdtempSync(join(tmpdir(), "snarkd-e2e-no-icds-"));
  for (const [env, marked] of [
    [{ SNARKD_GPUS_BACKEND: "auto", OCL_ICD_VENDORS: noIcds }, true],
    [{ SNARKD_GPUS_BACKEND: "cpu" }, false],
  ]) {
    const daemon = await startDaemon({ env });
    try {
      const page = await browser.page(`${daemon.httpUrl}/`);
      await waitLive(page);
      const badge = await page.evaluate(() => document.querySelector(".no-gpu")?.innerText ?? null);
      if (marked) {
        assert.equal(badge, "NO GPU: proving on the CPU");
        await page.screenshot({ path: join(ARTIFACTS, "monitor-no-gpu.png") });
      } else {
        assert.equal(badge, null, "backend cpu is what was asked for: no mark");
      }
      // The startup summary in /status says the same once gathered.
      let startup;
      for (let i = 0; i < 100 && !startup; i++) {
        startup = (await status(daemon)).startup;
        if (!startup) await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(startup?.gpu_fallback, marked);
      await page.close();
    } finally {
      await daemon.stop();
    }
  }
});

test("a failed job and a refused request stay in the failure log after their rows fade", STEP, async () => {
  // Parameter files that are there but garbage: a WindowPoSt is accepted (its files exist),
  // then fails when its parameters cannot be loaded.
  const paramsDir = mkdtempSync(join(tmpdir(), "snarkd-e2e-bad-params-"));
  for (const name of readdirSync(PARAMS_DIR)) {
    if (name.endsWith(".params")) writeFileSync(join(paramsDir, name), Buffer.alloc(4096, 0xa5));
    else copyFileSync(join(PARAMS_DIR, name), join(paramsDir, name));
  }
  const daemon = await startDaemon({ paramsDir });
  try {
    const page = await browser.page(`${daemon.httpUrl}/`);
    await waitLive(page);
    await assert.rejects(prove(daemon, "wpost", 1), /snarkd-bench wpost/);
    const refusal = await proveRefused(daemon, mkdtempSync(join(tmpdir(), "snarkd-e2e-bad-request-")));
    assert.match(refusal, /InvalidArgument/);

    const failures = page.locator("table.failures tr.failure");
    await failures.nth(1).waitFor({ timeout: 30_000 });
    const rows = await failures.evaluateAll((trs) => trs.map((tr) => ({
      stage: tr.dataset.stage, text: tr.innerText })));
    assert.equal(rows.length, 2, JSON.stringify(rows));
    assert.equal(rows[0].stage, "refused", "newest first: the refusal");
    assert.match(rows[0].text, /winning-post[\s\S]*refused at submit \(INVALID_ARGUMENT; input\)[\s\S]*randomness/);
    assert.equal(rows[1].stage, "params");
    assert.match(rows[1].text, /window-post[\s\S]*failed in params \(setup\)[\s\S]*wpost-2k/);
    const [failedJob] = (await status(daemon)).pipelines.map((p) => p.job_id);
    assert.ok(rows[1].text.includes(failedJob), "the failure names the job id");

    // The failed job's row fades out (30 s); the failure log does not.
    await page.waitForFunction((id) => {
      const row = [...document.querySelectorAll(".job")].find((r) => r.dataset.jobId === id);
      return row && Number(getComputedStyle(row).opacity) <= 0.36;
    }, failedJob, { timeout: 60_000, polling: 500 });
    assert.equal(await failures.count(), 2, "both failures are still listed");
    assert.equal(await page.locator(`.job[data-job-id="${failedJob}"] .cell[data-state="failed"], .job[data-job-id="${failedJob}"] .cell[data-state="cancelled"]`).count(), 1);
    await page.screenshot({ path: join(ARTIFACTS, "monitor-failures.png"), fullPage: true });
    await screenshots(page, "failure");
    await page.close();
  } finally {
    await daemon.stop();
  }
});

test("40 jobs fit a 1920×1080 window, one line each, and the filters pick them", STEP, async () => {
  const daemon = await startDaemon();
  try {
    const page = await browser.context.newPage();
    await page.setViewportSize({ width: 1920, height: 1080 });
    await page.goto(`${daemon.httpUrl}/`);
    await waitLive(page);
    const { ids } = await jobIdsDuring(daemon, prove(daemon, "wpost", 40, 8));
    assert.equal(ids.size, 40);
    for (const id of ids) await waitJobDone(page, id);
    const inView = await page.evaluate(() => [...document.querySelectorAll("tr.job")]
      .filter((r) => r.getBoundingClientRect().bottom <= window.innerHeight).length);
    assert.ok(inView >= 40, `${inView} of 40 job rows are inside the 1080-pixel window`);
    const heights = await page.locator("tr.job").evaluateAll((rows) => rows.map((r) => r.getBoundingClientRect().height));
    assert.ok(Math.max(...heights) <= 24, `one line per job: rows up to ${Math.max(...heights)} px`);
    await page.screenshot({ path: join(ARTIFACTS, "monitor-40-jobs.png") });

    await page.selectOption(".filter-state", "failed");
    await page.locator("text=no job matches the filters").waitFor();
    assert.equal(await page.locator("tr.job").count(), 0);
    await page.selectOption(".filter-state", "completed");
    await page.selectOption(".filter-kind", "window-post");
    assert.equal(await page.locator("tr.job").count(), 40);
    await page.selectOption(".filter-kind", "winning-post");
    assert.equal(await page.locator("tr.job").count(), 0);
    await page.close();
  } finally {
    await daemon.stop();
  }
});

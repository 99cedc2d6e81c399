// Debian's Chromium, headless, driven by playwright-core (which never downloads a browser).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { chromium } from "playwright-core";

import { CHROMIUM } from "./env.mjs";

/** A fresh browser with an empty profile; close() removes the profile. `errors` gathers uncaught
 * errors and console errors of its pages; `pageErrors` the uncaught ones alone (a script that
 * threw), which no test expects. */
export async function launch() {
  const profile = mkdtempSync(join(tmpdir(), "snarkd-monitor-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 1000 },
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const errors = [];
  const pageErrors = [];
  context.on("weberror", (e) => {
    errors.push(String(e.error()));
    pageErrors.push(String(e.error()));
  });
  return {
    context,
    errors,
    pageErrors,
    async page(url) {
      const page = await context.newPage();
      page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
      await page.goto(url);
      return page;
    },
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Waits until the panel for the daemon at index `i` says its stream is live. */
export async function waitLive(page, i = 0, timeout = 30_000) {
  await page.locator(".daemon").nth(i).locator('[data-connection="conn-live"]').waitFor({ timeout });
}

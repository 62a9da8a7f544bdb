// What the browser tests share: Debian's Chromium driven by playwright-core (no browser
// download: the executable is /usr/bin/chromium, or $CHROMIUM), a context that accepts
// fatiad's self-signed certificate, the login through the dashboard's form, and checks that
// fail the test with a message.
import { chromium } from 'playwright-core';
import fs from 'node:fs';

export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

export async function browser() {
  if (!fs.existsSync(CHROMIUM)) {
    console.log(`SKIP: no chromium at ${CHROMIUM}`);
    process.exit(77);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
}

export async function page(b, url) {
  const ctx = await b.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1400, height: 900 } });
  const p = await ctx.newPage();
  p.on('pageerror', (e) => console.log(`page error: ${e.message}`));
  // Chromium drops a navigation when the host's interfaces change (ERR_NETWORK_CHANGED), as
  // they do when the node agent makes a pod's network: try again
  for (let i = 0; ; i++) {
    try {
      await p.goto(url);
      return p;
    } catch (e) {
      if (i >= 5 || !String(e.message).includes('ERR_NETWORK_CHANGED')) throw e;
      await p.waitForTimeout(500);
    }
  }
}

export async function login(p, token) {
  await p.fill('#token', token);
  await p.click('#login');
  await p.waitForSelector('#whoami', { timeout: 10000 });
}

let failures = 0;
export function check(cond, what) {
  if (cond) {
    console.log(`ok: ${what}`);
  } else {
    failures++;
    console.log(`FAIL: ${what}`);
  }
}
export const failed = () => failures;

// Waits until fn() (in the page) is truthy; returns its value or null after ms. Polls with
// page.evaluate (waitForFunction's polling evaluates a string, which the dashboard's CSP forbids).
export async function until(p, fn, arg, ms = 15000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    try {
      const v = await p.evaluate(fn, arg);
      if (v) return v;
    } catch (e) {
      if (!String(e.message).includes('context was destroyed')) console.log(`until: ${e.message.split('\n')[0]}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return null;
}

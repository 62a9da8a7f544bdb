// A data scientist's workbench from the catalog to Jupyter (tests/browser/workbench.sh): bob
// (tenant of team-b) launches "Notebook (shared slice)" as a workbench, sees it Running in My
// workloads, opens it: a new tab on the workbench proxy's own origin reaches Jupyter's
// /api/status through the proxy. That tab sees neither bob's token (the dashboard's storage is
// another origin's) nor its session cookie (HttpOnly). Stopping it from the page frees its slice.
//   node web/tests/workbench.mjs URL BOB_TOKEN
import { browser, page, login, check, failed, until } from './lib.mjs';

const [URL, BOB] = process.argv.slice(2);
const b = await browser();
const p = await page(b, URL);
await login(p, BOB);
await until(p, () => document.querySelector('#launch-notebook-shared'));
await p.click('#launch-notebook-shared');
check(await p.isChecked('#kind-workbench'), 'a workbench profile launches a workbench by default');
await p.fill('#launch-name', 'mylab');
await p.click('#launch-submit');
const st = await until(
  p,
  () => document.querySelector('#workloads tr[data-name="mylab"] .fatia-state')?.textContent === 'Running',
  null,
  90000,
);
check(st, 'the workbench is Running (queued, admitted, on a slice, Jupyter ready)');
const [tab] = await Promise.all([
  p.context().waitForEvent('page', { timeout: 20000 }),
  p.click('#workloads tr[data-name="mylab"] .fatia-open'),
]);
try {
  await tab.waitForURL(/\/notebook\/team-b\/mylab\//, { timeout: 30000 });
} catch {
  console.log(`the tab is at ${tab.url()}`);
}
const origin = new globalThis.URL(tab.url()).origin;
check(origin !== new globalThis.URL(URL).origin, `the workbench opens on its own origin (${tab.url()})`);
check(tab.url().includes('/notebook/team-b/mylab/'), 'the login redirected into the notebook');
// Jupyter may still be starting behind a Ready pod: ask until it answers
const status = await until(
  tab,
  async () => {
    const r = await fetch(`${location.origin}/notebook/team-b/mylab/api/status`);
    const body = await r.text();
    return r.status === 200 ? { code: r.status, body } : null;
  },
  null,
  30000,
) || { code: 0, body: '' };
check(status.code === 200 && status.body.includes('"started"'), `Jupyter answers through the proxy: ${status.code} ${status.body.slice(0, 80)}`);
const seen = await tab.evaluate(() => ({ cookie: document.cookie, storage: JSON.stringify(localStorage) }));
check(!seen.cookie && !seen.storage.includes(BOB), `the notebook's page reads no cookie and no token (${JSON.stringify(seen)})`);
// stop from the dashboard: the pod goes, the slice is free
await p.click('#workloads tr[data-name="mylab"] .fatia-stop');
const stopped = await until(p, () => document.querySelector('#workloads tr[data-name="mylab"] .fatia-state')?.textContent === 'Stopped', null, 20000);
check(stopped, 'Stop stops the workbench');
await p.evaluate(() => (window.location.hash = '#/gpus'));
const free = await until(p, () => Number(document.querySelector('#gpus')?.dataset.gpuCount || 0) === 8 && !document.querySelector('.fatia-slice[data-tenant="team-b"]'), null, 30000);
check(free, "its slice is free again on the GPU page");
await b.close();
console.log(`${failed() ? 'FAILED' : 'passed'}: ${failed()} failure(s)`);
process.exit(failed() ? 1 : 0);

import { browser, page, login } from '/work/wt/dash/web/tests/lib.mjs';
const [url, token, out] = process.argv.slice(2);
const b = await browser();
const p = await page(b, url);
await p.screenshot({ path: `${out}/login.png` });
await login(p, token);
for (const pg of ['catalog', 'workloads', 'gpus', 'queues', 'preemptions', 'usage', 'profiles']) {
  await p.goto(`${url}#/${pg}`);
  await p.waitForTimeout(1500);
  await p.screenshot({ path: `${out}/${pg}.png`, fullPage: true });
}
await b.close();

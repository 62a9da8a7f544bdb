// The GPU page's bench (bench/dashboard-gpus.sh starts fatiad): a fleet of NODES nodes x 8
// simulated H200s published as ResourceSlices (per node: GPUs 0-1 time-sliced 4 ways, 4-5 cut
// into four MIG instances, 2-3 and 6-7 whole: 20 slices), about half the slices held by pods
// of 10 tenants. Then:
//   1. render: 5 loads of #/gpus, each from navigation start to the frame after the last GPU
//      cell is in the page (the page's performance mark fatia-gpus-drawn-N); the median;
//   2. live: RATE changes/s for SECS seconds (pods created on free slices and deleted again),
//      each timed from the API's answer to the frame that shows it (a MutationObserver on the
//      slices' data-tenant); the median and p95, the changes never seen, and the long tasks.
//   node web/tests/bench-gpus.mjs URL ADMIN_TOKEN      (PAINT_ALL=1: no content-visibility)
import { browser, check, failed, until } from './lib.mjs';

const [URL, TOKEN] = process.argv.slice(2);
const NODES = Number(process.env.NODES || 100);
const RATE = Number(process.env.RATE || 50);
const SECS = Number(process.env.SECS || 10);
const H = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', Accept: 'application/json' };
const post = async (path, body) => {
  const r = await fetch(URL + path, { method: 'POST', headers: H, body: JSON.stringify(body) });
  if (r.status !== 201 && r.status !== 409) throw new Error(`${path}: ${r.status} ${await r.text()}`);
};
const del = (path) => fetch(URL + path, { method: 'DELETE', headers: H }).then((r) => r.text());
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const pct = (a, q) => [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(a.length * q))];

const str = (s) => ({ string: s });
function devices(n) {
  const d = [];
  const pci = (g) => str(`0000:${(0x18 + g).toString(16)}:00.0`);
  for (let g = 0; g < 8; g++) {
    const base = { 'resource.kubernetes.io/pciBusID': pci(g), productName: str('NVIDIA H200'), uuid: str(`GPU-${n}-${g}`) };
    if (g < 2)
      for (let r = 0; r < 4; r++)
        d.push({ name: `gpu-${g}-ts${r}`, attributes: { ...base, type: str('timeslice'), 'fatia.dev/replica': { int: r } }, capacity: { memory: { value: '35174Mi' } } });
    else if (g === 4 || g === 5)
      for (const [p, start, size] of [['2g.35gb', 0, 2], ['1g.18gb', 2, 1], ['1g.18gb', 3, 1], ['3g.71gb', 4, 4]]) {
        const cap = { memory: { value: '16Gi' } };
        for (let k = start; k < start + size; k++) cap[`memorySlice${k}`] = { value: '1' };
        d.push({ name: `gpu-${g}-mig-${p.replace('.', '')}-${start}`, attributes: { ...base, type: str('mig'), profile: str(p), parentUUID: base.uuid }, capacity: cap });
      }
    else d.push({ name: `gpu-${g}`, attributes: { ...base, type: str('gpu') }, capacity: { memory: { value: '143771Mi' } } });
  }
  return d;
}
const pod = (ns, name, node, slice) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: ns, annotations: { 'fatia.dev/slices': slice } },
  spec: { nodeName: node, containers: [{ name: 'c', image: 'x' }] },
});
async function pool(tasks, n = 16) {
  let i = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (i < tasks.length) await tasks[i++]();
  }));
}

// ---- the fleet ----
const t0 = Date.now();
const tenants = Array.from({ length: 10 }, (_, i) => `team-${i}`);
for (const ns of [...tenants, 'live'])
  await post('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
const free = [];
const tasks = [];
for (let n = 0; n < NODES; n++) {
  const node = `node-${n}`;
  const devs = devices(n);
  tasks.push(() =>
    post('/apis/resource.k8s.io/v1/resourceslices', {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceSlice',
      metadata: { name: `${node}-gpu.nvidia.com-0` },
      spec: { driver: 'gpu.nvidia.com', nodeName: node, pool: { name: node, generation: 1, resourceSliceCount: 1 }, devices: devs },
    }),
  );
  devs.forEach((d, k) => {
    if ((n + k) % 2 === 0) {
      const ns = tenants[(n + k) % 10];
      tasks.push(() => post(`/api/v1/namespaces/${ns}/pods`, pod(ns, `p-${n}-${k}`, node, d.name)));
    } else free.push([node, d.name]);
  });
}
await pool(tasks);
console.log(`fleet: ${NODES} nodes, ${NODES * 8} GPUs, ${NODES * 20} slices, ${NODES * 20 - free.length} held (made in ${Date.now() - t0} ms)`);

// ---- 1. render ----
const b = await browser();
const loads = [];
for (let i = 0; i < 5; i++) {
  const ctx = await b.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1400, height: 900 } });
  // a returning user: the token pasted once, and who it is, are in the page's storage
  await ctx.addInitScript(
    ([t, ns]) => {
      localStorage.setItem('fatia.token', t);
      localStorage.setItem('fatia.me', JSON.stringify({ admin: true, namespaces: ns }));
    },
    [TOKEN, tenants],
  );
  // PAINT_ALL=1: every node laid out and painted before the mark, as if the page had no
  // content-visibility (the strict reading of "the last GPU cell drawn"; docs/dashboard.md)
  if (process.env.PAINT_ALL)
    await ctx.addInitScript(() =>
      document.addEventListener('DOMContentLoaded', () => {
        const s = document.createElement('style');
        s.textContent = '.fatia-node { content-visibility: visible !important; }';
        document.head.appendChild(s);
      }),
    );
  const p = await ctx.newPage();
  await p.goto(`${URL}/#/gpus`);
  const mark = `fatia-gpus-drawn-${NODES * 8}`;
  // the mark's time is the page's own; polling for it only has to see it at some point
  await until(p, (m) => performance.getEntriesByName(m).length > 0, mark, 60000);
  const ms = await p.evaluate((m) => performance.getEntriesByName(m)[0].startTime, mark);
  const cells = await p.$$eval('.fatia-gpu', (e) => e.length);
  if (process.env.MARKS)
    console.log(
      await p.evaluate(() =>
        [...performance.getEntriesByType('mark'), ...performance.getEntriesByType('resource'), ...performance.getEntriesByType('paint')]
          .map((m) => `${m.name.slice(-60)} ${m.startTime.toFixed(0)}${m.duration ? `+${m.duration.toFixed(0)}` : ''}`)
          .join('\n'),
      ),
    );
  loads.push(ms);
  console.log(`load ${i + 1}: ${ms.toFixed(0)} ms to the last of ${cells} GPU cells`);
  if (i === 0 && process.env.SHOTS) await p.screenshot({ path: `${process.env.SHOTS}/gpus-${NODES}x8.png` });
  if (i < 4) await ctx.close();
  else globalThis.live = { ctx, p };
}
const med = median(loads);
console.log(`render: median of 5 loads ${med.toFixed(0)} ms (target < 1000 ms)`);
check(med < 1000, `the GPU page renders ${NODES * 8} GPUs in under 1 s (${med.toFixed(0)} ms)`);

// ---- 2. live ----
const { p } = globalThis.live;
await p.evaluate(() => {
  window.__seen = {};
  window.__long = 0;
  new PerformanceObserver((l) => (window.__long += l.getEntries().length)).observe({ type: 'longtask', buffered: false });
  // a node whose slices changed is drawn anew: look for the live tenant's slices in what came
  new MutationObserver((ms) => {
    const now = Date.now();
    for (const m of ms)
      for (const n of m.addedNodes) {
        if (!n.querySelectorAll) continue;
        const node = n.closest('.fatia-node') || m.target.closest('.fatia-node');
        for (const el of n.querySelectorAll('.fatia-slice[data-tenant="live"]'))
          window.__seen[`${node.dataset.node}/${el.dataset.slice}`] ??= now;
      }
  }).observe(document.querySelector('#gpus'), { childList: true, subtree: true });
});
const written = new Map();
let ops = 0;
let k = 0;
const live = [];
const end = Date.now() + SECS * 1000;
const started = Date.now();
await new Promise((resolve) => {
  const tick = setInterval(() => {
    if (Date.now() >= end) {
      clearInterval(tick);
      resolve();
      return;
    }
    // as many changes as are due by now (a late timer catches up: the rate holds)
    while (ops < ((Date.now() - started) / 1000) * RATE) {
      ops++;
      // fill to 100 live pods, then one deletion (of the oldest, shown for 2 s by then) per creation
      if (live.length >= 100 && ops % 2 === 0) {
        const name = live.shift();
        del(`/api/v1/namespaces/live/pods/${name}`);
      } else {
        const [node, slice] = free[k++ % free.length];
        const name = `l-${k}`;
        post('/api/v1/namespaces/live/pods', pod('live', name, node, slice)).then(() => written.set(`${node}/${slice}`, Date.now()));
        live.push(name);
      }
    }
  }, 1000 / RATE);
});
await new Promise((r) => setTimeout(r, 2000));
const seen = await p.evaluate(() => window.__seen);
const longTasks = await p.evaluate(() => window.__long);
const lat = [];
let missed = 0;
for (const [key, t] of written) {
  if (seen[key]) lat.push(Math.max(0, seen[key] - t));
  else missed++;
}
const rate = ops / SECS;
console.log(`live: ${ops} changes in ${SECS} s (${rate.toFixed(1)}/s), ${written.size} creations timed: change to screen median ${median(lat)} ms, p95 ${pct(lat, 0.95)} ms; ${missed} never shown; ${longTasks} long tasks (> 50 ms)`);
check(missed === 0, 'every change under load reaches the screen');
check(median(lat) < 1000, `the page stays live under ${RATE} changes/s (median ${median(lat)} ms)`);
await b.close();
process.exit(failed() ? 1 : 0);

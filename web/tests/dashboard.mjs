// The dashboard against a live fatiad (tests/browser/dashboard.sh starts it with the
// walkthrough's fleet and examples): login, every page with what the API holds, a Job launched
// from the catalog, live updates, a profile disabled, and a tenant that must not see or touch
// another namespace. With SHOTS=DIR, a screenshot of each page lands in DIR.
//   node web/tests/dashboard.mjs URL ADMIN_TOKEN TENANT_TOKEN(team-a) TENANT_KUBECONFIG
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import { browser, page, login, check, failed, until } from './lib.mjs';

const [URL, ADMIN, ALICE, ALICE_KUBECONFIG] = process.argv.slice(2);
const SHOTS = process.env.SHOTS || '';
const FATIA = process.env.FATIA || 'build/bin/fatia';
const TMP = process.env.TMP_DIR || fs.mkdtempSync('/tmp/fatia-dash-');

async function apiFetch(method, path, body, token = ADMIN, ctype = 'application/json') {
  const res = await fetch(URL + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': ctype, Accept: 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}
const shot = async (p, name) => SHOTS && p.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true });
const go = async (p, hash) => {
  await p.evaluate((h) => (window.location.hash = h), hash);
};
const job = (ns, name, profile, cmd) => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: {
    name,
    namespace: ns,
    labels: { 'kueue.x-k8s.io/queue-name': 'gpu' },
    annotations: {
      'opendatahub.io/hardware-profile-name': profile,
      'opendatahub.io/hardware-profile-namespace': 'gpu-catalog',
    },
  },
  spec: {
    suspend: true,
    template: {
      spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'fatia.dev/python3:1', command: ['sh', '-c', cmd] }] },
    },
  },
});

const b = await browser();

// ---- login ----
const p = await page(b, URL);
await shot(p, 'login');
await p.fill('#token', 'not-a-token');
await p.click('#login');
const err = await until(p, () => document.querySelector('#login-error')?.textContent);
check(err && err.includes('401'), `a wrong token is refused on the login page (${err})`);
await login(p, ADMIN);
check((await p.textContent('#whoami')).includes('platform admin'), 'the admin logs in');

// ---- catalog ----
const profs = (await apiFetch('GET', '/apis/infrastructure.opendatahub.io/v1/namespaces/gpu-catalog/hardwareprofiles')).json.items;
const names = profs.map((x) => x.metadata.annotations['opendatahub.io/display-name']).sort();
await go(p, '#/catalog');
const cards = await until(
  p,
  (n) => {
    const t = Array.from(document.querySelectorAll('.fatia-profile .pf-v6-c-card__title')).map((e) => e.textContent.trim()).sort();
    return t.length === n ? t : null;
  },
  names.length,
);
check(JSON.stringify(cards) === JSON.stringify(names), `the catalog shows the API's ${names.length} profiles: ${cards}`);
check((await p.textContent('#profile-training-2gpu .fatia-queue')).includes('gpu, priority batch'), 'a card names its queue and priority');
await shot(p, 'catalog');

// launch a Job from the catalog, as the admin in team-a
await p.selectOption('#ns-select', 'team-a');
await p.click('#launch-training-2gpu');
await p.click('#kind-job');
await p.fill('#launch-name', 'dash-train');
await p.fill('#launch-command', 'echo step 1; sleep 120');
await shot(p, 'launch');
await p.click('#launch-submit');
const j = await until(p, () => document.querySelector('#workloads tr[data-name="dash-train"] .fatia-state')?.textContent);
check(j, `the launched Job shows in My workloads (${j})`);
const made = (await apiFetch('GET', '/apis/batch/v1/namespaces/team-a/jobs/dash-train')).json;
check(made && made.metadata.annotations['opendatahub.io/hardware-profile-name'] === 'training-2gpu', 'the Job carries the profile');
const running = await until(p, () => document.querySelector('#workloads tr[data-name="dash-train"] .fatia-state')?.textContent === 'Running', null, 30000);
check(running, 'the launched Job runs (admitted, placed, started)');

// two more: team-a's 2 GPUs + 2 borrowed hold two of the three; the third waits
for (const n of ['dash-x', 'dash-y'])
  check((await apiFetch('POST', '/apis/batch/v1/namespaces/team-a/jobs', job('team-a', n, 'training-2gpu', 'sleep 120'))).status === 201, `job ${n} created`);
const why = await until(
  p,
  () => {
    for (const r of document.querySelectorAll('#workloads tr[data-name]')) {
      const t = r.querySelector('.fatia-why')?.textContent || '';
      if (t.includes('waiting for quota')) return `${r.dataset.name}|${t}|${r.querySelector('.fatia-position').textContent}`;
    }
    return null;
  },
  null,
  30000,
);
check(why && why.includes('2 more nvidia.com/gpu') && why.includes('(#1)'), `a pending Job says why in plain words, with its place (${why})`);
await shot(p, 'workloads');
// logs
await p.click('#workloads tr[data-name="dash-train"] .fatia-logs');
const logs = await until(p, () => document.querySelector('#logs-text')?.textContent.includes('step 1'), null, 10000);
check(logs, "the Job's log shows in the page");
await p.keyboard.press('Escape');

// ---- GPUs, live ----
await go(p, '#/gpus');
const gpus = await until(p, () => Number(document.querySelector('#gpus')?.dataset.gpuCount || 0) || null);
check(gpus === 8, `the GPU page draws box-0's 8 GPUs (${gpus})`);
const slices = await p.$$eval('#gpus .fatia-slice', (e) => e.length);
check(slices === 20, `... with its 20 slices (${slices})`);
const heldA = await until(p, () => document.querySelectorAll('.fatia-slice[data-tenant="team-a"]').length >= 4 || null, null, 20000);
check(heldA, 'two running Jobs of team-a hold 4 whole GPUs, coloured as team-a');
const nb = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'nb-live', namespace: 'team-b', labels: { 'kueue.x-k8s.io/queue-name': 'gpu' }, annotations: { 'opendatahub.io/hardware-profile-name': 'notebook-shared', 'opendatahub.io/hardware-profile-namespace': 'gpu-catalog' } },
  spec: { containers: [{ name: 'lab', image: 'fatia.dev/python3:1', command: ['sleep', '300'] }] },
};
check((await apiFetch('POST', '/api/v1/namespaces/team-b/pods', nb)).status === 201, 'a team-b notebook pod created');
const liveB = await until(p, () => document.querySelector('.fatia-slice[data-tenant="team-b"]')?.dataset.slice, null, 20000);
check(liveB && liveB.includes('-ts'), `the GPU page shows team-b's new time-slice without a reload (${liveB})`);
await shot(p, 'gpus');

// ---- queues ----
await go(p, '#/queues');
const used = await until(p, () => document.querySelector('#queues tr[data-cq="team-a"][data-resource="nvidia.com/gpu"] .fatia-used')?.textContent);
const borrowed = await p.textContent('#queues tr[data-cq="team-a"][data-resource="nvidia.com/gpu"] .fatia-borrowed');
check(used === '4 of 2' && borrowed === '2', `team-a uses 4 GPUs of its nominal 2, 2 borrowed (${used}, ${borrowed})`);
const pend = await until(p, () => document.querySelector('#pending tbody')?.textContent.includes('waiting for quota'));
check(pend, 'the pending work is listed with its reason');
await shot(p, 'queues');

// ---- usage: the page's tables are `fatia usage`'s numbers on the same records ----
// dashboard.sh applied tests/data/usage/records.yaml and edge.yaml (hand-computed in their
// comments). Over [2026-11-01, 2026-12-01T13:00) they all count and nothing this test ran does.
await go(p, '#/usage');
await p.selectOption('#ns-select', '');
await p.selectOption('#usage-by', 'all');
await p.selectOption('#usage-window', 'custom');
await p.fill('#usage-since', '2026-12-01');
const bad = await until(p, () => document.querySelector('#usage-bad-window')?.textContent);
check(bad && bad.includes("since: '2026-12-01' is not an RFC 3339 time"), `a date alone is refused, naming the field (${bad})`);
await p.fill('#usage-since', '2026-11-01T00:00:00Z');
await p.fill('#usage-until', '2026-12-01T13:00:00Z');
await until(p, () => document.querySelector('#usage-table-user tr[data-group="dora"]'), null, 20000);
// everything shown, read at once (the page's now ticks)
const shown = await p.evaluate(() => {
  const out = {};
  for (const by of ['namespace', 'queue', 'profile', 'user']) {
    const rows = [...document.querySelectorAll(`#usage-table-${by} tbody tr`)].map((tr) => ({
      group: tr.getAttribute('data-group'),
      runs: Number(tr.querySelector('[data-col="runs"]').textContent),
      cells: Object.fromEntries(
        [...tr.querySelectorAll('td[data-resource]')].filter((td) => td.textContent).map((td) => [td.getAttribute('data-resource'), td.textContent]),
      ),
    }));
    out[by] = { rows, cli: document.querySelector(`#usage-cli-${by}`).textContent };
  }
  return out;
});
const recsAll = (await apiFetch('GET', '/apis/fatia.dev/v1alpha1/usagerecords')).json.items;
const recFile = `${TMP}/usage-records.json`;
fs.writeFileSync(
  recFile,
  JSON.stringify({ apiVersion: 'v1', kind: 'List', items: recsAll.map((r) => ({ apiVersion: 'fatia.dev/v1alpha1', kind: 'UsageRecord', ...r })) }),
);
// the CLI line the page prints, run on the records the API holds
const cliOf = (line, out) => {
  const args = line.split('| fatia ')[1].split(' ').filter((x) => x !== '-f' && x !== '-');
  return execFileSync(FATIA, [...args, '-f', recFile, '-o', out], { encoding: 'utf8' });
};
const micro = (h) => BigInt(h.replace('.', ''));
for (const by of ['namespace', 'queue', 'profile', 'user']) {
  const want = JSON.parse(cliOf(shown[by].cli, 'json')).usage;
  const got = shown[by].rows;
  let same = want.length > 0 && new Set(want.map((r) => r.group)).size === got.length;
  const why = [];
  for (const r of want) {
    const row = got.find((g) => g.group === r.group);
    const cell = row && row.cells[r.resource];
    // memory is shown in GiB-hours: within rounding of the CLI's byte-hours / 2^30
    const ok = r.resource === 'memory' ? cell && (micro(cell) * (1n << 30n) - micro(r.hours)) ** 2n <= (1n << 29n) ** 2n : cell === r.hours;
    if (!ok || !(row.runs >= r.records)) {
      same = false;
      why.push(`${r.group} ${r.resource}: ${cell} runs ${row && row.runs}, fatia usage ${r.hours} records ${r.records}`);
    }
  }
  const cells = got.reduce((a, g) => a + Object.keys(g.cells).length, 0);
  check(same && cells === want.length, `usage by ${by}: the page's ${cells} cells are fatia usage's ${want.length} rows (${shown[by].cli}) ${why.join('; ')}`);
}
const row = (by, g) => shown[by].rows.find((r) => r.group === g) || { cells: {} };
const dora = row('user', 'dora');
check(
  dora.runs === 2 && dora.cells['nvidia.com/gpu'] === '3.000000' && dora.cells['nvidia.com/mig-3g.71gb'] === '1.500000' &&
    dora.cells.cpu === '0.750750' && dora.cells.memory === '1.500000',
  `dora by hand: 2 runs, 3 GPU-h, 1.5 MIG 3g-h, 0.750750 CPU-h, 1.5 memory GiB-h (${JSON.stringify(dora)})`,
);
// the runs of 0 s count: zoë's zero-a (and edge-b, 61 s of a 1g MIG)
const zoe = row('user', 'zoë');
check(zoe.runs === 2 && zoe.cells['nvidia.com/gpu.shared'] === '0.000000' && zoe.cells['nvidia.com/mig-1g.18gb'] === '0.016944', `zoë's run of 0 s is a run with no hours (${JSON.stringify(zoe)})`);
const qa = row('queue', 'team-a');
check(qa.runs === 6 && qa.cells.memory === '754974722.347683', `ClusterQueue team-a by hand: 6 runs (nil-a's 0 GPUs is none), 754974722.347683 memory GiB-h (${qa.runs}, ${qa.cells.memory})`);
check(row('queue', '').runs === 1 && row('queue', '').cells['nvidia.com/gpu.shared'] === '0.333667', 'odd-b, of no queue, is the group "-" with its 1.0000000001 shared slice rounded up to 1n');
// the CSV downloads are `fatia usage -o csv`'s (a user's comma and quote quoted, RFC 4180)
for (const by of ['queue', 'user']) {
  const [dl] = await Promise.all([p.waitForEvent('download'), p.click(`#usage-csv-${by}`)]);
  const csv = fs.readFileSync(await dl.path(), 'utf8');
  check(
    dl.suggestedFilename() === `usage-by-${by}.csv` && csv === cliOf(shown[by].cli, 'csv') && (by !== 'user' || csv.includes('\n"O""Brien, Pat",')),
    `the CSV download by ${by} is fatia usage -o csv's (${csv.split('\n').length - 1} lines)`,
  );
}
await p.selectOption('#usage-by', 'queue');
await shot(p, 'usage');
// all time: running work grows up to now (erik's serve-a, admitted 2026-12-01T11:00Z)
await p.selectOption('#usage-by', 'user');
await p.selectOption('#usage-window', 'all');
const erik = await until(p, () => document.querySelector('#usage-table-user tr[data-group="erik"] td[data-resource="nvidia.com/gpu"]')?.textContent);
check(Number(erik) > 1, `erik's running serve-a counts up to now (${erik} GPU-h)`);
check(await p.evaluate(() => document.querySelector('#usage-chart-user')?.textContent.includes('dora')), 'the per-user chart draws dora');

// ---- profiles: disable, and the catalog hides it ----
await go(p, '#/profiles');
await p.waitForSelector('#enable-inference-mig-3g');
await p.click('#enable-inference-mig-3g', { force: true });
let dis = null;
for (let i = 0; i < 50 && dis !== 'true'; i++) {
  dis = (await apiFetch('GET', '/apis/infrastructure.opendatahub.io/v1/namespaces/gpu-catalog/hardwareprofiles/inference-mig-3g')).json.metadata.annotations['opendatahub.io/disabled'];
  await new Promise((r) => setTimeout(r, 100));
}
check(dis === 'true', `the admin disables a profile (annotation ${dis})`);
// the sharing policies of the fleet (examples/fleet/10-sharing.yaml), as the API holds them
const polsApi = (await apiFetch('GET', '/apis/fatia.dev/v1alpha1/gpusharingpolicies')).json.items.map((x) => x.metadata.name).sort();
const pols = await until(p, () => [...document.querySelectorAll('#policies tr[data-policy]')].map((r) => r.dataset.policy).sort().join(',') || null);
check(pols && pols === polsApi.join(','), `the sharing policies shown are the API's (${pols} vs ${polsApi})`);
const tsHow = await p.evaluate(() => document.querySelector('#policies tr[data-policy="timesliced"] .fatia-how')?.textContent);
check(tsHow === 'time-slicing: nvidia.com/gpu x4 as nvidia.com/gpu.shared', `timesliced reads as time-slicing x4 (${tsHow})`);
await shot(p, 'profiles');
await go(p, '#/catalog');
const hidden = await until(p, () => document.querySelectorAll('.fatia-profile').length === 2 && !document.querySelector('#profile-inference-mig-3g'));
check(hidden, 'a disabled profile leaves the catalog');

// ---- a tenant of team-a ----
const t = await page(b, URL);
// alice logs in by uploading the kubeconfig `fatia token create` gave her (a file input); one
// whose user has no token (client certificates) is refused with the reason, and logs nobody in
const certOnly = 'apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    client-certificate-data: LS0t\ncontexts:\n- name: c\n  context:\n    user: u\ncurrent-context: c\n';
await t.setInputFiles('#kubeconfig-file', { name: 'cert.kubeconfig', mimeType: 'text/plain', buffer: Buffer.from(certOnly) });
const kerr = await until(t, () => document.querySelector('#kubeconfig-error')?.textContent);
check(kerr && kerr.includes('has no token') && !(await t.$('#whoami')), `a kubeconfig without a token is refused (${kerr})`);
await t.setInputFiles('#kubeconfig-file', ALICE_KUBECONFIG);
await t.waitForSelector('#whoami', { timeout: 10000 });
check(fs.readFileSync(ALICE_KUBECONFIG, 'utf8').includes(ALICE), 'the uploaded kubeconfig holds the token of alice');
check((await t.textContent('#whoami')).includes('tenant of team-a'), 'alice logs in as a tenant of team-a (kubeconfig uploaded)');
const opts = await t.$$eval('#ns-select option', (o) => o.map((x) => x.value));
check(JSON.stringify(opts) === '["team-a"]', `alice's namespaces: ${opts}`);
const tcards = await until(t, () => document.querySelectorAll('.fatia-profile').length || null);
check(tcards === 2, `alice reads the catalog (${tcards} enabled profiles)`);
await go(t, '#/workloads');
const rowsA = await until(t, () => {
  const r = Array.from(document.querySelectorAll('#workloads tr[data-name]'));
  return r.length >= 3 ? r.map((x) => x.children[2].textContent) : null;
});
check(rowsA && rowsA.every((n) => n === 'team-a'), `alice's workloads are team-a's only (${rowsA})`);
await go(t, '#/gpus');
await until(t, () => Number(document.querySelector('#gpus')?.dataset.gpuCount || 0) === 8);
const seenB = await t.$$eval('.fatia-slice[data-tenant="team-b"]', (e) => e.length);
const seenA = await t.$$eval('.fatia-slice[data-tenant="team-a"]', (e) => e.length);
check(seenB === 0 && seenA >= 4, `alice's GPU page shows her slices (${seenA}) and none of team-b's (${seenB})`);
// what a hostile page script with alice's token gets
const hostile = await t.evaluate(async () => {
  const tok = localStorage.getItem('fatia.token');
  const h = { Authorization: `Bearer ${tok}`, Accept: 'application/json' };
  const get = async (u) => (await fetch(u, { headers: h })).status;
  return {
    podsB: await get('/api/v1/namespaces/team-b/pods'),
    allPods: await get('/api/v1/pods'),
    wlsB: await get('/apis/kueue.x-k8s.io/v1beta2/namespaces/team-b/workloads'),
    usageB: await get('/apis/fatia.dev/v1alpha1/namespaces/team-b/usagerecords'),
    catalogCm: await get('/api/v1/namespaces/gpu-catalog/configmaps'),
    watchB: await get('/api/v1/namespaces/team-b/pods?watch=1'),
    patchProfile: (
      await fetch('/apis/infrastructure.opendatahub.io/v1/namespaces/gpu-catalog/hardwareprofiles/notebook-shared', {
        method: 'PATCH',
        headers: { ...h, 'Content-Type': 'application/merge-patch+json' },
        body: '{"metadata":{"annotations":{"opendatahub.io/disabled":"true"}}}',
      })
    ).status,
    deleteB: (await fetch('/apis/batch/v1/namespaces/team-b/jobs/x', { method: 'DELETE', headers: h })).status,
  };
});
check(
  Object.values(hostile).every((s) => s === 403),
  `alice's token reads and writes nothing of team-b nor the catalog's other objects: ${JSON.stringify(hostile)}`,
);
await go(t, '#/profiles');
await t.waitForSelector('#enable-notebook-shared');
check(await t.isDisabled('#enable-notebook-shared'), "alice's profile switches are read-only");
check(!(await t.$('#policies')) && (await t.$('#policies-tenant')), "alice is told sharing policies are the admin's, and is shown none");

// the static files: nothing but the dashboard's own (dot-segments: tests/browser/dashboard.sh)
for (const path of ['/.gitignore', '/tokens', '/assets/x/y.js', '/assets/.hidden', '/notebook/'])
  check((await fetch(URL + path)).status === 404, `${path} is 404`);
const idx = await fetch(URL + '/');
check((idx.headers.get('content-security-policy') || '').includes("frame-ancestors 'none'"), 'the page forbids framing (CSP)');

// ---- preemptions over time: an urgent Job preempts one of team-a's (its 2 GPUs + 2 borrowed are
// held by dash-train and dash-x, dash-y waits); the page draws it from the Events and the
// Workload's Preempted condition, with the reason in words ----
// (no profile: training-2gpu would set its own priority class, batch)
const urgent = job('team-a', 'dash-urgent', 'training-2gpu', 'sleep 120');
delete urgent.metadata.annotations;
urgent.metadata.labels['kueue.x-k8s.io/priority-class'] = 'urgent';
urgent.spec.template.spec.containers[0].resources = { limits: { 'nvidia.com/gpu': '2' } };
check((await apiFetch('POST', '/apis/batch/v1/namespaces/team-a/jobs', urgent)).status === 201, 'an urgent Job created in team-a');
await go(p, '#/preemptions');
const pre = await until(
  p,
  () => {
    // the Event may come before the Workload's condition, which brings the detailed reason
    const r = document.querySelector('#preemptions tbody tr[data-wl^="team-a/"]');
    const why = r && r.querySelector('.fatia-why').textContent;
    return why && why !== 'Preempted' && `${r.dataset.wl}|${why}`;
  },
  null,
  30000,
);
check(pre && /for a higher-priority workload|cohort/.test(pre), `a preemption in team-a is listed with its reason (${pre})`);
if (!pre)
  for (const w of (await apiFetch('GET', '/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads')).json.items)
    console.log(`  workload ${w.metadata.name} prio ${w.spec.priority} ${JSON.stringify((w.status.conditions || []).map((c) => [c.type, c.status, c.reason]))}`);
const apiPre = (await apiFetch('GET', '/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads')).json.items.filter((w) =>
  (w.status.conditions || []).some((c) => c.type === 'Preempted' && c.status === 'True'),
);
check(pre && apiPre.some((w) => pre.startsWith(`team-a/${w.metadata.name}|`)), `the listed workload is one the API says was preempted (${apiPre.map((w) => w.metadata.name)})`);
const bar = await until(p, () => [...document.querySelectorAll('#preemptions-chart g[data-total]')].reduce((a, g) => a + Number(g.dataset.total), 0));
const rows = await p.$$eval('#preemptions tbody tr', (r) => r.length);
check(bar >= 1 && bar === rows, `the chart counts what the list shows (${bar} in the bars, ${rows} rows)`);
await shot(p, 'preemptions');
// alice (team-a) sees team-a's preemptions, and only team-a's
await go(t, '#/preemptions');
const tpre = await until(t, () => [...document.querySelectorAll('#preemptions tbody tr')].map((r) => r.dataset.wl.split('/')[0]).join(',') || null, null, 15000);
check(tpre && tpre.split(',').every((n) => n === 'team-a'), `alice's preemptions page lists team-a's only (${tpre})`);
// alice's usage is team-a's only: by user, zoë's team-a run of 0 s but not her team-b MIG run
await go(t, '#/usage');
await t.selectOption('#usage-window', 'all');
await t.selectOption('#usage-by', 'all');
const tusage = await until(t, () => {
  const groups = [...document.querySelectorAll('#usage-table-namespace tbody tr')].map((r) => r.dataset.group);
  const zoe = document.querySelector('#usage-table-user tr[data-group="zoë"]');
  return groups.length && zoe
    ? { groups, zoeRuns: zoe.querySelector('[data-col="runs"]').textContent, zoeMig: !!zoe.querySelector('td[data-resource="nvidia.com/mig-1g.18gb"]')?.textContent, cli: document.querySelector('#usage-cli-user').textContent }
    : null;
});
check(
  tusage && JSON.stringify(tusage.groups) === '["team-a"]' && tusage.zoeRuns === '1' && !tusage.zoeMig && tusage.cli.includes('get usagerecords -n team-a'),
  `alice's usage is team-a's only (${JSON.stringify(tusage)})`,
);

// put the profile back for whoever runs next
await apiFetch('PATCH', '/apis/infrastructure.opendatahub.io/v1/namespaces/gpu-catalog/hardwareprofiles/inference-mig-3g', { metadata: { annotations: { 'opendatahub.io/disabled': 'false' } } }, ADMIN, 'application/merge-patch+json');
await b.close();
console.log(`${failed() ? 'FAILED' : 'passed'}: ${failed()} failure(s)`);
process.exit(failed() ? 1 : 0);

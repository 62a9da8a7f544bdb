// The dashboard's pure parts (node's test runner, `node --test`; CTest web_unit): Kueue's
// messages in plain words and queue order, the GPU page's fleet from ResourceSlices and pods,
// quantities (the usage arithmetic: usage.test.mjs, against `fatia usage`).
import test from 'node:test';
import assert from 'node:assert/strict';
import { plainWords, pendingMessage, queuePosition, workloadState } from '../src/kueue.js';
import { fleet, holders } from '../src/fleet.js';
import { quantity } from '../src/quantity.js';

const wl = (name, prio, created, conds, extra = {}) => ({
  metadata: { name, namespace: 'team-a', uid: name, creationTimestamp: created },
  spec: { queueName: 'gpu', priority: prio, ...extra },
  status: { conditions: conds },
});
const pending = [{ type: 'QuotaReserved', status: 'False', message: "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h200, 2 more needed" }];

test('plain words for Kueue messages', () => {
  assert.equal(plainWords(pending[0].message), 'waiting for quota: 2 more nvidia.com/gpu (h200) must free up in its queue');
  assert.equal(
    plainWords('Preempted to accommodate a workload (UID: x) due to reclamation within the cohort'),
    'stopped: another team took back its lent GPUs',
  );
  assert.equal(plainWords('something new'), 'something new');
  assert.equal(plainWords(''), '');
});

test('state and position: priority first, then age; admitted and deactivated are not queued', () => {
  const a = wl('a', 100, '2026-12-01T10:00:00Z', pending);
  const b = wl('b', 100, '2026-12-01T09:00:00Z', pending);
  const c = wl('c', 1000, '2026-12-01T11:00:00Z', pending);
  const d = wl('d', 5000, '2026-12-01T08:00:00Z', [{ type: 'Admitted', status: 'True' }]);
  const e = wl('e', 9000, '2026-12-01T08:00:00Z', pending, { active: false });
  const all = [a, b, c, d, e];
  assert.deepEqual([c, b, a].map((w) => queuePosition(w, all)), [1, 2, 3]);
  assert.equal(queuePosition(d, all), null);
  assert.equal(workloadState(e), 'Deactivated');
  assert.equal(queuePosition(e, all), null);
  assert.match(pendingMessage(a), /^waiting for quota/);
  assert.equal(pendingMessage(d), '');
});

const dev = (name, type, extra = {}, cap = {}) => ({
  name,
  attributes: { type: { string: type }, 'resource.kubernetes.io/pciBusID': { string: extra.pci }, ...(extra.attrs || {}) },
  capacity: cap,
});
const rs = {
  spec: {
    nodeName: 'n1',
    devices: [
      dev('gpu-1-ts1', 'timeslice', { pci: 'b', attrs: { 'fatia.dev/replica': { int: 1 } } }),
      dev('gpu-1-ts0', 'timeslice', { pci: 'b', attrs: { 'fatia.dev/replica': { int: 0 } } }),
      dev('gpu-0', 'gpu', { pci: 'a' }),
      dev('gpu-2-mig-3g71gb-4', 'mig', { pci: 'c', attrs: { profile: { string: '3g.71gb' } } }, { memorySlice4: { value: '1' }, memorySlice5: { value: '1' }, memorySlice6: { value: '1' }, memorySlice7: { value: '1' } }),
      dev('gpu-2-mig-1g18gb-2', 'mig', { pci: 'c', attrs: { profile: { string: '1g.18gb' } } }, { memorySlice2: { value: '1' } }),
    ],
  },
};
const pod = (ns, name, slices, phase = 'Running') => ({
  metadata: { namespace: ns, name, annotations: { 'fatia.dev/slices': slices } },
  spec: { nodeName: 'n1' },
  status: { phase },
});

test('fleet: GPUs by PCI address, slices at their places, holders from fatia.dev/slices', () => {
  const f = fleet([rs], [pod('team-a', 'p', 'gpu-1-ts1,gpu-2-mig-3g71gb-4'), pod('team-b', 'done', 'gpu-0', 'Succeeded')]);
  assert.equal(f.length, 1);
  const [g0, g1, g2] = f[0].gpus;
  assert.deepEqual([g0.index, g1.index, g2.index], [0, 1, 2]);
  assert.equal(g0.slices[0].holder, null, 'an ended pod holds nothing');
  assert.deepEqual(g1.slices.map((s) => [s.name, s.start, s.holder && s.holder.ns]), [['gpu-1-ts0', 0, null], ['gpu-1-ts1', 1, 'team-a']]);
  assert.equal(g2.kind, 'mig');
  assert.deepEqual(g2.slices.map((s) => [s.label, s.start, s.size]), [['1g.18gb', 2, 1], ['3g.71gb', 4, 4]]);
  assert.equal(holders([pod('x', 'y', 'a, b')]).get('n1/b').pod, 'y');
});

test('quantities', () => {
  assert.equal(quantity('500m'), 0.5);
  assert.equal(quantity('16Gi'), 16 * 2 ** 30);
  assert.equal(quantity('2'), 2);
  assert.equal(quantity(undefined), 0);
  assert.equal(quantity('12x'), 0);
});

test("kubeconfig: the token of the current context's user", async () => {
  const { kubeconfigToken } = await import('../src/kubeconfig.js');
  // as `fatia token create` writes it (src/apiserver/auth.c, fatia_kubeconfig_format)
  const fatia = 'apiVersion: v1\nkind: Config\nclusters:\n- name: fatia\n  cluster:\n    server: "https://127.0.0.1:6443"\n    certificate-authority-data: "LS0t"\nusers:\n- name: "alice"\n  user:\n    token: "abc123"\ncontexts:\n- name: fatia\n  context:\n    cluster: fatia\n    user: "alice"\n    namespace: "team-a"\ncurrent-context: fatia\npreferences: {}\n';
  assert.deepEqual(kubeconfigToken(fatia), { token: 'abc123' });
  // two users: the current context's, not the first
  const two = 'apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n    token: admintoken\n- name: bob\n  user:\n    token: bobtoken\ncontexts:\n- context:\n    cluster: c\n    user: admin\n  name: a\n- context:\n    cluster: c\n    user: bob\n  name: b\ncurrent-context: b\n';
  assert.deepEqual(kubeconfigToken(two), { token: 'bobtoken' });
  assert.deepEqual(kubeconfigToken(two.replace('current-context: b', 'current-context: a')), { token: 'admintoken' });
  // refusals say why
  const cert = 'apiVersion: v1\nusers:\n- name: u\n  user:\n    client-certificate-data: LS0t\n    client-key-data: LS0t\ncontexts:\n- name: c\n  context:\n    user: u\ncurrent-context: c\n';
  assert.match(kubeconfigToken(cert).error, /user "u" has no token/);
  assert.match(kubeconfigToken(two.replace('current-context: b', 'current-context: zz')).error, /names no context/);
  assert.match(kubeconfigToken('just some text\n').error, /not a kubeconfig/);
  assert.match(kubeconfigToken(fatia.replace('user: "alice"\n    namespace', 'user: "eve"\n    namespace')).error, /lacks/);
});

test('preemptions: Events and Workload conditions, one per workload and second, bucketed', async () => {
  const { preemptions, buckets, preemptionWords } = await import('../src/preemptions.js');
  const ev = (ns, name, first, last, count, reason = 'Preempted') => ({
    metadata: { namespace: ns, name: `${name}.1` },
    involvedObject: { kind: 'Workload', namespace: ns, name },
    reason,
    message: 'Preempted to accommodate a workload',
    firstTimestamp: first,
    lastTimestamp: last,
    count,
  });
  const wl = (ns, name, t, reason) => ({
    metadata: { namespace: ns, name },
    status: { conditions: [{ type: 'Preempted', status: 'True', lastTransitionTime: t, reason, message: 'm' }] },
  });
  const events = [
    ev('team-a', 'w1', '2026-12-01T10:05:00Z', '2026-12-01T10:05:00Z', 1),
    ev('team-a', 'w2', '2026-12-01T10:20:00Z', '2026-12-01T10:40:00Z', 3), // three: 10:20, 10:40, 10:40:01
    ev('team-b', 'w3', '2026-12-01T10:50:00Z', '2026-12-01T10:50:00Z', 1, 'Evicted'), // not a preemption
    { ...ev('team-b', 'w4', '2026-12-01T10:55:00Z', '2026-12-01T10:55:00Z', 1), involvedObject: { kind: 'Pod', namespace: 'team-b', name: 'w4' } },
  ];
  // w1's condition is the same preemption as its event (a second apart): counted once, with its reason
  const wls = [wl('team-a', 'w1', '2026-12-01T10:05:01Z', 'InClusterQueue'), wl('team-b', 'w5', '2026-12-01T10:59:59Z', 'InCohortReclamation'),
    { metadata: { namespace: 'team-b', name: 'w6' }, status: { conditions: [{ type: 'Preempted', status: 'False', lastTransitionTime: '2026-12-01T10:30:00Z' }] } }];
  const list = preemptions(events, wls);
  assert.deepEqual(list.map((p) => [p.ns, p.workload, new Date(p.time).toISOString(), p.reason]), [
    ['team-b', 'w5', '2026-12-01T10:59:59.000Z', 'InCohortReclamation'],
    ['team-a', 'w2', '2026-12-01T10:40:01.000Z', 'Preempted'],
    ['team-a', 'w2', '2026-12-01T10:40:00.000Z', 'Preempted'],
    ['team-a', 'w2', '2026-12-01T10:20:00.000Z', 'Preempted'],
    ['team-a', 'w1', '2026-12-01T10:05:01.000Z', 'InClusterQueue'],
  ]);
  const b = buckets(list, Date.parse('2026-12-01T10:00:00Z'), Date.parse('2026-12-01T11:00:00Z'), 15 * 6e4);
  assert.deepEqual(b.map((x) => [x.total, x.byNs]), [[1, { 'team-a': 1 }], [1, { 'team-a': 1 }], [2, { 'team-a': 2 }], [1, { 'team-b': 1 }]]);
  assert.equal(preemptionWords('InClusterQueue'), 'for a higher-priority workload of its ClusterQueue');
});

test('sharing policies in words', async () => {
  const { policyInfo } = await import('../src/sharing.js');
  // examples/fleet/10-sharing.yaml
  const ts = { metadata: { name: 'timesliced' }, spec: { nodeSelector: { matchLabels: { 'fatia.dev/box': 'h200x8' } }, gpuIndices: [0, 1], timeSlicing: { renameByDefault: true, resources: [{ name: 'nvidia.com/gpu', replicas: 4 }] } } };
  assert.deepEqual(policyInfo(ts), { name: 'timesliced', nodes: 'fatia.dev/box=h200x8', gpus: '0, 1', how: ['time-slicing: nvidia.com/gpu x4 as nvidia.com/gpu.shared'] });
  const mig = { metadata: { name: 'mig-balanced' }, spec: { gpuIndices: [4, 5], mig: { strategy: 'mixed', config: 'all-balanced' } } };
  assert.deepEqual(policyInfo(mig), { name: 'mig-balanced', nodes: 'every node', gpus: '4, 5', how: ['MIG mixed: all-balanced'] });
  const mps = { metadata: { name: 'm' }, spec: { mps: { resources: [{ name: 'nvidia.com/gpu', replicas: 2, rename: 'nvidia.com/gpu.mps' }], activeThreadPercentage: 50 } } };
  assert.deepEqual(policyInfo(mps).how, ['MPS: nvidia.com/gpu x2 as nvidia.com/gpu.mps (50% of the SMs)']);
});

// Kueue's Workload status read for people: the state, the position in its LocalQueue, and the
// pending message in plain words. Pure functions (tested through the browser tests' pages).
const cond = (w, type) => ((w.status && w.status.conditions) || []).find((c) => c.type === type);
const isTrue = (w, type) => {
  const c = cond(w, type);
  return !!c && c.status === 'True';
};

export function workloadState(w) {
  if (!w) return 'no workload';
  if (isTrue(w, 'Finished')) return 'Finished';
  if (isTrue(w, 'Admitted')) return 'Admitted';
  if (isTrue(w, 'QuotaReserved')) return 'Quota reserved';
  if (w.spec && w.spec.active === false) return 'Deactivated';
  return 'Pending';
}

// Kueue's order inside a ClusterQueue (BestEffortFIFO): priority first, then creation.
function before(a, b) {
  const pa = (a.spec && a.spec.priority) || 0;
  const pb = (b.spec && b.spec.priority) || 0;
  if (pa !== pb) return pb - pa;
  return String(a.metadata.creationTimestamp).localeCompare(String(b.metadata.creationTimestamp));
}

// 1-based position among the pending workloads of the same LocalQueue that this token sees.
export function queuePosition(w, all) {
  if (workloadState(w) !== 'Pending') return null;
  const peers = all.filter(
    (o) =>
      o.metadata.namespace === w.metadata.namespace &&
      o.spec.queueName === w.spec.queueName &&
      workloadState(o) === 'Pending',
  );
  peers.sort(before);
  return peers.findIndex((o) => o.metadata.uid === w.metadata.uid) + 1;
}

const RULES = [
  [
    /insufficient unused quota for (\S+) in flavor (\S+), (\S+) more needed/,
    (m) => `waiting for quota: ${m[3]} more ${m[1]} (${m[2]}) must free up in its queue`,
  ],
  [
    /insufficient quota for (\S+) in flavor (\S+).*request > maximum capacity/,
    (m) => `asks for more ${m[1]} (${m[2]}) than its queue can ever give: make it smaller`,
  ],
  [/ClusterQueue (\S+) is inactive/, (m) => `its ClusterQueue ${m[1]} is not active`],
  [/LocalQueue (\S+) doesn't exist/, (m) => `the queue ${m[1]} does not exist in this namespace`],
  [/due to reclamation within the cohort/, () => 'stopped: another team took back its lent GPUs'],
  [
    /due to prioritization in the ClusterQueue/,
    () => 'stopped: more urgent work of its team needed the GPUs',
  ],
  [/Preempted/, () => 'stopped to make room for other work; it waits again'],
];

export function plainWords(msg) {
  if (!msg) return '';
  for (const [re, f] of RULES) {
    const m = msg.match(re);
    if (m) return f(m);
  }
  return msg;
}

// What to tell about a workload: the reason it waits (QuotaReserved=False), or why it was
// evicted.
export function pendingMessage(w) {
  if (!w) return '';
  const st = workloadState(w);
  if (st !== 'Pending' && st !== 'Deactivated') return '';
  const ev = cond(w, 'Evicted');
  const qr = cond(w, 'QuotaReserved');
  const parts = [];
  if (qr && qr.status === 'False' && qr.message) parts.push(plainWords(qr.message));
  if (ev && ev.status === 'True' && ev.message) parts.push(plainWords(ev.message));
  return parts.join('; ');
}

// Preemptions over time, from what the API keeps: the Events Kueue's admission writes on a
// Workload it preempts (reason Preempted; an aggregated event counts `count` of them, from
// firstTimestamp to lastTimestamp) and the Workloads' Preempted conditions (the last preemption
// of each Workload still there, with the detailed reason: InClusterQueue, InCohortReclamation,
// ...). Events expire and conditions keep only the last one, so the union is taken: one
// preemption per (namespace, workload, second), a condition standing for an event of its
// workload up to 2 s apart. Pure: lists in, lists out.
const ms = (t) => (t ? Date.parse(t) : NaN);
const preemptedCond = (w) => ((w.status && w.status.conditions) || []).find((c) => c.type === 'Preempted');

const WORDS = {
  InClusterQueue: 'for a higher-priority workload of its ClusterQueue',
  InCohortReclamation: 'its cohort lender took its quota back',
  InCohortFairSharing: "for the cohort's fair sharing",
  InCohortReclaimWhileBorrowing: 'for a higher-priority workload of the cohort, while borrowing',
};
export const preemptionWords = (reason) => WORDS[reason] || reason || 'preempted';

// [{time (ms), ns, workload, reason, message}], newest first.
export function preemptions(events, workloads) {
  const out = new Map();
  const add = (time, ns, workload, reason, message, strong) => {
    if (!Number.isFinite(time)) return;
    const k = `${ns}/${workload}@${Math.floor(time / 1000)}`;
    const had = out.get(k);
    if (!had || (strong && !had.strong)) out.set(k, { time, ns, workload, reason, message, strong });
  };
  for (const e of events) {
    const o = e.involvedObject || e.regarding || {};
    if (e.reason !== 'Preempted' || o.kind !== 'Workload') continue;
    const ns = o.namespace || (e.metadata && e.metadata.namespace) || '';
    const first = ms(e.firstTimestamp || e.eventTime || (e.metadata && e.metadata.creationTimestamp));
    const last = ms(e.lastTimestamp) || first;
    const n = Math.max(1, Number(e.count || (e.series && e.series.count) || 1));
    // the occurrences between the first and the last are not kept: counted at the last (each a
    // second apart, so that the union keeps them apart)
    add(first, ns, o.name, 'Preempted', e.message || e.note || '', false);
    for (let i = 1; i < n; i++) add(last + (i - 1) * 1000, ns, o.name, 'Preempted', e.message || e.note || '', false);
  }
  for (const w of workloads) {
    const c = preemptedCond(w);
    if (!c || c.status !== 'True') continue;
    const t = ms(c.lastTransitionTime);
    // the event of the same preemption may be stamped a second or two apart (written after the
    // status): the condition replaces it, bringing its reason
    for (const [k, p] of out)
      if (!p.strong && p.ns === w.metadata.namespace && p.workload === w.metadata.name && Math.abs(p.time - t) <= 2000)
        out.delete(k);
    add(t, w.metadata.namespace, w.metadata.name, c.reason, c.message || '', true);
  }
  return Array.from(out.values())
    .map(({ strong, ...p }) => p)
    .sort((a, b) => b.time - a.time || a.workload.localeCompare(b.workload));
}

// Counts per bucket of step ms over [since, until): [{start, total, byNs: {ns: n}}].
export function buckets(list, since, until, step) {
  const n = Math.max(1, Math.ceil((until - since) / step));
  const out = Array.from({ length: n }, (_, i) => ({ start: since + i * step, total: 0, byNs: {} }));
  for (const p of list) {
    if (p.time < since || p.time >= until) continue;
    const b = out[Math.floor((p.time - since) / step)];
    b.total++;
    b.byNs[p.ns] = (b.byNs[p.ns] || 0) + 1;
  }
  return out;
}

// Usage from UsageRecords (fatia.dev/v1alpha1, one per admitted run of a Workload: docs/
// selfservice.md): resource-hours inside a window, summed by a key (namespace, profile, queue,
// user: spec.user, the Workload's fatia.dev/creator that fatiad sets; "(unknown)" when absent).
// The same arithmetic as `fatia usage` (src/control/usage.c): count x overlap of [start, end or
// now) with [since, until).
import { quantity } from './quantity.js';

export function gpuKind(resource) {
  if (resource === 'nvidia.com/gpu') return 'GPU-h';
  if (resource.startsWith('nvidia.com/mig-')) return 'MIG-h';
  if (resource.startsWith('nvidia.com/gpu.')) return 'slice-h';
  return null;
}

export function usageBy(records, by, since, until, now) {
  const out = new Map();
  for (const r of records) {
    const s = r.spec || {};
    const start = Date.parse(s.start);
    const end = s.end ? Date.parse(s.end) : now;
    const lo = Math.max(start, since);
    const hi = Math.min(end, until);
    if (!(hi > lo)) continue;
    const hours = (hi - lo) / 3.6e6;
    const key =
      by === 'namespace'
        ? r.metadata.namespace
        : by === 'profile'
          ? s.profile || '(none)'
          : by === 'user'
            ? s.user || '(unknown)'
            : s.clusterQueue || '';
    if (!out.has(key)) out.set(key, { key, 'GPU-h': 0, 'MIG-h': 0, 'slice-h': 0, 'CPU-h': 0 });
    const row = out.get(key);
    for (const [res, q] of Object.entries(s.resources || {})) {
      const k = res === 'cpu' ? 'CPU-h' : gpuKind(res);
      if (k) row[k] += quantity(q) * hours;
    }
  }
  return Array.from(out.values()).sort((a, b) => a.key.localeCompare(b.key));
}

// GPUSharingPolicies (fatia.dev/v1alpha1, cluster-scoped: docs/supply.md) read for people: which
// nodes and GPUs a policy cuts, and how (MIG layout, time-slicing, MPS, fractions), in the
// device plugin's and mig-parted's own terms. Pure: a policy in, a row out.
function selector(sel) {
  if (!sel) return 'every node';
  const parts = Object.entries(sel.matchLabels || {}).map(([k, v]) => `${k}=${v}`);
  for (const e of sel.matchExpressions || [])
    parts.push(`${e.key} ${e.operator}${e.values ? ` (${e.values.join(', ')})` : ''}`);
  return parts.join(', ') || 'every node';
}

function replicated(kind, r) {
  const res = (r.resources || []).map((x) => {
    const name = x.rename || (r.renameByDefault ? `${x.name}.shared` : x.name);
    return `${x.name} x${x.replicas}${name !== x.name ? ` as ${name}` : ''}`;
  });
  const extra = [];
  if (r.memoryPerReplica) extra.push(`${r.memoryPerReplica} each`);
  if (r.activeThreadPercentage !== undefined) extra.push(`${r.activeThreadPercentage}% of the SMs`);
  if (r.pinnedMemoryLimit) extra.push(`pinned ${r.pinnedMemoryLimit}`);
  return `${kind}: ${res.join(', ') || '(no resources)'}${extra.length ? ` (${extra.join(', ')})` : ''}`;
}

export function policyInfo(p) {
  const s = p.spec || {};
  const how = [];
  if (s.mig) {
    const layout = s.mig.config || (s.mig['mig-devices'] ? Object.entries(s.mig['mig-devices']).map(([k, v]) => `${v} x ${k}`).join(', ') : '');
    how.push(`MIG ${s.mig.strategy || ''}${layout ? `: ${layout}` : ''}`.trim());
  }
  if (s.timeSlicing) how.push(replicated('time-slicing', s.timeSlicing));
  if (s.mps) how.push(replicated('MPS', s.mps));
  if (s.fractional) how.push(`fractions${s.fractional.unit ? ` of ${s.fractional.unit}` : ''}`);
  return {
    name: p.metadata.name,
    nodes: selector(s.nodeSelector),
    gpus: s.gpuIndices && s.gpuIndices.length ? s.gpuIndices.join(', ') : 'all',
    how: how.length ? how : ['whole GPUs'],
  };
}

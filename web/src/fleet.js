// The fleet as the GPU page draws it, from ResourceSlices (the devices each node publishes:
// docs/supply.md) and the pods bound to them (annotation fatia.dev/slices, set by placement).
// Pure: (slices, pods) -> nodes -> GPUs -> slices with their holder.
const attr = (d, k) => {
  const a = (d.attributes || {})[k];
  return a ? a.string ?? a.int ?? a.version ?? a.bool : undefined;
};
const cap = (d, k) => {
  const c = (d.capacity || {})[k];
  return c ? c.value : undefined;
};

// "node/slice" -> {ns, pod} for every pod holding slices and not ended.
export function holders(pods) {
  const h = new Map();
  for (const p of pods) {
    const s = (p.metadata.annotations || {})['fatia.dev/slices'];
    const node = p.spec.nodeName;
    if (!s || !node) continue;
    const phase = p.status && p.status.phase;
    if (phase === 'Succeeded' || phase === 'Failed') continue;
    for (const name of s.split(','))
      h.set(`${node}/${name.trim()}`, { ns: p.metadata.namespace, pod: p.metadata.name });
  }
  return h;
}

// MIG memory-slice placement: [start, size] from the device's memorySliceN capacities.
function migPlace(d) {
  const idx = Object.keys(d.capacity || {})
    .filter((k) => /^memorySlice\d+$/.test(k))
    .map((k) => Number(k.slice(11)))
    .sort((a, b) => a - b);
  return idx.length ? [idx[0], idx.length] : [0, 1];
}

// [{name, gpus: [{key, index, product, memory, kind, slices: [{name, type, label, start, size,
// holder}]}]}], nodes and GPUs in order.
export function fleet(resourceSlices, pods) {
  const held = holders(pods);
  const nodes = new Map();
  for (const rs of resourceSlices) {
    const node = rs.spec.nodeName;
    if (!node) continue;
    if (!nodes.has(node)) nodes.set(node, new Map());
    const gpus = nodes.get(node);
    for (const d of rs.spec.devices || []) {
      const gkey = attr(d, 'resource.kubernetes.io/pciBusID') || attr(d, 'parentUUID') || attr(d, 'uuid') || d.name;
      const m = d.name.match(/^gpu-(\d+)/);
      if (!gpus.has(gkey))
        gpus.set(gkey, {
          key: gkey,
          index: m ? Number(m[1]) : gpus.size,
          product: attr(d, 'productName') || '',
          kind: attr(d, 'type') || 'gpu',
          slices: [],
        });
      const g = gpus.get(gkey);
      const type = attr(d, 'type') || 'gpu';
      if (type === 'mig') g.kind = 'mig';
      const s = { name: d.name, type, holder: held.get(`${node}/${d.name}`) || null, memory: cap(d, 'memory') };
      if (type === 'mig') {
        [s.start, s.size] = migPlace(d);
        s.label = attr(d, 'profile') || d.name;
      } else if (type === 'timeslice' || type === 'mps' || type === 'fraction') {
        s.start = Number(attr(d, 'fatia.dev/replica') ?? g.slices.length);
        s.size = 1;
        s.label = `${type === 'timeslice' ? 'ts' : type} ${s.start}`;
        g.kind = type;
      } else {
        s.start = 0;
        s.size = 1;
        s.label = 'whole';
      }
      g.slices.push(s);
    }
  }
  const out = [];
  for (const [name, gpus] of nodes) {
    const list = Array.from(gpus.values()).sort((a, b) => a.index - b.index);
    for (const g of list) g.slices.sort((a, b) => a.start - b.start);
    out.push({ name, gpus: list });
  }
  out.sort((a, b) => a.name.localeCompare(b.name, undefined, { numeric: true }));
  return out;
}

const PALETTE = ['#0066cc', '#3e8635', '#c9190b', '#8476d1', '#f0ab00', '#009596', '#ec7a08', '#6753ac', '#4cb140', '#a30000'];
const colors = new Map();
export function tenantColor(ns) {
  if (colors.has(ns)) return colors.get(ns);
  let h = 0;
  for (const c of ns) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  colors.set(ns, PALETTE[h % PALETTE.length]);
  return colors.get(ns);
}

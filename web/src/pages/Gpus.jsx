// GPUs: every node and GPU with its slices at their places (MIG instances over the GPU's 8
// memory slices, time-slice replicas side by side, whole GPUs in one piece), coloured by the
// tenant (namespace) holding them; free slices are white and dashed. Plain divs, one memoized
// row per node: 100 nodes x 8 GPUs redraw only the nodes that changed (bench/dashboard-gpus).
import React, { memo, useEffect, useMemo } from 'react';
import { Alert, Content, Label, PageSection } from '@patternfly/react-core';
import { paths, useList } from '../api.js';
import { fleet, tenantColor } from '../fleet.js';

const MIG_SLOTS = 8;

function Slice({ s, cols }) {
  const h = s.holder;
  const style = {
    gridColumn: `${s.start * (cols.unit) + 1} / span ${s.size * cols.unit}`,
    background: h ? tenantColor(h.ns) : 'white',
    color: h ? 'white' : '#6a6e73',
    border: h ? '1px solid transparent' : '1px dashed #8a8d90',
  };
  return (
    <div
      className={`fatia-slice ${h ? 'fatia-held' : 'fatia-free'}`}
      style={style}
      title={`${s.name}${s.memory ? ` (${s.memory})` : ''}: ${h ? `${h.ns}/${h.pod}` : 'free'}`}
      data-slice={s.name}
      data-tenant={h ? h.ns : ''}
    >
      {s.label} {h ? h.ns : 'free'}
    </div>
  );
}

function Gpu({ g }) {
  // grid columns: MIG in 8 memory slices; N replicas in N; whole in 1
  const n =
    g.kind === 'mig' ? MIG_SLOTS : Math.max(1, ...g.slices.map((s) => s.start + s.size));
  const cols = { unit: 1 };
  return (
    <div className="fatia-gpu" data-gpu={g.index}>
      <div className="fatia-gpu-name">
        GPU {g.index} <small>{g.kind}</small>
      </div>
      <div className="fatia-gpu-slices" style={{ gridTemplateColumns: `repeat(${n}, 1fr)` }}>
        {g.slices.map((s) => (
          <Slice key={s.name} s={s} cols={cols} />
        ))}
      </div>
    </div>
  );
}

const Node = memo(
  function Node({ node }) {
    return (
      <div className="fatia-node" data-node={node.name}>
        <div className="fatia-node-name">{node.name}</div>
        <div className="fatia-node-gpus">
          {node.gpus.map((g) => (
            <Gpu key={g.key} g={g} />
          ))}
        </div>
      </div>
    );
  },
  (a, b) => a.sig === b.sig,
);

const sigOf = (node) =>
  node.gpus
    .map((g) => g.slices.map((s) => `${s.name}:${s.holder ? `${s.holder.ns}/${s.holder.pod}` : ''}`).join(','))
    .join(';');

export default function Gpus({ me }) {
  const rs = useList(paths.resourceslices());
  const pods = useList(paths.pods(me.admin ? '' : me.namespaces[0]));
  const nodes = useMemo(() => fleet(rs.items, pods.items), [rs.items, pods.items]);
  const ngpus = nodes.reduce((a, n) => a + n.gpus.length, 0);
  const stats = useMemo(() => {
    let free = 0;
    let held = 0;
    const tenants = new Set();
    for (const n of nodes)
      for (const g of n.gpus)
        for (const s of g.slices) {
          if (s.holder) {
            held++;
            tenants.add(s.holder.ns);
          } else free++;
        }
    return { free, held, tenants: Array.from(tenants).sort() };
  }, [nodes]);
  useEffect(() => {
    // the bench's mark: this many GPU cells are on the screen (next frame: painted)
    if (!ngpus) return;
    requestAnimationFrame(() => performance.mark(`fatia-gpus-drawn-${ngpus}`));
  }, [ngpus, nodes]);
  return (
    <PageSection>
      <Content component="h1">GPUs</Content>
      {!me.admin && (
        <Alert
          variant="info"
          isInline
          title="You see your own namespace's slices; other tenants' slices are drawn as free."
        />
      )}
      <Content component="p" id="gpu-summary">
        {nodes.length} nodes, {ngpus} GPUs, {stats.held} slices held, {stats.free} free
      </Content>
      <div id="gpu-legend" style={{ marginBottom: 12 }}>
        {stats.tenants.map((t) => (
          <Label key={t} style={{ background: tenantColor(t), color: 'white', marginRight: 6 }}>
            {t}
          </Label>
        ))}
        <Label variant="outline">free</Label>
      </div>
      <div id="gpus" data-gpu-count={ngpus}>
        {nodes.map((n) => (
          <Node key={n.name} node={n} sig={sigOf(n)} />
        ))}
      </div>
    </PageSection>
  );
}

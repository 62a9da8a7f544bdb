// GPUs: every node and GPU with its slices at their places (MIG instances over the GPU's 8
// memory slices, time-slice replicas side by side, whole GPUs in one piece), coloured by the
// tenant (namespace) holding them; free slices are white and dashed. Plain divs, one memoized
// row per node: 100 nodes x 8 GPUs redraw only the nodes that changed (bench/dashboard-gpus).
import React, { memo, useEffect, useMemo } from 'react';
import { Alert, Content, PageSection } from '@patternfly/react-core';
import { paths, useList } from '../api.js';
import { fleet, tenantColor } from '../fleet.js';

const MIG_SLOTS = 8;
const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const esc = (v) => String(v).replace(/[&<>"']/g, (c) => ESC[c]);

// One node's GPUs as HTML: 800 GPUs and 2,000 slices are ~9,000 elements, which React's
// createElement makes several times slower than the browser's own parser; every value from the
// API is escaped. A GPU's slices sit in a grid of its MIG memory slices (8), or of its replicas.
function nodeHtml(node) {
  let h = `<div class="fatia-node-name">${esc(node.name)}</div><div class="fatia-node-gpus">`;
  for (const g of node.gpus) {
    const n = g.kind === 'mig' ? MIG_SLOTS : Math.max(1, ...g.slices.map((s) => s.start + s.size));
    h += `<div class="fatia-gpu" data-gpu="${g.index}"><div class="fatia-gpu-name">GPU ${g.index} <small>${esc(g.kind)}</small></div>`;
    h += `<div class="fatia-gpu-slices" style="grid-template-columns:repeat(${n},1fr)">`;
    for (const s of g.slices) {
      const who = s.holder;
      const style = `grid-column:${s.start + 1}/span ${s.size};${who ? `background:${tenantColor(who.ns)}` : ''}`;
      const title = `${s.name}${s.memory ? ` (${s.memory})` : ''}: ${who ? `${who.ns}/${who.pod}` : 'free'}`;
      h +=
        `<div class="fatia-slice ${who ? 'fatia-held' : 'fatia-free'}" style="${esc(style)}" title="${esc(title)}" ` +
        `data-slice="${esc(s.name)}" data-tenant="${who ? esc(who.ns) : ''}">${esc(s.label)} ${who ? esc(who.ns) : 'free'}</div>`;
    }
    h += '</div></div>';
  }
  return `${h}</div>`;
}

const Node = memo(
  function Node({ node }) {
    return <div className="fatia-node" data-node={node.name} dangerouslySetInnerHTML={{ __html: nodeHtml(node) }} />;
  },
  (a, b) => a.sig === b.sig,
);

const sigOf = (node) =>
  node.gpus
    .map((g) => g.slices.map((s) => `${s.name}:${s.holder ? `${s.holder.ns}/${s.holder.pod}` : ''}`).join(','))
    .join(';');

// the page's lists (main.jsx asks for them at start when the page is #/gpus)
export const gpuLists = (me) => [paths.resourceslices(), paths.pods(me.admin ? '' : me.namespaces[0])];

export default function Gpus({ me }) {
  const [rsPath, podsPath] = gpuLists(me);
  const rs = useList(rsPath);
  const pods = useList(podsPath);
  // drawn once both lists are in: the first picture already has every holder
  const ready = rs.loaded && pods.loaded;
  const nodes = useMemo(() => (ready ? fleet(rs.items, pods.items) : []), [ready, rs.items, pods.items]);
  if (ready) performance.mark('fatia-gpus-render');
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
    // the bench's mark: this many GPU cells are on the screen, painted
    if (!ngpus) return;
    performance.mark('fatia-gpus-commit');
    // rAF runs before that frame's style, layout and paint; a task queued from it runs after
    requestAnimationFrame(() => setTimeout(() => performance.mark(`fatia-gpus-drawn-${ngpus}`), 0));
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
          <span key={t} className="fatia-legend" style={{ background: tenantColor(t) }}>
            {t}
          </span>
        ))}
        <span className="fatia-legend fatia-legend-free">free</span>
      </div>
      <div id="gpus" data-gpu-count={ngpus}>
        {nodes.map((n) => (
          <Node key={n.name} node={n} sig={sigOf(n)} />
        ))}
      </div>
    </PageSection>
  );
}

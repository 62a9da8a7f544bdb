// Preemptions over time: how many workloads Kueue's admission preempted, per interval of the
// window, stacked by the preempted workload's namespace (its tenant colour), and the list with
// the reason in plain words (preemptions.js: Events and Workload conditions, this token's).
import React, { useState } from 'react';
import { Alert, Content, FormSelect, FormSelectOption, PageSection } from '@patternfly/react-core';
import { Table, Thead, Tr, Th, Tbody, Td } from '@patternfly/react-table';
import { paths, useList } from '../api.js';
import { tenantColor } from '../fleet.js';
import { buckets, preemptionWords, preemptions } from '../preemptions.js';

const WINDOWS = [
  ['1h', 3.6e6, 5 * 6e4],
  ['24h', 8.64e7, 3.6e6],
  ['7d', 6.048e8, 8.64e7 / 4],
];

function Chart({ bars, step }) {
  const max = Math.max(1, ...bars.map((b) => b.total));
  const W = 100 / bars.length;
  const H = 120;
  return (
    <svg id="preemptions-chart" width="100%" height={H + 24} role="img" aria-label="preemptions over time">
      {bars.map((b, i) => {
        let y = H;
        return (
          <g key={b.start} data-start={b.start} data-total={b.total}>
            {Object.entries(b.byNs)
              .sort()
              .map(([ns, n]) => {
                const h = (H * n) / max;
                y -= h;
                return (
                  <rect key={ns} x={`${i * W + W * 0.1}%`} y={y} width={`${W * 0.8}%`} height={h} fill={tenantColor(ns)}>
                    <title>{`${new Date(b.start).toISOString().slice(0, 16)}Z +${Math.round(step / 6e4)} min: ${n} of ${ns}`}</title>
                  </rect>
                );
              })}
            {b.total > 0 && (
              <text x={`${i * W + W / 2}%`} y={y - 3} fontSize="11" textAnchor="middle">
                {b.total}
              </text>
            )}
          </g>
        );
      })}
      <line x1="0" y1={H} x2="100%" y2={H} stroke="#8a8d90" />
      <text x="0" y={H + 16} fontSize="11">
        {bars.length ? new Date(bars[0].start).toISOString().slice(0, 16).replace('T', ' ') : ''}
      </text>
      <text x="100%" y={H + 16} fontSize="11" textAnchor="end">
        now
      </text>
    </svg>
  );
}

export default function Preemptions({ ns }) {
  const events = useList(paths.events(ns));
  const wls = useList(paths.workloads(ns));
  const [win, setWin] = useState('1h');
  const [, span, step] = WINDOWS.find((w) => w[0] === win);
  const now = Date.now();
  const list = preemptions(events.items, wls.items);
  const bars = buckets(list, now - span, now + 1, step);
  const shown = list.filter((p) => p.time >= now - span);
  const err = events.error || wls.error;
  return (
    <PageSection>
      <Content component="h1">Preemptions</Content>
      {err && <Alert variant="danger" isInline title={err.message} />}
      <div style={{ maxWidth: 220 }}>
        <FormSelect id="preemptions-window" aria-label="window" value={win} onChange={(_e, v) => setWin(v)}>
          {WINDOWS.map(([w]) => (
            <FormSelectOption key={w} value={w} label={`last ${w}`} />
          ))}
        </FormSelect>
      </div>
      <Content component="p" id="preemptions-summary">
        {shown.length} preemptions in the last {win}
      </Content>
      <Chart bars={bars} step={step} />
      <Table aria-label="preemptions" variant="compact" id="preemptions">
        <Thead>
          <Tr>
            <Th>When</Th>
            <Th>Namespace</Th>
            <Th>Workload</Th>
            <Th>Why</Th>
            <Th>Kueue's message</Th>
          </Tr>
        </Thead>
        <Tbody>
          {shown.map((p) => (
            <Tr key={`${p.ns}/${p.workload}@${p.time}`} data-wl={`${p.ns}/${p.workload}`}>
              <Td>{new Date(p.time).toISOString().replace('T', ' ').slice(0, 19)}</Td>
              <Td>{p.ns}</Td>
              <Td>{p.workload}</Td>
              <Td className="fatia-why">{preemptionWords(p.reason)}</Td>
              <Td>{p.message}</Td>
            </Tr>
          ))}
        </Tbody>
      </Table>
    </PageSection>
  );
}

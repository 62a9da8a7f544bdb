// Usage: GPU-, MIG- and slice-hours per team (namespace), per user (who created the workload:
// fatia.dev/creator, set by fatiad) and per hardware profile over a window, from the
// UsageRecords this token may read, as bar charts (SVG) and tables.
import React, { useState } from 'react';
import { Alert, Content, FormSelect, FormSelectOption, PageSection } from '@patternfly/react-core';
import { Table, Thead, Tr, Th, Tbody, Td } from '@patternfly/react-table';
import { paths, useList } from '../api.js';
import { tenantColor } from '../fleet.js';
import { usageBy } from '../usage.js';

const KINDS = ['GPU-h', 'MIG-h', 'slice-h'];
const WINDOWS = [
  ['1h', 3.6e6],
  ['24h', 8.64e7],
  ['7d', 6.048e8],
  ['all', Infinity],
];

function Chart({ rows, id }) {
  const max = Math.max(1e-9, ...rows.map((r) => KINDS.reduce((a, k) => a + r[k], 0)));
  const h = 26;
  return (
    <svg id={id} width="100%" height={rows.length * h + 4} role="img" aria-label={id}>
      {rows.map((r, i) => {
        let x = 0;
        return (
          <g key={r.key} transform={`translate(0,${i * h})`}>
            <text x="0" y="17" fontSize="12">
              {r.key}
            </text>
            {KINDS.map((k, j) => {
              const w = (60 * r[k]) / max;
              const rect = (
                <rect
                  key={k}
                  x={`${30 + x}%`}
                  y="4"
                  width={`${w}%`}
                  height="16"
                  fill={tenantColor(k + 'x'.repeat(j))}
                >
                  <title>{`${r.key}: ${r[k].toFixed(3)} ${k}`}</title>
                </rect>
              );
              x += w;
              return rect;
            })}
            <text x={`${31 + x}%`} y="17" fontSize="12">
              {KINDS.filter((k) => r[k] > 0)
                .map((k) => `${r[k].toFixed(3)} ${k}`)
                .join(', ')}
            </text>
          </g>
        );
      })}
    </svg>
  );
}

export default function Usage({ ns }) {
  const recs = useList(paths.usagerecords(ns));
  const [win, setWin] = useState('24h');
  const now = Date.now();
  const span = WINDOWS.find((w) => w[0] === win)[1];
  const since = span === Infinity ? 0 : now - span;
  const byNs = usageBy(recs.items, 'namespace', since, now, now);
  const byProfile = usageBy(recs.items, 'profile', since, now, now);
  const byUser = usageBy(recs.items, 'user', since, now, now);
  return (
    <PageSection>
      <Content component="h1">Usage</Content>
      {recs.error && <Alert variant="danger" isInline title={recs.error.message} />}
      <div style={{ maxWidth: 220 }}>
        <FormSelect id="usage-window" aria-label="window" value={win} onChange={(_e, v) => setWin(v)}>
          {WINDOWS.map(([w]) => (
            <FormSelectOption key={w} value={w} label={w === 'all' ? 'all time' : `last ${w}`} />
          ))}
        </FormSelect>
      </div>
      <Content component="p">
        {recs.items.length} usage records; legend:{' '}
        {KINDS.map((k, j) => (
          <span key={k} style={{ color: tenantColor(k + 'x'.repeat(j)), marginRight: 8 }}>
            ■ {k}
          </span>
        ))}
      </Content>
      <Content component="h2">Per team</Content>
      <Chart rows={byNs} id="usage-by-namespace" />
      <Content component="h2">Per user</Content>
      <Chart rows={byUser} id="usage-by-user" />
      <Content component="h2">Per hardware profile</Content>
      <Chart rows={byProfile} id="usage-by-profile" />
      <Rows rows={byNs} id="usage-table" first="Namespace" attr="data-ns" />
      <Rows rows={byUser} id="usage-user-table" first="User" attr="data-user" />
    </PageSection>
  );
}

function Rows({ rows, id, first, attr }) {
  return (
    <Table aria-label={id} variant="compact" id={id}>
      <Thead>
        <Tr>
          <Th>{first}</Th>
          <Th>GPU-h</Th>
          <Th>MIG-h</Th>
          <Th>slice-h</Th>
          <Th>CPU-h</Th>
        </Tr>
      </Thead>
      <Tbody>
        {rows.map((r) => (
          <Tr key={r.key} {...{ [attr]: r.key }}>
            <Td>{r.key}</Td>
            <Td>{r['GPU-h'].toFixed(4)}</Td>
            <Td>{r['MIG-h'].toFixed(4)}</Td>
            <Td>{r['slice-h'].toFixed(4)}</Td>
            <Td>{r['CPU-h'].toFixed(4)}</Td>
          </Tr>
        ))}
      </Tbody>
    </Table>
  );
}

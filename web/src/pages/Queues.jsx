// Queues: ClusterQueues by cohort, each resource's usage against its nominal quota (the part
// over nominal is borrowed from the cohort, drawn hatched), borrowing and lending limits, and
// the pending and admitted counts; then the pending workloads this token sees, with the reason.
import React from 'react';
import { Alert, Content, PageSection } from '@patternfly/react-core';
import { Table, Thead, Tr, Th, Tbody, Td } from '@patternfly/react-table';
import { paths, useList } from '../api.js';
import { pendingMessage, queuePosition, workloadState } from '../kueue.js';
import { quantity } from '../quantity.js';

function Bar({ used, nominal, borrowed }) {
  const max = Math.max(used, nominal, 1e-9);
  const own = Math.min(used - borrowed, nominal);
  return (
    <div className="fatia-bar" title={`${used} used of ${nominal} nominal, ${borrowed} borrowed`}>
      <div style={{ left: 0, width: `${(100 * own) / max}%`, background: '#0066cc' }} />
      <div
        style={{
          left: `${(100 * own) / max}%`,
          width: `${(100 * borrowed) / max}%`,
          background: 'repeating-linear-gradient(45deg,#f0ab00,#f0ab00 4px,#f4c145 4px,#f4c145 8px)',
        }}
      />
      <div style={{ left: `${(100 * nominal) / max}%`, width: 2, background: '#151515' }} />
    </div>
  );
}

export function queueRows(cqs) {
  const rows = [];
  for (const cq of cqs) {
    const usage = new Map();
    for (const f of (cq.status && cq.status.flavorsUsage) || [])
      for (const r of f.resources || []) usage.set(`${f.name}/${r.name}`, r);
    for (const g of cq.spec.resourceGroups || [])
      for (const f of g.flavors || [])
        for (const r of f.resources || []) {
          const u = usage.get(`${f.name}/${r.name}`) || {};
          rows.push({
            cq: cq.metadata.name,
            cohort: cq.spec.cohortName || cq.spec.cohort || '',
            flavor: f.name,
            resource: r.name,
            nominal: quantity(r.nominalQuota),
            borrowingLimit: r.borrowingLimit,
            lendingLimit: r.lendingLimit,
            used: quantity(u.total),
            usedText: u.total || '0',
            nominalText: String(r.nominalQuota ?? 0),
            borrowed: quantity(u.borrowed),
            borrowedText: u.borrowed || '0',
            pending: (cq.status && cq.status.pendingWorkloads) || 0,
            admitted: (cq.status && cq.status.admittedWorkloads) || 0,
          });
        }
  }
  rows.sort((a, b) => `${a.cohort}/${a.cq}`.localeCompare(`${b.cohort}/${b.cq}`));
  return rows;
}

export default function Queues({ ns }) {
  const cqs = useList(paths.clusterqueues());
  const wls = useList(paths.workloads(ns));
  const rows = queueRows(cqs.items);
  const pending = wls.items.filter((w) => workloadState(w) === 'Pending');
  return (
    <PageSection>
      <Content component="h1">Queues</Content>
      {cqs.error && <Alert variant="danger" isInline title={cqs.error.message} />}
      <Table aria-label="cluster queues" variant="compact" id="queues">
        <Thead>
          <Tr>
            <Th>Cohort</Th>
            <Th>ClusterQueue</Th>
            <Th>Flavor / resource</Th>
            <Th>Usage / nominal</Th>
            <Th>Used</Th>
            <Th>Borrowed</Th>
            <Th>Borrowing / lending limit</Th>
            <Th>Pending / admitted</Th>
          </Tr>
        </Thead>
        <Tbody>
          {rows.map((r) => (
            <Tr key={`${r.cq}/${r.flavor}/${r.resource}`} data-cq={r.cq} data-resource={r.resource}>
              <Td>{r.cohort || '-'}</Td>
              <Td>{r.cq}</Td>
              <Td>
                {r.flavor} / {r.resource}
              </Td>
              <Td>
                <Bar used={r.used} nominal={r.nominal} borrowed={r.borrowed} />
              </Td>
              <Td className="fatia-used">
                {r.usedText} of {r.nominalText}
              </Td>
              <Td className="fatia-borrowed">{r.borrowedText}</Td>
              <Td>
                {r.borrowingLimit ?? 'none'} / {r.lendingLimit ?? 'none'}
              </Td>
              <Td>
                {r.pending} / {r.admitted}
              </Td>
            </Tr>
          ))}
        </Tbody>
      </Table>
      <Content component="h2" style={{ marginTop: 24 }}>
        Pending work and why
      </Content>
      <Table aria-label="pending workloads" variant="compact" id="pending">
        <Thead>
          <Tr>
            <Th>Workload</Th>
            <Th>Queue</Th>
            <Th>Position</Th>
            <Th>Priority</Th>
            <Th>Why</Th>
          </Tr>
        </Thead>
        <Tbody>
          {pending.map((w) => (
            <Tr key={w.metadata.uid}>
              <Td>
                {w.metadata.namespace}/{w.metadata.name}
              </Td>
              <Td>{w.spec.queueName}</Td>
              <Td>{queuePosition(w, wls.items)}</Td>
              <Td>{w.spec.priority ?? 0}</Td>
              <Td>{pendingMessage(w)}</Td>
            </Tr>
          ))}
        </Tbody>
      </Table>
    </PageSection>
  );
}

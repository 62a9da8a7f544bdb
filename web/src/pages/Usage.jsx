// Usage: what `fatia usage` reports, from the UsageRecords this token may read, per namespace,
// ClusterQueue, hardware profile or user (who created the workload: fatia.dev/creator), or all
// four: runs, GPU-hours, slice-hours per slice resource, CPU-hours, memory GiB-hours, over the
// last hour, day, week, all time or a window typed in; a bar chart of the GPU and slice hours,
// the table, its CSV (the CLI's -o csv) and the CLI line that prints the same numbers.
//
// The arithmetic is usage.js's, which is usage.c's (exact integers; web/tests/usage.test.mjs
// compares it with the CLI). now is whole seconds, ticking every 15 s so running work grows.
import React, { useEffect, useMemo, useState } from 'react';
import { Alert, Button, Content, FormSelect, FormSelectOption, PageSection, TextInput } from '@patternfly/react-core';
import { Table, Thead, Tr, Th, Tbody, Td } from '@patternfly/react-table';
import { paths, useList } from '../api.js';
import { tenantColor } from '../fleet.js';
import {
  GROUPS,
  cellText,
  columnLabel,
  formatHours,
  formatTime,
  parseTime,
  resourceKind,
  usageCsv,
  usageReport,
  usageTable,
} from '../usage.js';

const HOUR = 3600n * 1000000n;
const WINDOWS = [
  ['1h', HOUR],
  ['24h', 24n * HOUR],
  ['7d', 168n * HOUR],
  ['all', null],
  ['custom', null],
];
const TITLES = { namespace: 'Per team (namespace)', queue: 'Per ClusterQueue', profile: 'Per hardware profile', user: 'Per user' };
const HEAD = { namespace: 'Namespace', queue: 'ClusterQueue', profile: 'Profile', user: 'User' };
const nowSec = () => BigInt(Math.floor(Date.now() / 1000)) * 1000000n;

// the GPU- and slice-hours of each group, one bar part per resource; the label's sums are exact
function Chart({ table, id }) {
  const cols = table.columns.filter((c) => ['gpu', 'slice'].includes(resourceKind(c)));
  const sum = (g) => cols.reduce((a, c) => a + (g.cells[c] ? g.cells[c].value : 0), 0);
  const max = Math.max(1e-9, ...table.groups.map(sum));
  const exact = (g, kind) =>
    cols.filter((c) => resourceKind(c) === kind && g.cells[c]).reduce((a, c) => a + g.cells[c].milliSec, 0n);
  const h = 26;
  return (
    <svg id={id} width="100%" height={table.groups.length * h + 4} role="img" aria-label={id}>
      {table.groups.map((g, i) => {
        let x = 0;
        return (
          <g key={g.group} transform={`translate(0,${i * h})`}>
            <text x="0" y="17" fontSize="12">
              {g.group || '-'}
            </text>
            {cols.map((c) => {
              const v = g.cells[c] ? g.cells[c].value : 0;
              const w = (45 * v) / max;
              const rect = (
                <rect key={c} x={`${22 + x}%`} y="4" width={`${w}%`} height="16" fill={tenantColor(c)}>
                  <title>{`${g.group || '-'}: ${g.cells[c] ? g.cells[c].hours : '0'} ${c}-hours`}</title>
                </rect>
              );
              x += w;
              return rect;
            })}
            <text x={`${23 + x}%`} y="17" fontSize="12">
              {`${formatHours(exact(g, 'gpu'))} GPU-h, ${formatHours(exact(g, 'slice'))} slice-h`}
            </text>
          </g>
        );
      })}
    </svg>
  );
}

function download(name, text) {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/csv' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

function Section({ by, items, win, ns }) {
  const { since, until, now } = win;
  const [report, table] = useMemo(() => {
    const rep = usageReport(items, { by, since, until, now });
    return [rep, usageTable(rep)];
  }, [items, by, since, until, now]);
  const cli =
    `kubectl get usagerecords ${ns ? `-n ${ns}` : '-A'} -o yaml | fatia usage -f - --by ${by}` +
    (win.since !== null ? ` --since ${formatTime(win.since)}` : '') +
    (win.until !== null ? ` --until ${formatTime(win.until)}` : '') +
    ` --now ${formatTime(win.now)}`;
  return (
    <section id={`usage-${by}`}>
      <Content component="h2">{TITLES[by]}</Content>
      {report.errors.length > 0 && (
        <Alert variant="warning" isInline title={`${report.errors.length} records skipped, as fatia usage skips them`}>
          {report.errors.join('; ')}
        </Alert>
      )}
      <Chart table={table} id={`usage-chart-${by}`} />
      <Table aria-label={`usage by ${by}`} variant="compact" id={`usage-table-${by}`}>
        <Thead>
          <Tr>
            <Th modifier="wrap">{HEAD[by]}</Th>
            <Th modifier="wrap">runs</Th>
            {table.columns.map((c) => (
              <Th key={c} data-resource={c} modifier="wrap" title={c}>
                {columnLabel(c)}
                {!['gpu', 'cpu', 'memory'].includes(resourceKind(c)) && (
                  <div style={{ fontWeight: 'normal', fontSize: 11 }}>{c.replace(/^nvidia\.com\//, '')}</div>
                )}
              </Th>
            ))}
          </Tr>
        </Thead>
        <Tbody>
          {table.groups.map((g) => (
            <Tr key={g.group} data-group={g.group}>
              <Td>{g.group || '-'}</Td>
              <Td data-col="runs">{g.runs}</Td>
              {table.columns.map((c) => {
                const r = g.cells[c];
                return (
                  <Td
                    key={c}
                    data-resource={c}
                    title={r ? `${c}: ${r.hours} hours (fatia usage), ${r.records} records` : undefined}
                  >
                    {r ? cellText(c, r) : ''}
                  </Td>
                );
              })}
            </Tr>
          ))}
        </Tbody>
      </Table>
      <div style={{ display: 'flex', gap: 12, alignItems: 'center', margin: '8px 0 24px' }}>
        <Button
          id={`usage-csv-${by}`}
          variant="secondary"
          size="sm"
          onClick={() => download(`usage-by-${by}.csv`, usageCsv(by, report.rows))}
        >
          Download CSV
        </Button>
        <code id={`usage-cli-${by}`} style={{ fontSize: 11 }}>
          {cli}
        </code>
      </div>
    </section>
  );
}

export default function Usage({ ns }) {
  const recs = useList(paths.usagerecords(ns));
  const [by, setBy] = useState('all');
  const [winName, setWin] = useState('24h');
  const [since, setSince] = useState('');
  const [until, setUntil] = useState('');
  const [now, setNow] = useState(nowSec);
  useEffect(() => {
    const t = setInterval(() => setNow(nowSec()), 15000);
    return () => clearInterval(t);
  }, []);
  const span = WINDOWS.find((w) => w[0] === winName)[1];
  let win = { since: span === null ? null : now - span, until: null, now };
  let bad = null;
  if (winName === 'custom') {
    const s = since ? parseTime(since) : null;
    const u = until ? parseTime(until) : null;
    if (since && s === null) bad = `since: '${since}' is not an RFC 3339 time (2026-12-01T09:00:00Z)`;
    else if (until && u === null) bad = `until: '${until}' is not an RFC 3339 time (2026-12-01T12:00:00Z)`;
    win = { since: s, until: u, now };
  }
  const shown = by === 'all' ? GROUPS : [by];
  return (
    <PageSection>
      <Content component="h1">Usage</Content>
      {recs.error && <Alert variant="danger" isInline title={recs.error.message} />}
      <div style={{ display: 'flex', gap: 12, flexWrap: 'wrap', maxWidth: 1000 }}>
        <div style={{ width: 220 }}>
          <FormSelect id="usage-by" aria-label="group by" value={by} onChange={(_e, v) => setBy(v)}>
            <FormSelectOption value="all" label="all four groupings" />
            {GROUPS.map((g) => (
              <FormSelectOption key={g} value={g} label={`by ${g}`} />
            ))}
          </FormSelect>
        </div>
        <div style={{ width: 220 }}>
          <FormSelect id="usage-window" aria-label="window" value={winName} onChange={(_e, v) => setWin(v)}>
            {WINDOWS.map(([w]) => (
              <FormSelectOption
                key={w}
                value={w}
                label={w === 'all' ? 'all time' : w === 'custom' ? 'from ... to ...' : `last ${w}`}
              />
            ))}
          </FormSelect>
        </div>
        {winName === 'custom' && (
          <>
            <div style={{ width: 240 }}>
              <TextInput
                id="usage-since"
                aria-label="since"
                placeholder="since (RFC 3339; empty: all)"
                value={since}
                onChange={(_e, v) => setSince(v.trim())}
              />
            </div>
            <div style={{ width: 240 }}>
              <TextInput
                id="usage-until"
                aria-label="until"
                placeholder="until (RFC 3339; empty: now)"
                value={until}
                onChange={(_e, v) => setUntil(v.trim())}
              />
            </div>
          </>
        )}
      </div>
      <Content component="p">
        {recs.items.length} usage records. Hours as <code>fatia usage</code> prints them (exact, six
        decimals, rounded half up); memory in GiB-hours (its byte-hours / 2<sup>30</sup>, rounded the
        same way); runs: the records that count in the row&apos;s group (a run of 0 s counts).
      </Content>
      {bad ? (
        <Alert id="usage-bad-window" variant="danger" isInline title={bad} />
      ) : (
        shown.map((g) => <Section key={g} by={g} items={recs.items} win={win} ns={ns} />)
      )}
    </PageSection>
  );
}

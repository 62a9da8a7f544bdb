// The dashboard's usage arithmetic (web/src/usage.js) against `fatia usage` itself (CTest
// web_usage; node's test runner): over every fixture of tests/data/usage/, for every --by and
// several windows (all, a clipped one, a duration, one ending after now, one holding only a run
// of 0 s), the rows equal `fatia usage -o json`'s, the CSV is `-o csv`'s byte for byte, and each
// group's runs are the records the CLI counts in that group (asked one record at a time). Then a
// few values by hand, so that the two cannot agree on a wrong answer unseen.
// FATIA: the fatia binary (default build/bin/fatia); YAML is read with Debian's python3-yaml.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  GROUPS,
  cellText,
  cmpText,
  formatHours,
  milliOf,
  parseTime,
  quantityNano,
  usageCsv,
  usageReport,
  usageTable,
} from '../src/usage.js';

const FATIA = process.env.FATIA || 'build/bin/fatia';
const DATA = 'tests/data/usage';
const NOW = '2026-12-01T12:00:00Z';
const tmp = mkdtempSync(join(tmpdir(), 'fatia-usage-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

const loadYaml = (file) =>
  JSON.parse(
    execFileSync('python3', ['-c', 'import sys, json, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)', file], {
      encoding: 'utf8',
    }),
  );

// the CLI's answer; exit 1 (some input invalid) would be a broken fixture
function cli(file, by, win, out = 'json') {
  const args = ['usage', '-f', file, '--by', by, '-o', out, '--now', NOW];
  if (win.since) args.push('--since', win.since);
  if (win.until) args.push('--until', win.until);
  const text = execFileSync(FATIA, args, { encoding: 'utf8' });
  return out === 'json' ? JSON.parse(text) : text;
}

// the page's window from the CLI's options (a duration is before now, as the CLI reads it)
function jsWindow(win) {
  const now = parseTime(NOW);
  const at = (s) => (s === undefined ? null : /^\d+h$/.test(s) ? now - BigInt(parseInt(s, 10)) * 3600000000n : parseTime(s));
  return { since: at(win.since), until: at(win.until), now };
}

const WINDOWS = [
  {},
  { since: '2026-12-01T10:00:01Z', until: '2026-12-01T11:10:00Z' },
  { since: '1h' },
  { until: '2026-12-01T13:00:00Z' },
  { since: '2026-12-01T10:00:05Z', until: '2026-12-01T10:00:06Z' },
];
const fixtures = readdirSync(DATA).filter((f) => /\.(ya?ml|json)$/.test(f));

test('the fixtures are there', () => {
  assert.ok(fixtures.includes('records.yaml') && fixtures.includes('edge.yaml'), fixtures.join(' '));
});

for (const f of fixtures) {
  const file = join(DATA, f);
  const doc = /\.json$/.test(f) ? JSON.parse(execFileSync('cat', [file], { encoding: 'utf8' })) : loadYaml(file);
  const items = doc.kind === 'List' ? doc.items : [doc];
  // one file per record, to ask the CLI which groups each record counts in
  const single = items.map((it, i) => {
    const p = join(tmp, `${f}-${i}.json`);
    writeFileSync(p, JSON.stringify(it));
    return p;
  });
  for (const win of WINDOWS) {
    test(`${f} ${JSON.stringify(win)}: usage.js equals fatia usage for every --by`, () => {
      for (const by of GROUPS) {
        const want = cli(file, by, win);
        const got = usageReport(items, { by, ...jsWindow(win) });
        assert.deepEqual(got.errors, [], 'no record skipped');
        assert.deepEqual(
          got.rows.map(({ milliSec, ...r }) => r),
          want.usage,
          `--by ${by}`,
        );
        assert.equal(usageCsv(by, got.rows), cli(file, by, win, 'csv'), `--by ${by} -o csv`);
        const runs = new Map();
        for (const p of single)
          for (const g of new Set(cli(p, by, win).usage.map((r) => r.group))) runs.set(g, (runs.get(g) || 0) + 1);
        assert.deepEqual([...got.runs].sort(), [...runs].sort(), `--by ${by}: runs per group`);
        // the page's table holds the same numbers, one row per group
        const t = usageTable(got);
        assert.deepEqual(
          t.groups.flatMap((g) => t.columns.filter((c) => g.cells[c]).map((c) => [g.group, c, g.cells[c].hours])).sort(),
          want.usage.map((r) => [r.group, r.resource, r.hours]).sort(),
        );
      }
    });
  }
}

test('by hand: records.yaml (its comment) and edge.yaml', () => {
  const recs = loadYaml(join(DATA, 'records.yaml')).items;
  const now = parseTime(NOW);
  const cell = (rep, g, res) => rep.rows.find((r) => r.group === g && r.resource === res)?.hours;
  const ns = usageReport(recs, { by: 'namespace', now });
  assert.equal(cell(ns, 'team-a', 'nvidia.com/gpu'), '4.000000'); // 3 + serve-a's 1 up to now
  assert.equal(cell(ns, 'team-b', 'nvidia.com/mig-3g.71gb'), '1.500000');
  assert.equal(cell(ns, 'team-b', 'nvidia.com/gpu.shared'), '0.005556');
  assert.equal(cell(ns, 'team-b', 'cpu'), '0.000750'); // 1n rounds up to 1m
  const user = usageReport(recs, { by: 'user', now });
  assert.equal(cell(user, 'dora', 'cpu'), '0.750750');
  assert.equal(cell(user, '', 'nvidia.com/gpu.shared'), '0.005556');
  assert.equal(user.runs.get('dora'), 2);
  // memory in GiB-hours on the page: 1Gi for 1.5 h
  const t = usageTable(ns);
  const a = t.groups.find((g) => g.group === 'team-a');
  assert.equal(cellText('memory', a.cells.memory), '1.500000');
  assert.equal(a.runs, 2);
  assert.deepEqual(t.columns, ['nvidia.com/gpu', 'nvidia.com/gpu.shared', 'nvidia.com/mig-3g.71gb', 'cpu', 'memory']);

  const edge = loadYaml(join(DATA, 'edge.yaml')).items;
  const e = usageReport(edge, { by: 'user', now, until: parseTime('2026-12-01T13:00:00Z') });
  assert.equal(cell(e, '', 'nvidia.com/gpu.shared'), '0.333667'); // 1.0000000001 -> 1001m x 20 min
  assert.equal(cell(e, 'Zed', 'nvidia.com/gpu.shared'), '0.000278'); // 1 s, not 2 us
  assert.equal(cell(e, 'émile', 'nvidia.com/gpu'), '0.000000'); // ahead of now: 0 s
  assert.equal(e.runs.get('émile'), 1);
  assert.equal(cell(e, 'zoë', 'nvidia.com/gpu.shared'), '0.000000'); // the run of 0 s
  assert.equal(e.runs.get('zoë'), 2);
  assert.equal(cell(e, 'Zed', 'memory'), '810647932926689280.000000'); // 2^50 x 720 h
  assert.deepEqual([...new Set(e.rows.map((r) => r.group))], ['', 'O"Brien, Pat', 'Zed', 'zoë', 'émile', 'ｚ', '𝔘ser']);
  assert.ok(usageCsv('user', e.rows).includes('\n"O""Brien, Pat",nvidia.com/gpu,0.500000,1\n'), 'a comma and a quote, quoted');
  const nsEdge = usageTable(usageReport(edge, { by: 'namespace', now }));
  assert.equal(nsEdge.groups.find((g) => g.group === 'team-a').runs, 4, 'nil-a (0 GPUs) is no run');
});

test('quantities, times and hours exactly', () => {
  assert.equal(quantityNano('500m'), 500000000n);
  assert.equal(quantityNano(' 1Gi '), 1073741824n * 1000000000n);
  assert.equal(quantityNano('0.1Ki'), 102400000000n);
  assert.equal(quantityNano('1e3'), 1000000000000n);
  assert.equal(quantityNano('1.0000000001'), 1000000001n);
  assert.equal(quantityNano(2), 2000000000n);
  assert.equal(quantityNano('12x'), null);
  assert.equal(quantityNano('1e400'), null, 'beyond 1.7e29: too large, as the C');
  assert.equal(milliOf('1n'), 1n);
  assert.equal(milliOf('-1'), 0n);
  assert.equal(formatHours(3600000n * 3n), '3.000000');
  assert.equal(formatHours(9n), '0.000003'); // 2.5 micro-hours round half up
  assert.equal(formatHours(5n), '0.000001');
  assert.equal(formatHours(1073741824000n * 5400n, 1n << 30n), '1.500000');
  assert.equal(parseTime('2026-12-01T10:00:00.5+02:00'), parseTime('2026-12-01T08:00:00Z') + 500000n);
  assert.equal(parseTime('2026-12-01'), null, 'a date alone is no RFC 3339 time (Date.parse takes it)');
  assert.equal(parseTime('2026-12-01T10:00:00'), null, 'no zone');
  assert.equal(cmpText('ｚ', '𝔘'), -1, 'UTF-8 order, not UTF-16');
});

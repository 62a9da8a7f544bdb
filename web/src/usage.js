// Usage from UsageRecords (fatia.dev/v1alpha1, one per admitted run of a Workload: docs/
// selfservice.md), computed exactly as `fatia usage` computes it (src/control/usage.c), so the
// dashboard's numbers are the CLI's, digit for digit.
//
// Model: a record is [start, end) (end: now while it runs); over a window [since, until) it adds,
// per resource, its quantity in milli-units (rounded up, as usage.c's milli_of) x the whole
// seconds of overlap. Times are truncated to seconds as usage.c truncates microseconds; sums are
// BigInt (usage.c: 128-bit integers); hours are formatted from the integer with six decimals,
// rounded half up. Groups: namespace, ClusterQueue ("queue"), profile or user (spec.user, the
// Workload's fatia.dev/creator); absent is "" (shown "-", as the CLI's table). A record of 0 s
// whose instant is in the window is a run with no hours. A run that started after now (a clock
// ahead of the reader's) counts as 0 s at its start, as usage.c does.
//
// Invariants: usageReport's rows equal `fatia usage -o json`'s "usage" array for the same records,
// window and now (web/tests/usage.test.mjs runs both over tests/data/usage/); usageCsv is
// `fatia usage -o csv`'s text. The quantity parser is model/quantity.c's (upstream's
// resource.ParseQuantity, rounded up to 1n), the time parser base/clock.c's RFC 3339.
//
// Rejected: floating-point sums (the order of additions changes the last digits, and 1n of CPU
// would vanish); Date.parse (accepts what the CLI rejects: "2026-12-01", "Dec 1 2026").

// ---- RFC 3339, as base/clock.c's fatia_time_parse_rfc3339: microseconds as a BigInt, or null
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

export function parseTime(s) {
  if (typeof s !== 'string') return null;
  const m = RFC3339.exec(s);
  if (!m) return null;
  const [y, mo, d, h, mi, sec] = m.slice(1, 7).map(Number);
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return null;
  const frac = m[7] ? Number((m[7] + '000000').slice(0, 6)) : 0;
  const off = m[9] ? (m[9] === '-' ? -1 : 1) * (Number(m[10]) * 3600 + Number(m[11]) * 60) : 0;
  // timegm: days past the month's end and a 60th second roll over, as Date's setters do
  const t = new Date(0);
  t.setUTCFullYear(y, mo - 1, d);
  t.setUTCHours(h, mi, sec, 0);
  return (BigInt(t.getTime() / 1000) - BigInt(off)) * 1000000n + BigInt(frac);
}

// microseconds (BigInt) as RFC 3339 in UTC, whole seconds (the CLI's --since/--until text)
export function formatTime(usec) {
  return new Date(Number(usec / 1000000n) * 1000).toISOString().replace('.000Z', 'Z');
}

// ---- quantities, as model/quantity.c's parse_n: nano-units as a BigInt, or null when invalid
const I128_MAX = (1n << 127n) - 1n;
const NANO = 1000000000n;
const BIN_CAP = ((1n << 63n) - 1n) * NANO;
const SUFFIXES = {
  '': [10, 0], n: [10, -9], u: [10, -6], m: [10, -3], k: [10, 3], M: [10, 6], G: [10, 9],
  T: [10, 12], P: [10, 15], E: [10, 18], Ki: [2, 10], Mi: [2, 20], Gi: [2, 30], Ti: [2, 40],
  Pi: [2, 50], Ei: [2, 60],
};
const INT64_MAX = (1n << 63n) - 1n;
const SCAN = /^([+-]?)(0*)(\d*)(?:\.(\d*))?([eEinumkKMGTP]*[-+]?\d*)$/;

function interpretSuffix(suf) {
  if (Object.hasOwn(SUFFIXES, suf)) return SUFFIXES[suf];
  // Go's strconv.ParseInt(suf[1:], 10, 64)
  if (suf.length > 1 && (suf[0] === 'e' || suf[0] === 'E') && /^[+-]?\d+$/.test(suf.slice(1))) {
    const e = BigInt(suf.slice(1));
    if (e > INT64_MAX || e < -INT64_MAX - 1n) return null;
    return [10, e];
  }
  return null;
}

// digits x 10^shift, rounded up; null above I128_MAX (quantity.c's decimal_nano, -ERANGE)
function decimalNano(digits, first, shift) {
  let end = digits.length;
  let roundUp = false;
  if (shift < 0n) {
    const drop = -shift;
    end = drop >= BigInt(digits.length - first) ? first : digits.length - Number(drop);
    roundUp = /[1-9]/.test(digits.slice(end));
    shift = 0n;
  }
  const kept = digits.slice(first, end);
  if (BigInt(kept.length) + shift > 40n) return null;
  let v = (kept ? BigInt(kept) : 0n) * 10n ** shift;
  if (v > I128_MAX) return null;
  if (roundUp) {
    if (v >= I128_MAX) return null;
    v++;
  }
  return v;
}

// ceil(digits x 10^9 x 2^bits) capped at (2^63-1) units (quantity.c's binary_nano)
function binaryNano(digits, numN, first, bits) {
  const intEnd = numN + 9;
  const mult = 1n << bits;
  let ipart = 0n;
  if (first < intEnd) ipart = BigInt(digits.slice(first, intEnd).padEnd(intEnd - first, '0'));
  if (ipart > BIN_CAP || ipart > BIN_CAP >> bits) return BIN_CAP;
  let q = 0n;
  let sticky = false;
  for (let i = digits.length; i > intEnd; i--) {
    const t = q + BigInt(digits[i - 1]) * mult;
    q = t / 10n;
    if (t % 10n) sticky = true;
  }
  const total = (ipart << bits) + q + (sticky ? 1n : 0n);
  return total > BIN_CAP ? BIN_CAP : total;
}

// Go's strings.TrimSpace (unicode.IsSpace), as quantity.c's parse_json trims strings
const GO_SPACE = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/g;

export function quantityNano(v) {
  let s;
  if (typeof v === 'string') s = v.replace(GO_SPACE, '');
  else if (typeof v === 'number' && Number.isFinite(v)) s = String(v); // shortest text, as %.*g
  else return null;
  const m = SCAN.exec(s);
  if (!s || !m) return null;
  const [, sign, zeros, num, den = '', suf] = m;
  const hasDigit = zeros.length > 0 || num.length > 0 || den.length > 0;
  const it = interpretSuffix(suf);
  if (!it) return null;
  const [base, exp] = [it[0], BigInt(it[1])];
  if (!hasDigit && base === 10 && exp < -9n) return null;
  const digits = num + den;
  const first = digits.search(/[1-9]/);
  let mag = 0n;
  if (first >= 0 && base === 2) {
    mag = binaryNano(digits, num.length, first, exp);
  } else if (first >= 0) {
    const clamp = (x, lo, hi) => (x < lo ? lo : x > hi ? hi : x);
    const e = clamp(exp, -(1n << 40n), 1n << 40n);
    const denN = BigInt(Math.min(den.length, 2 ** 40));
    mag = decimalNano(digits, first, e + 9n - denN);
    if (mag === null) return null;
  }
  return sign === '-' ? -mag : mag;
}

// milli-units, rounded up; 0 for an invalid or non-positive quantity (usage.c's milli_of)
export function milliOf(v) {
  const n = quantityNano(v);
  if (n === null || n <= 0n) return 0n;
  return n / 1000000n + (n % 1000000n ? 1n : 0n);
}

// milli-unit-seconds as unit-hours with six decimals, rounded half up (usage.c's format_hours);
// per: the unit's size (2^30 for GiB-hours of memory counted in bytes)
export function formatHours(milliSec, per = 1n) {
  const micro = ((milliSec * 100n) / (36n * per) + 5n) / 10n;
  const frac = String(micro % 1000000n).padStart(6, '0');
  return `${micro / 1000000n}.${frac}`;
}

// ---- records
const str = (v) => (typeof v === 'string' ? v : null);

// One record as usage.c's fatia_control_usage_rec_decode: { rec } or { error } naming the record
// and the field; rec.milli: [resource, milli-units] of its positive quantities. Cached per object
// (the lists' objects are replaced, never changed, when a record changes).
const decoded = new WeakMap();
export function decodeRecord(r) {
  if (r && typeof r === 'object' && decoded.has(r)) return decoded.get(r);
  const d = decode(r);
  if (r && typeof r === 'object') decoded.set(r, d);
  return d;
}

function decode(r) {
  const md = (r && typeof r.metadata === 'object' && r.metadata) || {};
  const spec = r && typeof r.spec === 'object' && r.spec && !Array.isArray(r.spec) ? r.spec : {};
  const id = `UsageRecord ${md.namespace ? md.namespace + '/' : ''}${md.name || '?'}`;
  const start = parseTime(str(spec.start));
  const endText = str(spec.end);
  const end = endText === null ? null : parseTime(endText);
  if (start === null) return { error: `${id}: spec.start: not an RFC 3339 time` };
  if (endText !== null && end === null) return { error: `${id}: spec.end: not an RFC 3339 time` };
  if (end !== null && end < start) return { error: `${id}: spec.end: before spec.start` };
  const res = spec.resources && typeof spec.resources === 'object' && !Array.isArray(spec.resources) ? spec.resources : {};
  return {
    rec: {
      namespace: str(md.namespace) ?? '',
      queue: str(spec.clusterQueue) ?? '',
      profile: str(spec.profile) ?? '',
      user: str(spec.user) ?? '',
      start,
      end,
      milli: Object.entries(res)
        .map(([k, v]) => [k, milliOf(v)])
        .filter(([, m]) => m > 0n),
    },
  };
}

export const GROUPS = ['namespace', 'queue', 'profile', 'user'];

// strcmp on UTF-8 is code point order; JS's < compares UTF-16 units
export function cmpText(a, b) {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < x.length && i < y.length; i++) {
    const d = x[i].codePointAt(0) - y[i].codePointAt(0);
    if (d) return d < 0 ? -1 : 1;
  }
  return x.length - y.length < 0 ? -1 : x.length > y.length ? 1 : 0;
}

// The report of `fatia usage --by BY` over records (API objects) in [since, until) with running
// records counted up to now; since, until, now in microseconds (BigInt); since/until null (or
// <= 0, as the CLI's 0) for no bound / now. Returns { rows, runs, errors }: rows as the CLI's JSON
// (group, resource, hours, value, records) plus milliSec; runs: group -> how many records count
// in it (a record counts once per group, whatever its resources); errors: the records skipped.
export function usageReport(records, { by = 'namespace', since = null, until = null, now }) {
  if (!GROUPS.includes(by)) throw new Error(`by: '${by}' (namespace, queue, profile or user)`);
  const w0 = since !== null && since > 0n ? since / 1000000n : null;
  const w1 = (until !== null && until > 0n ? until : now) / 1000000n;
  const rows = new Map();
  const runs = new Map();
  const errors = [];
  for (const obj of records) {
    const d = decodeRecord(obj);
    if (d.error) {
      errors.push(d.error);
      continue;
    }
    const r = d.rec;
    const g = r[by];
    let a = r.start / 1000000n;
    // usage.c: an end of 0 (the epoch) reads as none
    let b = (r.end !== null && r.end !== 0n ? r.end : now) / 1000000n;
    if (b < a) b = a;
    if (a === b ? (w0 !== null && a < w0) || a >= w1 : (w0 !== null && b <= w0) || a >= w1) continue;
    if (w0 !== null && a < w0) a = w0;
    if (b > w1) b = w1;
    let counted = false;
    for (const [res, m] of r.milli) {
      if (!rows.has(g)) rows.set(g, new Map());
      let row = rows.get(g).get(res);
      if (!row) rows.get(g).set(res, (row = { group: g, resource: res, milliSec: 0n, records: 0 }));
      row.milliSec += m * (b - a);
      row.records++;
      counted = true;
    }
    if (counted) runs.set(g, (runs.get(g) || 0) + 1);
  }
  const out = [...rows.values()]
    .flatMap((m) => [...m.values()])
    .sort((x, y) => cmpText(x.group, y.group) || cmpText(x.resource, y.resource))
    .map((r) => {
      const hours = formatHours(r.milliSec);
      return { group: r.group, resource: r.resource, hours, value: Number(hours), records: r.records, milliSec: r.milliSec };
    });
  return { rows: out, runs, errors };
}

// `fatia usage --by BY -o csv`'s text: RFC 4180, a field holding a comma, a quote or a line
// break quoted with its quotes doubled (cmd_usage.c's put_csv_field)
const csvField = (s) => (/[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);
export function usageCsv(by, rows) {
  return (
    `${by},resource,hours,records\n` +
    rows.map((r) => `${csvField(r.group)},${csvField(r.resource)},${r.hours},${r.records}\n`).join('')
  );
}

// ---- the page's table: one row per group, one column per resource
export function resourceKind(res) {
  if (res === 'nvidia.com/gpu') return 'gpu';
  if (res.startsWith('nvidia.com/mig-') || res.startsWith('nvidia.com/gpu.')) return 'slice';
  if (res === 'cpu') return 'cpu';
  if (res === 'memory') return 'memory';
  return 'other';
}
const KIND_ORDER = { gpu: 0, slice: 1, cpu: 2, memory: 3, other: 4 };

// the column's heading and cell text: memory in GiB-hours (the CLI's byte-hours / 2^30, rounded
// half up to six decimals from the exact integer), everything else the CLI's hours
export function columnLabel(res) {
  const k = resourceKind(res);
  return k === 'gpu' ? 'GPU-h' : k === 'slice' ? 'slice-h' : k === 'cpu' ? 'CPU-h' : k === 'memory' ? 'memory GiB-h' : 'h';
}
export function cellText(res, row) {
  return resourceKind(res) === 'memory' ? formatHours(row.milliSec, 1n << 30n) : row.hours;
}

// { columns: [resource...], groups: [{ group, runs, cells: { resource: row } }] }
export function usageTable(report) {
  const columns = [...new Set(report.rows.map((r) => r.resource))].sort(
    (a, b) => KIND_ORDER[resourceKind(a)] - KIND_ORDER[resourceKind(b)] || cmpText(a, b),
  );
  const groups = new Map();
  for (const r of report.rows) {
    if (!groups.has(r.group)) groups.set(r.group, { group: r.group, runs: report.runs.get(r.group) || 0, cells: {} });
    groups.get(r.group).cells[r.resource] = r;
  }
  return { columns, groups: [...groups.values()] };
}

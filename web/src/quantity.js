// Kubernetes quantities as numbers (for bars and sums): "2", "500m", "16Gi", "1.5k".
const SUFFIX = {
  n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};
export function quantity(q) {
  if (q === undefined || q === null) return 0;
  if (typeof q === 'number') return q;
  const m = String(q).match(/^([+-]?[0-9.]+(?:[eE][+-]?\d+)?)([a-zA-Z]*)$/);
  if (!m || !(m[2] in SUFFIX)) return 0;
  return Number(m[1]) * SUFFIX[m[2]];
}

// The dashboard's one door to fatiad: its Kubernetes API on this same origin, with the user's
// bearer token (kept in this origin's localStorage; the notebook proxy is another origin and
// cannot read it). list + watch keep every page live: useList lists once, then follows the
// watch from the list's resourceVersion, relisting when the watch ends or is too old (410).
// Changes are applied in batches once per animation frame, so 50 changes/s cost 60 renders/s
// at most, not one per change.
import { useEffect, useRef, useState } from 'react';

const KEY = 'fatia.token';

export const getToken = () => localStorage.getItem(KEY);
export const setToken = (t) => (t ? localStorage.setItem(KEY, t) : localStorage.removeItem(KEY));

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export async function api(method, path, body, contentType = 'application/json') {
  const headers = { Accept: 'application/json', Authorization: `Bearer ${getToken()}` };
  if (body !== undefined) headers['Content-Type'] = contentType;
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (!res.ok) throw new ApiError(res.status, (json && json.message) || text || res.statusText);
  return json;
}

// Lists asked for before the page that needs them is drawn (main.jsx, at start): useList takes
// the answer from here once, instead of asking again.
const early = new Map();
export function prefetch(path) {
  if (!early.has(path)) early.set(path, api('GET', path));
}

export const key = (o) => `${o.metadata.namespace || ''}/${o.metadata.name}`;

// Streams a watch: calls onEvent({type, object}) for each line; resolves when the stream ends.
async function watchStream(path, rv, onEvent, signal) {
  const sep = path.includes('?') ? '&' : '?';
  const url = `${path}${sep}watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`;
  const res = await fetch(url, {
    headers: { Accept: 'application/json', Authorization: `Bearer ${getToken()}` },
    signal,
  });
  if (!res.ok) throw new ApiError(res.status, res.statusText);
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.trim()) onEvent(JSON.parse(line));
    }
  }
}

// A live list of the objects at path (a collection URL): {items, error, loaded}. path null:
// nothing is listed (a page that waits for something else first).
export function useList(path) {
  const [state, setState] = useState({ items: [], error: null, loaded: false });
  const mapRef = useRef(new Map());
  useEffect(() => {
    if (!path) return undefined;
    const ctl = new AbortController();
    let frame = 0;
    const map = new Map();
    mapRef.current = map;
    const flush = () => {
      frame = 0;
      setState({ items: Array.from(map.values()), error: null, loaded: true });
    };
    const schedule = () => {
      if (!frame) frame = requestAnimationFrame(flush);
    };
    (async () => {
      while (!ctl.signal.aborted) {
        let rv;
        try {
          const pre = early.get(path);
          early.delete(path);
          const l = await (pre || api('GET', path));
          performance.mark(`fatia-listed ${path}`); // for bench/dashboard-gpus.sh MARKS=1
          map.clear();
          for (const o of l.items || []) map.set(key(o), o);
          rv = l.metadata.resourceVersion;
          flush();
        } catch (e) {
          if (ctl.signal.aborted) return;
          setState((s) => ({ ...s, error: e, loaded: true }));
          await new Promise((r) => setTimeout(r, 3000));
          continue;
        }
        try {
          await watchStream(
            path,
            rv,
            (ev) => {
              if (ev.type === 'BOOKMARK') return;
              if (ev.type === 'ERROR') throw new ApiError(ev.object.code, ev.object.message);
              if (ev.type === 'DELETED') map.delete(key(ev.object));
              else map.set(key(ev.object), ev.object);
              schedule();
            },
            ctl.signal,
          );
        } catch (e) {
          if (ctl.signal.aborted) return;
        }
        await new Promise((r) => setTimeout(r, 500));
      }
    })();
    return () => {
      ctl.abort();
      if (frame) cancelAnimationFrame(frame);
    };
  }, [path]);
  return path ? state : { items: [], error: null, loaded: false };
}

// Collection URLs of the kinds the pages read.
export const paths = {
  namespaces: () => '/api/v1/namespaces',
  nodes: () => '/api/v1/nodes',
  pods: (ns) => (ns ? `/api/v1/namespaces/${ns}/pods` : '/api/v1/pods'),
  jobs: (ns) => (ns ? `/apis/batch/v1/namespaces/${ns}/jobs` : '/apis/batch/v1/jobs'),
  notebooks: (ns) =>
    ns ? `/apis/kubeflow.org/v1/namespaces/${ns}/notebooks` : '/apis/kubeflow.org/v1/notebooks',
  workloads: (ns) =>
    ns
      ? `/apis/kueue.x-k8s.io/v1beta2/namespaces/${ns}/workloads`
      : '/apis/kueue.x-k8s.io/v1beta2/workloads',
  localqueues: (ns) =>
    ns
      ? `/apis/kueue.x-k8s.io/v1beta2/namespaces/${ns}/localqueues`
      : '/apis/kueue.x-k8s.io/v1beta2/localqueues',
  clusterqueues: () => '/apis/kueue.x-k8s.io/v1beta2/clusterqueues',
  cohorts: () => '/apis/kueue.x-k8s.io/v1beta2/cohorts',
  profiles: (ns) =>
    ns
      ? `/apis/infrastructure.opendatahub.io/v1/namespaces/${ns}/hardwareprofiles`
      : '/apis/infrastructure.opendatahub.io/v1/hardwareprofiles',
  resourceslices: () => '/apis/resource.k8s.io/v1/resourceslices',
  usagerecords: (ns) =>
    ns
      ? `/apis/fatia.dev/v1alpha1/namespaces/${ns}/usagerecords`
      : '/apis/fatia.dev/v1alpha1/usagerecords',
  events: (ns) => (ns ? `/api/v1/namespaces/${ns}/events` : '/api/v1/events'),
  sharingpolicies: () => '/apis/fatia.dev/v1alpha1/gpusharingpolicies',
};

// Who the token is: {admin, namespaces}. An admin lists pods across all namespaces; a tenant
// sees the namespaces whose LocalQueues it may list (the others answer 403).
export async function whoami() {
  await api('GET', '/api');
  try {
    await api('GET', '/api/v1/pods?limit=1');
    const ns = await api('GET', paths.namespaces());
    return { admin: true, namespaces: ns.items.map((n) => n.metadata.name) };
  } catch (e) {
    if (e.status !== 403) throw e;
  }
  const ns = await api('GET', paths.namespaces());
  const mine = [];
  await Promise.all(
    ns.items.map(async (n) => {
      try {
        await api('GET', `${paths.localqueues(n.metadata.name)}?limit=1`);
        mine.push(n.metadata.name);
      } catch (e) {
        if (e.status !== 403) throw e;
      }
    }),
  );
  mine.sort();
  return { admin: false, namespaces: mine };
}

// My workloads: the Jobs, workbenches (Notebooks) and bare Kueue pods of the chosen namespace(s), each with its
// Kueue Workload's state, queue position and pending reason in plain words; logs, stop/start,
// delete, and "Open" for a running workbench (a form posted to the workbench proxy's login on
// its own origin, which sets its own cookie: the dashboard's token stays on this origin).
import React, { useEffect, useState } from 'react';
import {
  Alert,
  Button,
  Label,
  Modal,
  ModalBody,
  ModalHeader,
  PageSection,
  Content,
  CodeBlock,
  CodeBlockCode,
} from '@patternfly/react-core';
import { Table, Thead, Tr, Th, Tbody, Td } from '@patternfly/react-table';
import { api, getToken, paths, useList } from '../api.js';
import { pendingMessage, queuePosition, workloadState } from '../kueue.js';

let config = null;
async function dashboardConfig() {
  if (!config) config = fetch('config.json').then((r) => (r.ok ? r.json() : {}));
  return config;
}

function Logs({ pod, onClose }) {
  const [text, setText] = useState('loading...');
  useEffect(() => {
    (async () => {
      try {
        const res = await fetch(
          `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}/log?tailLines=200`,
          { headers: { Authorization: `Bearer ${getToken()}` } },
        );
        setText(res.ok ? await res.text() : `${res.status}: ${await res.text()}`);
      } catch (e) {
        setText(String(e));
      }
    })();
  }, [pod]);
  return (
    <Modal isOpen onClose={onClose} variant="large" aria-labelledby="logs-title">
      <ModalHeader title={`Logs of ${pod.metadata.name}`} labelId="logs-title" />
      <ModalBody>
        <CodeBlock>
          <CodeBlockCode id="logs-text">{text}</CodeBlockCode>
        </CodeBlock>
      </ModalBody>
    </Modal>
  );
}

function stateLabel(s) {
  const color =
    {
      Running: 'green',
      Admitted: 'green',
      Pending: 'orange',
      Queued: 'orange',
      Stopped: 'grey',
      Finished: 'blue',
      Complete: 'blue',
      Failed: 'red',
    }[s] || 'grey';
  return <Label color={color}>{s}</Label>;
}

function jobState(j, w) {
  const c = ((j.status && j.status.conditions) || []).filter((x) => x.status === 'True');
  if (c.find((x) => x.type === 'Complete')) return 'Complete';
  if (c.find((x) => x.type === 'Failed')) return 'Failed';
  if (j.status && j.status.active) return 'Running';
  if (w && w.spec.active === false) return 'Stopped';
  if (j.spec.suspend) return 'Queued';
  return 'Starting';
}

function notebookState(nb, w) {
  const a = nb.metadata.annotations || {};
  if ('kubeflow-resource-stopped' in a) return 'Stopped';
  if (nb.status && nb.status.readyReplicas === 1) return 'Running';
  if (!w || workloadState(w) === 'Pending') return 'Queued';
  return 'Starting';
}

export default function Workloads({ ns }) {
  const jobs = useList(paths.jobs(ns));
  const nbs = useList(paths.notebooks(ns));
  const wls = useList(paths.workloads(ns));
  const pods = useList(paths.pods(ns));
  const [logs, setLogs] = useState(null);
  const [error, setError] = useState(null);
  const [origin, setOrigin] = useState(null);
  useEffect(() => {
    dashboardConfig().then((c) => setOrigin(c.notebookOrigin || null));
  }, []);

  const wlOf = (kind, o) =>
    wls.items.find(
      (w) =>
        w.metadata.namespace === o.metadata.namespace &&
        (w.metadata.ownerReferences || []).some((r) => r.kind === kind && r.name === o.metadata.name),
    );
  const podsOf = (o, sel) =>
    pods.items.filter((p) => p.metadata.namespace === o.metadata.namespace && sel(p));
  const act = async (f) => {
    try {
      await f();
      setError(null);
    } catch (e) {
      setError(e.message);
    }
  };
  const rows = [];
  for (const nb of nbs.items) {
    const pod = podsOf(nb, (p) => p.metadata.name === `${nb.metadata.name}-0`)[0];
    const w = pod ? wlOf('Pod', pod) : null;
    rows.push({ kind: 'Workbench', o: nb, w, pod, state: notebookState(nb, w) });
  }
  for (const j of jobs.items) {
    const w = wlOf('Job', j);
    const pod = podsOf(j, (p) => (p.metadata.labels || {})['job-name'] === j.metadata.name)[0];
    rows.push({ kind: 'Job', o: j, w, pod, state: jobState(j, w) });
  }
  // bare Kueue pods (a pod with a queue label, no owner: examples/jobs/40-team-b-notebook.yaml)
  for (const p of pods.items) {
    const l = p.metadata.labels || {};
    if (!l['kueue.x-k8s.io/queue-name'] || (p.metadata.ownerReferences || []).length) continue;
    const w = wlOf('Pod', p);
    const phase = (p.status && p.status.phase) || 'Pending';
    const state =
      phase === 'Running' ? 'Running' : phase === 'Succeeded' ? 'Complete' : phase === 'Failed' ? 'Failed' : 'Queued';
    rows.push({ kind: 'Pod', o: p, w, pod: p, state });
  }
  rows.sort((a, b) =>
    `${a.o.metadata.namespace}/${a.o.metadata.name}`.localeCompare(
      `${b.o.metadata.namespace}/${b.o.metadata.name}`,
    ),
  );
  const base = (r) =>
    ({
      Job: `/apis/batch/v1/namespaces/${r.o.metadata.namespace}/jobs/${r.o.metadata.name}`,
      Pod: `/api/v1/namespaces/${r.o.metadata.namespace}/pods/${r.o.metadata.name}`,
      Workbench: `/apis/kubeflow.org/v1/namespaces/${r.o.metadata.namespace}/notebooks/${r.o.metadata.name}`,
    })[r.kind];
  const patch = (r, body) => api('PATCH', base(r), body, 'application/merge-patch+json');
  return (
    <PageSection>
      <Content component="h1">My workloads</Content>
      {error && <Alert variant="danger" isInline title={error} id="workloads-error" />}
      {[jobs, nbs, wls].map((l) => l.error && <Alert key={l.error.message} variant="warning" isInline title={l.error.message} />)}
      <Table aria-label="workloads" variant="compact" id="workloads">
        <Thead>
          <Tr>
            <Th>Name</Th>
            <Th>Kind</Th>
            <Th>Namespace</Th>
            <Th>State</Th>
            <Th>Queue</Th>
            <Th>Why it waits</Th>
            <Th>Actions</Th>
          </Tr>
        </Thead>
        <Tbody>
          {rows.map((r) => {
            const pos = r.w ? queuePosition(r.w, wls.items) : null;
            const stopped = r.state === 'Stopped';
            const md = r.o.metadata;
            return (
              <Tr key={`${r.kind}/${md.namespace}/${md.name}`} data-name={md.name}>
                <Td dataLabel="Name">{md.name}</Td>
                <Td dataLabel="Kind">{r.kind}</Td>
                <Td dataLabel="Namespace">{md.namespace}</Td>
                <Td dataLabel="State" className="fatia-state">
                  {stateLabel(r.state)}
                </Td>
                <Td dataLabel="Queue" className="fatia-position">
                  {(md.labels || {})['kueue.x-k8s.io/queue-name'] || (r.w && r.w.spec.queueName) || ''}
                  {pos ? ` (#${pos})` : ''}
                </Td>
                <Td dataLabel="Why it waits" className="fatia-why">
                  {pendingMessage(r.w)}
                </Td>
                <Td dataLabel="Actions">
                  {r.pod && (
                    <Button variant="link" isInline onClick={() => setLogs(r.pod)} className="fatia-logs">
                      Logs
                    </Button>
                  )}{' '}
                  {r.kind === 'Workbench' && r.state === 'Running' && origin && (
                    <form
                      method="post"
                      action={`${origin}/_fatia/login/${md.namespace}/${md.name}`}
                      target="_blank"
                      style={{ display: 'inline' }}
                    >
                      <input type="hidden" name="token" value={getToken()} />
                      <Button type="submit" variant="link" isInline className="fatia-open">
                        Open
                      </Button>
                    </form>
                  )}{' '}
                  {r.kind === 'Workbench' && (
                    <Button
                      variant="link"
                      isInline
                      className={stopped ? 'fatia-start' : 'fatia-stop'}
                      onClick={() =>
                        act(() =>
                          patch(r, {
                            metadata: {
                              annotations: {
                                'kubeflow-resource-stopped': stopped ? null : new Date().toISOString(),
                              },
                            },
                          }),
                        )
                      }
                    >
                      {stopped ? 'Start' : 'Stop'}
                    </Button>
                  )}
                  {r.kind === 'Job' && r.w && !['Complete', 'Failed'].includes(r.state) && (
                    <Button
                      variant="link"
                      isInline
                      className={r.w.spec.active === false ? 'fatia-start' : 'fatia-stop'}
                      onClick={() =>
                        act(() =>
                          api(
                            'PATCH',
                            `${paths.workloads(r.w.metadata.namespace)}/${r.w.metadata.name}`,
                            { spec: { active: r.w.spec.active === false } },
                            'application/merge-patch+json',
                          ),
                        )
                      }
                    >
                      {r.w.spec.active === false ? 'Start' : 'Stop'}
                    </Button>
                  )}{' '}
                  <Button
                    variant="link"
                    isDanger
                    isInline
                    className="fatia-delete"
                    onClick={() =>
                      act(() =>
                        api('DELETE', base(r), { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background' }),
                      )
                    }
                  >
                    Delete
                  </Button>
                </Td>
              </Tr>
            );
          })}
        </Tbody>
      </Table>
      {!rows.length && jobs.loaded && <Content component="p">Nothing yet: launch something from the catalog.</Content>}
      {logs && <Logs pod={logs} onClose={() => setLogs(null)} />}
    </PageSection>
  );
}

// The short form: a workbench (a kubeflow.org/v1 Notebook, as OpenShift AI's dashboard writes
// it) or a Job, from a profile: name, image, command. The profile annotations make fatiad inject
// the resources, queue and priority (docs/demand.md); the queue label is set here too, so the
// quota door sees it at once. A Job is created suspended: Kueue un-suspends it on admission.
import React, { useState } from 'react';
import {
  Alert,
  Button,
  Form,
  FormGroup,
  Modal,
  ModalBody,
  ModalFooter,
  ModalHeader,
  Radio,
  TextInput,
} from '@patternfly/react-core';
import { api } from '../api.js';

// the workbench image (scripts/images/workbench): its own command starts Jupyter on the pod's
// address under the proxy's prefix, as examples/workbench/lab.yaml runs it (no command given)
const WORKBENCH_IMAGE = 'fatia.dev/workbench:1';

export function manifest(kind, profile, ns, name, image, command) {
  const annotations = {
    'opendatahub.io/hardware-profile-name': profile.name,
    'opendatahub.io/hardware-profile-namespace': profile.namespace,
  };
  const labels = profile.queue ? { 'kueue.x-k8s.io/queue-name': profile.queue } : {};
  const container = { name, image };
  if (command.trim()) container.command = ['sh', '-c', command];
  if (kind === 'workbench') {
    return {
      apiVersion: 'kubeflow.org/v1',
      kind: 'Notebook',
      metadata: { name, namespace: ns, annotations, labels },
      spec: { template: { spec: { containers: [container] } } },
    };
  }
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace: ns, annotations, labels },
    spec: {
      suspend: true,
      backoffLimit: 0,
      template: { spec: { restartPolicy: 'Never', containers: [container] } },
    },
  };
}

export default function Launch({ profile, ns, onClose }) {
  const workbench = profile.visibility.includes('workbench') || !profile.visibility.length;
  const [kind, setKind] = useState(workbench ? 'workbench' : 'job');
  const [name, setName] = useState('');
  const [image, setImage] = useState('');
  const [command, setCommand] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    const img = image || (kind === 'workbench' ? WORKBENCH_IMAGE : 'fatia.dev/python3:1');
    const m = manifest(kind, profile, ns, name, img, command);
    const path =
      kind === 'workbench'
        ? `/apis/kubeflow.org/v1/namespaces/${ns}/notebooks`
        : `/apis/batch/v1/namespaces/${ns}/jobs`;
    try {
      await api('POST', path, m);
      onClose();
      window.location.hash = '#/workloads';
    } catch (err) {
      setError(err.message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal isOpen onClose={onClose} variant="small" aria-labelledby="launch-title">
      <ModalHeader title={`Launch: ${profile.displayName}`} labelId="launch-title" />
      <ModalBody>
        <Form id="launch-form" onSubmit={submit}>
          {error && <Alert variant="danger" isInline title={error} id="launch-error" />}
          <FormGroup role="radiogroup" label="What" fieldId="kind" isInline>
            <Radio
              id="kind-workbench"
              name="kind"
              label="Workbench (Jupyter)"
              isChecked={kind === 'workbench'}
              onChange={() => setKind('workbench')}
            />
            <Radio
              id="kind-job"
              name="kind"
              label="Job"
              isChecked={kind === 'job'}
              onChange={() => setKind('job')}
            />
          </FormGroup>
          <FormGroup label="Name" isRequired fieldId="launch-name">
            <TextInput id="launch-name" value={name} onChange={(_e, v) => setName(v)} isRequired />
          </FormGroup>
          <FormGroup label="Image" isRequired fieldId="launch-image">
            <TextInput
              id="launch-image"
              value={image || (kind === 'workbench' ? WORKBENCH_IMAGE : 'fatia.dev/python3:1')}
              onChange={(_e, v) => setImage(v)}
            />
          </FormGroup>
          <FormGroup
            label={kind === 'workbench' ? 'Command (default: the image\'s, Jupyter)' : 'Command (sh -c)'}
            fieldId="launch-command"
          >
            <TextInput id="launch-command" value={command} onChange={(_e, v) => setCommand(v)} />
          </FormGroup>
        </Form>
      </ModalBody>
      <ModalFooter>
        <Button
          type="submit"
          form="launch-form"
          id="launch-submit"
          isDisabled={!name || busy}
        >
          Launch in {ns}
        </Button>
        <Button variant="link" onClick={onClose}>
          Cancel
        </Button>
      </ModalFooter>
    </Modal>
  );
}

// Login: the user pastes a bearer token or a kubeconfig, or uploads a kubeconfig file (the
// token of its current context's user: kubeconfig.js), once; it is kept in this origin's storage
// until "Log out". The file is read in the page (FileReader); nothing is uploaded anywhere.
import React, { useState } from 'react';
import {
  ActionGroup,
  Alert,
  Button,
  Card,
  CardBody,
  CardTitle,
  Form,
  FormGroup,
  PageSection,
  TextArea,
  Content,
} from '@patternfly/react-core';
import { kubeconfigToken } from '../kubeconfig.js';

export function tokenFrom(text) {
  if (/^(users|contexts):/m.test(text)) {
    const k = kubeconfigToken(text);
    if (k.token) return k.token;
  }
  const m = text.match(/^\s*token:\s*"?([^"\s]+)"?\s*$/m);
  return (m ? m[1] : text).trim();
}

export default function Login({ onLogin, error }) {
  const [text, setText] = useState('');
  const [fileError, setFileError] = useState('');
  const upload = async (e) => {
    const f = e.target.files && e.target.files[0];
    if (!f) return;
    if (f.size > 1 << 20) {
      setFileError(`${f.name}: larger than 1 MiB, not a kubeconfig`);
      return;
    }
    const k = kubeconfigToken(await f.text());
    if (k.error) {
      setFileError(`${f.name}: ${k.error}`);
      return;
    }
    setFileError('');
    onLogin(k.token);
  };
  return (
    <PageSection>
      <Card style={{ maxWidth: 640, margin: '10vh auto' }}>
        <CardTitle>
          <Content component="h1">fatia: GPUs as a service</Content>
        </CardTitle>
        <CardBody>
          <Form
            onSubmit={(e) => {
              e.preventDefault();
              onLogin(tokenFrom(text));
            }}
          >
            {error && <Alert variant="danger" isInline title={error} id="login-error" />}
            {fileError && <Alert variant="danger" isInline title={fileError} id="kubeconfig-error" />}
            <FormGroup label="Your token, or your kubeconfig" fieldId="token">
              <TextArea
                id="token"
                value={text}
                onChange={(_e, v) => setText(v)}
                rows={4}
                placeholder="fatia token create --user alice --namespace team-a prints a kubeconfig"
              />
            </FormGroup>
            <FormGroup label="Or upload your kubeconfig file" fieldId="kubeconfig-file">
              <input id="kubeconfig-file" type="file" accept=".kubeconfig,.yaml,.yml,.conf,text/*" onChange={upload} />
            </FormGroup>
            <ActionGroup>
              <Button type="submit" id="login" isDisabled={!text.trim()}>
                Log in
              </Button>
            </ActionGroup>
          </Form>
        </CardBody>
      </Card>
    </PageSection>
  );
}

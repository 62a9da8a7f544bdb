// Login: the user pastes a bearer token (or a kubeconfig: its `token:` line is taken) once; it
// is kept in this origin's storage until "Log out".
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

export function tokenFrom(text) {
  const m = text.match(/^\s*token:\s*"?([^"\s]+)"?\s*$/m);
  return (m ? m[1] : text).trim();
}

export default function Login({ onLogin, error }) {
  const [text, setText] = useState('');
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
            <FormGroup label="Your token, or your kubeconfig" fieldId="token">
              <TextArea
                id="token"
                value={text}
                onChange={(_e, v) => setText(v)}
                rows={4}
                placeholder="fatia token create --user alice --namespace team-a prints a kubeconfig"
              />
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

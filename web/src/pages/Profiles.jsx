// Hardware profiles: the catalog's profiles with what they give, their queue and visibility;
// a platform admin enables or disables one (annotation opendatahub.io/disabled, as OpenShift
// AI's dashboard writes it); a tenant sees the switches read-only.
import React, { useState } from 'react';
import { Alert, Content, PageSection, Switch } from '@patternfly/react-core';
import { Table, Thead, Tr, Th, Tbody, Td } from '@patternfly/react-table';
import { api, paths, useList } from '../api.js';
import { CATALOG_NS, profileInfo } from '../profiles.js';

export default function Profiles({ me }) {
  const profiles = useList(me.admin ? paths.profiles() : paths.profiles(CATALOG_NS));
  const [error, setError] = useState(null);
  const toggle = async (p, enable) => {
    try {
      await api(
        'PATCH',
        `${paths.profiles(p.namespace)}/${p.name}`,
        { metadata: { annotations: { 'opendatahub.io/disabled': enable ? 'false' : 'true' } } },
        'application/merge-patch+json',
      );
      setError(null);
    } catch (e) {
      setError(e.message);
    }
  };
  const rows = profiles.items.map(profileInfo);
  rows.sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
  return (
    <PageSection>
      <Content component="h1">Hardware profiles</Content>
      {(error || profiles.error) && (
        <Alert variant="danger" isInline title={error || profiles.error.message} id="profiles-error" />
      )}
      <Table aria-label="hardware profiles" variant="compact" id="profiles">
        <Thead>
          <Tr>
            <Th>Profile</Th>
            <Th>Gives</Th>
            <Th>Queue</Th>
            <Th>Visible in</Th>
            <Th>Enabled</Th>
          </Tr>
        </Thead>
        <Tbody>
          {rows.map((p) => (
            <Tr key={`${p.namespace}/${p.name}`} data-profile={p.name}>
              <Td>
                <b>{p.displayName}</b>
                <br />
                <small>
                  {p.namespace}/{p.name}
                </small>
              </Td>
              <Td>
                {p.identifiers
                  .map((i) => `${i.displayName || i.identifier} ${i.defaultCount}`)
                  .join(', ')}
              </Td>
              <Td>
                {p.queue}
                {p.priorityClass && ` (${p.priorityClass})`}
              </Td>
              <Td>{p.visibility.join(', ')}</Td>
              <Td>
                <Switch
                  id={`enable-${p.name}`}
                  aria-label={`enable ${p.name}`}
                  isChecked={!p.disabled}
                  isDisabled={!me.admin}
                  onChange={(_e, v) => toggle(p, v)}
                />
              </Td>
            </Tr>
          ))}
        </Tbody>
      </Table>
    </PageSection>
  );
}

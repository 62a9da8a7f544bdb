// Hardware profiles: the catalog's profiles with what they give, their queue and visibility;
// a platform admin enables or disables one (annotation opendatahub.io/disabled, as OpenShift
// AI's dashboard writes it); a tenant sees the switches read-only. Below, for the platform
// admin, the GPUSharingPolicies that cut the fleet's GPUs into what the profiles ask for
// (sharing.js; cluster-scoped: a tenant's token may not list them, and the page says so).
import React, { useState } from 'react';
import { Alert, Content, PageSection, Switch } from '@patternfly/react-core';
import { Table, Thead, Tr, Th, Tbody, Td } from '@patternfly/react-table';
import { api, paths, useList } from '../api.js';
import { CATALOG_NS, profileInfo } from '../profiles.js';
import { policyInfo } from '../sharing.js';

function Policies({ me }) {
  const pols = useList(me.admin ? paths.sharingpolicies() : null);
  if (!me.admin)
    return <Content component="p" id="policies-tenant">Sharing policies are the platform admin's (cluster-scoped).</Content>;
  const rows = pols.items.map(policyInfo).sort((a, b) => a.name.localeCompare(b.name));
  return (
    <>
      {pols.error && <Alert variant="danger" isInline title={pols.error.message} />}
      <Table aria-label="sharing policies" variant="compact" id="policies">
        <Thead>
          <Tr>
            <Th>Policy</Th>
            <Th>Nodes</Th>
            <Th>GPUs</Th>
            <Th>How they are shared</Th>
          </Tr>
        </Thead>
        <Tbody>
          {rows.map((p) => (
            <Tr key={p.name} data-policy={p.name}>
              <Td>{p.name}</Td>
              <Td>{p.nodes}</Td>
              <Td>{p.gpus}</Td>
              <Td className="fatia-how">{p.how.join('; ')}</Td>
            </Tr>
          ))}
        </Tbody>
      </Table>
    </>
  );
}

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
      <Content component="h2">GPU sharing policies</Content>
      <Policies me={me} />
    </PageSection>
  );
}

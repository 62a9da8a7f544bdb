// The catalog: each enabled HardwareProfile as a card (what it gives, its queue, how long the
// queue is now in the chosen namespace), with "Launch" opening the short form (Launch.jsx).
import React, { useState } from 'react';
import {
  Alert,
  Button,
  Card,
  CardBody,
  CardFooter,
  CardTitle,
  DescriptionList,
  DescriptionListDescription,
  DescriptionListGroup,
  DescriptionListTerm,
  Gallery,
  Label,
  PageSection,
  Content,
} from '@patternfly/react-core';
import { paths, useList } from '../api.js';
import { CATALOG_NS, profileInfo } from '../profiles.js';
import Launch from './Launch.jsx';

export default function Catalog({ me, ns }) {
  const profiles = useList(paths.profiles(CATALOG_NS));
  // a tenant launches in its namespace; an admin in the one chosen (all namespaces: none)
  const target = ns;
  const lqs = useList(paths.localqueues(ns));
  const [launch, setLaunch] = useState(null);
  // the queue's length: its LocalQueue in the namespace, or all of that name (all namespaces)
  const lq = (name) => {
    const qs = lqs.items.filter((q) => q.metadata.name === name);
    if (!qs.length) return null;
    const sum = (f) => qs.reduce((a, q) => a + ((q.status && q.status[f]) || 0), 0);
    return { status: { pendingWorkloads: sum('pendingWorkloads'), admittedWorkloads: sum('admittedWorkloads') } };
  };
  const cards = profiles.items.map(profileInfo).filter((p) => !p.disabled);
  cards.sort((a, b) => a.displayName.localeCompare(b.displayName));
  return (
    <PageSection>
      <Content component="h1">Catalog</Content>
      <Content component="p">
        Pick a configuration; fatia fills in the GPUs, CPU, memory, queue and priority.
        {target ? ` Launching in namespace ${target}.` : ' Choose a namespace above to launch.'}
      </Content>
      {profiles.error && (
        <Alert variant="danger" isInline title={`Hardware profiles: ${profiles.error.message}`} />
      )}
      <Gallery hasGutter minWidths={{ default: '320px' }} id="catalog">
        {cards.map((p) => {
          const q = lq(p.queue);
          const st = (q && q.status) || {};
          return (
            <Card key={p.name} id={`profile-${p.name}`} className="fatia-profile">
              <CardTitle>{p.displayName}</CardTitle>
              <CardBody>
                <Content component="p">{p.description}</Content>
                <DescriptionList isCompact isHorizontal>
                  {p.identifiers.map((i) => (
                    <DescriptionListGroup key={i.identifier}>
                      <DescriptionListTerm>{i.displayName || i.identifier}</DescriptionListTerm>
                      <DescriptionListDescription>
                        {String(i.defaultCount)}
                        {(i.minCount !== undefined || i.maxCount !== undefined) &&
                          ` (${i.minCount ?? ''}-${i.maxCount ?? ''})`}
                      </DescriptionListDescription>
                    </DescriptionListGroup>
                  ))}
                  <DescriptionListGroup>
                    <DescriptionListTerm>Queue</DescriptionListTerm>
                    <DescriptionListDescription className="fatia-queue">
                      {p.queue || 'none'}
                      {p.priorityClass && `, priority ${p.priorityClass}`}
                    </DescriptionListDescription>
                  </DescriptionListGroup>
                  <DescriptionListGroup>
                    <DescriptionListTerm>Waiting now</DescriptionListTerm>
                    <DescriptionListDescription className="fatia-queue-length">
                      {q
                        ? `${st.pendingWorkloads || 0} pending, ${st.admittedWorkloads || 0} running`
                        : '-'}
                    </DescriptionListDescription>
                  </DescriptionListGroup>
                </DescriptionList>
              </CardBody>
              <CardFooter>
                {p.visibility.map((v) => (
                  <Label key={v} isCompact style={{ marginRight: 8 }}>
                    {v}
                  </Label>
                ))}
                <Button
                  variant="primary"
                  size="sm"
                  isDisabled={!target}
                  onClick={() => setLaunch(p)}
                  id={`launch-${p.name}`}
                >
                  Launch
                </Button>
              </CardFooter>
            </Card>
          );
        })}
      </Gallery>
      {launch && <Launch profile={launch} ns={target} onClose={() => setLaunch(null)} />}
    </PageSection>
  );
}

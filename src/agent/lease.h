/*
 * agent/lease.h: the node agent's heartbeat: one coordination.k8s.io/v1 Lease per Node it
 * serves, in namespace kube-node-lease, named as the Node, renewed every quarter of its
 * duration (the kubelet's 40 s / 10 s). The node-lifecycle controller judges a node by it
 * (controller/nodelifecycle.c, docs/fleet.md).
 */
#ifndef FATIA_AGENT_LEASE_H
#define FATIA_AGENT_LEASE_H

#include <stdint.h>

struct event_base;
struct fatia_client;
struct fatia_agent_lease;

/* nodes: comma-separated names, or NULL / "*" for every Node the API has (the all-in-one
 * agent serves every simulated node). duration_s: leaseDurationSeconds; 0: 40. Starts at once
 * (first renewal on the next loop turn). 0 or -ENOMEM. */
int fatia_agent_lease_new(struct event_base *base, struct fatia_client *client, const char *nodes,
                          int64_t duration_s, struct fatia_agent_lease **ret);

/* Stops renewing (writes in flight complete and are ignored). NULL is fine. */
void fatia_agent_lease_free(struct fatia_agent_lease *l);

#endif

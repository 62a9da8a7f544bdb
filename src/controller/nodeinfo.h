/*
 * controller/nodeinfo.h: Node.status.nodeInfo (core/v1 NodeSystemInfo) read from this host.
 */
#ifndef FATIA_CONTROLLER_NODEINFO_H
#define FATIA_CONTROLLER_NODEINFO_H

#include <jansson.h>

/* A new object with every NodeSystemInfo field (machineID, systemUUID, bootID, kernelVersion,
 * osImage, containerRuntimeVersion, kubeletVersion, kubeProxyVersion, operatingSystem,
 * architecture), each a string, "" where the host does not say; NULL when out of memory. */
json_t *fatia_ctlr_nodeinfo_json(void);

#endif

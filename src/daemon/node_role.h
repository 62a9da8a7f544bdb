/*
 * daemon/node_role.h: `fatiad --role node` (see node_role.c).
 */
#ifndef FATIA_DAEMON_NODE_ROLE_H
#define FATIA_DAEMON_NODE_ROLE_H

#include <stdint.h>

struct fatia_agent_opts;

struct fatia_node_role_opts {
    const char *data_dir;
    const char *server;     /* https://HOST:PORT of the control plane */
    const char *token_file; /* its first word is the node's bearer token */
    const char *ca;         /* the control plane's certificate; NULL: the system's CAs */
    const char *node_name;  /* NULL: the host name */
    int64_t lease_s;        /* the Lease's duration; 0: 40 */
    /* The node's endpoint for the control plane's streams (apiserver/nodeserve.h), served only
     * with ca (the certificate it accepts from its caller): NULL host: none. */
    const char *listen_host;
    uint16_t listen_port;
    bool listen_default; /* the port is the default's (10250): taken, any free one is used */
    const char *address; /* published in Node status.addresses (InternalIP); NULL: listen_host,
                            or when that is a wildcard the local address that reaches server */
    /* This host's GPUs, published in its Node's annotation fatia.dev/gpu-inventory for the
     * control plane's device controller: inventory "auto" (NULL: when NVML loads and finds a
     * GPU), "nvml" (NVML must answer: a start-up error otherwise) or "sim" (none published:
     * the NodePool's simulated GPUs); nvml_lib NULL: libnvidia-ml.so.1; catalog NULL: the
     * default GPU catalog. */
    const char *inventory, *nvml_lib, *catalog;
};

/* Runs until SIGTERM or SIGINT; the exit status (0, or 1 after a logged error). */
int fatia_node_role_run(const struct fatia_node_role_opts *o, struct fatia_agent_opts *ao);

#endif

/*
 * apiserver/nodeserve.h: a node's own HTTPS endpoint for its pods' streams (`fatiad --role
 * node`, see nodeserve.c), and what every pod stream needs (the loop and the node agent's
 * providers), shared with the API server's own handlers (logs.c, stream_exec.c,
 * stream_portforward.c).
 */
#ifndef FATIA_APISERVER_NODESERVE_H
#define FATIA_APISERVER_NODESERVE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "client/plugin.h"

struct event_base;

/* What a pod's log, exec, attach and port-forward streams need: the loop and the providers
 * (the node agent's: agent.h), each NULL when none serves it (the stream answers 503). */
struct fatia_api_streams {
    struct event_base *base;
    fatia_log_provider_fn log;
    void *log_arg;
    fatia_exec_provider_fn exec;
    void *exec_arg;
    fatia_portforward_provider_fn pf;
    void *pf_arg;
};

struct fatia_api_node_server;

struct fatia_api_node_server_opts {
    const char *host;       /* the address listened on */
    uint16_t port;          /* 0: any free port */
    const char *cert, *key; /* the serving pair (made by fatia_tls_ensure when missing) */
    const char *peers;      /* PEM: the only client certificates served (the control plane's) */
    struct fatia_api_streams streams;
    /* The pod ns/name as this node runs it (borrowed until the loop turns), or NULL. */
    const json_t *(*pod)(void *arg, const char *ns, const char *name);
    void *pod_arg;
};

/* Serves /api/v1/namespaces/NS/pods/NAME/{log,exec,attach,portforward} over HTTPS for the pods
 * o->pod knows, to a client presenting one of o->peers' certificates only. *ret_port gets the
 * port bound. 0, or a negative code with why set. */
int fatia_api_node_server_new(struct event_base *base, const struct fatia_api_node_server_opts *o,
                              struct fatia_api_node_server **ret, uint16_t *ret_port, char *why,
                              size_t why_n);
void fatia_api_node_server_free(struct fatia_api_node_server *s);

/* The annotation of its Node where a node publishes its serving certificate's SHA-256 (hex),
 * which the control plane's proxy requires of the node's endpoint (nodeproxy.c). */
#define FATIA_NODE_CERT_ANNOTATION "fatia.dev/serving-cert-sha256"

/* The serving certificate's SHA-256 in hex (64 digits and a NUL). */
void fatia_api_node_server_cert_sha256(const struct fatia_api_node_server *s, char hex[65]);

/* The SHA-256 of x (an X509 *) in hex. 0 or -ENOMEM. */
int fatia_api_cert_sha256(const void *x, char hex[65]);

#endif

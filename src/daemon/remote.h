/*
 * daemon/remote.h: a client of client/client.h over HTTPS to a control plane's API (`fatiad
 * --role node`): the node agent runs unchanged against it (see remote.c).
 */
#ifndef FATIA_DAEMON_REMOTE_H
#define FATIA_DAEMON_REMOTE_H

struct event_base;
struct fatia_client;

struct fatia_remote_opts {
    const char *server; /* https://HOST:PORT */
    const char *token;  /* the bearer token (a node's: fatia token create --node) */
    const char *ca;     /* the server's certificate or CA (PEM); NULL: the system's */
    const char *node;   /* the node served: its pods' Secrets, ConfigMaps and PVCs are fetched
                           by name (NULL: none are) */
};

/* A client on base. Its cache (cached, cached_each) holds Nodes and ResourceSlices, filled by a
 * list and watch of each once it starts, and (cached only) the Secrets, ConfigMaps, PVCs and
 * their PVs that the pods bound to o->node name, each fetched by name while a pod names it.
 * token_request is served (a POST to the control plane's TokenRequest subresource).
 * 0, or a negative code (why says). */
int fatia_remote_client_new(struct event_base *base, const struct fatia_remote_opts *o,
                            struct fatia_client **ret, char *why, size_t why_n);

#endif

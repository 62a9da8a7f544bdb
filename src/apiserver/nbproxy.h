/*
 * apiserver/nbproxy.h: the workbench proxy: fatiad's reverse proxy to each Notebook's Jupyter, on
 * an origin of its own (its own port), apart from the API and the dashboard
 * (docs/selfservice.md, "The Jupyter proxy").
 *
 *   POST /_fatia/login/<ns>/<name>   a bearer token (Authorization header, or the form field
 *                                    token) that may write in <ns>, for an existing Notebook:
 *                                    303 to /notebook/<ns>/<name>/ with the HttpOnly, Secure,
 *                                    SameSite=Strict cookie fatia-nb (a random session id, never
 *                                    the token) whose Path is that notebook's prefix
 *   GET  /_fatia/login/<ns>/<name>   a form to paste the token into
 *   *    /notebook/<ns>/<name>/...   with the session cookie of that notebook: forwarded to its
 *                                    Jupyter's unix socket (HTTP, and WebSocket after an Upgrade)
 *                                    without the session cookie and without Authorization
 */
#ifndef FATIA_APISERVER_NBPROXY_H
#define FATIA_APISERVER_NBPROXY_H

#include <sys/socket.h>
#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"

struct event_base;
struct fatia_apiserver;
struct fatia_client;
struct fatia_nbproxy;

/* Where workbench ns/name's Jupyter listens, in *ret_addr (*ret_len bytes): the unix socket in
 * its home (the process mode), with in *ret_uid the uid its server must run as (checked with
 * SO_PEERCRED after connecting), or its pod's own address in a container (AF_INET, *ret_uid
 * (uid_t)-1: no peer check; agent/nbaddr.c). 0 or a negative code (-ENOENT: no such home). */
typedef int (*fatia_nbproxy_upstream_fn)(void *arg, const char *ns, const char *name,
                                         struct sockaddr_storage *ret_addr, socklen_t *ret_len,
                                         uid_t *ret_uid);

struct fatia_nbproxy_opts {
    void *tls_ctx; /* an SSL_CTX (tls.h); NULL: plain HTTP (the cookie is then not Secure) */
    fatia_nbproxy_upstream_fn upstream;
    void *arg;
    fatia_usec_t session_ttl; /* 0: 12 h */
};

/* A proxy whose logins are checked against api's tokens and whose Notebooks are looked up in
 * client's cache (both borrowed, outliving the proxy). 0 or -ENOMEM. */
int fatia_api_nbproxy_new(struct event_base *base, struct fatia_apiserver *api,
                          struct fatia_client *client, const struct fatia_nbproxy_opts *opts,
                          struct fatia_nbproxy **ret);
/* Listens on host:port (0: a free port, in *ret_port). 0 or -errno. */
int fatia_api_nbproxy_listen(struct fatia_nbproxy *p, const char *host, uint16_t port,
                             uint16_t *ret_port);
/* Closes the listener and every connection. NULL is fine. */
void fatia_api_nbproxy_free(struct fatia_nbproxy *p);

#endif

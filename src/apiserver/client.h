/*
 * apiserver/client.h: the in-process implementation of the client interface (client/client.h).
 *
 * fatia_client_new_local calls the API server's operations directly: each call builds the same
 * operation context an HTTP request would (user, kind, namespace, name, subresource) and runs
 * the same operation, so a client acting as a user gets that user's authorization, the same
 * admission chain, store and errors, with no HTTP and no JSON re-encoding. The daemon makes one
 * and hands it to the controllers and the node agent, which know only client/client.h.
 */
#ifndef FATIA_APISERVER_CLIENT_H
#define FATIA_APISERVER_CLIENT_H

#include "apiserver/apiserver.h"
#include "client/client.h"

/* The in-process client of server s acting as user u (borrowed; &fatia_user_system for
 * fatiad's own controllers). NULL on OOM. */
struct fatia_client *fatia_client_new_local(struct fatia_apiserver *s, const struct fatia_user *u);
/* The same, for a leader's controllers: every write is fenced (fatia_apiserver_set_fence). */
struct fatia_client *fatia_client_new_local_fenced(struct fatia_apiserver *s,
                                                   const struct fatia_user *u);

#endif

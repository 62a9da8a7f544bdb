/*
 * store/etcd_client.h: a minimal etcd v3 client over etcd's JSON gateway (libcurl), for the
 * store's etcd backend (etcd.c). Private to src/store.
 *
 * One connection = one libcurl easy handle (HTTP/1.1 keep-alive) and a list of endpoints; it
 * belongs to one thread at a time (the store's owner, then its writer thread). Calls are
 * one-shot POSTs of a JSON body to a /v3/... path; the reply is parsed with jansson.
 */
#ifndef FATIA_STORE_ETCD_CLIENT_H
#define FATIA_STORE_ETCD_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

struct fatia_store_etcdc;

struct fatia_store_etcdc_opts {
    const char *endpoints; /* "http://127.0.0.1:2379,https://h2:2379" */
    const char *cafile;    /* TLS: the CA that signed the members' certificates, or NULL */
    const char *certfile;  /* TLS client certificate and key, or NULL */
    const char *keyfile;
    long timeout_ms; /* per request; 0 = 10 s */
};

int fatia_store_etcdc_new(const struct fatia_store_etcdc_opts *o, struct fatia_store_etcdc **ret,
                          char *why, size_t why_n);
void fatia_store_etcdc_free(struct fatia_store_etcdc *c);

/* POSTs body (a JSON text) to path on the current endpoint; on a connection that could not be
 * made, tries the next endpoint (each once). *ret_reply: the reply parsed (the caller decrefs).
 * Returns 0; -ENOSPC (etcd's NOSPACE alarm, gRPC code 8), -FATIA_E_GONE (compacted, code 11),
 * -EFBIG (request too large / too many ops, code 3), -ECONNREFUSED (no endpoint reachable: the
 * request was not sent), -EIO (sent, outcome unknown: timeout or a broken connection; or any
 * other error, logged). *ret_unsure is set when the request may have been applied: sent
 * without an answer, or refused by etcd with a code that does not exclude it (a timed-out
 * proposal, a leader change). */
int fatia_store_etcdc_call(struct fatia_store_etcdc *c, const char *path, const char *body,
                           size_t body_len, json_t **ret_reply, bool *ret_unsure);

/* The endpoint in use ("http://127.0.0.1:2379"), for messages. */
const char *fatia_store_etcdc_endpoint(const struct fatia_store_etcdc *c);

/* base64 (RFC 4648, padded) as etcd's gateway writes bytes fields. */
int fatia_store_etcdc_b64(struct fatia_buf *out, const void *data, size_t n);
/* Decodes s (NUL-terminated) onto out, followed by a NUL not counted in out->len. -EINVAL. */
int fatia_store_etcdc_unb64(struct fatia_buf *out, const char *s);

/* A uint64 that the gateway writes as a JSON string ("123") or a number; 0 when absent. */
uint64_t fatia_store_etcdc_u64(const json_t *obj, const char *key);

#endif

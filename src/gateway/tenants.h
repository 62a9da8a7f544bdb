/*
 * gateway/tenants.h: per-tenant API keys and request rates for the gateway.
 *
 * A keys file maps bearer keys to tenants, one `KEY TENANT` per line (blank lines and lines
 * starting with '#' are skipped); a tenant may hold several keys. With a keys file, every request
 * but /health must carry `Authorization: Bearer KEY` with a key of the file (401 otherwise), the
 * tenant is counted in the gateway's /metrics, and with a rate each tenant gets a token bucket
 * of that many requests per second (burst: one second's worth, at least one): a request over it
 * is 429. The key is not forwarded to the model server.
 *
 * Keys are compared in constant time against every key of the file (no early exit), so the time
 * of a refusal does not tell how much of a guess was right. Keys have at least 16 characters
 * (visible ASCII); tenant names are label-safe ([A-Za-z0-9._-], 1 to 63), since they become
 * Prometheus label values.
 */
#ifndef FATIA_GATEWAY_TENANTS_H
#define FATIA_GATEWAY_TENANTS_H

#include "base/compat.h"

#include "base/backoff.h"
#include "base/clock.h"
#include "base/str.h"

#define FATIA_GATEWAY_TENANT_KEY_MIN 16

struct fatia_gateway_tenant {
    char name[64];
    struct fatia_ratelimit rl; /* the bucket (base/backoff.h), set up at the first request */
    uint64_t requests;         /* admitted */
    uint64_t limited;          /* refused by the rate */
};

struct fatia_gateway_tenants {
    struct fatia_gateway_tenant *v;
    size_t n;
    char **keys; /* keys[i] belongs to tenant key_tenant[i] */
    size_t *key_tenant;
    size_t n_keys;
    double rate; /* requests per second per tenant; 0 = unlimited */
};

/* Reads the keys file. 0, or -EINVAL / -errno with why naming path:line. */
int fatia_gateway_tenants_load(const char *path, double rate, struct fatia_gateway_tenants **ret,
                               char *why, size_t why_n);
void fatia_gateway_tenants_free(struct fatia_gateway_tenants *t);

/* The tenant of an Authorization header value ("Bearer KEY"): 0 and *ret_tenant, or -EACCES
 * (no key, a malformed header or an unknown key). */
int fatia_gateway_tenants_auth(const struct fatia_gateway_tenants *t,
                               const struct fatia_str *authorization, size_t *ret_tenant);

/* Takes one request from the tenant's bucket at time now (monotonic). true: admitted (counted);
 * false: over the rate (counted as limited). */
bool fatia_gateway_tenants_admit(struct fatia_gateway_tenants *t, size_t tenant, fatia_usec_t now);

#endif

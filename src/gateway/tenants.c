/*
 * gateway/tenants.c: per-tenant API keys and token buckets (see tenants.h).
 *
 * The file is read once at start (a changed file needs a restart: rejected, a reload on every
 * request, for its cost; a watched reload is future work). Lookup is a scan of every key with a
 * constant-time comparison: a gateway has tens of tenants, not millions, and a hash table would
 * make the time of a miss depend on the guess. The bucket is base's rate limit (base/backoff.h),
 * the one the agent and the work queues use, refilled lazily from the monotonic
 * clock the caller passes, so this file reads no clock itself.
 */
#include "base/compat.h"

#include "gateway/tenants.h"

#include "base/alloc.h"
#include "base/error.h"

static bool name_ok(const char *s, size_t n)
{
    if (n == 0 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

static bool key_ok(const char *s, size_t n)
{
    if (n < FATIA_GATEWAY_TENANT_KEY_MIN || n > 512)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
            return false;
    return true;
}

/* Constant time in the length of a (the stored key), whatever b is. */
static bool key_eq(const char *a, const char *b, size_t bn)
{
    size_t an = strlen(a);
    unsigned diff = an != bn;

    for (size_t i = 0; i < an; i++)
        diff |= (unsigned char)a[i] ^ (unsigned char)(i < bn ? b[i] : 0);
    return diff == 0;
}

static int find_or_add_tenant(struct fatia_gateway_tenants *t, const char *name, size_t n,
                              size_t *ret)
{
    struct fatia_gateway_tenant *v;

    for (size_t i = 0; i < t->n; i++) {
        if (strlen(t->v[i].name) == n && !memcmp(t->v[i].name, name, n)) {
            *ret = i;
            return 0;
        }
    }
    v = fatia_reallocarray(t->v, t->n + 1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    t->v = v;
    memset(&v[t->n], 0, sizeof(v[t->n]));
    memcpy(v[t->n].name, name, n);
    *ret = t->n++;
    return 0;
}

static int add_key(struct fatia_gateway_tenants *t, const char *key, size_t kn, size_t tenant)
{
    char **keys = fatia_reallocarray(t->keys, t->n_keys + 1, sizeof(*keys));
    size_t *kt;

    if (!keys)
        return -ENOMEM;
    t->keys = keys;
    kt = fatia_reallocarray(t->key_tenant, t->n_keys + 1, sizeof(*kt));
    if (!kt)
        return -ENOMEM;
    t->key_tenant = kt;
    keys[t->n_keys] = fatia_strndup(key, kn);
    if (!keys[t->n_keys])
        return -ENOMEM;
    kt[t->n_keys++] = tenant;
    return 0;
}

int fatia_gateway_tenants_load(const char *path, double rate, struct fatia_gateway_tenants **ret,
                               char *why, size_t why_n)
{
    struct fatia_gateway_tenants *t = fatia_calloc(1, sizeof(*t));
    FILE *f = NULL;
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t len;
    int r = 0;

    if (!t)
        return -ENOMEM;
    t->rate = rate;
    f = fopen(path, "re");
    if (!f) {
        r = -errno;
        snprintf(why, why_n, "%s: %s", path, fatia_strerror(r));
        goto out;
    }
    while ((len = getline(&line, &cap, f)) >= 0) {
        char *p = line, *k, *nm;
        size_t kn, nn, tenant;
        lineno++;
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p || *p == '#')
            continue;
        k = p;
        kn = strcspn(k, " \t");
        nm = k + kn;
        nm += strspn(nm, " \t");
        nn = strcspn(nm, " \t");
        if (!kn || !nn || nm[nn + strspn(nm + nn, " \t")]) {
            snprintf(why, why_n, "%s:%zu: expected KEY TENANT", path, lineno);
            r = -EINVAL;
            goto out;
        }
        if (!key_ok(k, kn)) {
            snprintf(why, why_n, "%s:%zu: the key must be %d to 512 visible ASCII characters", path,
                     lineno, FATIA_GATEWAY_TENANT_KEY_MIN);
            r = -EINVAL;
            goto out;
        }
        if (!name_ok(nm, nn)) {
            snprintf(why, why_n, "%s:%zu: tenant '%.*s': expected 1 to 63 of [A-Za-z0-9._-]", path,
                     lineno, (int)FATIA_MIN(nn, (size_t)80), nm);
            r = -EINVAL;
            goto out;
        }
        for (size_t i = 0; i < t->n_keys; i++) {
            if (strlen(t->keys[i]) == kn && !memcmp(t->keys[i], k, kn)) {
                snprintf(why, why_n, "%s:%zu: this key is already given", path, lineno);
                r = -EINVAL;
                goto out;
            }
        }
        if ((r = find_or_add_tenant(t, nm, nn, &tenant)) < 0 ||
            (r = add_key(t, k, kn, tenant)) < 0) {
            snprintf(why, why_n, "%s: out of memory", path);
            goto out;
        }
    }
    if (!t->n_keys) {
        snprintf(why, why_n, "%s: no keys", path);
        r = -EINVAL;
    }
out:
    if (f)
        fclose(f);
    fatia_free(line);
    if (r < 0) {
        fatia_gateway_tenants_free(t);
        return r;
    }
    *ret = t;
    return 0;
}

void fatia_gateway_tenants_free(struct fatia_gateway_tenants *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_keys; i++) {
        explicit_bzero(t->keys[i], strlen(t->keys[i]));
        fatia_free(t->keys[i]);
    }
    fatia_free(t->keys);
    fatia_free(t->key_tenant);
    fatia_free(t->v);
    fatia_free(t);
}

int fatia_gateway_tenants_auth(const struct fatia_gateway_tenants *t,
                               const struct fatia_str *authorization, size_t *ret_tenant)
{
    const char *key;
    size_t kn, found = SIZE_MAX;

    if (!authorization || authorization->n < 8 || strncasecmp(authorization->p, "Bearer ", 7))
        return -EACCES;
    key = authorization->p + 7;
    kn = authorization->n - 7;
    while (kn && *key == ' ')
        key++, kn--;
    if (!kn)
        return -EACCES;
    /* every key compared, none skipped: the time does not depend on which one matched */
    for (size_t i = 0; i < t->n_keys; i++)
        if (key_eq(t->keys[i], key, kn))
            found = t->key_tenant[i];
    if (found == SIZE_MAX)
        return -EACCES;
    *ret_tenant = found;
    return 0;
}

bool fatia_gateway_tenants_admit(struct fatia_gateway_tenants *t, size_t tenant, fatia_usec_t now)
{
    struct fatia_gateway_tenant *x = &t->v[tenant];

    if (t->rate > 0) {
        if (x->rl.per_sec != t->rate) /* full at the first request */
            x->rl =
                (struct fatia_ratelimit){.per_sec = t->rate, .burst = t->rate > 1 ? t->rate : 1};
        if (!fatia_ratelimit_take(&x->rl, now, NULL)) {
            x->limited++;
            return false;
        }
    }
    x->requests++;
    return true;
}

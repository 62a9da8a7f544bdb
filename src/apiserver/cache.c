/*
 * apiserver/cache.c: object versions and the per-kind sorted tables (see internal.h).
 *
 * Tables are sorted vectors of entry pointers: lookup is a binary search, insertion and removal
 * a memmove of pointers (10,000 entries move in microseconds), and a range of one namespace is
 * two binary searches, which is what lists, paging and namespace deletion need. A balanced tree
 * would make inserts O(log n) at the cost of pointer chasing on every list; lists dominate.
 */
#include "base/compat.h"

#include <sys/random.h>

#include <event2/buffer.h>

#include "apiserver/internal.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"

/* Reals with 15 significant digits read back as the decimal a person wrote (0.1, not
 * 0.10000000000000001); quantities in manifests are such decimals. */
#define DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

char *fatia_api_json_dump_compact(const json_t *v, size_t *ret_len)
{
    struct fatia_buf b;
    char *s;

    fatia_buf_init(&b, 0);
    if (fatia_json_dump_buf(v, &b, DUMP_FLAGS) < 0) {
        fatia_buf_release(&b);
        return NULL;
    }
    if (ret_len)
        *ret_len = b.len;
    if (b.cap == 0) {
        s = fatia_strdup("");
        return s;
    }
    s = fatia_buf_steal(&b);
    return s;
}

static int evbuf_dump_cb(const char *s, size_t n, void *data)
{
    return evbuffer_add(data, s, n);
}

int fatia_api_evbuffer_add_json(struct evbuffer *out, const json_t *v)
{
    return json_dump_callback(v, evbuf_dump_cb, out, DUMP_FLAGS) < 0 ? -ENOMEM : 0;
}

struct objver *fatia_api_objver_new(json_t *tree, uint64_t rv)
{
    struct objver *v = fatia_calloc(1, sizeof(*v));
    json_t *meta = json_object_get(tree, "metadata");
    char rvs[24];

    if (!v || !json_is_object(meta))
        goto out_fail;
    if (rv) {
        snprintf(rvs, sizeof(rvs), "%" PRIu64, rv);
        if (json_object_set_new(meta, "resourceVersion", json_string(rvs)) < 0)
            goto out_fail;
    }
    {
        /* ",{...}": the leading comma lets a list reference the text of every item after the
         * first without a separate one-byte piece (read.c) */
        struct fatia_buf b;
        fatia_buf_init(&b, 0);
        if (fatia_buf_putc(&b, ',') < 0 || fatia_json_dump_buf(tree, &b, DUMP_FLAGS) < 0) {
            fatia_buf_release(&b);
            goto out_fail;
        }
        v->len = b.len - 1;
        v->text = fatia_buf_steal(&b);
        if (!v->text)
            goto out_fail;
        v->text++;
    }
    v->refs = 1;
    v->rv = rv;
    v->tree = tree;
    return v;

out_fail:
    fatia_free(v);
    json_decref(tree);
    return NULL;
}

int fatia_api_objver_set_rv(struct objver *v, uint64_t rv)
{
    json_t *meta = json_object_get(v->tree, "metadata");
    struct fatia_buf b;
    char rvs[24];

    snprintf(rvs, sizeof(rvs), "%" PRIu64, rv);
    if (!json_is_object(meta) || json_object_set_new(meta, "resourceVersion", json_string(rvs)))
        return -ENOMEM;
    fatia_buf_init(&b, 0);
    if (fatia_buf_putc(&b, ',') < 0 || fatia_json_dump_buf(v->tree, &b, DUMP_FLAGS) < 0) {
        fatia_buf_release(&b);
        return -ENOMEM;
    }
    fatia_free(v->text - 1);
    v->len = b.len - 1;
    v->text = fatia_buf_steal(&b) + 1;
    v->rv = rv;
    return 0;
}

struct objver *fatia_api_objver_ref(struct objver *v)
{
    if (v)
        v->refs++;
    return v;
}

void fatia_api_objver_unref(struct objver *v)
{
    if (!v || --v->refs)
        return;
    json_decref(v->tree);
    fatia_free(v->text - 1);
    fatia_free(v);
}

void fatia_api_entry_key(const struct rtable *t, const char *ns, const char *name, char *buf,
                         size_t n)
{
    if (t->kind->namespaced)
        snprintf(buf, n, "%s/%s", ns ? ns : "", name);
    else
        snprintf(buf, n, "%s", name);
}

/* Index of the first entry whose key is >= key (or > key when strict). */
static size_t lower_bound(const struct rtable *t, const char *key, bool strict)
{
    size_t lo = 0, hi = t->entries.n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(t->entries.v[mid]->key, key);
        if (c < 0 || (strict && c == 0))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

struct entry *fatia_api_rtable_find(const struct rtable *t, const char *key)
{
    size_t i = lower_bound(t, key, false);

    if (i < t->entries.n && !strcmp(t->entries.v[i]->key, key))
        return t->entries.v[i];
    return NULL;
}

size_t fatia_api_rtable_upper_bound(const struct rtable *t, const char *after)
{
    return lower_bound(t, after, true);
}

struct entry *fatia_api_rtable_get_or_add(struct rtable *t, const char *ns, const char *name)
{
    char key[512];
    struct entry *e;
    size_t i, nslen;

    fatia_api_entry_key(t, ns, name, key, sizeof(key));
    i = lower_bound(t, key, false);
    if (i < t->entries.n && !strcmp(t->entries.v[i]->key, key))
        return t->entries.v[i];
    if (FATIA_VEC_RESERVE(&t->entries, t->entries.n + 1) < 0)
        return NULL;
    e = fatia_calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    /* key storage: "ns/name\0ns\0" (namespaced) or "name\0" */
    nslen = t->kind->namespaced && ns ? strlen(ns) : 0;
    e->key = fatia_malloc(strlen(key) + 1 + nslen + 1);
    if (!e->key) {
        fatia_free(e);
        return NULL;
    }
    memcpy(e->key, key, strlen(key) + 1);
    if (t->kind->namespaced) {
        char *nsp = e->key + strlen(key) + 1;
        memcpy(nsp, ns ? ns : "", nslen + 1);
        e->ns = nsp;
        e->name = e->key + nslen + 1;
    } else {
        e->ns = "";
        e->name = e->key;
    }
    memmove(&t->entries.v[i + 1], &t->entries.v[i], (t->entries.n - i) * sizeof(e));
    t->entries.v[i] = e;
    t->entries.n++;
    return e;
}

void fatia_api_rtable_maybe_remove(struct rtable *t, struct entry *e)
{
    size_t i;

    if (e->committed || e->latest || e->pending)
        return;
    i = lower_bound(t, e->key, false);
    FATIA_ASSERT(i < t->entries.n && t->entries.v[i] == e);
    memmove(&t->entries.v[i], &t->entries.v[i + 1], (t->entries.n - i - 1) * sizeof(e));
    t->entries.n--;
    fatia_free(e->key);
    fatia_free(e);
}

void fatia_api_rtable_range(const struct rtable *t, const char *ns, size_t *lo, size_t *hi)
{
    char lo_key[80], hi_key[80];

    if (!ns || !t->kind->namespaced) {
        *lo = 0;
        *hi = t->entries.n;
        return;
    }
    /* "ns/" .. "ns0": '0' is the byte after '/'. By hand, not snprintf: a create counts its
     * namespace's objects over every kind (fatia_api_ns_objects), and the two snprintf calls per
     * kind were 4 % of its instructions (docs/perf-create.md). */
    size_t n = strnlen(ns, sizeof(lo_key) - 2);
    memcpy(lo_key, ns, n);
    memcpy(hi_key, ns, n);
    lo_key[n] = '/';
    hi_key[n] = '0';
    lo_key[n + 1] = hi_key[n + 1] = '\0';
    *lo = lower_bound(t, lo_key, false);
    *hi = lower_bound(t, hi_key, false);
}

enum fatia_api_ns_budget fatia_api_kind_budget(const struct fatia_kind *k)
{
    if (!k->namespaced)
        return FATIA_API_NS_BUDGET_NONE;
    if (!strcmp(k->kind, "Event") && (!k->group[0] || !strcmp(k->group, "events.k8s.io")))
        return FATIA_API_NS_BUDGET_EVENTS;
    if (!strcmp(k->kind, "UsageRecord") && !strcmp(k->group, "fatia.dev"))
        return FATIA_API_NS_BUDGET_NONE;
    return FATIA_API_NS_BUDGET_OBJECTS;
}

size_t fatia_api_ns_objects(const struct fatia_apiserver *s, const char *ns,
                            enum fatia_api_ns_budget budget)
{
    size_t n = 0, lo, hi;

    for (size_t i = 0; i < s->n_tables; i++) {
        if (s->tables[i].ns_budget != budget)
            continue;
        fatia_api_rtable_range(&s->tables[i], ns, &lo, &hi);
        n += hi - lo;
    }
    return n;
}

static void getrandom_all(void *buf, size_t n)
{
    size_t got = 0;

    while (got < n) {
        ssize_t r = getrandom((char *)buf + got, n - got, 0);
        if (r < 0) {
            FATIA_ASSERT(errno == EINTR);
            continue;
        }
        got += (size_t)r;
    }
}

/* The kernel's bytes, taken 512 at a time (per thread): one getrandom(2) per 32 uids instead of
 * one each (two per create, with the audit ID). */
static void random_bytes(void *buf, size_t n)
{
    static _Thread_local unsigned char pool[512];
    static _Thread_local size_t left;

    if (n > sizeof(pool)) {
        getrandom_all(buf, n);
        return;
    }
    if (left < n) {
        getrandom_all(pool, sizeof(pool));
        left = sizeof(pool);
    }
    memcpy(buf, pool + sizeof(pool) - left, n);
    memset(pool + sizeof(pool) - left, 0, n); /* handed out once */
    left -= n;
}

void fatia_api_random_uid(char out[37])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char b[16];

    random_bytes(b, sizeof(b));
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* variant 10 */
    /* by hand: snprintf's 16 conversions were a visible share of a create (docs/perf-create.md) */
    for (size_t i = 0, o = 0; i < sizeof(b); i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hex[b[i] >> 4];
        out[o++] = hex[b[i] & 0x0f];
    }
    out[36] = '\0';
}

void fatia_api_random_suffix(char out[6])
{
    /* upstream's alphabet: no vowels (no words), no confusable 0/1/3 */
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    unsigned char b[5];

    random_bytes(b, sizeof(b));
    for (int i = 0; i < 5; i++)
        out[i] = alphabet[b[i] % (sizeof(alphabet) - 1)];
    out[5] = '\0';
}

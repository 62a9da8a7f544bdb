/*
 * apiserver/read.c: get and list from the cache, selectors, paging, served versions.
 *
 * A list walks the kind's sorted entries (one namespace's range, or all), keeps the committed
 * versions that match the label and field selectors, and writes their stored JSON text between
 * a list header and footer: no object is parsed or re-encoded unless the client asked for an
 * older served version or for a Table.
 *
 * Field selectors: upstream allows a few fields per kind (metadata.name, metadata.namespace,
 * spec.nodeName, status.phase, involvedObject.*, ...). Here any dotted path of the object is
 * allowed: a missing field compares as "", numbers and booleans by their JSON text. Operators
 * =, == and !=; values escape ',', '=' and '\' with a backslash, as upstream's parser does.
 *
 * Paging: limit=N answers at most N items and a continue token (base64url of "1:RV:KEY", KEY
 * the last key answered); the next page starts after KEY in the current state. Unlike etcd
 * snapshots, a later page reflects writes made meanwhile (documented in docs/apiserver.md).
 */
#include "base/compat.h"

#include <event2/buffer.h>

#include "apiserver/internal.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"

/* ---- field selectors ---- */

struct fieldreq {
    char *path;
    char *value;
    bool neg;
};

struct fieldsel {
    struct fieldreq *v;
    size_t n;
};

static void fatia_api_fieldsel_free(struct fieldsel *f);
static int fatia_api_fieldsel_parse(const char *s, struct fieldsel **ret, char *why, size_t why_n);
static bool fatia_api_fieldsel_match(const struct fieldsel *f, const json_t *obj);

static void fatia_api_fieldsel_free(struct fieldsel *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n; i++) {
        fatia_free(f->v[i].path);
        fatia_free(f->v[i].value);
    }
    fatia_free(f->v);
    fatia_free(f);
}

/* Reads up to an unescaped stop character; unescapes into a new string. */
static char *read_term(const char **pp, const char *stops)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    const char *p = *pp;

    fatia_buf_init(&b, 4096);
    for (; *p && !strchr(stops, *p); p++) {
        if (*p == '\\' && p[1])
            p++;
        if (fatia_buf_putc(&b, *p) < 0) {
            fatia_buf_release(&b);
            return NULL;
        }
    }
    *pp = p;
    if (b.cap == 0)
        return fatia_strdup("");
    return fatia_buf_steal(&b);
}

static int fatia_api_fieldsel_parse(const char *s, struct fieldsel **ret, char *why, size_t why_n)
{
    struct fieldsel *f = fatia_calloc(1, sizeof(*f));
    const char *p = s;
    int r = -EINVAL;

    if (!f)
        return -ENOMEM;
    while (*p) {
        struct fieldreq q = {0};
        char *k;
        if (f->n == 32) {
            snprintf(why, why_n, "too many field selector requirements");
            goto out_free;
        }
        k = read_term(&p, "=!,");
        if (!k) {
            r = -ENOMEM;
            goto out_free;
        }
        /* trim spaces around the key */
        while (*k == ' ') {
            memmove(k, k + 1, strlen(k));
        }
        for (size_t n = strlen(k); n && k[n - 1] == ' '; n--)
            k[n - 1] = '\0';
        q.path = k;
        if (p[0] == '!' && p[1] == '=') {
            q.neg = true;
            p += 2;
        } else if (p[0] == '=' && p[1] == '=') {
            p += 2;
        } else if (p[0] == '=') {
            p += 1;
        } else {
            snprintf(why, why_n, "invalid selector: '%s'; can't understand '%s'", s, k);
            fatia_free(k);
            goto out_free;
        }
        if (!*k) {
            snprintf(why, why_n, "invalid field selector: '%s': empty field name", s);
            fatia_free(k);
            goto out_free;
        }
        q.value = read_term(&p, ",");
        if (!q.value) {
            fatia_free(k);
            r = -ENOMEM;
            goto out_free;
        }
        struct fieldreq *nv = fatia_reallocarray(f->v, f->n + 1, sizeof(*nv));
        if (!nv) {
            fatia_free(q.path);
            fatia_free(q.value);
            r = -ENOMEM;
            goto out_free;
        }
        f->v = nv;
        f->v[f->n++] = q;
        if (*p == ',')
            p++;
    }
    *ret = f;
    return 0;

out_free:
    fatia_api_fieldsel_free(f);
    return r;
}

static bool fatia_api_fieldsel_match(const struct fieldsel *f, const json_t *obj)
{
    for (size_t i = 0; f && i < f->n; i++) {
        const json_t *v = fatia_json_path(obj, f->v[i].path);
        char num[64];
        const char *text = "";
        bool eq;
        if (json_is_string(v))
            text = json_string_value(v);
        else if (json_is_true(v))
            text = "true";
        else if (json_is_false(v))
            text = "false";
        else if (json_is_number(v) && fatia_json_number_text(v, num, sizeof(num)) == 0)
            text = num;
        eq = !strcmp(text, f->v[i].value);
        if (eq == f->v[i].neg)
            return false;
    }
    return true;
}

bool fatia_api_fieldsel_name(const char *s, char *buf, size_t n)
{
    struct fieldsel *f = NULL;
    char why[256];
    bool found = false;

    if (!s || !*s || fatia_api_fieldsel_parse(s, &f, why, sizeof(why)) < 0)
        return false;
    for (size_t i = 0; i < f->n && !found; i++) {
        if (f->v[i].neg || strcmp(f->v[i].path, "metadata.name") || !f->v[i].value[0])
            continue;
        found = strlen(f->v[i].value) < n;
        if (found)
            snprintf(buf, n, "%s", f->v[i].value);
    }
    fatia_api_fieldsel_free(f);
    return found;
}

void fatia_api_filter_release(struct filter *f)
{
    fatia_selector_free(f->labels);
    fatia_api_fieldsel_free(f->fields);
    f->labels = NULL;
    f->fields = NULL;
}

bool fatia_api_filter_match(const struct filter *f, const json_t *obj)
{
    if (f->labels && !fatia_selector_matches(
                         f->labels, json_object_get(json_object_get(obj, "metadata"), "labels")))
        return false;
    return fatia_api_fieldsel_match(f->fields, obj);
}

int fatia_api_filter_from_query(struct filter *f, const struct fatia_api_query *q, struct opres *r)
{
    char why[256] = "";
    int rc;

    memset(f, 0, sizeof(*f));
    if (q->label_selector && *q->label_selector) {
        rc = fatia_selector_parse(q->label_selector, &f->labels, why, sizeof(why));
        if (rc < 0) {
            if (rc == -ENOMEM)
                fatia_api_opres_from_errno(r, rc, "label selector");
            else
                fatia_api_opres_fail(r, 400, "BadRequest", "unable to parse requirement: %s", why);
            return rc;
        }
    }
    if (q->field_selector && *q->field_selector) {
        rc = fatia_api_fieldsel_parse(q->field_selector, &f->fields, why, sizeof(why));
        if (rc < 0) {
            fatia_api_filter_release(f);
            if (rc == -ENOMEM)
                fatia_api_opres_from_errno(r, rc, "field selector");
            else
                fatia_api_opres_fail(r, 400, "BadRequest", "%s", why);
            return rc;
        }
    }
    return 0;
}

/* ---- served versions ---- */

json_t *fatia_api_served_tree(const struct rtable *t, const struct fatia_kind_version *ver,
                              const struct objver *v)
{
    json_t *copy;
    char av[160];

    if (!ver)
        return json_incref(v->tree);
    copy = json_deep_copy(v->tree);
    if (!copy)
        return NULL;
    if (ver->from_storage)
        ver->from_storage(copy);
    snprintf(av, sizeof(av), "%s%s%s", t->kind->group, t->kind->group[0] ? "/" : "", ver->version);
    json_object_set_new(copy, "apiVersion", json_string(av));
    return copy;
}

int fatia_api_render_object(const struct rtable *t, const struct fatia_kind_version *ver,
                            const struct objver *v, struct evbuffer *out)
{
    json_t *tree;
    int r;

    if (!ver)
        return evbuffer_add(out, v->text, v->len) < 0 ? -ENOMEM : 0;
    tree = fatia_api_served_tree(t, ver, v);
    if (!tree)
        return -ENOMEM;
    r = fatia_api_evbuffer_add_json(out, tree);
    json_decref(tree);
    return r;
}

static void unref_cb(const void *data, size_t len, void *arg)
{
    (void)data;
    (void)len;
    fatia_api_objver_unref(arg);
}

int fatia_api_render_item(const struct rtable *t, const struct fatia_kind_version *ver,
                          struct objver *v, bool first, struct evbuffer *out)
{
    if (ver) {
        if (!first && evbuffer_add(out, ",", 1) < 0)
            return -ENOMEM;
        return fatia_api_render_object(t, ver, v, out);
    }
    fatia_api_objver_ref(v);
    if (evbuffer_add_reference(out, first ? v->text : v->text - 1, v->len + !first, unref_cb, v) <
        0) {
        fatia_api_objver_unref(v);
        return -ENOMEM;
    }
    return 0;
}

/* ---- continue tokens ---- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void b64_encode(const unsigned char *in, size_t n, char *out)
{
    size_t j = 0;

    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[j++] = b64[(v >> 18) & 63];
        out[j++] = b64[(v >> 12) & 63];
        if (i + 1 < n)
            out[j++] = b64[(v >> 6) & 63];
        if (i + 2 < n)
            out[j++] = b64[v & 63];
    }
    out[j] = '\0';
}

static int b64_decode(const char *in, unsigned char *out, size_t max, size_t *ret_n)
{
    uint32_t acc = 0;
    int bits = 0;
    size_t n = 0;

    for (; *in; in++) {
        const char *p = strchr(b64, *in);
        if (!p || *in == '\0')
            return -EINVAL;
        acc = (acc << 6) | (uint32_t)(p - b64);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (n == max)
                return -EINVAL;
            out[n++] = (unsigned char)(acc >> bits);
        }
    }
    *ret_n = n;
    return 0;
}

/* Decodes a continue token into the key to start after. */
static int continue_decode(const char *tok, char *key, size_t key_n)
{
    unsigned char raw[600];
    size_t n;
    char *colon;

    if (strlen(tok) > 790 || b64_decode(tok, raw, sizeof(raw) - 1, &n) < 0)
        return -EINVAL;
    raw[n] = '\0';
    if (memchr(raw, '\0', n) || strncmp((char *)raw, "1:", 2))
        return -EINVAL;
    colon = strchr((char *)raw + 2, ':');
    if (!colon || (size_t)(n - (size_t)((unsigned char *)colon + 1 - raw)) >= key_n)
        return -EINVAL;
    snprintf(key, key_n, "%s", colon + 1);
    return 0;
}

static void continue_encode(uint64_t rv, const char *key, char *out, size_t out_n)
{
    char raw[600];
    int n = snprintf(raw, sizeof(raw), "1:%" PRIu64 ":%s", rv, key);

    if (n < 0 || (size_t)n >= sizeof(raw) || (size_t)n * 4 / 3 + 4 >= out_n) {
        out[0] = '\0';
        return;
    }
    b64_encode((unsigned char *)raw, (size_t)n, out);
}

/* ---- list ---- */

int fatia_api_op_list(const struct opctx *c, const struct fatia_api_query *q, bool table,
                      struct evbuffer *out, struct opres *r)
{
    const struct rtable *t = c->t;
    struct filter f;
    size_t lo, hi, i, count = 0;
    char after[512] = "", av[160], tok[900] = "", rvs[24];
    struct entry *last = NULL;
    fatia_usec_t now = fatia_now_real_usec();
    bool more = false;
    size_t remaining = 0;
    struct evbuffer *items;

    if (fatia_api_authorize_collection(c, "list", q, r) < 0)
        return -FATIA_E_FORBIDDEN;
    if (q->continue_token && continue_decode(q->continue_token, after, sizeof(after)) < 0) {
        fatia_api_opres_fail(r, 400, "BadRequest", "continue key is not valid");
        return -EINVAL;
    }
    if (fatia_api_filter_from_query(&f, q, r) < 0)
        return -EINVAL;
    fatia_api_rtable_range(t, c->ns, &lo, &hi);
    if (after[0]) {
        size_t ub = fatia_api_rtable_upper_bound(t, after);
        lo = ub > lo ? ub : lo;
    }
    if (c->ver)
        snprintf(av, sizeof(av), "%s%s%s", t->kind->group, t->kind->group[0] ? "/" : "",
                 c->ver->version);
    else
        fatia_kind_api_version(t->kind, av, sizeof(av));
    snprintf(rvs, sizeof(rvs), "%" PRIu64, c->s->rv_committed);

    items = evbuffer_new();
    if (!items) {
        fatia_api_filter_release(&f);
        fatia_api_opres_from_errno(r, -ENOMEM, "list");
        return -ENOMEM;
    }
    for (i = lo; i < hi; i++) {
        struct entry *e = t->entries.v[i];
        if (!e->committed || !fatia_api_filter_match(&f, e->committed->tree))
            continue;
        if (q->limit > 0 && count == (size_t)q->limit) {
            more = true;
            break;
        }
        if (table) {
            json_t *row = fatia_api_table_row(t, c->ver, e->committed, q->include_object, now);
            if (count)
                evbuffer_add(items, ",", 1);
            fatia_api_evbuffer_add_json(items, row);
            json_decref(row);
        } else {
            fatia_api_render_item(t, c->ver, e->committed, count == 0, items);
        }
        count++;
        last = e;
    }
    if (more) {
        continue_encode(c->s->rv_committed, last->key, tok, sizeof(tok));
        if (!f.labels && !f.fields)
            for (; i < hi; i++)
                remaining += t->entries.v[i]->committed != NULL;
    }
    fatia_api_filter_release(&f);
    if (table)
        evbuffer_add_printf(out, "{\"kind\":\"Table\",\"apiVersion\":\"meta.k8s.io/v1\",");
    else
        evbuffer_add_printf(out, "{\"kind\":\"%sList\",\"apiVersion\":\"%s\",", t->kind->kind, av);
    evbuffer_add_printf(out, "\"metadata\":{\"resourceVersion\":\"%s\"", rvs);
    if (more) {
        evbuffer_add_printf(out, ",\"continue\":\"%s\"", tok);
        if (remaining)
            evbuffer_add_printf(out, ",\"remainingItemCount\":%zu", remaining);
    }
    evbuffer_add_printf(out, "}");
    if (table) {
        json_t *cols = fatia_api_table_columns(t->kind);
        evbuffer_add_printf(out, ",\"columnDefinitions\":");
        fatia_api_evbuffer_add_json(out, cols);
        json_decref(cols);
        evbuffer_add_printf(out, ",\"rows\":[");
    } else {
        evbuffer_add_printf(out, ",\"items\":[");
    }
    evbuffer_add_buffer(out, items);
    evbuffer_free(items);
    evbuffer_add(out, "]}", 2);
    return 0;
}

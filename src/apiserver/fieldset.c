/*
 * apiserver/fieldset.c: field sets and the apply merge (see fieldset.h).
 *
 * Model: structured-merge-diff's, restricted to what fatia's types say. A value's type is found
 * by walking the schema table and the strategic-merge table side by side from the kind's root;
 * where both are silent the value is deduced (objects granular, lists atomic). Every function
 * walks at most FATIA_DOC_MAX_DEPTH levels (bodies are limited to 64 before they get here).
 *
 * Invariants: field sets are normalized (a node is {} = member leaf, or has children and "."
 * when it is a member itself); a function never modifies its const inputs; no walk is quadratic
 * in the length of a list: list items are found through an index by key (struct lidx), since
 * every write runs these walks on the loop and a body may carry lists of 10,000 items (a Pod
 * with 9,000 env vars reversed by a PUT took 11 s before, about 1 s now, most of it the rest of
 * the write path). A list whose items lack their key or name one key twice is owned and merged
 * whole (atomic).
 *
 * Rejected: a C struct tree for field sets. The stored form (FieldsV1) is JSON; converting at
 * every write would cost more than the set operations themselves on objects of tens of fields.
 */
#include "base/compat.h"

#include "apiserver/fieldset.h"

#include "apiserver/patch.h"
#include "base/buf.h"
#include "base/error.h"
#include "base/json.h"
#include "base/map.h"
#include "model/doc.h"
#include "model/schema.h"

#define MAX_DEPTH (FATIA_DOC_MAX_DEPTH + 8)

static const char *const system_meta[] = {"name",
                                          "namespace",
                                          "uid",
                                          "resourceVersion",
                                          "generation",
                                          "creationTimestamp",
                                          "deletionTimestamp",
                                          "deletionGracePeriodSeconds",
                                          "managedFields",
                                          "selfLink",
                                          NULL};

struct fatia_api_fs_type fatia_api_fs_root(const struct fatia_kind *k)
{
    return (struct fatia_api_fs_type){.s = k ? k->schema : NULL, .smp = fatia_patch_smp_root(k)};
}

/* The type of member name of a value of type t. */
static struct fatia_api_fs_type child_type(const struct fatia_api_fs_type *t, const char *name)
{
    struct fatia_api_fs_type c = {0};
    struct fatia_smp_info info;
    const struct fatia_schema *s = NULL;

    if (t->s && t->s->type == FATIA_T_OBJECT) {
        for (const struct fatia_field *f = t->s->fields; f && f->name; f++)
            if (!strcmp(f->name, name)) {
                s = f->schema;
                break;
            }
    } else if (t->s && t->s->type == FATIA_T_MAP) {
        s = t->s->items;
    }
    if (s && s->type == FATIA_T_ANY)
        s = NULL;
    fatia_patch_smp_child(t->smp, name, &info);
    c.smp = info.fields;
    c.s = s;
    if (s && s->type == FATIA_T_ARRAY && s->list_key) {
        c.list = FATIA_FS_MAP;
        c.key = s->list_key;
    } else if (info.merge_key) {
        c.list = FATIA_FS_MAP;
        c.key = info.merge_key;
    } else if (info.merge_set) {
        c.list = FATIA_FS_SET;
    }
    c.map = !s || s->type == FATIA_T_MAP;
    return c;
}

/* The type of the items of a list of type t. */
static struct fatia_api_fs_type item_type(const struct fatia_api_fs_type *t)
{
    const struct fatia_schema *s = t->s && t->s->type == FATIA_T_ARRAY ? t->s->items : NULL;

    if (s && s->type == FATIA_T_ANY)
        s = NULL;
    return (struct fatia_api_fs_type){.s = s, .smp = t->smp, .map = false};
}

/* "k:{\"name\":\"a\"}" for item of a map list keyed by key; false when the item lacks it. */
static bool item_key(const json_t *item, const char *key, struct fatia_buf *out)
{
    const json_t *kv = json_object_get(item, key);
    char *text;

    if (!kv || json_is_null(kv))
        return false;
    text = json_dumps(kv, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
    if (!text)
        return false;
    fatia_buf_reset(out);
    fatia_buf_printf(out, "k:{\"%s\":%s}", key, text);
    free(text);
    return true;
}

static bool value_key(const json_t *item, struct fatia_buf *out)
{
    char *text = json_dumps(item, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);

    if (!text)
        return false;
    fatia_buf_reset(out);
    fatia_buf_printf(out, "v:%s", text);
    free(text);
    return true;
}

/* An index of a list's items by their field set key ("k:{...}" / "v:..."): lookups in O(1), so
 * that no walk is quadratic in the length of a list (a body may hold lists of 10,000 items). */
struct lidx {
    struct fatia_strmap map; /* key -> index + 1 */
    char **keys;             /* the map's keys (it borrows them) */
    size_t n;
};

static void lidx_build(struct lidx *ix, const json_t *arr, const struct fatia_api_fs_type *t)
{
    struct fatia_buf key;
    size_t i;
    json_t *it;

    fatia_strmap_init(&ix->map);
    ix->n = 0;
    ix->keys = calloc(json_array_size(arr) * 2 + 1, sizeof(char *));
    if (!ix->keys)
        return;
    fatia_buf_init(&key, 0);
    json_array_foreach(arr, i, it)
    {
        bool ok = t->list == FATIA_FS_MAP ? item_key(it, t->key, &key) : value_key(it, &key);
        char *k;
        if (!ok || fatia_strmap_has(&ix->map, key.p))
            continue; /* the first of duplicates, as the linear scan found it */
        k = strdup(key.p);
        if (!k)
            continue;
        if (fatia_strmap_put(&ix->map, k, (void *)(uintptr_t)(i + 1)) < 0) {
            free(k);
            continue;
        }
        ix->keys[ix->n++] = k;
    }
    fatia_buf_release(&key);
}

static void lidx_release(struct lidx *ix)
{
    fatia_strmap_release(&ix->map);
    for (size_t i = 0; i < ix->n; i++)
        free(ix->keys[i]);
    free(ix->keys);
}

/* The canonical form of a field set key of a list item (a key written by a client may space or
 * order its JSON otherwise); NULL when it is not one. */
static char *canonical_key(const char *k)
{
    json_t *v;
    char *text, *out;

    if (strncmp(k, "k:", 2) && strncmp(k, "v:", 2))
        return NULL;
    v = json_loads(k + 2, JSON_DECODE_ANY, NULL);
    if (!v)
        return NULL;
    text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
    json_decref(v);
    if (!text)
        return NULL;
    out = malloc(strlen(text) + 3);
    if (out)
        snprintf(out, strlen(text) + 3, "%c:%s", k[0], text);
    free(text);
    return out;
}

/* The index of the item of the indexed list named by fs key k; -1 when absent. */
static ssize_t lidx_find(const struct lidx *ix, const char *k)
{
    void *v = fatia_strmap_get(&ix->map, k);
    char *c;

    if (v)
        return (ssize_t)((uintptr_t)v - 1);
    c = canonical_key(k);
    if (!c)
        return -1;
    v = fatia_strmap_get(&ix->map, c);
    free(c);
    return v ? (ssize_t)((uintptr_t)v - 1) : -1;
}

/* Adds key -> i (a copy of key); false on OOM. */
static bool lidx_put(struct lidx *ix, const char *key, size_t i, size_t cap)
{
    char *k;

    if (ix->n >= cap)
        return false;
    k = strdup(key);
    if (!k)
        return false;
    if (fatia_strmap_put(&ix->map, k, (void *)(uintptr_t)(i + 1)) < 0) {
        free(k);
        return false;
    }
    ix->keys[ix->n++] = k;
    return true;
}

/* The index of list arr as field set key fk names its items ("k:{\"name\":..}": a map list
 * keyed by name; "v:..": a set). false when fk names no list item. */
static bool lidx_for(struct lidx *ix, const json_t *arr, const char *fk)
{
    struct fatia_api_fs_type t = {0};
    json_t *want;

    if (!json_is_array(arr))
        return false;
    if (!strncmp(fk, "v:", 2)) {
        t.list = FATIA_FS_SET;
        lidx_build(ix, arr, &t);
        return true;
    }
    if (strncmp(fk, "k:", 2))
        return false;
    want = json_loads(fk + 2, 0, NULL);
    if (!json_is_object(want) || json_object_size(want) != 1) {
        json_decref(want);
        return false;
    }
    t.list = FATIA_FS_MAP;
    t.key = json_object_iter_key(json_object_iter(want));
    lidx_build(ix, arr, &t);
    json_decref(want);
    return true;
}

/* The first key of fs naming a list item, or NULL. */
static const char *first_item_key(const json_t *fs)
{
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)fs, k,
                        v) if (!strncmp(k, "k:", 2) || !strncmp(k, "v:", 2)) return k;
    return NULL;
}

/* The child of v named by fs key k: a member ("f:"), or a list item found through ix (have:
 * ix was built for v). *idx: the item's index, -1 for members. */
static json_t *child_of(const json_t *v, const char *k, const struct lidx *ix, bool have,
                        ssize_t *idx)
{
    *idx = -1;
    if (!strncmp(k, "f:", 2))
        return json_is_object(v) ? json_object_get(v, k + 2) : NULL;
    if (!have)
        return NULL;
    *idx = lidx_find(ix, k);
    return *idx >= 0 ? json_array_get(v, (size_t)*idx) : NULL;
}

/* Is every item of list v keyed (a map list can be walked by key)? */
static bool all_keyed(const json_t *v, const char *key)
{
    size_t i;
    json_t *it;

    json_array_foreach(v, i, it) if (!json_is_object(it) || !json_object_get(it, key)) return false;
    return true;
}

/* Is list v walked item by item (a map list whose items all carry their key, or a set), with no
 * item named twice? Otherwise it is owned and merged whole, as an atomic list. */
static bool granular_list(const json_t *v, const struct fatia_api_fs_type *t)
{
    struct lidx ix;
    bool ok;

    if (!json_is_array(v) || t->list == FATIA_FS_ATOMIC)
        return false;
    if (t->list == FATIA_FS_MAP && !all_keyed(v, t->key))
        return false;
    lidx_build(&ix, v, t);
    ok = ix.keys && ix.n == json_array_size(v);
    lidx_release(&ix);
    return ok;
}

static void add_value(json_t *node, const json_t *v, const struct fatia_api_fs_type *t, int depth,
                      bool leaves);

static void add_members(json_t *node, const json_t *v, const struct fatia_api_fs_type *t, int depth,
                        const char *const *skip, bool leaves)
{
    const char *k;
    json_t *m;
    struct fatia_buf key;

    fatia_buf_init(&key, 0);
    json_object_foreach((json_t *)v, k, m)
    {
        bool skipped = false;
        for (const char *const *s = skip; s && *s; s++)
            skipped |= !strcmp(*s, k);
        if (skipped)
            continue;
        struct fatia_api_fs_type ct = child_type(t, k);
        json_t *cn = json_object();
        add_value(cn, m, &ct, depth + 1, leaves);
        fatia_buf_reset(&key);
        fatia_buf_printf(&key, "f:%s", k);
        json_object_set_new(node, key.p, cn);
    }
    fatia_buf_release(&key);
}

static void add_value(json_t *node, const json_t *v, const struct fatia_api_fs_type *t, int depth,
                      bool leaves)
{
    struct fatia_buf key;
    size_t i;
    json_t *it;

    if (depth > MAX_DEPTH)
        return;
    if (json_is_object(v) && json_object_size(v)) {
        if (t->map && !leaves)
            json_object_set_new(node, ".", json_object());
        add_members(node, v, t, depth, NULL, leaves);
        return;
    }
    if (!json_array_size(v) || !granular_list(v, t))
        return; /* a leaf (an atomic list, an item without its key, a key twice): node stays {} */
    fatia_buf_init(&key, 0);
    struct fatia_api_fs_type it_t = item_type(t);
    json_array_foreach(v, i, it)
    {
        bool ok = t->list == FATIA_FS_MAP ? item_key(it, t->key, &key) : value_key(it, &key);
        if (!ok)
            continue;
        json_t *cn = json_object();
        if (t->list == FATIA_FS_MAP) {
            json_object_set_new(cn, ".", json_object());
            add_members(cn, it, &it_t, depth + 1, NULL, leaves);
        }
        json_object_set_new(node, key.p, cn);
    }
    fatia_buf_release(&key);
}

json_t *fatia_api_fs_of(const json_t *obj, const struct fatia_kind *k, enum fatia_api_fs_part part,
                        bool leaves)
{
    struct fatia_api_fs_type root = fatia_api_fs_root(k);
    json_t *fs = json_object();
    const char *key;
    json_t *m;

    if (!json_is_object(obj))
        return fs;
    json_object_foreach((json_t *)obj, key, m)
    {
        struct fatia_api_fs_type ct;
        json_t *cn;
        char fk[300];
        if (!strcmp(key, "apiVersion") || !strcmp(key, "kind"))
            continue;
        bool is_status = !strcmp(key, "status");
        if (part == FATIA_FS_STATUS ? !is_status : (is_status && k && k->has_status))
            continue;
        ct = child_type(&root, key);
        cn = json_object();
        if (!strcmp(key, "metadata") && json_is_object(m))
            add_members(cn, m, &ct, 1, system_meta, leaves);
        else
            add_value(cn, m, &ct, 1, leaves);
        if (!strcmp(key, "metadata") && !json_object_size(cn)) {
            json_decref(cn); /* nothing but system metadata: not a field of anyone's */
            continue;
        }
        snprintf(fk, sizeof(fk), "f:%s", key);
        json_object_set_new(fs, fk, cn);
    }
    return fs;
}

/* ---- set operations ---- */

static bool is_member(const json_t *n)
{
    return n && (json_object_size(n) == 0 || json_object_get(n, "."));
}

static json_t *combine(const json_t *a, const json_t *b, enum fatia_api_fs_op op, int depth)
{
    bool ma = is_member(a), mb = is_member(b), m;
    json_t *out = json_object();
    const char *k;
    json_t *v;

    m = op == FATIA_FS_UNION ? (ma || mb) : op == FATIA_FS_DIFF ? (ma && !mb) : (ma && mb);
    if (depth < MAX_DEPTH) {
        json_object_foreach((json_t *)a, k, v)
        {
            if (!strcmp(k, "."))
                continue;
            json_t *c = combine(v, json_object_get(b, k), op, depth + 1);
            if (c)
                json_object_set_new(out, k, c);
        }
        if (op == FATIA_FS_UNION) {
            json_object_foreach((json_t *)b, k, v)
            {
                if (!strcmp(k, ".") || json_object_get(a, k))
                    continue;
                json_t *c = combine(NULL, v, op, depth + 1);
                if (c)
                    json_object_set_new(out, k, c);
            }
        }
    }
    if (!json_object_size(out)) {
        if (m)
            return out;
        json_decref(out);
        return NULL;
    }
    if (m)
        json_object_set_new(out, ".", json_object());
    return out;
}

json_t *fatia_api_fs_combine(const json_t *a, const json_t *b, enum fatia_api_fs_op op)
{
    json_t *r = NULL;
    const char *k;
    json_t *v;

    /* the root is never a member itself */
    r = json_object();
    json_object_foreach((json_t *)a, k, v)
    {
        json_t *c = combine(v, json_object_get(b, k), op, 1);
        if (c)
            json_object_set_new(r, k, c);
    }
    if (op == FATIA_FS_UNION) {
        json_object_foreach((json_t *)b, k, v)
        {
            if (json_object_get(a, k))
                continue;
            json_t *c = combine(NULL, v, op, 1);
            if (c)
                json_object_set_new(r, k, c);
        }
    }
    return r;
}

bool fatia_api_fs_empty(const json_t *fs)
{
    return !json_object_size(fs);
}

/* ---- values at paths ---- */

/* The child of value v named by field set key k ("f:", "k:", "v:"); NULL when absent. *index
 * gets an array index (-1 for members). */
static json_t *child_value(const json_t *v, const char *k, ssize_t *index)
{
    *index = -1;
    if (!strncmp(k, "f:", 2))
        return json_is_object(v) ? json_object_get(v, k + 2) : NULL;
    if (!json_is_array(v))
        return NULL;
    if (!strncmp(k, "k:", 2)) {
        json_t *want = json_loads(k + 2, 0, NULL);
        const char *wk = NULL;
        json_t *wv = NULL, *it;
        size_t i;
        if (!json_is_object(want) || json_object_size(want) != 1) {
            json_decref(want);
            return NULL;
        }
        wk = json_object_iter_key(json_object_iter(want));
        wv = json_object_get(want, wk);
        json_array_foreach(v, i, it)
        {
            if (fatia_json_equal(json_object_get(it, wk), wv)) {
                json_decref(want);
                *index = (ssize_t)i;
                return it;
            }
        }
        json_decref(want);
        return NULL;
    }
    if (!strncmp(k, "v:", 2)) {
        json_t *want = json_loads(k + 2, JSON_DECODE_ANY, NULL), *it;
        size_t i;
        json_array_foreach(v, i, it)
        {
            if (fatia_json_equal(it, want)) {
                json_decref(want);
                *index = (ssize_t)i;
                return it;
            }
        }
        json_decref(want);
    }
    return NULL;
}

static json_t *changed(const json_t *fs, const json_t *a, const json_t *b, int depth)
{
    json_t *out = json_object();
    bool m = false;
    const char *k;
    json_t *v;

    if (!json_object_size(fs))
        m = !fatia_json_equal(a, b);
    else if (json_object_get(fs, "."))
        m = !a != !b;
    if (depth < MAX_DEPTH) {
        const char *lk = first_item_key(fs);
        struct lidx ia = {0}, ib = {0};
        bool ha = lk && lidx_for(&ia, a, lk), hb = lk && lidx_for(&ib, b, lk);
        json_object_foreach((json_t *)fs, k, v)
        {
            ssize_t xa, xb;
            if (!strcmp(k, "."))
                continue;
            json_t *c =
                changed(v, child_of(a, k, &ia, ha, &xa), child_of(b, k, &ib, hb, &xb), depth + 1);
            if (c)
                json_object_set_new(out, k, c);
        }
        if (ha)
            lidx_release(&ia);
        if (hb)
            lidx_release(&ib);
    }
    if (!json_object_size(out)) {
        if (m)
            return out;
        json_decref(out);
        return NULL;
    }
    if (m)
        json_object_set_new(out, ".", json_object());
    return out;
}

json_t *fatia_api_fs_changed(const json_t *fs, const json_t *a, const json_t *b,
                             const struct fatia_kind *k)
{
    json_t *r = json_object();
    const char *key;
    json_t *v;

    (void)k;
    json_object_foreach((json_t *)fs, key, v)
    {
        ssize_t ia, ib;
        json_t *c = changed(v, child_value(a, key, &ia), child_value(b, key, &ib), 1);
        if (c)
            json_object_set_new(r, key, c);
    }
    return r;
}

/* ---- the diff of an update ---- */

/* The set of a whole value v of type t, as a member node (what appears or goes). */
static json_t *whole(const json_t *v, const struct fatia_api_fs_type *t, int depth)
{
    json_t *n = json_object();

    add_value(n, v, t, depth, false);
    return n;
}

static void put(json_t *parent, const char *key, json_t *child)
{
    if (child)
        json_object_set_new(parent, key, child);
}

static bool granular_object(const json_t *a, const json_t *b)
{
    return json_is_object(a) && json_is_object(b) && json_object_size(a) && json_object_size(b);
}

/* a and b differ (both present). *chg / *rem: nodes for this path, or NULL for nothing. */
static void diff(const json_t *a, const json_t *b, const struct fatia_api_fs_type *t, int depth,
                 json_t **chg, json_t **rem)
{
    struct fatia_buf key;
    const char *k;
    json_t *v, *c = json_object(), *r = json_object();
    size_t i;

    *chg = *rem = NULL;
    if (depth > MAX_DEPTH)
        goto leaf;
    if (granular_object(a, b)) {
        fatia_buf_init(&key, 0);
        json_object_foreach((json_t *)b, k, v)
        {
            const json_t *av = json_object_get(a, k);
            struct fatia_api_fs_type ct;
            json_t *cc, *rr;
            if (av && fatia_json_equal(av, v))
                continue;
            ct = child_type(t, k);
            fatia_buf_reset(&key);
            fatia_buf_printf(&key, "f:%s", k);
            if (!av) {
                put(c, key.p, whole(v, &ct, depth + 1));
                continue;
            }
            diff(av, v, &ct, depth + 1, &cc, &rr);
            put(c, key.p, cc);
            put(r, key.p, rr);
        }
        json_object_foreach((json_t *)a, k, v)
        {
            if (json_object_get(b, k))
                continue;
            struct fatia_api_fs_type ct = child_type(t, k);
            fatia_buf_reset(&key);
            fatia_buf_printf(&key, "f:%s", k);
            put(r, key.p, whole(v, &ct, depth + 1));
        }
        fatia_buf_release(&key);
        goto out;
    }
    if (json_array_size(a) && json_array_size(b) && granular_list(a, t) && granular_list(b, t)) {
        struct fatia_api_fs_type it_t = item_type(t);
        struct lidx ia, ib;
        json_t *it;
        lidx_build(&ia, a, t);
        lidx_build(&ib, b, t);
        fatia_buf_init(&key, 0);
        json_array_foreach(b, i, it)
        {
            bool ok = t->list == FATIA_FS_MAP ? item_key(it, t->key, &key) : value_key(it, &key);
            ssize_t idx = ok ? lidx_find(&ia, key.p) : -1;
            const json_t *av = idx >= 0 ? json_array_get(a, (size_t)idx) : NULL;
            json_t *cc, *rr;
            if (!ok || lidx_find(&ib, key.p) != (ssize_t)i)
                continue; /* a duplicate: its first occurrence speaks for it */
            if (av && fatia_json_equal(av, it))
                continue;
            if (!av) {
                json_t *n = json_object();
                if (t->list == FATIA_FS_MAP) {
                    json_object_set_new(n, ".", json_object());
                    add_members(n, it, &it_t, depth + 1, NULL, false);
                }
                put(c, key.p, n);
                continue;
            }
            diff(av, it, &it_t, depth + 1, &cc, &rr);
            put(c, key.p, cc);
            put(r, key.p, rr);
        }
        json_array_foreach(a, i, it)
        {
            bool ok = t->list == FATIA_FS_MAP ? item_key(it, t->key, &key) : value_key(it, &key);
            if (!ok || lidx_find(&ib, key.p) >= 0 || lidx_find(&ia, key.p) != (ssize_t)i)
                continue;
            json_t *n = json_object();
            if (t->list == FATIA_FS_MAP) {
                json_object_set_new(n, ".", json_object());
                add_members(n, it, &it_t, depth + 1, NULL, false);
            }
            put(r, key.p, n);
        }
        fatia_buf_release(&key);
        lidx_release(&ia);
        lidx_release(&ib);
        goto out;
    }
leaf:
    /* a leaf changed (or the value changed shape): b's set is changed, a's beyond it removed */
    json_decref(c);
    json_decref(r);
    c = whole(b, t, depth);
    {
        json_t *wa = whole(a, t, depth);
        r = combine(wa, c, FATIA_FS_DIFF, depth); /* NULL: nothing of a's went */
        json_decref(wa);
    }
    *chg = c;
    *rem = r;
    return;
out:
    if (!json_object_size(c)) {
        json_decref(c);
        c = NULL;
    }
    if (!json_object_size(r)) {
        json_decref(r);
        r = NULL;
    }
    *chg = c;
    *rem = r;
}

void fatia_api_fs_diff(const json_t *old, const json_t *new, const struct fatia_kind *k,
                       enum fatia_api_fs_part part, json_t **ret_chg, json_t **ret_removed)
{
    struct fatia_api_fs_type root = fatia_api_fs_root(k);
    json_t *c = json_object(), *r = json_object();
    const char *key;
    json_t *v;
    char fk[300];

    /* the two objects' parts, top level by hand: system metadata and apiVersion/kind are
     * nobody's */
    for (int pass = 0; pass < 2; pass++) {
        const json_t *x = pass ? old : new, *y = pass ? new : old;
        json_object_foreach((json_t *)x, key, v)
        {
            bool is_status = !strcmp(key, "status");
            struct fatia_api_fs_type ct;
            const json_t *yv = json_object_get(y, key);
            json_t *cc = NULL, *rr = NULL;
            if (!strcmp(key, "apiVersion") || !strcmp(key, "kind"))
                continue;
            if (part == FATIA_FS_STATUS ? !is_status : (is_status && k && k->has_status))
                continue;
            if (pass && yv)
                continue; /* both: done in the first pass */
            if (yv && fatia_json_equal(v, yv))
                continue;
            ct = child_type(&root, key);
            snprintf(fk, sizeof(fk), "f:%s", key);
            if (!strcmp(key, "metadata")) {
                /* as fatia_api_fs_of: the members of metadata but the system ones */
                if (json_is_object(pass ? yv : v) || json_is_object(pass ? v : yv)) {
                    const json_t *om = pass ? v : yv, *nm = pass ? yv : v;
                    json_t *oa = json_deep_copy(json_is_object(om) ? om : NULL);
                    json_t *na = json_deep_copy(json_is_object(nm) ? nm : NULL);
                    for (const char *const *s = system_meta; *s; s++) {
                        json_object_del(oa, *s);
                        json_object_del(na, *s);
                    }
                    if (!oa)
                        oa = json_object();
                    if (!na)
                        na = json_object();
                    if (!fatia_json_equal(oa, na)) {
                        if (!json_object_size(oa))
                            cc = whole(na, &ct, 1);
                        else if (!json_object_size(na))
                            rr = whole(oa, &ct, 1);
                        else
                            diff(oa, na, &ct, 1, &cc, &rr);
                    }
                    json_decref(oa);
                    json_decref(na);
                }
            } else if (!yv) {
                if (pass)
                    rr = whole(v, &ct, 1);
                else
                    cc = whole(v, &ct, 1);
            } else {
                diff(yv, v, &ct, 1, &cc, &rr);
            }
            if (cc)
                json_object_set_new(c, fk, cc);
            if (rr)
                json_object_set_new(r, fk, rr);
        }
    }
    *ret_chg = c;
    *ret_removed = r;
}

/* ".spec", "[name=\"c\"]", "[=\"x\"]" */
static void path_step(struct fatia_buf *p, const char *k)
{
    if (!strncmp(k, "f:", 2)) {
        fatia_buf_printf(p, ".%s", k + 2);
    } else if (!strncmp(k, "k:", 2)) {
        json_t *want = json_loads(k + 2, 0, NULL);
        const char *wk;
        json_t *wv;
        fatia_buf_printf(p, "[");
        json_object_foreach(want, wk, wv)
        {
            char *t = json_dumps(wv, JSON_COMPACT | JSON_ENCODE_ANY);
            fatia_buf_printf(p, "%s=%s", wk, t ? t : "");
            free(t);
        }
        fatia_buf_printf(p, "]");
        json_decref(want);
    } else if (!strncmp(k, "v:", 2)) {
        fatia_buf_printf(p, "[=%s]", k + 2);
    }
}

static void paths(const json_t *fs, struct fatia_buf *p, void (*fn)(void *, const char *),
                  void *arg, int depth)
{
    const char *k;
    json_t *v;
    size_t len = p->len;

    if (is_member(fs) && len)
        fn(arg, p->p);
    if (depth > MAX_DEPTH)
        return;
    json_object_foreach((json_t *)fs, k, v)
    {
        if (!strcmp(k, "."))
            continue;
        path_step(p, k);
        paths(v, p, fn, arg, depth + 1);
        fatia_buf_truncate(p, len);
    }
}

void fatia_api_fs_paths(const json_t *fs, void (*fn)(void *arg, const char *path), void *arg)
{
    struct fatia_buf p;
    const char *k;
    json_t *v;

    fatia_buf_init(&p, 0);
    json_object_foreach((json_t *)fs, k, v)
    {
        fatia_buf_reset(&p);
        path_step(&p, k);
        paths(v, &p, fn, arg, 1);
    }
    fatia_buf_release(&p);
}

/* ---- merge and removal ---- */

static json_t *merge(const json_t *live, const json_t *cfg, const struct fatia_api_fs_type *t,
                     int depth)
{
    if (depth > MAX_DEPTH || !live)
        return json_deep_copy(cfg);
    if (json_is_object(cfg) && json_is_object(live)) {
        json_t *out = json_deep_copy(live);
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)cfg, k, v)
        {
            struct fatia_api_fs_type ct = child_type(t, k);
            json_object_set_new(out, k, merge(json_object_get(live, k), v, &ct, depth + 1));
        }
        return out;
    }
    if (json_is_array(cfg) && json_is_array(live) && t->list != FATIA_FS_ATOMIC) {
        json_t *out, *it;
        struct fatia_api_fs_type it_t = item_type(t);
        struct fatia_buf key;
        struct lidx ix;
        size_t i, cap;
        if (!granular_list(cfg, t) || !granular_list(live, t))
            return json_deep_copy(cfg);
        out = json_deep_copy(live);
        lidx_build(&ix, out, t);
        cap = json_array_size(out) * 2 + 1;
        fatia_buf_init(&key, 0);
        json_array_foreach(cfg, i, it)
        {
            bool ok = t->list == FATIA_FS_MAP ? item_key(it, t->key, &key) : value_key(it, &key);
            ssize_t j = ok ? lidx_find(&ix, key.p) : -1;
            if (j >= 0) {
                if (t->list == FATIA_FS_MAP)
                    json_array_set_new(out, (size_t)j,
                                       merge(json_array_get(out, (size_t)j), it, &it_t, depth + 1));
                continue;
            }
            json_array_append_new(out, json_deep_copy(it));
            if (ok && !lidx_put(&ix, key.p, json_array_size(out) - 1, cap)) {
                /* the index is full (more new items than it has room for): rebuild it */
                lidx_release(&ix);
                lidx_build(&ix, out, t);
                cap = json_array_size(out) * 2 + 1;
            }
        }
        fatia_buf_release(&key);
        lidx_release(&ix);
        return out;
    }
    return json_deep_copy(cfg);
}

json_t *fatia_api_fs_merge(const json_t *live, const json_t *cfg, const struct fatia_kind *k)
{
    struct fatia_api_fs_type root = fatia_api_fs_root(k);

    return merge(live, cfg, &root, 0);
}

static int cmp_desc(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;

    return a < b ? 1 : a > b ? -1 : 0;
}

static void remove_in(json_t *v, const json_t *fs, int depth)
{
    const char *k;
    json_t *sub;
    void *tmp;
    const char *lk;
    struct lidx ix = {0};
    bool have;
    size_t *gone = NULL, n_gone = 0;

    if (depth > MAX_DEPTH)
        return;
    lk = first_item_key(fs);
    have = lk && lidx_for(&ix, v, lk);
    if (have)
        gone = calloc(json_array_size(v) + 1, sizeof(*gone));
    json_object_foreach_safe((json_t *)fs, tmp, k, sub)
    {
        ssize_t idx;
        json_t *cv;
        if (!strcmp(k, "."))
            continue;
        cv = child_of(v, k, &ix, have, &idx);
        if (!cv)
            continue;
        if (is_member(sub)) {
            if (idx < 0)
                json_object_del(v, k + 2);
            else if (gone)
                gone[n_gone++] = (size_t)idx;
        } else {
            remove_in(cv, sub, depth + 1);
        }
    }
    if (gone) {
        qsort(gone, n_gone, sizeof(*gone), cmp_desc);
        for (size_t i = 0; i < n_gone; i++)
            if (!i || gone[i] != gone[i - 1])
                json_array_remove(v, gone[i]);
        free(gone);
    }
    if (have)
        lidx_release(&ix);
}

void fatia_api_fs_remove(json_t *obj, const json_t *fs, const struct fatia_kind *k)
{
    (void)k;
    remove_in(obj, fs, 0);
}

/* ---- configuration checks ---- */

static int check_value(const json_t *v, const struct fatia_api_fs_type *t, struct fatia_buf *p,
                       char *why, size_t n, int depth)
{
    const char *k;
    json_t *m, *it;
    size_t len = p->len, i, j;
    int r = 0;

    if (depth > MAX_DEPTH)
        return 0;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, m)
        {
            struct fatia_api_fs_type ct = child_type(t, k);
            fatia_buf_printf(p, ".%s", k);
            r = check_value(m, &ct, p, why, n, depth + 1);
            fatia_buf_truncate(p, len);
            if (r < 0)
                return r;
        }
        return 0;
    }
    if (!json_is_array(v) || t->list != FATIA_FS_MAP || !all_keyed(v, t->key))
        return 0;
    struct fatia_api_fs_type it_t = item_type(t);
    struct lidx ix = {0};
    struct fatia_buf key;
    fatia_strmap_init(&ix.map);
    ix.keys = calloc(json_array_size(v) + 1, sizeof(char *));
    fatia_buf_init(&key, 0);
    json_array_foreach(v, i, it)
    {
        if (item_key(it, t->key, &key)) {
            if (fatia_strmap_has(&ix.map, key.p)) {
                char *kt = json_dumps(json_object_get(it, t->key), JSON_COMPACT | JSON_ENCODE_ANY);
                snprintf(why, n, "%s: duplicate entries for key [%s=%s]", p->len ? p->p : ".",
                         t->key, kt ? kt : "");
                free(kt);
                r = -EINVAL;
                break;
            }
            if (ix.keys)
                (void)lidx_put(&ix, key.p, i, json_array_size(v) + 1);
        }
        char step[64];
        snprintf(step, sizeof(step), "[%zu]", i);
        fatia_buf_puts(p, step);
        r = check_value(it, &it_t, p, why, n, depth + 1);
        fatia_buf_truncate(p, len);
        if (r < 0)
            break;
    }
    fatia_buf_release(&key);
    lidx_release(&ix);
    (void)j;
    return r;
}

int fatia_api_fs_check(const json_t *cfg, const struct fatia_kind *k, char *why, size_t n)
{
    struct fatia_api_fs_type root = fatia_api_fs_root(k);
    struct fatia_buf p;
    int r;

    fatia_buf_init(&p, 0);
    r = check_value(cfg, &root, &p, why, n, 0);
    fatia_buf_release(&p);
    return r;
}

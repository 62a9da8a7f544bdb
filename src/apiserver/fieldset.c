/*
 * apiserver/fieldset.c: field sets and the apply merge (see fieldset.h).
 *
 * Model: structured-merge-diff's, restricted to what fatia's types say. A value's type is found
 * by walking the schema table and the strategic-merge table side by side from the kind's root;
 * where both are silent the value is deduced (objects granular, lists atomic). Every function
 * walks at most FATIA_DOC_MAX_DEPTH levels (bodies are limited to 64 before they get here).
 *
 * Invariants: field sets are normalized (a node is {} = member leaf, or has children and "."
 * when it is a member itself); a function never modifies its const inputs.
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
    text = json_dumps(kv, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!text)
        return false;
    fatia_buf_reset(out);
    fatia_buf_printf(out, "k:{\"%s\":%s}", key, text);
    free(text);
    return true;
}

static bool value_key(const json_t *item, struct fatia_buf *out)
{
    char *text = json_dumps(item, JSON_COMPACT | JSON_ENCODE_ANY);

    if (!text)
        return false;
    fatia_buf_reset(out);
    fatia_buf_printf(out, "v:%s", text);
    free(text);
    return true;
}

/* Is every item of list v keyed (a map list can be walked by key)? */
static bool all_keyed(const json_t *v, const char *key)
{
    size_t i;
    json_t *it;

    json_array_foreach(v, i, it) if (!json_is_object(it) || !json_object_get(it, key)) return false;
    return true;
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
    if (!json_is_array(v) || t->list == FATIA_FS_ATOMIC || !json_array_size(v))
        return; /* a leaf: node stays {} */
    if (t->list == FATIA_FS_MAP && !all_keyed(v, t->key))
        return; /* an item without its key: the list is owned whole */
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
        json_object_foreach((json_t *)fs, k, v)
        {
            ssize_t ia, ib;
            if (!strcmp(k, "."))
                continue;
            json_t *c = changed(v, child_value(a, k, &ia), child_value(b, k, &ib), depth + 1);
            if (c)
                json_object_set_new(out, k, c);
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
    if (json_is_array(a) && json_is_array(b) && json_array_size(a) && json_array_size(b) &&
        (t->list == FATIA_FS_SET ||
         (t->list == FATIA_FS_MAP && all_keyed(a, t->key) && all_keyed(b, t->key)))) {
        struct fatia_api_fs_type it_t = item_type(t);
        json_t *it;
        fatia_buf_init(&key, 0);
        json_array_foreach(b, i, it)
        {
            ssize_t idx;
            bool ok = t->list == FATIA_FS_MAP ? item_key(it, t->key, &key) : value_key(it, &key);
            const json_t *av;
            json_t *cc, *rr;
            if (!ok)
                continue;
            av = child_value(a, key.p, &idx);
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
            ssize_t idx;
            bool ok = t->list == FATIA_FS_MAP ? item_key(it, t->key, &key) : value_key(it, &key);
            if (!ok || child_value(b, key.p, &idx))
                continue;
            json_t *n = json_object();
            if (t->list == FATIA_FS_MAP) {
                json_object_set_new(n, ".", json_object());
                add_members(n, it, &it_t, depth + 1, NULL, false);
            }
            put(r, key.p, n);
        }
        fatia_buf_release(&key);
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
        size_t i;
        if (t->list == FATIA_FS_MAP && (!all_keyed(cfg, t->key) || !all_keyed(live, t->key)))
            return json_deep_copy(cfg);
        out = json_deep_copy(live);
        json_array_foreach(cfg, i, it)
        {
            size_t j;
            json_t *lt;
            bool found = false;
            json_array_foreach(out, j, lt)
            {
                bool same = t->list == FATIA_FS_MAP ? fatia_json_equal(json_object_get(lt, t->key),
                                                                       json_object_get(it, t->key))
                                                    : fatia_json_equal(lt, it);
                if (same) {
                    if (t->list == FATIA_FS_MAP)
                        json_array_set_new(out, j, merge(lt, it, &it_t, depth + 1));
                    found = true;
                    break;
                }
            }
            if (!found)
                json_array_append_new(out, json_deep_copy(it));
        }
        return out;
    }
    return json_deep_copy(cfg);
}

json_t *fatia_api_fs_merge(const json_t *live, const json_t *cfg, const struct fatia_kind *k)
{
    struct fatia_api_fs_type root = fatia_api_fs_root(k);

    return merge(live, cfg, &root, 0);
}

static void remove_in(json_t *v, const json_t *fs, int depth)
{
    const char *k;
    json_t *sub;
    void *tmp;

    if (depth > MAX_DEPTH)
        return;
    json_object_foreach_safe((json_t *)fs, tmp, k, sub)
    {
        ssize_t idx;
        json_t *cv;
        if (!strcmp(k, "."))
            continue;
        cv = child_value(v, k, &idx);
        if (!cv)
            continue;
        if (is_member(sub)) {
            if (idx >= 0)
                json_array_remove(v, (size_t)idx);
            else
                json_object_del(v, k + 2);
        } else {
            remove_in(cv, sub, depth + 1);
        }
    }
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
    json_array_foreach(v, i, it)
    {
        for (j = 0; j < i; j++) {
            if (fatia_json_equal(json_object_get(json_array_get(v, j), t->key),
                                 json_object_get(it, t->key))) {
                char *kt = json_dumps(json_object_get(it, t->key), JSON_COMPACT | JSON_ENCODE_ANY);
                snprintf(why, n, "%s: duplicate entries for key [%s=%s]", p->len ? p->p : ".",
                         t->key, kt ? kt : "");
                free(kt);
                return -EINVAL;
            }
        }
        char key[64];
        snprintf(key, sizeof(key), "[%zu]", i);
        fatia_buf_puts(p, key);
        r = check_value(it, &it_t, p, why, n, depth + 1);
        fatia_buf_truncate(p, len);
        if (r < 0)
            return r;
    }
    return 0;
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

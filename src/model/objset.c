/*
 * model/objset.c: decoded object sets (see objset.h).
 */
#include "base/compat.h"

#include "model/objset.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/vec.h"

void fatia_objset_init(struct fatia_objset *set)
{
    memset(set, 0, sizeof(*set));
    fatia_docset_init(&set->docs);
    fatia_strmap_init(&set->index);
    fatia_strmap_init(&set->seen);
}

void fatia_objset_release(struct fatia_objset *set)
{
    for (size_t i = 0; i < set->n; i++)
        fatia_object_free(set->v[i]);
    fatia_free(set->v);
    for (size_t i = 0; i < set->n_keys; i++)
        fatia_free(set->keys[i]);
    fatia_free(set->keys);
    fatia_strmap_release(&set->index);
    for (size_t i = 0; i < set->seen.cap; i++)
        if (set->seen.slots[i].key)
            fatia_free((char *)set->seen.slots[i].key);
    fatia_strmap_release(&set->seen);
    fatia_docset_release(&set->docs);
    fatia_objset_init(set);
}

static char *fatia_ctlr_make_key(const char *kind, const char *ns, const char *name)
{
    char *key;

    if (asprintf(&key, "%s/%s/%s", kind, ns ? ns : "", name ? name : "") < 0)
        return NULL;
    return key;
}

int fatia_objset_add(struct fatia_objset *set, struct fatia_object *o)
{
    char *key = fatia_ctlr_make_key(o->kind->kind, o->namespace, o->name);

    if (!key) {
        fatia_object_free(o);
        return -ENOMEM;
    }
    if (o->name && fatia_strmap_has(&set->index, key)) {
        free(key);
        fatia_object_free(o);
        return -FATIA_E_EXISTS;
    }
    if (fatia_vec_reserve_raw((void **)&set->v, &set->cap, set->n + 1, sizeof(*set->v)) < 0 ||
        fatia_vec_reserve_raw((void **)&set->keys, &set->keys_cap, set->n_keys + 1,
                              sizeof(*set->keys)) < 0 ||
        (o->name && fatia_strmap_put(&set->index, key, o) < 0)) {
        free(key);
        fatia_object_free(o);
        return -ENOMEM;
    }
    set->keys[set->n_keys++] = key;
    set->v[set->n++] = o;
    return 0;
}

int fatia_objset_load(struct fatia_objset *set, char *const *paths, size_t n_paths, bool recursive,
                      const struct fatia_checks *checks, struct fatia_diag *diag)
{
    size_t first_doc = set->docs.n;
    int r;

    for (size_t i = 0; i < n_paths; i++) {
        r = fatia_docset_load_path(&set->docs, paths[i], recursive, diag);
        if (r == -ENOMEM)
            return r;
    }
    for (size_t i = first_doc; i < set->docs.n; i++) {
        const struct fatia_doc *d = &set->docs.docs[i];
        struct fatia_decode_opts opts = {.file = d->file, .map = set->docs.map, .pos = d->pos};
        struct fatia_object *o;

        r = fatia_object_decode(d->root, &opts, checks, diag, &o);
        if (r == -ENOMEM)
            return r;
        if (r < 0) {
            fatia_objset_check_duplicate(set, d, diag);
            continue;
        }
        if (o->warning)
            fatia_diag_add(diag, FATIA_DIAG_WARNING, d->file, d->pos.line, d->pos.col, o->id,
                           "apiVersion", "%s", o->warning);
        if (fatia_objset_check_duplicate(set, d, diag)) {
            fatia_object_free(o);
            continue;
        }
        r = fatia_objset_add(set, o);
        if (r < 0)
            return r;
    }
    return fatia_diag_has_errors(diag) ? -FATIA_E_INVALID : 0;
}

struct fatia_object *fatia_objset_get(const struct fatia_objset *set, const char *kind,
                                      const char *ns, const char *name)
{
    char *key = fatia_ctlr_make_key(kind, ns, name);
    struct fatia_object *o;

    if (!key)
        return NULL;
    o = fatia_strmap_get(&set->index, key);
    free(key);
    return o;
}

struct fatia_object *fatia_objset_next(const struct fatia_objset *set, const char *kind,
                                       size_t *iter)
{
    while (*iter < set->n) {
        struct fatia_object *o = set->v[(*iter)++];
        if (!kind || strcmp(o->kind->kind, kind) == 0)
            return o;
    }
    return NULL;
}

bool fatia_objset_check_duplicate(struct fatia_objset *set, const struct fatia_doc *d,
                                  struct fatia_diag *diag)
{
    json_t *meta = json_object_get(d->root, "metadata");
    const char *kind = fatia_json_str(d->root, "kind");
    const char *name = fatia_json_str(meta, "name");
    const struct fatia_kind *k = kind ? fatia_kind_by_name(kind) : NULL;
    const char *ns = k && k->namespaced ? fatia_json_str(meta, "namespace") : NULL;
    const struct fatia_doc *prev = NULL;
    uintptr_t prev_index;
    char *key, id[320];

    if (!kind || !name || !*name)
        return false;
    key = fatia_ctlr_make_key(kind, ns, name);
    if (!key)
        return false;
    /* The map holds document indexes (+1): the docs array moves as it grows. */
    prev_index = (uintptr_t)fatia_strmap_get(&set->seen, key);
    if (prev_index)
        prev = &set->docs.docs[prev_index - 1];
    if (prev) {
        if (k)
            fatia_object_format_id(k, ns, name, id, sizeof(id));
        else
            snprintf(id, sizeof(id), "%s/%s", kind, name);
        fatia_diag_add(diag, FATIA_DIAG_ERROR, d->file, d->pos.line, d->pos.col, id,
                       "metadata.name", "duplicate object: %s is also defined at %s:%u", name,
                       prev->file, prev->pos.line);
        free(key);
        return true;
    }
    if (fatia_strmap_put(&set->seen, key, (void *)(uintptr_t)(d - set->docs.docs + 1)) < 0)
        free(key);
    return false;
}

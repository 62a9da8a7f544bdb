/*
 * model/crd_kind.c: the kind of a CustomResourceDefinition, and the registry of such kinds (see
 * crd_kind.h for the model).
 *
 * A custom kind is one allocation holding the struct fatia_kind (first, so that a kind pointer
 * is the holder's), a deep copy of its CRD (every name, description and column string points
 * into it) and the arena of its schema tables. Kinds are never freed while the server runs:
 * an rtable, a watch or an informer may hold one after its CRD changed; a CRD rewritten a
 * thousand times keeps a thousand small kinds (the CRD kind is the cluster admin's alone).
 *
 * Rejected: one mutable kind per CRD, updated in place: a reader in the middle of a walk would
 * see half an old and half a new schema.
 */
#include "base/compat.h"

#include "model/crd_kind.h"

#include <ctype.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"

struct custom {
    struct fatia_kind k; /* first */
    json_t *crd;
    struct fatia_schema_arena a;
    struct custom *next_all; /* every custom kind ever built */
};

static const struct fatia_kind *registered[FATIA_KIND_MAX_CUSTOM];
static size_t n_registered;
static struct custom *all;

static const char *const *str_array(struct custom *c, const json_t *a)
{
    size_t i, n = json_array_size(a);
    const char **v;
    json_t *e;

    if (!n)
        return NULL;
    v = fatia_schema_arena_alloc(&c->a, (n + 1) * sizeof(*v));
    if (!v)
        return NULL;
    json_array_foreach(a, i, e) v[i] = json_is_string(e) ? json_string_value(e) : "";
    return v;
}

static char *arena_strdup(struct custom *c, const char *str)
{
    size_t n = strlen(str) + 1;
    char *p = fatia_schema_arena_alloc(&c->a, n);

    if (p)
        memcpy(p, str, n);
    return p;
}

static int columns(struct custom *c, const json_t *cols)
{
    size_t i, n = json_array_size(cols);
    struct fatia_column *v;
    json_t *e;

    if (!n)
        return 0;
    v = fatia_schema_arena_alloc(&c->a, (n + 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    json_array_foreach(cols, i, e)
    {
        int64_t prio = 0;
        v[i].name = fatia_json_str(e, "name") ? fatia_json_str(e, "name") : "";
        v[i].type = fatia_json_str(e, "type") ? fatia_json_str(e, "type") : "string";
        v[i].json_path = fatia_json_str(e, "jsonPath") ? fatia_json_str(e, "jsonPath") : "";
        v[i].desc = fatia_json_str(e, "description");
        if (fatia_json_int(e, "priority", &prio))
            v[i].priority = (int)prio;
    }
    c->k.columns = v;
    return 0;
}

/* The other served versions, converted with `None` (only apiVersion changes). */
static int other_versions(struct custom *c, const json_t *versions, const char *storage)
{
    size_t i, n = 0, j = 0;
    struct fatia_kind_version *v;
    json_t *e;

    json_array_foreach(versions, i, e) n += fatia_json_bool(e, "served", false) &&
                                            fatia_json_str(e, "name") &&
                                            strcmp(fatia_json_str(e, "name"), storage);
    if (!n)
        return 0;
    v = fatia_schema_arena_alloc(&c->a, (n + 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    json_array_foreach(versions, i, e)
    {
        const char *name = fatia_json_str(e, "name");
        if (!name || !fatia_json_bool(e, "served", false) || !strcmp(name, storage))
            continue;
        v[j].version = name;
        if (fatia_json_bool(e, "deprecated", false)) {
            const char *w = fatia_json_str(e, "deprecationWarning");
            char buf[512];
            if (!w) {
                snprintf(buf, sizeof(buf), "%s/%s %s is deprecated", c->k.group, name, c->k.kind);
                w = arena_strdup(c, buf);
                if (!w)
                    return -ENOMEM;
            }
            v[j].warning = w;
        }
        j++;
    }
    c->k.others = v;
    return 0;
}

static int build(struct custom *c, char *why, size_t n)
{
    const json_t *spec = json_object_get(c->crd, "spec");
    const json_t *names = json_object_get(spec, "names");
    const json_t *versions = json_object_get(spec, "versions"), *sv = NULL, *e, *js;
    const char *kind = fatia_json_str(names, "kind");
    size_t i, si = 0;
    char path[128];
    int r;

    c->k.group = fatia_json_str(spec, "group");
    c->k.plural = fatia_json_str(names, "plural");
    c->k.kind = kind;
    if (!c->k.group || !c->k.plural || !kind || !*kind) {
        snprintf(why, n, "spec.names: the group, plural and kind are required");
        return -FATIA_E_INVALID;
    }
    c->k.singular = fatia_json_str(names, "singular");
    if (!c->k.singular || !*c->k.singular) {
        char *lower = arena_strdup(c, kind);
        if (!lower)
            return -ENOMEM;
        for (char *p = lower; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        c->k.singular = lower;
    }
    c->k.short_names = str_array(c, json_object_get(names, "shortNames"));
    c->k.categories = str_array(c, json_object_get(names, "categories"));
    c->k.namespaced =
        !strcmp(fatia_json_str(spec, "scope") ? fatia_json_str(spec, "scope") : "", "Namespaced");
    c->k.name_rule = FATIA_NAME_SUBDOMAIN;
    json_array_foreach(versions, i, e)
    {
        if (!fatia_json_str(e, "name")) {
            snprintf(why, n, "spec.versions[%zu].name: Required value", i);
            return -FATIA_E_INVALID;
        }
        if (!fatia_json_bool(e, "storage", false))
            continue;
        if (sv) {
            snprintf(why, n,
                     "spec.versions: Invalid value: must have exactly one version marked "
                     "as storage version");
            return -FATIA_E_INVALID;
        }
        sv = e;
        si = i;
    }
    if (!sv) {
        snprintf(why, n,
                 "spec.versions: Invalid value: must have exactly one version marked as "
                 "storage version");
        return -FATIA_E_INVALID;
    }
    c->k.version = fatia_json_str(sv, "name");
    c->k.has_status = json_object_get(json_object_get(sv, "subresources"), "status") != NULL;
    {
        const json_t *sc = json_object_get(json_object_get(sv, "subresources"), "scale");
        if (json_is_object(sc)) {
            struct fatia_scale_paths *p = fatia_schema_arena_alloc(&c->a, sizeof(*p));
            if (!p)
                return -ENOMEM;
            p->spec_replicas = fatia_json_str(sc, "specReplicasPath");
            p->status_replicas = fatia_json_str(sc, "statusReplicasPath");
            p->label_selector = fatia_json_str(sc, "labelSelectorPath");
            if (!p->spec_replicas || !p->status_replicas) {
                snprintf(why, n,
                         "spec.versions[%zu].subresources.scale.specReplicasPath: Required value",
                         si);
                return -FATIA_E_INVALID;
            }
            c->k.scale = p;
        }
    }
    r = columns(c, json_object_get(sv, "additionalPrinterColumns"));
    if (r == 0)
        r = other_versions(c, versions, c->k.version);
    if (r < 0)
        return r;
    json_array_foreach(versions, i, e)
    {
        js = json_object_get(json_object_get(e, "schema"), "openAPIV3Schema");
        snprintf(path, sizeof(path), "spec.versions[%zu].schema.openAPIV3Schema", i);
        if (!js) {
            snprintf(why, n, "%s: Required value: schemas are required", path);
            return -FATIA_E_INVALID;
        }
        {
            const struct fatia_schema *sch;
            r = fatia_schema_from_openapi(&c->a, js, true, path, &sch, why, n);
            if (r < 0)
                return r;
            if (i == si)
                c->k.schema = sch;
        }
    }
    return 0;
}

int fatia_kind_custom_new(const json_t *crd, const struct fatia_kind **ret, char *why, size_t n)
{
    struct custom *c = fatia_calloc(1, sizeof(*c));
    int r;

    if (!c)
        return -ENOMEM;
    c->crd = json_deep_copy(crd);
    if (!c->crd) {
        fatia_free(c);
        return -ENOMEM;
    }
    r = build(c, why, n);
    if (r < 0) {
        fatia_schema_arena_release(&c->a);
        json_decref(c->crd);
        fatia_free(c);
        return r;
    }
    c->next_all = all;
    all = c;
    *ret = &c->k;
    return 0;
}

static bool is_listed(const struct fatia_kind *k)
{
    for (struct custom *c = all; c; c = c->next_all)
        if (&c->k == k)
            return true;
    return false;
}

bool fatia_kind_is_custom(const struct fatia_kind *k)
{
    return k && is_listed(k);
}

int fatia_kind_custom_register(const struct fatia_kind *k)
{
    for (size_t i = 0; i < n_registered; i++)
        if (registered[i] == k)
            return 0;
    if (n_registered == FATIA_KIND_MAX_CUSTOM)
        return -ENOSPC;
    registered[n_registered++] = k;
    return 0;
}

void fatia_kind_custom_unregister(const struct fatia_kind *k)
{
    for (size_t i = 0; i < n_registered; i++)
        if (registered[i] == k) {
            memmove(&registered[i], &registered[i + 1],
                    (n_registered - i - 1) * sizeof(registered[0]));
            n_registered--;
            return;
        }
}

void fatia_kind_custom_free(const struct fatia_kind *k)
{
    struct custom **pp = &all;

    fatia_kind_custom_unregister(k);
    while (*pp && &(*pp)->k != k)
        pp = &(*pp)->next_all;
    if (*pp) {
        struct custom *c = *pp;
        *pp = c->next_all;
        fatia_schema_arena_release(&c->a);
        json_decref(c->crd);
        fatia_free(c);
    }
}

void fatia_kind_custom_free_all(void)
{
    while (all)
        fatia_kind_custom_free(&all->k);
    n_registered = 0;
}

const struct fatia_kind *fatia_kind_at(size_t i)
{
    static size_t n_compiled;

    if (!n_compiled)
        while (fatia_kinds[n_compiled])
            n_compiled++;
    if (i < n_compiled)
        return fatia_kinds[i];
    i -= n_compiled;
    return i < n_registered ? registered[i] : NULL;
}

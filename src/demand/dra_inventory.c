/*
 * demand/dra_inventory.c: devices from ResourceSlices, DeviceClasses, and the allocation state
 * (see dra.h).
 *
 * A device is copied out of its slice into a flat struct whose CEL view (struct
 * fatia_cel_device) points at the copy, so selectors evaluate without touching JSON. Version
 * attributes are parsed once here. Pools: ResourceSlices of one (driver, pool) carry a
 * generation, and consumers use only the highest one (upstream's rule for a pool being
 * rewritten by its driver); fatia_dra_inventory_finish applies it and then sorts.
 *
 * Node restrictions: a device is local to a node (nodeName), usable from every node (allNodes),
 * or from the nodes a NodeSelector matches (labels via matchExpressions, the node's name via
 * matchFields metadata.name; terms are ORed, an empty term matches nothing, as upstream).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/map.h"
#include "base/str.h"
#include "demand/dra.h"

/* ---- natural order ---- */

/* strcmp, except that runs of digits compare by value: gpu-2 < gpu-10. */
static int natural_cmp(const char *a, const char *b)
{
    if (!a || !b)
        return !a ? (b ? 1 : 0) : -1; /* NULL last */
    while (*a && *b) {
        if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
            const char *ea = a, *eb = b;
            size_t la, lb;
            while (*a == '0' && a[1] >= '0' && a[1] <= '9')
                a++;
            while (*b == '0' && b[1] >= '0' && b[1] <= '9')
                b++;
            for (ea = a; *ea >= '0' && *ea <= '9'; ea++)
                ;
            for (eb = b; *eb >= '0' && *eb <= '9'; eb++)
                ;
            la = (size_t)(ea - a);
            lb = (size_t)(eb - b);
            if (la != lb)
                return la < lb ? -1 : 1;
            for (; a < ea; a++, b++)
                if (*a != *b)
                    return *a < *b ? -1 : 1;
            continue;
        }
        if (*a != *b)
            return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
        a++;
        b++;
    }
    return *a ? 1 : *b ? -1 : 0;
}

/* ---- inventory ---- */

void fatia_dra_inventory_init(struct fatia_dra_inventory *inv)
{
    memset(inv, 0, sizeof(*inv));
}

static void device_release(struct fatia_dra_device *d)
{
    for (size_t i = 0; i < d->cel.n_attrs; i++) {
        fatia_free((char *)d->attrs[i].name);
        fatia_free((char *)d->attrs[i].s);
    }
    for (size_t i = 0; i < d->cel.n_caps; i++)
        fatia_free((char *)d->caps[i].name);
    fatia_free(d->attrs);
    fatia_free(d->caps);
    fatia_free(d->versions);
    fatia_free(d->driver);
    fatia_free(d->pool);
    fatia_free(d->name);
    fatia_free(d->node);
    json_decref(d->node_selector);
    memset(d, 0, sizeof(*d));
}

void fatia_dra_inventory_release(struct fatia_dra_inventory *inv)
{
    for (size_t i = 0; i < inv->n; i++)
        device_release(&inv->devs[i]);
    fatia_free(inv->devs);
    fatia_free(inv->nodes);
    memset(inv, 0, sizeof(*inv));
}

static int set_why(char *why, size_t why_n, const char *fmt, ...) FATIA_PRINTF(3, 4);

static int set_why(char *why, size_t why_n, const char *fmt, ...)
{
    va_list ap;

    if (why && why_n) {
        va_start(ap, fmt);
        vsnprintf(why, why_n, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

static int copy_device(struct fatia_dra_device *d, const json_t *dj, const char *slice_name,
                       size_t index, char *why, size_t why_n)
{
    json_t *attrs = json_object_get(dj, "attributes"), *caps = json_object_get(dj, "capacity");
    size_t na = json_object_size(attrs), nc = json_object_size(caps), i = 0;
    const char *key;
    json_t *v;

    d->attrs = fatia_calloc(na ? na : 1, sizeof(*d->attrs));
    d->versions = fatia_calloc(na ? na : 1, sizeof(*d->versions));
    d->caps = fatia_calloc(nc ? nc : 1, sizeof(*d->caps));
    if (!d->attrs || !d->versions || !d->caps)
        return -ENOMEM;
    d->cel.attrs = d->attrs;
    d->cel.caps = d->caps;
    json_object_foreach(attrs, key, v)
    {
        struct fatia_cel_attr *a = &d->attrs[i];
        const char *s;
        int64_t iv;
        a->name = fatia_strdup(key);
        if (!a->name)
            return -ENOMEM;
        d->cel.n_attrs = ++i;
        if (fatia_json_int(v, "int", &iv)) {
            a->type = FATIA_CEL_ATTR_INT;
            a->i = iv;
        } else if (json_is_boolean(json_object_get(v, "bool"))) {
            a->type = FATIA_CEL_ATTR_BOOL;
            a->b = json_is_true(json_object_get(v, "bool"));
        } else if ((s = fatia_json_str(v, "string"))) {
            a->type = FATIA_CEL_ATTR_STRING;
            a->s = fatia_strdup(s);
            if (!a->s)
                return -ENOMEM;
        } else if ((s = fatia_json_str(v, "version"))) {
            char vwhy[128];
            a->type = FATIA_CEL_ATTR_VERSION;
            a->s = fatia_strdup(s);
            if (!a->s)
                return -ENOMEM;
            if (fatia_semver_parse(s, false, &d->versions[i - 1], vwhy, sizeof(vwhy)) < 0)
                return set_why(why, why_n,
                               "resourceslice/%s: spec.devices[%zu].attributes[%s].version: "
                               "invalid semantic version \"%s\": %s",
                               slice_name, index, key, s, vwhy);
            a->ver = &d->versions[i - 1];
        } else {
            return set_why(why, why_n,
                           "resourceslice/%s: spec.devices[%zu].attributes[%s]: exactly one of "
                           "int, bool, string and version must be set",
                           slice_name, index, key);
        }
    }
    i = 0;
    json_object_foreach(caps, key, v)
    {
        struct fatia_cel_capacity *c = &d->caps[i];
        char qwhy[128];
        c->name = fatia_strdup(key);
        if (!c->name)
            return -ENOMEM;
        d->cel.n_caps = ++i;
        if (fatia_quantity_parse_json(json_object_get(v, "value"), &c->value, qwhy, sizeof(qwhy)) <
            0)
            return set_why(why, why_n, "resourceslice/%s: spec.devices[%zu].capacity[%s].value: %s",
                           slice_name, index, key, qwhy);
    }
    d->cel.allow_multiple_allocations = fatia_json_bool(dj, "allowMultipleAllocations", false);
    return 0;
}

int fatia_dra_inventory_add_slice(struct fatia_dra_inventory *inv, const json_t *slice, char *why,
                                  size_t why_n)
{
    const json_t *spec = json_object_get(slice, "spec");
    const char *name = fatia_json_str(json_object_get(slice, "metadata"), "name");
    const char *driver = fatia_json_str(spec, "driver");
    const char *pool = fatia_json_str(json_object_get(spec, "pool"), "name");
    const char *node = fatia_json_str(spec, "nodeName");
    json_t *selector = json_object_get(spec, "nodeSelector");
    bool all = fatia_json_bool(spec, "allNodes", false);
    bool per_device = fatia_json_bool(spec, "perDeviceNodeSelection", false);
    int64_t gen = 0;
    size_t i;
    json_t *dj;
    int r;

    if (!name)
        name = "?";
    if (!driver || !pool)
        return set_why(why, why_n, "resourceslice/%s: spec.driver and spec.pool.name are required",
                       name);
    fatia_json_int(json_object_get(spec, "pool"), "generation", &gen);
    json_array_foreach(json_object_get(spec, "devices"), i, dj)
    {
        struct fatia_dra_device *d;
        const char *dn = fatia_json_str(dj, "name");
        if (!dn)
            return set_why(why, why_n, "resourceslice/%s: spec.devices[%zu].name is required", name,
                           i);
        if (inv->n == inv->cap) {
            size_t cap = inv->cap ? inv->cap * 2 : 16;
            struct fatia_dra_device *v = fatia_reallocarray(inv->devs, cap, sizeof(*v));
            if (!v)
                return -ENOMEM;
            inv->devs = v;
            inv->cap = cap;
        }
        d = &inv->devs[inv->n];
        memset(d, 0, sizeof(*d));
        inv->n++;
        d->driver = fatia_strdup(driver);
        d->pool = fatia_strdup(pool);
        d->name = fatia_strdup(dn);
        d->generation = gen;
        if (per_device) {
            const char *dnode = fatia_json_str(dj, "nodeName");
            d->node = dnode ? fatia_strdup(dnode) : NULL;
            d->node_selector = json_incref(json_object_get(dj, "nodeSelector"));
            d->all_nodes = fatia_json_bool(dj, "allNodes", false);
            if (dnode && !d->node)
                return -ENOMEM;
        } else {
            d->node = node ? fatia_strdup(node) : NULL;
            d->node_selector = json_incref(selector);
            d->all_nodes = all;
            if (node && !d->node)
                return -ENOMEM;
        }
        if (!d->driver || !d->pool || !d->name)
            return -ENOMEM;
        d->cel.driver = d->driver;
        r = copy_device(d, dj, name, i, why, why_n);
        if (r < 0)
            return r;
    }
    inv->finished = false;
    return 0;
}

static int device_cmp(const void *pa, const void *pb)
{
    const struct fatia_dra_device *a = pa, *b = pb;
    int c;

    if ((c = natural_cmp(a->node, b->node)) || (c = strcmp(a->driver, b->driver)) ||
        (c = natural_cmp(a->pool, b->pool)) || (c = natural_cmp(a->name, b->name)))
        return c;
    return 0;
}

int fatia_dra_inventory_finish(struct fatia_dra_inventory *inv)
{
    /* "driver\npool" -> 1 + index of its first device; best[that index] = newest generation */
    struct fatia_strmap pools;
    char **keys = fatia_calloc(inv->n ? inv->n : 1, sizeof(*keys));
    int64_t *best = fatia_calloc(inv->n ? inv->n : 1, sizeof(*best));
    size_t *first = fatia_calloc(inv->n ? inv->n : 1, sizeof(*first));
    size_t kept = 0;
    int r = 0;

    fatia_strmap_init(&pools);
    if (!keys || !best || !first)
        r = -ENOMEM;
    for (size_t i = 0; i < inv->n && r == 0; i++) {
        const struct fatia_dra_device *d = &inv->devs[i];
        size_t len = strlen(d->driver) + strlen(d->pool) + 2;
        uintptr_t f;
        keys[i] = fatia_malloc(len);
        if (!keys[i]) {
            r = -ENOMEM;
            break;
        }
        snprintf(keys[i], len, "%s\n%s", d->driver, d->pool);
        f = (uintptr_t)fatia_strmap_get(&pools, keys[i]);
        if (!f) {
            f = i + 1;
            r = fatia_strmap_put(&pools, keys[i], (void *)f);
            best[i] = d->generation;
        } else if (best[f - 1] < d->generation) {
            best[f - 1] = d->generation;
        }
        first[i] = f - 1;
    }
    for (size_t i = 0; i < inv->n && r == 0; i++) {
        struct fatia_dra_device *d = &inv->devs[i];
        if (best[first[i]] > d->generation) {
            device_release(d);
            continue;
        }
        if (kept != i)
            inv->devs[kept] = *d;
        kept++;
    }
    fatia_strmap_release(&pools);
    for (size_t i = 0; keys && i < inv->n; i++)
        fatia_free(keys[i]);
    fatia_free(keys);
    fatia_free(best);
    fatia_free(first);
    if (r < 0)
        return r;
    inv->n = kept;
    if (inv->n)
        qsort(inv->devs, inv->n, sizeof(*inv->devs), device_cmp);
    /* the node index */
    fatia_free(inv->nodes);
    inv->nodes = fatia_calloc(inv->n ? inv->n : 1, sizeof(*inv->nodes));
    if (!inv->nodes)
        return -ENOMEM;
    inv->n_nodes = 0;
    inv->first_unbound = inv->n;
    for (size_t i = 0; i < inv->n; i++) {
        const char *node = inv->devs[i].node;
        if (!node) {
            inv->first_unbound = i;
            break;
        }
        if (!inv->n_nodes || strcmp(inv->nodes[inv->n_nodes - 1].node, node))
            inv->nodes[inv->n_nodes++] = (struct fatia_dra_node_range){node, i, 0};
        inv->nodes[inv->n_nodes - 1].n++;
    }
    /* the CEL views point into each device: re-point after moving */
    for (size_t i = 0; i < inv->n; i++) {
        struct fatia_dra_device *d = &inv->devs[i];
        d->cel.driver = d->driver;
        d->cel.attrs = d->attrs;
        d->cel.caps = d->caps;
        for (size_t a = 0; a < d->cel.n_attrs; a++)
            if (d->attrs[a].type == FATIA_CEL_ATTR_VERSION)
                d->attrs[a].ver = &d->versions[a];
    }
    inv->finished = true;
    return 0;
}

const struct fatia_dra_node_range *fatia_dra_inventory_node(const struct fatia_dra_inventory *inv,
                                                            const char *node)
{
    size_t lo = 0, hi = inv->n_nodes;

    while (node && lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = natural_cmp(inv->nodes[mid].node, node);
        if (c == 0)
            return &inv->nodes[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

long fatia_dra_inventory_find(const struct fatia_dra_inventory *inv, const char *driver,
                              const char *pool, const char *device)
{
    for (size_t i = 0; i < inv->n; i++) {
        const struct fatia_dra_device *d = &inv->devs[i];
        if (!strcmp(d->name, device) && !strcmp(d->pool, pool) && !strcmp(d->driver, driver))
            return (long)i;
    }
    return -1;
}

const struct fatia_cel_attr *fatia_dra_device_attr(const struct fatia_dra_device *d,
                                                   const char *qualified_name)
{
    const char *slash = strchr(qualified_name, '/');
    size_t dlen = strlen(d->driver);

    for (size_t i = 0; i < d->cel.n_attrs; i++) {
        const char *name = d->attrs[i].name;
        if (!strcmp(name, qualified_name))
            return &d->attrs[i];
        /* "type" of driver gpu.nvidia.com is "gpu.nvidia.com/type" */
        if (!strchr(name, '/') && slash && (size_t)(slash - qualified_name) == dlen &&
            !strncmp(qualified_name, d->driver, dlen) && !strcmp(name, slash + 1))
            return &d->attrs[i];
    }
    return NULL;
}

/* ---- node selectors ---- */

static bool req_matches(const json_t *req, const char *value)
{
    const char *op = fatia_json_str(req, "operator");
    const json_t *values = json_object_get(req, "values");
    size_t i;
    json_t *v;

    if (!op)
        return false;
    if (!strcmp(op, "Exists"))
        return value != NULL;
    if (!strcmp(op, "DoesNotExist"))
        return value == NULL;
    if (!strcmp(op, "In") || !strcmp(op, "NotIn")) {
        bool found = false;
        json_array_foreach(values, i, v) found |=
            value && json_is_string(v) && !strcmp(json_string_value(v), value);
        return !strcmp(op, "In") ? found : !found;
    }
    if (!strcmp(op, "Gt") || !strcmp(op, "Lt")) {
        int64_t have, want;
        if (!value || json_array_size(values) != 1 || !json_is_string(json_array_get(values, 0)) ||
            fatia_parse_i64(value, &have) < 0 ||
            fatia_parse_i64(json_string_value(json_array_get(values, 0)), &want) < 0)
            return false;
        return !strcmp(op, "Gt") ? have > want : have < want;
    }
    return false;
}

static bool selector_matches(const json_t *sel, const char *node, const json_t *labels)
{
    size_t i, j;
    json_t *term, *req;

    json_array_foreach(json_object_get(sel, "nodeSelectorTerms"), i, term)
    {
        const json_t *exprs = json_object_get(term, "matchExpressions");
        const json_t *fields = json_object_get(term, "matchFields");
        bool ok = json_array_size(exprs) + json_array_size(fields) > 0;
        json_array_foreach(exprs, j, req)
        {
            const char *key = fatia_json_str(req, "key");
            ok = ok && key && req_matches(req, fatia_json_str(labels, key));
        }
        json_array_foreach(fields, j, req)
        {
            const char *key = fatia_json_str(req, "key");
            ok = ok && key && !strcmp(key, "metadata.name") && req_matches(req, node);
        }
        if (ok)
            return true;
    }
    return false;
}

bool fatia_dra_device_on_node(const struct fatia_dra_device *d, const char *node,
                              const json_t *labels)
{
    if (d->node)
        return node && !strcmp(d->node, node);
    if (d->all_nodes)
        return true;
    if (d->node_selector)
        return node && selector_matches(d->node_selector, node, labels);
    return false;
}

/* ---- device classes ---- */

void fatia_dra_classes_init(struct fatia_dra_classes *c)
{
    memset(c, 0, sizeof(*c));
}

static void class_release(struct fatia_dra_class *k)
{
    for (size_t i = 0; i < k->n_selectors; i++)
        fatia_cel_program_free(k->selectors[i]);
    fatia_free(k->selectors);
    fatia_free(k->name);
    json_decref(k->config);
}

void fatia_dra_classes_release(struct fatia_dra_classes *c)
{
    for (size_t i = 0; i < c->n; i++)
        class_release(&c->v[i]);
    fatia_free(c->v);
    memset(c, 0, sizeof(*c));
}

const struct fatia_dra_class *fatia_dra_classes_get(const struct fatia_dra_classes *c,
                                                    const char *name)
{
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->v[i].name, name))
            return &c->v[i];
    return NULL;
}

int fatia_dra_classes_add(struct fatia_dra_classes *c, const json_t *deviceclass, char *why,
                          size_t why_n)
{
    const char *name = fatia_json_str(json_object_get(deviceclass, "metadata"), "name");
    const json_t *spec = json_object_get(deviceclass, "spec");
    const json_t *sels = json_object_get(spec, "selectors");
    struct fatia_dra_class k = {0};
    size_t i;
    json_t *s;
    int r;

    if (!name)
        return set_why(why, why_n, "deviceclass: metadata.name is required");
    if (fatia_dra_classes_get(c, name))
        return set_why(why, why_n, "deviceclass/%s: defined twice", name), -FATIA_E_EXISTS;
    k.name = fatia_strdup(name);
    k.selectors = fatia_calloc(json_array_size(sels) + 1, sizeof(*k.selectors));
    if (!k.name || !k.selectors) {
        r = -ENOMEM;
        goto out_release;
    }
    json_array_foreach(sels, i, s)
    {
        const json_t *e = json_object_get(json_object_get(s, "cel"), "expression");
        char cwhy[400];
        if (!json_is_string(e)) {
            r = set_why(why, why_n,
                        "deviceclass/%s: spec.selectors[%zu].cel.expression is "
                        "required",
                        name, i);
            goto out_release;
        }
        r = fatia_cel_compile(json_string_value(e), json_string_length(e),
                              &k.selectors[k.n_selectors], cwhy, sizeof(cwhy));
        if (r == -ENOMEM)
            goto out_release;
        if (r < 0) {
            r = set_why(why, why_n, "deviceclass/%s: spec.selectors[%zu].cel.expression: %s", name,
                        i, cwhy);
            goto out_release;
        }
        k.n_selectors++;
    }
    k.config = json_incref(json_object_get(spec, "config"));
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 8;
        struct fatia_dra_class *v = fatia_reallocarray(c->v, cap, sizeof(*v));
        if (!v) {
            r = -ENOMEM;
            goto out_release;
        }
        c->v = v;
        c->cap = cap;
    }
    c->v[c->n++] = k;
    return 0;
out_release:
    class_release(&k);
    return r;
}

/* ---- allocation state ---- */

int fatia_dra_state_init(struct fatia_dra_state *st, const struct fatia_dra_inventory *inv)
{
    st->n = inv->n;
    st->used = fatia_calloc(inv->n ? inv->n : 1, 1);
    return st->used ? 0 : -ENOMEM;
}

void fatia_dra_state_release(struct fatia_dra_state *st)
{
    fatia_free(st->used);
    st->used = NULL;
    st->n = 0;
}

size_t fatia_dra_state_mark_claim(struct fatia_dra_state *st, const struct fatia_dra_inventory *inv,
                                  const json_t *claim)
{
    const json_t *results = fatia_json_path(claim, "status.allocation.devices.results");
    size_t i, marked = 0;
    json_t *res;

    json_array_foreach(results, i, res)
    {
        const char *driver = fatia_json_str(res, "driver"), *pool = fatia_json_str(res, "pool");
        const char *dev = fatia_json_str(res, "device");
        long idx;
        if (!driver || !pool || !dev || fatia_json_bool(res, "adminAccess", false))
            continue;
        idx = fatia_dra_inventory_find(inv, driver, pool, dev);
        if (idx >= 0 && (size_t)idx < st->n && !st->used[idx]) {
            st->used[idx] = 1;
            marked++;
        }
    }
    return marked;
}

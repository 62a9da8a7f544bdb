/*
 * cel/cel_eval.c: evaluation of a checked CEL tree against one device (see cel.h).
 *
 * A tree walk over values (cel_int.h). Errors are return codes: -FATIA_E_EVAL is a CEL runtime
 * error, which && and || absorb the way CEL specifies (false && error is false, error || true is
 * true; when both sides fail the left error wins); -FATIA_E_COST and -ENOMEM are never
 * absorbed, so an expression that spends its budget stops wherever it is.
 *
 * Cost is charged before the work it pays for (a concatenation charges for its result before
 * allocating it), so the budget also bounds memory: a string costs a tenth of a unit per byte, a
 * list one unit per element, so one evaluation allocates at most about 10 MB of strings or 1 M
 * list elements, and the arena refuses more than CEL_ARENA_MAX bytes in any case.
 *
 * Runtime dispatch is dynamic: the checker proved that some overload may apply, the evaluator
 * looks at the actual value kinds (a dyn attribute may hold an int, a string, ...) and reports
 * "no such overload" when none does, as cel-go does.
 */
#include "base/compat.h"

#include <math.h>

#include "base/alloc.h"
#include "base/error.h"
#include "cel/cel_int.h"

#define CEL_ARENA_MAX   (64u << 20)
#define CEL_ARENA_CHUNK (64u << 10)

struct cel_arena_chunk {
    struct cel_arena_chunk *next;
    size_t used, cap;
    max_align_t data[];
};

void *fatia_cel_alloc(struct cel_eval *ev, size_t n)
{
    struct cel_arena_chunk *c = ev->chunks;
    size_t need = (n + 15) & ~(size_t)15;

    if (need < n)
        return NULL;
    if (!c || c->cap - c->used < need) {
        size_t cap = need > CEL_ARENA_CHUNK ? need : CEL_ARENA_CHUNK;
        if (ev->arena_bytes + cap > CEL_ARENA_MAX)
            return NULL;
        c = fatia_malloc(sizeof(*c) + cap);
        if (!c)
            return NULL;
        c->cap = cap;
        c->used = 0;
        c->next = ev->chunks;
        ev->chunks = c;
        ev->arena_bytes += cap;
    }
    c->used += need;
    return (char *)c->data + c->used - need;
}

static void arena_free(struct cel_eval *ev)
{
    while (ev->chunks) {
        struct cel_arena_chunk *next = ev->chunks->next;
        fatia_free(ev->chunks);
        ev->chunks = next;
    }
}

int fatia_cel_charge(struct cel_eval *ev, uint64_t n)
{
    ev->cost = ev->cost > UINT64_MAX - n ? UINT64_MAX : ev->cost + n;
    if (ev->cost > ev->limit) {
        if (ev->why && ev->why_n)
            snprintf(ev->why, ev->why_n, "evaluation cost exceeds the limit of %" PRIu64,
                     ev->limit);
        return -FATIA_E_COST;
    }
    return 0;
}

int fatia_cel_charge_tenth(struct cel_eval *ev, uint64_t n)
{
    return fatia_cel_charge(ev, n / 10 + (n % 10 != 0));
}

int fatia_cel_runtime_error(struct cel_eval *ev, const struct cel_node *n, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return CEL_ERROR_AT(ev->why, ev->why_n, n->line, n->col, -FATIA_E_EVAL, "%s", msg);
}

const char *fatia_cel_vk_name(const struct cel_val *v)
{
    static const char *const names[] = {
        [VK_NULL] = "null_type", [VK_BOOL] = "bool",        [VK_INT] = "int",
        [VK_UINT] = "uint",      [VK_DOUBLE] = "double",    [VK_STRING] = "string",
        [VK_LIST] = "list",      [VK_MAP] = "map",          [VK_QUANTITY] = "Quantity",
        [VK_SEMVER] = "Semver",  [VK_DEVICE] = "DRADevice", [VK_DEVMAP] = "map",
    };
    return names[v->k];
}

size_t fatia_cel_utf8_count(const char *s, size_t n)
{
    size_t count = 0;

    for (size_t i = 0; i < n; i++)
        count += ((unsigned char)s[i] & 0xC0) != 0x80;
    return count;
}

/* ---- the device ---- */

static void split_name(const char *name, const char *driver, const char **dom, size_t *dom_n,
                       const char **id)
{
    const char *slash = strchr(name, '/');

    if (slash) {
        *dom = name;
        *dom_n = (size_t)(slash - name);
        *id = slash + 1;
    } else {
        *dom = driver ? driver : "";
        *dom_n = strlen(*dom);
        *id = name;
    }
}

static bool name_is(const char *name, const char *driver, const char *domain, size_t domain_n,
                    const char *id, size_t id_n)
{
    const char *d, *i;
    size_t dn;

    split_name(name, driver, &d, &dn, &i);
    return dn == domain_n && !memcmp(d, domain, dn) && strlen(i) == id_n && !memcmp(i, id, id_n);
}

const struct fatia_cel_attr *fatia_cel_dev_attr(const struct fatia_cel_device *dev,
                                                const char *domain, size_t domain_n, const char *id,
                                                size_t id_n)
{
    for (size_t i = 0; i < dev->n_attrs; i++)
        if (name_is(dev->attrs[i].name, dev->driver, domain, domain_n, id, id_n))
            return &dev->attrs[i];
    return NULL;
}

const struct fatia_cel_capacity *fatia_cel_dev_cap(const struct fatia_cel_device *dev,
                                                   const char *domain, size_t domain_n,
                                                   const char *id, size_t id_n)
{
    for (size_t i = 0; i < dev->n_caps; i++)
        if (name_is(dev->caps[i].name, dev->driver, domain, domain_n, id, id_n))
            return &dev->caps[i];
    return NULL;
}

struct cel_val fatia_cel_attr_value(const struct fatia_cel_attr *a)
{
    struct cel_val v = {0};

    switch (a->type) {
    case FATIA_CEL_ATTR_INT:
        v = cel_int(a->i);
        break;
    case FATIA_CEL_ATTR_BOOL:
        v = cel_bool(a->b);
        break;
    case FATIA_CEL_ATTR_STRING:
        v = cel_str(a->s ? a->s : "", a->s ? strlen(a->s) : 0);
        break;
    case FATIA_CEL_ATTR_VERSION:
        v.k = VK_SEMVER;
        v.sv = a->ver;
        break;
    }
    return v;
}

static bool domain_present(const struct fatia_cel_device *dev, bool caps, const char *dom,
                           size_t dom_n)
{
    size_t n = caps ? dev->n_caps : dev->n_attrs;

    for (size_t i = 0; i < n; i++) {
        const char *d, *id;
        size_t dn;
        split_name(caps ? dev->caps[i].name : dev->attrs[i].name, dev->driver, &d, &dn, &id);
        if (dn == dom_n && !memcmp(d, dom, dn))
            return true;
    }
    return false;
}

int fatia_cel_devmap_materialize(struct cel_eval *ev, const struct cel_val *v, struct cel_val *ret)
{
    const struct fatia_cel_device *dev = ev->dev;
    bool caps = v->caps;
    size_t total = caps ? dev->n_caps : dev->n_attrs, n = 0;
    struct cel_map *m;
    int r = fatia_cel_charge_tenth(ev, total);

    if (r < 0)
        return r;
    m = fatia_cel_alloc(ev, sizeof(*m) + 2 * (total ? total : 1) * sizeof(struct cel_val));
    if (!m)
        return -ENOMEM;
    for (size_t i = 0; i < total; i++) {
        const char *d, *id;
        size_t dn;
        bool dup = false;
        split_name(caps ? dev->caps[i].name : dev->attrs[i].name, dev->driver, &d, &dn, &id);
        if (!v->s.p) {
            /* the map of domains: one entry per distinct domain */
            for (size_t j = 0; j < n && !dup; j++)
                dup = m->kv[2 * j].s.n == dn && !memcmp(m->kv[2 * j].s.p, d, dn);
            if (dup)
                continue;
            m->kv[2 * n] = cel_str(d, dn);
            m->kv[2 * n + 1] = (struct cel_val){.k = VK_DEVMAP, .caps = caps};
            m->kv[2 * n + 1].s.p = d;
            m->kv[2 * n + 1].s.n = dn;
            n++;
            continue;
        }
        if (dn != v->s.n || memcmp(d, v->s.p, dn))
            continue;
        m->kv[2 * n] = cel_str(id, strlen(id));
        if (caps) {
            m->kv[2 * n + 1] = (struct cel_val){.k = VK_QUANTITY};
            m->kv[2 * n + 1].q = &dev->caps[i].value;
        } else {
            m->kv[2 * n + 1] = fatia_cel_attr_value(&dev->attrs[i]);
        }
        n++;
    }
    m->n = n;
    *ret = (struct cel_val){.k = VK_MAP};
    ret->m = m;
    return 0;
}

/* ---- equality and ordering ---- */

static int cmp_int_double(int64_t i, double d)
{
    double t;

    if (d >= 9223372036854775808.0)
        return -1;
    if (d < -9223372036854775808.0)
        return 1;
    t = trunc(d);
    if (i < (int64_t)t)
        return -1;
    if (i > (int64_t)t)
        return 1;
    return d > t ? -1 : d < t ? 1 : 0;
}

static int cmp_uint_double(uint64_t u, double d)
{
    double t;

    if (d >= 18446744073709551616.0)
        return -1;
    if (d < 0)
        return 1;
    t = trunc(d);
    if (u < (uint64_t)t)
        return -1;
    if (u > (uint64_t)t)
        return 1;
    return d > t ? -1 : 0;
}

/* Numeric comparison across int, uint and double; false when a NaN is involved. */
static bool num_cmp(const struct cel_val *a, const struct cel_val *b, int *ret)
{
    if (a->k == VK_DOUBLE && b->k == VK_DOUBLE) {
        if (isnan(a->d) || isnan(b->d))
            return false;
        *ret = a->d < b->d ? -1 : a->d > b->d;
        return true;
    }
    if (a->k == VK_DOUBLE || b->k == VK_DOUBLE) {
        const struct cel_val *x = a->k == VK_DOUBLE ? b : a, *d = a->k == VK_DOUBLE ? a : b;
        int c;
        if (isnan(d->d))
            return false;
        c = x->k == VK_INT ? cmp_int_double(x->i, d->d) : cmp_uint_double(x->u, d->d);
        *ret = a->k == VK_DOUBLE ? -c : c;
        return true;
    }
    if (a->k == VK_INT && b->k == VK_INT)
        *ret = a->i < b->i ? -1 : a->i > b->i;
    else if (a->k == VK_UINT && b->k == VK_UINT)
        *ret = a->u < b->u ? -1 : a->u > b->u;
    else if (a->k == VK_INT)
        *ret = a->i < 0 ? -1 : ((uint64_t)a->i < b->u ? -1 : (uint64_t)a->i > b->u);
    else
        *ret = b->i < 0 ? 1 : (a->u < (uint64_t)b->i ? -1 : a->u > (uint64_t)b->i);
    return true;
}

static bool is_num(const struct cel_val *v)
{
    return v->k == VK_INT || v->k == VK_UINT || v->k == VK_DOUBLE;
}

static const struct cel_val *map_find_raw(const struct cel_map *m, const struct cel_val *key);

int fatia_cel_equals(struct cel_eval *ev, const struct cel_val *a, const struct cel_val *b,
                     bool *ret)
{
    struct cel_val ma, mb;
    int r, c;

    if (a->k == VK_DEVMAP || b->k == VK_DEVMAP) {
        if (a->k == VK_DEVMAP) {
            r = fatia_cel_devmap_materialize(ev, a, &ma);
            if (r < 0)
                return r;
            a = &ma;
        }
        if (b->k == VK_DEVMAP) {
            r = fatia_cel_devmap_materialize(ev, b, &mb);
            if (r < 0)
                return r;
            b = &mb;
        }
    }
    if (is_num(a) && is_num(b)) {
        *ret = num_cmp(a, b, &c) && c == 0;
        return 0;
    }
    if (a->k != b->k) {
        *ret = false;
        return 0;
    }
    switch (a->k) {
    case VK_NULL:
        *ret = true;
        return 0;
    case VK_BOOL:
        *ret = a->b == b->b;
        return 0;
    case VK_STRING:
        r = fatia_cel_charge_tenth(ev, FATIA_MIN(a->s.n, b->s.n));
        *ret = a->s.n == b->s.n && !memcmp(a->s.p, b->s.p, a->s.n);
        return r;
    case VK_QUANTITY:
        *ret = fatia_quantity_cmp(a->q, b->q) == 0;
        return 0;
    case VK_SEMVER:
        *ret = fatia_semver_cmp(a->sv, b->sv) == 0;
        return 0;
    case VK_DEVICE:
        *ret = true;
        return 0;
    case VK_LIST:
        if (a->l->n != b->l->n) {
            *ret = false;
            return 0;
        }
        for (size_t i = 0; i < a->l->n; i++) {
            bool eq;
            r = fatia_cel_charge(ev, 1);
            if (r == 0)
                r = fatia_cel_equals(ev, &a->l->v[i], &b->l->v[i], &eq);
            if (r < 0)
                return r;
            if (!eq) {
                *ret = false;
                return 0;
            }
        }
        *ret = true;
        return 0;
    case VK_MAP:
        if (a->m->n != b->m->n) {
            *ret = false;
            return 0;
        }
        for (size_t i = 0; i < a->m->n; i++) {
            const struct cel_val *other;
            bool eq;
            r = fatia_cel_charge(ev, 1);
            if (r < 0)
                return r;
            other = map_find_raw(b->m, &a->m->kv[2 * i]);
            if (!other) {
                *ret = false;
                return 0;
            }
            r = fatia_cel_equals(ev, &a->m->kv[2 * i + 1], other, &eq);
            if (r < 0)
                return r;
            if (!eq) {
                *ret = false;
                return 0;
            }
        }
        *ret = true;
        return 0;
    }
    *ret = false;
    return 0;
}

/* Map keys are bool, int, uint or string (checked when the map is built); numeric keys compare
 * across int and uint as CEL's heterogeneous equality does. */
static bool key_equal(const struct cel_val *a, const struct cel_val *b)
{
    int c;

    if (is_num(a) && is_num(b))
        return num_cmp(a, b, &c) && c == 0;
    if (a->k != b->k)
        return false;
    if (a->k == VK_BOOL)
        return a->b == b->b;
    return a->k == VK_STRING && a->s.n == b->s.n && !memcmp(a->s.p, b->s.p, a->s.n);
}

static const struct cel_val *map_find_raw(const struct cel_map *m, const struct cel_val *key)
{
    for (size_t i = 0; i < m->n; i++)
        if (key_equal(&m->kv[2 * i], key))
            return &m->kv[2 * i + 1];
    return NULL;
}

/* A lookup charges one unit per entry it may compare (the map is a list of pairs). */
static int map_find(struct cel_eval *ev, const struct cel_map *m, const struct cel_val *key,
                    const struct cel_val **ret)
{
    int r = fatia_cel_charge(ev, m->n);

    if (r < 0)
        return r;
    *ret = map_find_raw(m, key);
    return 0;
}

/* ---- evaluation ---- */

static int eval(struct cel_eval *ev, const struct cel_node *n, struct cel_val *out);

static int no_overload(struct cel_eval *ev, const struct cel_node *n, const char *op,
                       const struct cel_val *a, const struct cel_val *b)
{
    if (b)
        return fatia_cel_runtime_error(ev, n, "no such overload for '%s' applied to (%s, %s)", op,
                                       fatia_cel_vk_name(a), fatia_cel_vk_name(b));
    return fatia_cel_runtime_error(ev, n, "no such overload for '%s' applied to (%s)", op,
                                   fatia_cel_vk_name(a));
}

/* Member access by key (a.f and a["f"]); has_only: presence test for has() and `in`. */
static int lookup(struct cel_eval *ev, const struct cel_node *n, const struct cel_val *obj,
                  const struct cel_val *key, bool has_only, struct cel_val *out)
{
    int r;

    switch (obj->k) {
    case VK_DEVICE: {
        static const char *const fields[] = {"driver", "attributes", "capacity",
                                             "allowMultipleAllocations"};
        size_t f;
        for (f = 0; f < FATIA_ARRAY_SIZE(fields); f++)
            if (key->k == VK_STRING && key->s.n == strlen(fields[f]) &&
                !memcmp(key->s.p, fields[f], key->s.n))
                break;
        if (f == FATIA_ARRAY_SIZE(fields))
            return fatia_cel_runtime_error(ev, n, "no such field");
        if (has_only) {
            *out = cel_bool(true);
            return 0;
        }
        if (f == 0) {
            const char *d = ev->dev->driver ? ev->dev->driver : "";
            *out = cel_str(d, strlen(d));
        } else if (f == 3) {
            *out = cel_bool(ev->dev->allow_multiple_allocations);
        } else {
            *out = (struct cel_val){.k = VK_DEVMAP, .caps = f == 2};
        }
        return 0;
    }
    case VK_DEVMAP:
        if (key->k != VK_STRING)
            return fatia_cel_runtime_error(ev, n, "no such key: %s key in a map of string keys",
                                           fatia_cel_vk_name(key));
        if (!obj->s.p) {
            /* the map of domains: an unknown domain is an empty map, even for has() */
            if (has_only) {
                *out = cel_bool(true);
                return 0;
            }
            *out = (struct cel_val){.k = VK_DEVMAP, .caps = obj->caps};
            out->s = key->s;
            return 0;
        }
        if (obj->caps) {
            const struct fatia_cel_capacity *c =
                fatia_cel_dev_cap(ev->dev, obj->s.p, obj->s.n, key->s.p, key->s.n);
            if (has_only) {
                *out = cel_bool(c != NULL);
                return 0;
            }
            if (!c)
                return fatia_cel_runtime_error(ev, n, "no such key: %.*s", (int)key->s.n, key->s.p);
            *out = (struct cel_val){.k = VK_QUANTITY};
            out->q = &c->value;
            return 0;
        } else {
            const struct fatia_cel_attr *a =
                fatia_cel_dev_attr(ev->dev, obj->s.p, obj->s.n, key->s.p, key->s.n);
            if (has_only) {
                *out = cel_bool(a != NULL);
                return 0;
            }
            if (!a)
                return fatia_cel_runtime_error(ev, n, "no such key: %.*s", (int)key->s.n, key->s.p);
            *out = fatia_cel_attr_value(a);
            return 0;
        }
    case VK_MAP: {
        const struct cel_val *v;
        r = map_find(ev, obj->m, key, &v);
        if (r < 0)
            return r;
        if (has_only) {
            *out = cel_bool(v != NULL);
            return 0;
        }
        if (!v) {
            if (key->k == VK_STRING)
                return fatia_cel_runtime_error(ev, n, "no such key: %.*s", (int)key->s.n, key->s.p);
            return fatia_cel_runtime_error(ev, n, "no such key");
        }
        *out = *v;
        return 0;
    }
    case VK_LIST: {
        int64_t idx;
        if (key->k == VK_INT) {
            idx = key->i;
        } else if (key->k == VK_UINT && key->u <= INT64_MAX) {
            idx = (int64_t)key->u;
        } else if (key->k == VK_DOUBLE && key->d == trunc(key->d) && fabs(key->d) < 9e18) {
            idx = (int64_t)key->d;
        } else {
            return no_overload(ev, n, "_[_]", obj, key);
        }
        if (idx < 0 || (uint64_t)idx >= obj->l->n)
            return fatia_cel_runtime_error(ev, n, "index out of range: %" PRId64, idx);
        *out = obj->l->v[idx];
        return 0;
    }
    default:
        return no_overload(ev, n, has_only ? "has" : "_[_]", obj, key);
    }
}

static int eval_binop(struct cel_eval *ev, const struct cel_node *n, struct cel_val *a,
                      struct cel_val *b, struct cel_val *out)
{
    static const char *const names[] = {
        [OP_EQ] = "_==_", [OP_NE] = "_!=_", [OP_LT] = "_<_",  [OP_LE] = "_<=_",
        [OP_GT] = "_>_",  [OP_GE] = "_>=_", [OP_IN] = "@in",  [OP_ADD] = "_+_",
        [OP_SUB] = "_-_", [OP_MUL] = "_*_", [OP_DIV] = "_/_", [OP_MOD] = "_%_",
    };
    bool eq;
    int r, c = 0;

    switch (n->op) {
    case OP_EQ:
    case OP_NE:
        r = fatia_cel_equals(ev, a, b, &eq);
        if (r < 0)
            return r;
        *out = cel_bool(n->op == OP_EQ ? eq : !eq);
        return 0;
    case OP_LT:
    case OP_LE:
    case OP_GT:
    case OP_GE:
        if (is_num(a) && is_num(b)) {
            if (!num_cmp(a, b, &c)) {
                *out = cel_bool(false);
                return 0;
            }
        } else if (a->k == VK_STRING && b->k == VK_STRING) {
            r = fatia_cel_charge_tenth(ev, FATIA_MIN(a->s.n, b->s.n));
            if (r < 0)
                return r;
            c = memcmp(a->s.p, b->s.p, FATIA_MIN(a->s.n, b->s.n));
            if (c == 0)
                c = a->s.n < b->s.n ? -1 : a->s.n > b->s.n;
        } else if (a->k == VK_BOOL && b->k == VK_BOOL) {
            c = (int)a->b - (int)b->b;
        } else {
            return no_overload(ev, n, names[n->op], a, b);
        }
        *out = cel_bool(n->op == OP_LT   ? c < 0
                        : n->op == OP_LE ? c <= 0
                        : n->op == OP_GT ? c > 0
                                         : c >= 0);
        return 0;
    case OP_IN:
        if (b->k == VK_LIST) {
            for (size_t i = 0; i < b->l->n; i++) {
                r = fatia_cel_charge(ev, 1);
                if (r == 0)
                    r = fatia_cel_equals(ev, a, &b->l->v[i], &eq);
                if (r < 0)
                    return r;
                if (eq) {
                    *out = cel_bool(true);
                    return 0;
                }
            }
            *out = cel_bool(false);
            return 0;
        }
        if (b->k == VK_DEVMAP) {
            if (a->k != VK_STRING) {
                *out = cel_bool(false);
                return 0;
            }
            if (b->s.p)
                return lookup(ev, n, b, a, true, out);
            *out = cel_bool(domain_present(ev->dev, b->caps, a->s.p, a->s.n));
            return 0;
        }
        if (b->k == VK_MAP) {
            const struct cel_val *v;
            r = map_find(ev, b->m, a, &v);
            if (r < 0)
                return r;
            *out = cel_bool(v != NULL);
            return 0;
        }
        return no_overload(ev, n, "@in", a, b);
    default:
        break;
    }
    /* arithmetic: same kinds only (no implicit conversion in CEL) */
    if (a->k != b->k || !(is_num(a) || a->k == VK_STRING || a->k == VK_LIST) ||
        ((a->k == VK_STRING || a->k == VK_LIST) && n->op != OP_ADD) ||
        (a->k == VK_DOUBLE && n->op == OP_MOD))
        return no_overload(ev, n, names[n->op], a, b);
    out->k = a->k;
    switch (a->k) {
    case VK_INT: {
        int64_t x = a->i, y = b->i, z = 0;
        bool of = false;
        switch (n->op) {
        case OP_ADD:
            of = __builtin_add_overflow(x, y, &z);
            break;
        case OP_SUB:
            of = __builtin_sub_overflow(x, y, &z);
            break;
        case OP_MUL:
            of = __builtin_mul_overflow(x, y, &z);
            break;
        case OP_DIV:
        case OP_MOD:
            if (y == 0)
                return fatia_cel_runtime_error(
                    ev, n, n->op == OP_DIV ? "division by zero" : "modulus by zero");
            if (x == INT64_MIN && y == -1)
                of = true;
            else
                z = n->op == OP_DIV ? x / y : x % y;
            break;
        }
        if (of)
            return fatia_cel_runtime_error(ev, n, "integer overflow");
        out->i = z;
        return 0;
    }
    case VK_UINT: {
        uint64_t x = a->u, y = b->u, z = 0;
        bool of = false;
        switch (n->op) {
        case OP_ADD:
            of = __builtin_add_overflow(x, y, &z);
            break;
        case OP_SUB:
            of = __builtin_sub_overflow(x, y, &z);
            break;
        case OP_MUL:
            of = __builtin_mul_overflow(x, y, &z);
            break;
        case OP_DIV:
        case OP_MOD:
            if (y == 0)
                return fatia_cel_runtime_error(
                    ev, n, n->op == OP_DIV ? "division by zero" : "modulus by zero");
            z = n->op == OP_DIV ? x / y : x % y;
            break;
        }
        if (of)
            return fatia_cel_runtime_error(ev, n, "unsigned integer overflow");
        out->u = z;
        return 0;
    }
    case VK_DOUBLE:
        out->d = n->op == OP_ADD   ? a->d + b->d
                 : n->op == OP_SUB ? a->d - b->d
                 : n->op == OP_MUL ? a->d * b->d
                                   : a->d / b->d;
        return 0;
    case VK_STRING: {
        size_t len = a->s.n + b->s.n;
        char *p;
        r = fatia_cel_charge_tenth(ev, len);
        if (r < 0)
            return r;
        p = fatia_cel_alloc(ev, len + 1);
        if (!p)
            return -ENOMEM;
        memcpy(p, a->s.p, a->s.n);
        memcpy(p + a->s.n, b->s.p, b->s.n);
        p[len] = '\0';
        *out = cel_str(p, len);
        return 0;
    }
    default: {
        size_t len = a->l->n + b->l->n;
        struct cel_list *l;
        r = fatia_cel_charge(ev, len);
        if (r < 0)
            return r;
        l = fatia_cel_alloc(ev, sizeof(*l) + len * sizeof(struct cel_val));
        if (!l)
            return -ENOMEM;
        l->n = len;
        if (a->l->n)
            memcpy(l->v, a->l->v, a->l->n * sizeof(struct cel_val));
        if (b->l->n)
            memcpy(l->v + a->l->n, b->l->v, b->l->n * sizeof(struct cel_val));
        *out = (struct cel_val){.k = VK_LIST};
        out->l = l;
        return 0;
    }
    }
}

/* && and ||: CEL's commutative error handling. */
static int eval_logic(struct cel_eval *ev, const struct cel_node *n, struct cel_val *out)
{
    bool is_and = n->k == NK_AND;
    struct cel_val a, b;
    char saved[512] = "";
    int ra, rb;

    ra = eval(ev, n->a, &a);
    if (ra == -FATIA_E_COST || ra == -ENOMEM)
        return ra;
    if (ra == 0 && a.k != VK_BOOL)
        ra = no_overload(ev, n, is_and ? "_&&_" : "_||_", &a, NULL);
    if (ra == 0 && a.b != is_and) {
        *out = cel_bool(!is_and); /* false && _, true || _ */
        return 0;
    }
    if (ra < 0 && ev->why)
        snprintf(saved, sizeof(saved), "%s", ev->why);
    rb = eval(ev, n->b, &b);
    if (rb == -FATIA_E_COST || rb == -ENOMEM)
        return rb;
    if (rb == 0 && b.k != VK_BOOL)
        rb = no_overload(ev, n, is_and ? "_&&_" : "_||_", &b, NULL);
    if (rb == 0 && b.b != is_and) {
        *out = cel_bool(!is_and);
        return 0;
    }
    if (ra < 0) {
        if (ev->why && ev->why_n)
            snprintf(ev->why, ev->why_n, "%s", saved);
        return ra;
    }
    if (rb < 0)
        return rb;
    *out = cel_bool(is_and);
    return 0;
}

/* The elements a comprehension iterates: a list's elements or a map's keys. */
static int range_items(struct cel_eval *ev, const struct cel_node *n, struct cel_val *range,
                       const struct cel_val **items, size_t *count, size_t *stride)
{
    int r;

    if (range->k == VK_DEVMAP) {
        r = fatia_cel_devmap_materialize(ev, range, range);
        if (r < 0)
            return r;
    }
    if (range->k == VK_LIST) {
        *items = range->l->v;
        *count = range->l->n;
        *stride = 1;
        return 0;
    }
    if (range->k == VK_MAP) {
        *items = range->m->kv;
        *count = range->m->n;
        *stride = 2;
        return 0;
    }
    return fatia_cel_runtime_error(ev, n,
                                   "expression of type '%s' cannot be the range of a "
                                   "comprehension",
                                   fatia_cel_vk_name(range));
}

static int eval_comp(struct cel_eval *ev, const struct cel_node *n, struct cel_val *out)
{
    struct cel_val range, v, t;
    const struct cel_val *items = NULL;
    size_t count = 0, stride = 1, found = 0, kept = 0;
    struct cel_list *list = NULL;
    int r, first_err = 0;
    char saved[512] = "";

    r = eval(ev, n->a, &range);
    if (r < 0)
        return r;
    r = range_items(ev, n->a, &range, &items, &count, &stride);
    if (r < 0)
        return r;
    if (n->op == CK_MAP || n->op == CK_MAP_FILTER || n->op == CK_FILTER) {
        r = fatia_cel_charge(ev, count);
        if (r < 0)
            return r;
        list = fatia_cel_alloc(ev, sizeof(*list) + (count ? count : 1) * sizeof(struct cel_val));
        if (!list)
            return -ENOMEM;
    }
    for (size_t i = 0; i < count; i++) {
        r = fatia_cel_charge(ev, 2);
        if (r < 0)
            return r;
        ev->slots[n->slot] = items[i * stride];
        r = eval(ev, n->b, &v);
        if (r == 0 && n->op != CK_MAP && v.k != VK_BOOL)
            r = fatia_cel_runtime_error(ev, n->b, "the predicate returned %s, not bool",
                                        fatia_cel_vk_name(&v));
        if (r == -FATIA_E_COST || r == -ENOMEM)
            return r;
        switch (n->op) {
        case CK_ALL:
        case CK_EXISTS:
            /* all: any false wins over errors; exists: any true wins over errors */
            if (r < 0) {
                if (!first_err) {
                    first_err = r;
                    if (ev->why)
                        snprintf(saved, sizeof(saved), "%s", ev->why);
                }
                continue;
            }
            if (v.b == (n->op == CK_EXISTS)) {
                *out = cel_bool(n->op == CK_EXISTS);
                return 0;
            }
            break;
        case CK_EXISTS_ONE:
            if (r < 0)
                return r;
            found += v.b;
            break;
        case CK_MAP:
            if (r < 0)
                return r;
            list->v[kept++] = v;
            break;
        case CK_FILTER:
            if (r < 0)
                return r;
            if (v.b)
                list->v[kept++] = items[i * stride];
            break;
        case CK_MAP_FILTER:
            if (r < 0)
                return r;
            if (!v.b)
                break;
            r = eval(ev, n->c, &t);
            if (r < 0)
                return r;
            list->v[kept++] = t;
            break;
        }
    }
    switch (n->op) {
    case CK_ALL:
    case CK_EXISTS:
        if (first_err) {
            if (ev->why && ev->why_n)
                snprintf(ev->why, ev->why_n, "%s", saved);
            return first_err;
        }
        *out = cel_bool(n->op == CK_ALL);
        return 0;
    case CK_EXISTS_ONE:
        *out = cel_bool(found == 1);
        return 0;
    default:
        list->n = kept;
        *out = (struct cel_val){.k = VK_LIST};
        out->l = list;
        return 0;
    }
}

static int eval(struct cel_eval *ev, const struct cel_node *n, struct cel_val *out)
{
    struct cel_val a, b, key;
    int r;

    switch (n->k) {
    case NK_LIT:
        *out = n->lit;
        return 0;
    case NK_IDENT:
        r = fatia_cel_charge(ev, 1);
        if (r < 0)
            return r;
        if (n->slot == CEL_SLOT_SELF)
            *out = ev->self;
        else if (n->slot == CEL_SLOT_OLD_SELF)
            *out = ev->old_self;
        else if (n->slot < 0)
            *out = (struct cel_val){.k = VK_DEVICE};
        else
            *out = ev->slots[n->slot];
        return 0;
    case NK_SELECT:
    case NK_HAS:
        r = eval(ev, n->a, &a);
        if (r < 0)
            return r;
        r = fatia_cel_charge(ev, 1);
        if (r < 0)
            return r;
        key = cel_str(n->name, strlen(n->name));
        return lookup(ev, n, &a, &key, n->k == NK_HAS, out);
    case NK_INDEX:
        r = eval(ev, n->a, &a);
        if (r < 0)
            return r;
        r = eval(ev, n->b, &key);
        if (r < 0)
            return r;
        r = fatia_cel_charge(ev, 1);
        if (r < 0)
            return r;
        return lookup(ev, n, &a, &key, false, out);
    case NK_CALL: {
        struct cel_val args[8];
        if (n->a) {
            r = eval(ev, n->a, &a);
            if (r < 0)
                return r;
        }
        for (size_t i = 0; i < n->n_args && i < FATIA_ARRAY_SIZE(args); i++) {
            r = eval(ev, n->args[i], &args[i]);
            if (r < 0)
                return r;
        }
        r = fatia_cel_charge(ev, 1);
        if (r < 0)
            return r;
        return fatia_cel_call(ev, n, n->a ? &a : NULL, args, n->n_args, out);
    }
    case NK_LIST: {
        struct cel_list *l;
        r = fatia_cel_charge(ev, 10);
        if (r < 0)
            return r;
        l = fatia_cel_alloc(ev, sizeof(*l) + (n->n_args ? n->n_args : 1) * sizeof(struct cel_val));
        if (!l)
            return -ENOMEM;
        for (size_t i = 0; i < n->n_args; i++) {
            r = eval(ev, n->args[i], &l->v[i]);
            if (r < 0)
                return r;
        }
        l->n = n->n_args;
        *out = (struct cel_val){.k = VK_LIST};
        out->l = l;
        return 0;
    }
    case NK_MAP: {
        struct cel_map *m;
        size_t count = n->n_args / 2;
        r = fatia_cel_charge(ev, 30);
        if (r < 0)
            return r;
        m = fatia_cel_alloc(ev, sizeof(*m) + (count ? count : 1) * 2 * sizeof(struct cel_val));
        if (!m)
            return -ENOMEM;
        m->n = 0;
        for (size_t i = 0; i < count; i++) {
            const struct cel_val *dup;
            r = eval(ev, n->args[2 * i], &m->kv[2 * i]);
            if (r == 0)
                r = eval(ev, n->args[2 * i + 1], &m->kv[2 * i + 1]);
            if (r < 0)
                return r;
            if (m->kv[2 * i].k != VK_BOOL && m->kv[2 * i].k != VK_INT &&
                m->kv[2 * i].k != VK_UINT && m->kv[2 * i].k != VK_STRING)
                return fatia_cel_runtime_error(ev, n->args[2 * i], "unsupported map key type %s",
                                               fatia_cel_vk_name(&m->kv[2 * i]));
            dup = map_find_raw(m, &m->kv[2 * i]);
            if (dup)
                return fatia_cel_runtime_error(ev, n->args[2 * i], "failed with repeated key");
            m->n++;
        }
        *out = (struct cel_val){.k = VK_MAP};
        out->m = m;
        return 0;
    }
    case NK_NOT:
    case NK_NEG:
        r = eval(ev, n->a, &a);
        if (r < 0)
            return r;
        r = fatia_cel_charge(ev, 1);
        if (r < 0)
            return r;
        if (n->k == NK_NOT) {
            if (a.k != VK_BOOL)
                return no_overload(ev, n, "!_", &a, NULL);
            *out = cel_bool(!a.b);
            return 0;
        }
        if (a.k == VK_INT) {
            if (a.i == INT64_MIN)
                return fatia_cel_runtime_error(ev, n, "integer overflow");
            *out = cel_int(-a.i);
            return 0;
        }
        if (a.k == VK_DOUBLE) {
            *out = a;
            out->d = -a.d;
            return 0;
        }
        return no_overload(ev, n, "-_", &a, NULL);
    case NK_AND:
    case NK_OR:
        return eval_logic(ev, n, out);
    case NK_COND:
        r = eval(ev, n->a, &a);
        if (r < 0)
            return r;
        if (a.k != VK_BOOL)
            return no_overload(ev, n, "_?_:_", &a, NULL);
        return eval(ev, a.b ? n->b : n->c, out);
    case NK_BINOP:
        r = eval(ev, n->a, &a);
        if (r < 0)
            return r;
        r = eval(ev, n->b, &b);
        if (r < 0)
            return r;
        r = fatia_cel_charge(ev, 1);
        if (r < 0)
            return r;
        return eval_binop(ev, n, &a, &b, out);
    case NK_COMP:
        return eval_comp(ev, n, out);
    case NK_BIND:
        r = eval(ev, n->a, &a);
        if (r < 0)
            return r;
        ev->slots[n->slot] = a;
        return eval(ev, n->b, out);
    }
    return fatia_cel_runtime_error(ev, n, "internal error: unknown node");
}

int fatia_cel_eval_root(struct cel_eval *ev, struct cel_val *ret)
{
    return eval(ev, ev->prog->root, ret);
}

void fatia_cel_eval_release(struct cel_eval *ev)
{
    arena_free(ev);
}

int fatia_cel_eval_device(const struct fatia_cel_program *p, const struct fatia_cel_device *dev,
                          uint64_t cost_limit, bool *ret_match, uint64_t *ret_cost, char *why,
                          size_t why_n)
{
    struct cel_eval ev = {.prog = p,
                          .dev = dev,
                          .limit = cost_limit ? cost_limit : FATIA_CEL_COST_LIMIT,
                          .why = why,
                          .why_n = why_n};
    struct cel_val slots[CEL_MAX_DEPTH], v;
    int r;

    if (why && why_n)
        why[0] = '\0';
    if (p->n_slots > (int)FATIA_ARRAY_SIZE(slots)) {
        ev.slots = fatia_calloc((size_t)p->n_slots, sizeof(*ev.slots));
        if (!ev.slots)
            return -ENOMEM;
    } else {
        ev.slots = slots;
    }
    r = eval(&ev, p->root, &v);
    if (r == 0 && v.k != VK_BOOL)
        r = fatia_cel_runtime_error(&ev, p->root, "the expression returned %s, not bool",
                                    fatia_cel_vk_name(&v));
    if (r == 0)
        *ret_match = v.b;
    if (ret_cost)
        *ret_cost = ev.cost;
    arena_free(&ev);
    if (ev.slots != slots)
        fatia_free(ev.slots);
    return r;
}

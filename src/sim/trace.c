/*
 * sim/trace.c: traces for `fatia sim`: the Alibaba GPU-sharing trace (cluster-trace-gpu-v2023),
 * its node list as a fleet, and fatia's own CSV (docs/sim.md).
 *
 * CSV here is the plain kind these files use: a header line, comma-separated fields, no quoting
 * needed (fatia's `resources` column separates its entries with ';'); a field may be wrapped in
 * double quotes, which are dropped. Blank lines and lines starting with '#' are skipped. Every
 * problem is a diagnostic with file, line and column, and a trace with errors is not run.
 *
 * Pods with equal pod specs share a shape (fatia_sim_sub.shape), so the simulator compiles each
 * shape once: the Alibaba default trace has 8,152 pods and a few hundred shapes.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/map.h"
#include "base/str.h"
#include "demand/profile.h"
#include "model/quantity.h"
#include "sim/sim.h"

#define MAX_FIELDS 32

struct csv {
    const char *file;
    const char *p, *end;
    uint32_t line;
    char *fields[MAX_FIELDS];
    uint32_t cols[MAX_FIELDS];
    size_t n;
    char buf[4096];
};

/* Next record into c->fields; 1, 0 at the end, -EINVAL (line too long, too many fields). */
static int csv_next(struct csv *c, struct fatia_diag *diag)
{
    for (;;) {
        const char *nl;
        size_t len, o = 0;
        if (c->p >= c->end)
            return 0;
        nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
        len = nl ? (size_t)(nl - c->p) : (size_t)(c->end - c->p);
        c->line++;
        if (len && c->p[len - 1] == '\r')
            len--;
        if (!len || c->p[0] == '#') {
            c->p = nl ? nl + 1 : c->end;
            continue;
        }
        if (len >= sizeof(c->buf)) {
            fatia_diag_add(diag, FATIA_DIAG_ERROR, c->file, c->line, 1, NULL, NULL,
                           "line longer than %zu bytes", sizeof(c->buf) - 1);
            return -EINVAL;
        }
        memcpy(c->buf, c->p, len);
        c->buf[len] = '\0';
        c->p = nl ? nl + 1 : c->end;
        c->n = 0;
        while (o <= len) {
            char *f = c->buf + o, *e;
            if (c->n == MAX_FIELDS) {
                fatia_diag_add(diag, FATIA_DIAG_ERROR, c->file, c->line, (uint32_t)o + 1, NULL,
                               NULL, "more than %d fields", MAX_FIELDS);
                return -EINVAL;
            }
            e = strchr(f, ',');
            if (e)
                *e = '\0';
            c->cols[c->n] = (uint32_t)o + 1;
            /* trim spaces and one pair of quotes */
            while (*f == ' ')
                f++;
            {
                size_t fl = strlen(f);
                while (fl && f[fl - 1] == ' ')
                    f[--fl] = '\0';
                if (fl >= 2 && f[0] == '"' && f[fl - 1] == '"') {
                    f[fl - 1] = '\0';
                    f++;
                }
            }
            c->fields[c->n++] = f;
            if (!e)
                break;
            o = (size_t)(e - c->buf) + 1;
        }
        return 1;
    }
}

static int col_of(const struct csv *hdr, const char *name)
{
    for (size_t i = 0; i < hdr->n; i++)
        if (!strcmp(hdr->fields[i], name))
            return (int)i;
    return -1;
}

void fatia_sim_trace_init(struct fatia_sim_trace *t)
{
    memset(t, 0, sizeof(*t));
}

void fatia_sim_trace_release(struct fatia_sim_trace *t)
{
    for (size_t i = 0; i < t->n; i++) {
        fatia_free(t->v[i].ns);
        fatia_free(t->v[i].name);
        fatia_free(t->v[i].queue);
        fatia_free(t->v[i].profile);
        fatia_free(t->v[i].priority_class);
        json_decref(t->v[i].spec);
    }
    fatia_free(t->v);
    fatia_free(t->file);
    memset(t, 0, sizeof(*t));
}

static int push_sub(struct fatia_sim_trace *t, const struct fatia_sim_sub *s)
{
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 1024;
        struct fatia_sim_sub *nv = fatia_reallocarray(t->v, nc, sizeof(*nv));
        if (!nv)
            return -ENOMEM;
        t->v = nv;
        t->cap = nc;
    }
    t->v[t->n++] = *s;
    return 0;
}

/* Shapes: equal specs (by their compact JSON text) share one json_t and one shape number. */
struct shapes {
    struct fatia_strmap map; /* text -> index + 1 */
    char **texts;
    json_t **specs;
    size_t n, cap;
};

static void shapes_release(struct shapes *s)
{
    fatia_strmap_release(&s->map);
    for (size_t i = 0; i < s->n; i++) {
        fatia_free(s->texts[i]);
        json_decref(s->specs[i]);
    }
    fatia_free(s->texts);
    fatia_free(s->specs);
}

/* Takes spec; returns the shared spec (new reference) and its shape in *ret_shape. */
static json_t *shape_of(struct shapes *s, json_t *spec, uint32_t *ret_shape)
{
    char *text = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
    char *copy;

    if (!text) {
        json_decref(spec);
        return NULL;
    }
    if (fatia_strmap_has(&s->map, text)) {
        size_t i = (size_t)(uintptr_t)fatia_strmap_get(&s->map, text) - 1;
        free(text); /* jansson's allocator */
        json_decref(spec);
        *ret_shape = (uint32_t)i;
        return json_incref(s->specs[i]);
    }
    copy = fatia_strdup(text);
    free(text);
    if (!copy)
        goto oom;
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 64;
        char **nt = fatia_reallocarray(s->texts, nc, sizeof(*nt));
        if (!nt)
            goto oom;
        s->texts = nt;
        json_t **ns = fatia_reallocarray(s->specs, nc, sizeof(*ns));
        if (!ns)
            goto oom;
        s->specs = ns;
        s->cap = nc;
    }
    s->texts[s->n] = copy;
    s->specs[s->n] = spec;
    if (fatia_strmap_put(&s->map, copy, (void *)(uintptr_t)(s->n + 1)) < 0) {
        s->texts[s->n] = NULL;
        goto oom;
    }
    *ret_shape = (uint32_t)s->n++;
    return json_incref(spec);
oom:
    fatia_free(copy);
    json_decref(spec);
    return NULL;
}

static bool parse_i64(const char *s, int64_t *ret)
{
    return s && *s && fatia_parse_i64(s, ret) == 0;
}

/* ---- Alibaba ---- */

static json_t *alibaba_spec(int64_t cpu, int64_t mem, int64_t num_gpu, int64_t milli,
                            const char *gpu_spec)
{
    json_t *req = json_object(), *spec;
    char q[32];

    snprintf(q, sizeof(q), "%" PRId64 "m", cpu);
    json_object_set_new(req, "cpu", json_string(q));
    snprintf(q, sizeof(q), "%" PRId64 "Mi", mem);
    json_object_set_new(req, "memory", json_string(q));
    if (num_gpu > 0) {
        snprintf(q, sizeof(q), "%" PRId64, num_gpu == 1 ? milli : num_gpu * 1000);
        json_object_set_new(req, "fatia.dev/gpu-milli", json_string(q));
    }
    spec = json_pack("{s:[{s:s,s:s,s:{s:o}}]}", "containers", "name", "main", "image", "trace",
                     "resources", "requests", req);
    if (spec && gpu_spec && *gpu_spec) {
        json_t *vals = json_array();
        char buf[256], *save = NULL, *tok;
        snprintf(buf, sizeof(buf), "%s", gpu_spec);
        for (tok = strtok_r(buf, "|", &save); tok; tok = strtok_r(NULL, "|", &save))
            json_array_append_new(vals, json_string(tok));
        json_object_set_new(spec, "affinity",
                            json_pack("{s:{s:{s:[{s:[{s:s,s:s,s:o}]}]}}}", "nodeAffinity",
                                      "requiredDuringSchedulingIgnoredDuringExecution",
                                      "nodeSelectorTerms", "matchExpressions", "key",
                                      "alibaba.com/gpu-model", "operator", "In", "values", vals));
    }
    return spec;
}

int fatia_sim_trace_alibaba(struct fatia_sim_trace *t, const char *file, const char *buf, size_t n,
                            struct fatia_diag *diag)
{
    struct csv c = {.file = file, .p = buf, .end = buf + n};
    struct csv hdr;
    struct shapes sh = {0};
    int ci[8], r;
    static const char *const cols[] = {"name",      "cpu_milli", "memory_mib",    "num_gpu",
                                       "gpu_milli", "gpu_spec",  "creation_time", "deletion_time"};
    size_t row = 0;

    fatia_strmap_init(&sh.map);
    if ((r = csv_next(&c, diag)) <= 0) {
        if (!r)
            fatia_diag_add(diag, FATIA_DIAG_ERROR, file, 1, 1, NULL, NULL, "empty trace");
        shapes_release(&sh);
        return -FATIA_E_INVALID;
    }
    hdr = c;
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(cols); i++)
        ci[i] = col_of(&hdr, cols[i]);
    for (size_t i = 0; i < 5; i++)
        if (ci[i] < 0) {
            fatia_diag_add(diag, FATIA_DIAG_ERROR, file, hdr.line, 1, NULL, NULL,
                           "header lacks column '%s' (Alibaba cluster-trace-gpu-v2023 pod list)",
                           cols[i]);
            shapes_release(&sh);
            return -FATIA_E_INVALID;
        }
    while ((r = csv_next(&c, diag)) > 0) {
        struct fatia_sim_sub s = {0};
        int64_t v[5], created = (int64_t)row, deleted = -1;
        const char *gspec = ci[5] >= 0 && (size_t)ci[5] < c.n ? c.fields[ci[5]] : NULL;
        bool bad = false;
        json_t *spec;
        for (size_t i = 1; i < 5 && !bad; i++)
            if ((size_t)ci[i] >= c.n || !parse_i64(c.fields[ci[i]], &v[i]) || v[i] < 0) {
                fatia_diag_add(diag, FATIA_DIAG_ERROR, file, c.line,
                               (size_t)ci[i] < c.n ? c.cols[ci[i]] : 1, NULL, cols[i],
                               "expected a non-negative integer, got '%s'",
                               (size_t)ci[i] < c.n ? c.fields[ci[i]] : "");
                bad = true;
            }
        if (!bad && v[3] == 1 && (v[4] == 0 || v[4] > 1000)) {
            fatia_diag_add(diag, FATIA_DIAG_ERROR, file, c.line, c.cols[ci[4]], NULL, "gpu_milli",
                           "%" PRId64 " is not a share of one GPU (1..1000)", v[4]);
            bad = true;
        }
        if (!bad && ci[6] >= 0 && (size_t)ci[6] < c.n && *c.fields[ci[6]] &&
            !parse_i64(c.fields[ci[6]], &created)) {
            fatia_diag_add(diag, FATIA_DIAG_ERROR, file, c.line, c.cols[ci[6]], NULL,
                           "creation_time", "expected seconds, got '%s'", c.fields[ci[6]]);
            bad = true;
        }
        if (!bad && ci[7] >= 0 && (size_t)ci[7] < c.n && *c.fields[ci[7]] &&
            !parse_i64(c.fields[ci[7]], &deleted)) {
            fatia_diag_add(diag, FATIA_DIAG_ERROR, file, c.line, c.cols[ci[7]], NULL,
                           "deletion_time", "expected seconds, got '%s'", c.fields[ci[7]]);
            bad = true;
        }
        row++;
        if (bad)
            continue;
        spec = alibaba_spec(v[1], v[2], v[3], v[4], gspec);
        if (!spec || !(s.spec = shape_of(&sh, spec, &s.shape)))
            goto oom;
        s.t = created * 1000000;
        s.duration = deleted >= created ? (deleted - created) * 1000000 : -1;
        s.ns = fatia_strdup("alibaba");
        s.name = fatia_strdup(c.fields[ci[0]]);
        s.count = 1;
        s.priority = INT32_MIN;
        s.duty = -1;
        s.sm = -1;
        if (!s.ns || !s.name || push_sub(t, &s) < 0) {
            fatia_free(s.ns);
            fatia_free(s.name);
            json_decref(s.spec);
            goto oom;
        }
    }
    t->n_shapes = (uint32_t)sh.n;
    shapes_release(&sh);
    if (r < 0 || fatia_diag_has_errors(diag))
        return -FATIA_E_INVALID;
    return 0;
oom:
    shapes_release(&sh);
    return -ENOMEM;
}

/* ---- the node list ---- */

static const char *const catalog_aliases[] = {"P100", "T4", "V100M16", "V100M32", "A10", NULL};

int fatia_sim_alibaba_fleet(const char *file, const char *buf, size_t n, json_t **ret,
                            struct fatia_diag *diag)
{
    struct csv c = {.file = file, .p = buf, .end = buf + n};
    struct csv hdr;
    int ci[5], r;
    static const char *const cols[] = {"sn", "cpu_milli", "memory_mib", "gpu", "model"};
    json_t *pools = json_object(), *out = json_array();
    const char *k;
    json_t *v;

    if (!pools || !out)
        goto oom;
    if ((r = csv_next(&c, diag)) <= 0) {
        if (!r)
            fatia_diag_add(diag, FATIA_DIAG_ERROR, file, 1, 1, NULL, NULL, "empty node list");
        goto bad;
    }
    hdr = c;
    for (size_t i = 0; i < 5; i++)
        if ((ci[i] = col_of(&hdr, cols[i])) < 0) {
            fatia_diag_add(diag, FATIA_DIAG_ERROR, file, hdr.line, 1, NULL, NULL,
                           "header lacks column '%s' (Alibaba openb_node_list_gpu_node.csv)",
                           cols[i]);
            goto bad;
        }
    while ((r = csv_next(&c, diag)) > 0) {
        int64_t cpu, mem, gpus;
        const char *model;
        char key[160];
        json_t *pool;
        if ((size_t)ci[4] >= c.n || !parse_i64(c.fields[ci[1]], &cpu) ||
            !parse_i64(c.fields[ci[2]], &mem) || !parse_i64(c.fields[ci[3]], &gpus) || cpu <= 0 ||
            mem <= 0 || gpus < 0 || gpus > 64) {
            fatia_diag_add(diag, FATIA_DIAG_ERROR, file, c.line, 1, NULL, NULL,
                           "expected sn, cpu_milli, memory_mib, gpu (0..64), model");
            continue;
        }
        model = c.fields[ci[4]];
        if (!*model || strlen(model) > 32) {
            fatia_diag_add(diag, FATIA_DIAG_ERROR, file, c.line, c.cols[ci[4]], NULL, "model",
                           "expected a GPU model name");
            continue;
        }
        snprintf(key, sizeof(key), "%s|%" PRId64 "|%" PRId64 "|%" PRId64, model, gpus, cpu, mem);
        pool = json_object_get(pools, key);
        if (pool) {
            json_object_set_new(
                pool, "count",
                json_integer(json_integer_value(json_object_get(pool, "count")) + 1));
            continue;
        }
        json_object_set_new(pools, key,
                            json_pack("{s:s,s:I,s:I,s:I,s:I,s:I}", "model", model, "gpus",
                                      (json_int_t)gpus, "cpu", (json_int_t)cpu, "mem",
                                      (json_int_t)mem, "count", (json_int_t)1, "order",
                                      (json_int_t)json_object_size(pools)));
    }
    if (r < 0 || fatia_diag_has_errors(diag))
        goto bad;
    /* one NodePool per shape, in order of first appearance */
    for (size_t i = 0; i < json_object_size(pools); i++)
        json_object_foreach(pools, k, v)
        {
            const char *model = fatia_json_str(v, "model");
            char name[96], q[32], lower[40];
            json_t *gpus, *pool, *res;
            size_t j;
            bool known = false;
            if ((size_t)json_integer_value(json_object_get(v, "order")) != i)
                continue;
            for (j = 0; j < sizeof(lower) - 1 && model[j]; j++)
                lower[j] =
                    (model[j] >= 'A' && model[j] <= 'Z') ? (char)(model[j] - 'A' + 'a')
                    : (model[j] >= 'a' && model[j] <= 'z') || (model[j] >= '0' && model[j] <= '9')
                        ? model[j]
                        : '-';
            lower[j] = '\0';
            snprintf(name, sizeof(name), "alibaba-%s-%zu", lower, i);
            for (j = 0; catalog_aliases[j]; j++)
                known |= !strcmp(catalog_aliases[j], model);
            res = json_object();
            snprintf(q, sizeof(q), "%" PRId64 "m",
                     (int64_t)json_integer_value(json_object_get(v, "cpu")));
            json_object_set_new(res, "cpu", json_string(q));
            snprintf(q, sizeof(q), "%" PRId64 "Mi",
                     (int64_t)json_integer_value(json_object_get(v, "mem")));
            json_object_set_new(res, "memory", json_string(q));
            json_object_set_new(res, "pods", json_string("256"));
            gpus = json_array();
            if (json_integer_value(json_object_get(v, "gpus")) > 0) {
                json_t *g = json_pack("{s:s,s:I}", "product", model, "count",
                                      (json_int_t)json_integer_value(json_object_get(v, "gpus")));
                /* G2, G3: undisclosed models; their memory is a placeholder (docs/sim.md) */
                if (!known)
                    json_object_set_new(g, "memory", json_string("32Gi"));
                json_array_append_new(gpus, g);
            }
            pool = json_pack("{s:s,s:s,s:{s:s},s:{s:I,s:{s:s},s:o,s:o}}", "apiVersion",
                             "fatia.dev/v1alpha1", "kind", "NodePool", "metadata", "name", name,
                             "spec", "count",
                             (json_int_t)json_integer_value(json_object_get(v, "count")), "labels",
                             "alibaba.com/gpu-model", model, "resources", res, "gpus", gpus);
            if (!pool || json_array_append_new(out, pool) < 0)
                goto oom;
        }
    if (json_array_append_new(
            out, json_pack("{s:s,s:s,s:{s:s},s:{s:{s:[{s:s,s:s}]},s:{}}}", "apiVersion",
                           "fatia.dev/v1alpha1", "kind", "GPUSharingPolicy", "metadata", "name",
                           "alibaba-fractional", "spec", "nodeSelector", "matchExpressions", "key",
                           "alibaba.com/gpu-model", "operator", "Exists", "fractional")) < 0)
        goto oom;
    json_decref(pools);
    *ret = out;
    return 0;
bad:
    json_decref(pools);
    json_decref(out);
    return -FATIA_E_INVALID;
oom:
    json_decref(pools);
    json_decref(out);
    return -ENOMEM;
}

/* ---- fatia's CSV ---- */

static bool parse_time_usec(const char *s, int64_t *ret)
{
    double d;

    if (!s || !*s)
        return false;
    if (fatia_parse_double(s, &d) == 0) {
        if (d < 0 || d > 1e12)
            return false;
        *ret = (int64_t)(d * 1e6 + 0.5);
        return true;
    }
    return fatia_parse_duration_usec(s, ret) == 0 && *ret >= 0;
}

int fatia_sim_trace_fatia(struct fatia_sim_trace *t, const char *file, const char *buf, size_t n,
                          struct fatia_diag *diag)
{
    struct csv c = {.file = file, .p = buf, .end = buf + n};
    struct csv hdr;
    struct shapes sh = {0};

    enum {
        C_TIME,
        C_NS,
        C_QUEUE,
        C_NAME,
        C_PODS,
        C_RES,
        C_PROFILE,
        C_DUR,
        C_PRIO,
        C_DUTY,
        C_SM,
        C_N
    };

    static const char *const cols[] = {"time",     "namespace", "queue",   "name",
                                       "pods",     "resources", "profile", "duration",
                                       "priority", "dutyCycle", "smShare"};
    int ci[C_N], r;
    size_t row = 0;

    fatia_strmap_init(&sh.map);
    fatia_free(t->file);
    if (!(t->file = fatia_strdup(file))) {
        shapes_release(&sh);
        return -ENOMEM;
    }
    if ((r = csv_next(&c, diag)) <= 0) {
        if (!r)
            fatia_diag_add(diag, FATIA_DIAG_ERROR, file, 1, 1, NULL, NULL, "empty trace");
        shapes_release(&sh);
        return -FATIA_E_INVALID;
    }
    hdr = c;
    for (size_t i = 0; i < C_N; i++)
        ci[i] = col_of(&hdr, cols[i]);
    if (ci[C_TIME] < 0 || ci[C_NS] < 0 || ci[C_DUR] < 0 || (ci[C_RES] < 0 && ci[C_PROFILE] < 0)) {
        fatia_diag_add(diag, FATIA_DIAG_ERROR, file, hdr.line, 1, NULL, NULL,
                       "header needs time, namespace, duration and resources (or profile); "
                       "optional: queue, name, pods, priority, dutyCycle");
        shapes_release(&sh);
        return -FATIA_E_INVALID;
    }
#define FIELD(k) (ci[k] >= 0 && (size_t)ci[k] < c.n ? c.fields[ci[k]] : "")
#define COL(k)   (ci[k] >= 0 && (size_t)ci[k] < c.n ? c.cols[ci[k]] : 1)
    while ((r = csv_next(&c, diag)) > 0) {
        struct fatia_sim_sub s = {.priority = INT32_MIN, .duty = -1, .sm = -1, .count = 1};
        const char *f;
        int64_t v;
        json_t *req, *spec;
        char nbuf[32];
        bool bad = false;

        row++;
        if (!parse_time_usec(FIELD(C_TIME), &s.t)) {
            fatia_diag_add(diag, FATIA_DIAG_ERROR, file, c.line, COL(C_TIME), NULL, "time",
                           "expected seconds or a duration (90s, 5m), got '%s'", FIELD(C_TIME));
            bad = true;
        }
        f = FIELD(C_DUR);
        if (!*f || !strcmp(f, "-"))
            s.duration = -1;
        else if (!parse_time_usec(f, &s.duration)) {
            fatia_diag_add(diag, FATIA_DIAG_ERROR, file, c.line, COL(C_DUR), NULL, "duration",
                           "expected seconds, a duration (1h) or '-' (forever), got '%s'", f);
            bad = true;
        }
        if (!*FIELD(C_NS)) {
            fatia_diag_add(diag, FATIA_DIAG_ERROR, file, c.line, COL(C_NS), NULL, "namespace",
                           "required");
            bad = true;
        }
        f = FIELD(C_PODS);
        if (*f && (!parse_i64(f, &v) || v < 1 || v > 10000)) {
            fatia_diag_add(diag, FATIA_DIAG_ERROR, file, c.line, COL(C_PODS), NULL, "pods",
                           "expected 1..10000, got '%s'", f);
            bad = true;
        } else if (*f)
            s.count = (uint32_t)v;
        f = FIELD(C_PRIO);
        if (*f && (!parse_i64(f, &v) || v < INT32_MIN + 1 || v > INT32_MAX)) {
            fatia_diag_add(diag, FATIA_DIAG_ERROR, file, c.line, COL(C_PRIO), NULL, "priority",
                           "expected an integer, got '%s'", f);
            bad = true;
        } else if (*f)
            s.priority = (int32_t)v;
        f = FIELD(C_DUTY);
        if (*f && (fatia_parse_double(f, &s.duty) < 0 || s.duty < 0 || s.duty > 1)) {
            fatia_diag_add(diag, FATIA_DIAG_ERROR, file, c.line, COL(C_DUTY), NULL, "dutyCycle",
                           "expected a number in 0..1, got '%s'", f);
            bad = true;
        }
        f = FIELD(C_SM);
        if (*f && (fatia_parse_double(f, &s.sm) < 0 || s.sm <= 0 || s.sm > 1)) {
            fatia_diag_add(diag, FATIA_DIAG_ERROR, file, c.line, COL(C_SM), NULL, "smShare",
                           "expected a number in (0, 1], got '%s'", f);
            bad = true;
        }
        if (*FIELD(C_PROFILE) && !(s.profile = fatia_strdup(FIELD(C_PROFILE))))
            goto oom;
        req = json_object();
        if (!req)
            goto oom;
        {
            char rb[1024], *save = NULL, *tok;
            snprintf(rb, sizeof(rb), "%s", FIELD(C_RES));
            for (tok = strtok_r(rb, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
                char *eq = strchr(tok, '=');
                while (*tok == ' ')
                    tok++;
                if (!eq || eq == tok || !eq[1]) {
                    fatia_diag_add(diag, FATIA_DIAG_ERROR, file, c.line, COL(C_RES), NULL,
                                   "resources", "expected name=quantity;..., got '%s'", tok);
                    bad = true;
                    break;
                }
                *eq = '\0';
                json_object_set_new(req, tok, json_string(eq + 1));
            }
        }
        if (bad) {
            json_decref(req);
            fatia_free(s.profile);
            continue;
        }
        spec = json_pack("{s:[{s:s,s:s,s:{s:o}}]}", "containers", "name", "main", "image", "trace",
                         "resources", "requests", req);
        if (!spec || !(s.spec = shape_of(&sh, spec, &s.shape)))
            goto oom;
        snprintf(nbuf, sizeof(nbuf), "w%zu", row);
        s.line = c.line;
        s.ns = fatia_strdup(FIELD(C_NS));
        s.name = fatia_strdup(*FIELD(C_NAME) ? FIELD(C_NAME) : nbuf);
        s.queue = *FIELD(C_QUEUE) ? fatia_strdup(FIELD(C_QUEUE)) : NULL;
        if (!s.ns || !s.name || (*FIELD(C_QUEUE) && !s.queue) || push_sub(t, &s) < 0) {
            fatia_free(s.ns);
            fatia_free(s.name);
            fatia_free(s.queue);
            fatia_free(s.profile);
            json_decref(s.spec);
            goto oom;
        }
    }
#undef FIELD
#undef COL
    t->n_shapes = (uint32_t)sh.n;
    shapes_release(&sh);
    if (r < 0 || fatia_diag_has_errors(diag))
        return -FATIA_E_INVALID;
    return 0;
oom:
    shapes_release(&sh);
    return -ENOMEM;
}

/* ---- hardware profiles ---- */

static int64_t req_milli(const json_t *q)
{
    struct fatia_quantity v;
    return fatia_quantity_parse_json(q, &v, NULL, 0) < 0 ? -1 : fatia_quantity_milli(&v);
}

int fatia_sim_trace_profiles(struct fatia_sim_trace *t, const struct fatia_objset *set,
                             struct fatia_diag *diag)
{
    struct shapes sh = {0};
    int r = 0;

    fatia_strmap_init(&sh.map);
    for (size_t i = 0; i < t->n; i++) {
        struct fatia_sim_sub *s = &t->v[i];
        const struct fatia_object *o;
        struct fatia_profile *p = NULL;
        json_t *spec, *req, *defs;
        const char *slash, *k;
        json_t *v;
        char ns[256], why[256];

        if (s->profile) {
            slash = strchr(s->profile, '/');
            snprintf(ns, sizeof(ns), "%.*s", slash ? (int)(slash - s->profile) : (int)strlen(s->ns),
                     slash ? s->profile : s->ns);
            o = set ? fatia_objset_get(set, "HardwareProfile", ns, slash ? slash + 1 : s->profile)
                    : NULL;
            if (!o) {
                fatia_diag_add(diag, FATIA_DIAG_ERROR, t->file, s->line, 1, s->name, "profile",
                               "HardwareProfile %s/%s not found", ns,
                               slash ? slash + 1 : s->profile);
                continue;
            }
            if ((r = fatia_profile_parse(o->obj, &p, why, sizeof(why))) < 0) {
                if (r == -ENOMEM)
                    goto out;
                fatia_diag_add(diag, FATIA_DIAG_ERROR, t->file, s->line, 1, s->name, "profile",
                               "%s", why);
                continue;
            }
            if (p->disabled) {
                fatia_diag_add(diag, FATIA_DIAG_ERROR, t->file, s->line, 1, s->name, "profile",
                               "HardwareProfile %s/%s is disabled: it cannot be used for new work",
                               ns, p->name);
                fatia_profile_free(p);
                continue;
            }
            spec = json_deep_copy(s->spec);
            req = json_object_get(
                json_object_get(json_array_get(json_object_get(spec, "containers"), 0),
                                "resources"),
                "requests");
            defs = fatia_profile_default_requests(p);
            if (!spec || !req || !defs) {
                json_decref(spec);
                json_decref(defs);
                fatia_profile_free(p);
                r = -ENOMEM;
                goto out;
            }
            json_object_foreach(defs, k, v) if (!json_object_get(req, k))
                json_object_set(req, k, v);
            json_decref(defs);
            /* the profile's bounds */
            for (size_t d = 0; d < p->n_ids; d++) {
                const struct fatia_profile_identifier *id = &p->ids[d];
                int64_t m = req_milli(json_object_get(req, id->identifier));
                if (m < 0)
                    continue;
                if (m < fatia_quantity_milli(&id->min) ||
                    (id->has_max && m > fatia_quantity_milli(&id->max)))
                    fatia_diag_add(diag, FATIA_DIAG_ERROR, t->file, s->line, 1, s->name,
                                   "resources", "%s outside HardwareProfile %s's range for %s",
                                   json_string_value(json_object_get(req, id->identifier)), p->name,
                                   id->identifier);
            }
            if (p->sched == FATIA_PROFILE_SCHED_QUEUE) {
                if (!s->queue && p->local_queue && !(s->queue = fatia_strdup(p->local_queue)))
                    r = -ENOMEM;
                if (p->priority_class && !(s->priority_class = fatia_strdup(p->priority_class)))
                    r = -ENOMEM;
            } else if (p->sched == FATIA_PROFILE_SCHED_NODE) {
                if (p->node_selector)
                    json_object_set(spec, "nodeSelector", p->node_selector);
                if (p->tolerations)
                    json_object_set(spec, "tolerations", p->tolerations);
            }
            fatia_profile_free(p);
            json_decref(s->spec);
            s->spec = spec;
            if (r < 0)
                goto out;
        }
        /* shapes again, every row (profiles changed some specs) */
        {
            json_t *old = s->spec;
            if (!(s->spec = shape_of(&sh, json_incref(old), &s->shape))) {
                s->spec = old;
                r = -ENOMEM;
                goto out;
            }
            json_decref(old);
        }
    }
    t->n_shapes = (uint32_t)sh.n;
out:
    shapes_release(&sh);
    if (r < 0)
        return r;
    return fatia_diag_has_errors(diag) ? -FATIA_E_INVALID : 0;
}

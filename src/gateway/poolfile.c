/*
 * gateway/poolfile.c: reading the pool file (see poolfile.h).
 *
 * The static shape is checked by hand (it is fatia's configuration, not an API object); an
 * InferencePool goes through the model layer's decoder, so it is validated exactly as `fatia
 * validate` and fatiad would validate it.
 */
#include "base/compat.h"

#include "gateway/poolfile.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/str.h"
#include "model/doc.h"
#include "model/object.h"

struct rd {
    struct fatia_diag *diag;
    const struct fatia_docset *set;
    const char *file;
    bool bad;
};

static void err_at(struct rd *r, const json_t *parent, const char *key, size_t index,
                   const char *path, const char *fmt, ...) FATIA_PRINTF(6, 7);

static void err_at(struct rd *r, const json_t *parent, const char *key, size_t index,
                   const char *path, const char *fmt, ...)
{
    struct fatia_srcpos pos = {0, 0};
    va_list ap;

    fatia_srcmap_member(r->set->map, parent, key, index, &pos);
    va_start(ap, fmt);
    fatia_diag_vadd(r->diag, FATIA_DIAG_ERROR, r->file, pos.line, pos.col, NULL, path, fmt, ap);
    va_end(ap);
    r->bad = true;
}

static void duration(struct rd *r, const json_t *obj, const char *key, const char *path,
                     fatia_usec_t *ret)
{
    json_t *v = json_object_get(obj, key);
    int64_t us;

    if (!v)
        return;
    if (!json_is_string(v) || fatia_parse_duration_usec(json_string_value(v), &us) < 0 || us <= 0) {
        err_at(r, obj, key, 0, path, "expected a duration such as \"50ms\" or \"2s\"");
        return;
    }
    *ret = us;
}

static void uint_field(struct rd *r, const json_t *obj, const char *key, const char *path,
                       uint64_t max, uint64_t *ret)
{
    json_t *v = json_object_get(obj, key);

    if (!v)
        return;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max) {
        err_at(r, obj, key, 0, path, "expected an integer in [0, %" PRIu64 "]", max);
        return;
    }
    *ret = (uint64_t)json_integer_value(v);
}

static void read_scheduling(struct rd *r, const json_t *s, struct fatia_gateway_config *cfg)
{
    const char *policy = fatia_json_str(s, "policy");
    json_t *w = json_object_get(s, "weights");
    uint64_t v;

    if (json_object_get(s, "policy") &&
        (!policy || fatia_policy_parse(policy, &cfg->sched.policy) < 0))
        err_at(r, s, "policy", 0, "scheduling.policy",
               "expected cache-aware, round-robin, least-request or oracle");
    if (w) {
        struct {
            const char *key;
            double *slot;
        } keys[] = {{"queue", &cfg->sched.w.queue},
                    {"kvCache", &cfg->sched.w.kv},
                    {"prefix", &cfg->sched.w.prefix},
                    {"inflight", &cfg->sched.w.inflight},
                    {"tokenLoad", &cfg->sched.w.token_load}};

        const char *k;
        json_t *x;
        if (!json_is_object(w))
            err_at(r, s, "weights", 0, "scheduling.weights", "expected a mapping");
        json_object_foreach(w, k, x)
        {
            size_t i;
            char path[64];
            snprintf(path, sizeof(path), "scheduling.weights.%s", k);
            for (i = 0; i < FATIA_ARRAY_SIZE(keys); i++)
                if (!strcmp(k, keys[i].key))
                    break;
            if (i == FATIA_ARRAY_SIZE(keys)) {
                err_at(r, w, k, 0, path,
                       "unknown scorer: expected queue, kvCache, prefix, inflight, tokenLoad");
                continue;
            }
            if (!json_is_number(x) || json_number_value(x) < 0) {
                err_at(r, w, k, 0, path, "expected a non-negative number");
                continue;
            }
            *keys[i].slot = json_number_value(x);
        }
    }
    v = cfg->sched.queue_limit;
    uint_field(r, s, "queueLimit", "scheduling.queueLimit", UINT32_MAX, &v);
    cfg->sched.queue_limit = (uint32_t)v;
    uint_field(r, s, "tokenLoadThreshold", "scheduling.tokenLoadThreshold", UINT64_C(1) << 40,
               &cfg->sched.token_load_threshold);
    v = cfg->max_prefix_blocks;
    uint_field(r, s, "maxPrefixBlocks", "scheduling.maxPrefixBlocks", 1u << 20, &v);
    cfg->max_prefix_blocks = (uint32_t)v;
    v = cfg->lru_capacity;
    uint_field(r, s, "lruCapacity", "scheduling.lruCapacity", UINT64_C(1) << 32, &v);
    cfg->lru_capacity = (size_t)v;
}

static int read_static(struct rd *r, json_t *root, struct fatia_gateway_config *cfg,
                       struct fatia_pool_file *p)
{
    json_t *eps = json_object_get(root, "endpoints"), *e;
    const char *sel = fatia_json_str(root, "selector");
    size_t i;

    if (!json_is_array(eps) || !json_array_size(eps)) {
        err_at(r, root, eps ? "endpoints" : NULL, 0, "endpoints",
               "expected a non-empty list of {url, labels}");
        return -FATIA_E_INVALID;
    }
    json_array_foreach(eps, i, e)
    {
        char path[64];
        json_t *labels = json_object_get(e, "labels"), *lv;
        const char *k;
        snprintf(path, sizeof(path), "endpoints[%zu].url", i);
        if (!fatia_json_str(e, "url"))
            err_at(r, e, json_is_object(e) ? "url" : NULL, i, path, "expected a URL string");
        if (labels && !json_is_object(labels)) {
            snprintf(path, sizeof(path), "endpoints[%zu].labels", i);
            err_at(r, e, "labels", 0, path, "expected a mapping of strings");
        }
        json_object_foreach(labels, k, lv)
        {
            if (!json_is_string(lv)) {
                snprintf(path, sizeof(path), "endpoints[%zu].labels.%s", i, k);
                err_at(r, labels, k, 0, path, "expected a string");
            }
        }
    }
    if (json_object_get(root, "selector") && !sel)
        err_at(r, root, "selector", 0, "selector", "expected a label selector string");
    if (json_is_object(json_object_get(root, "scheduling")))
        read_scheduling(r, json_object_get(root, "scheduling"), cfg);
    duration(r, json_object_get(root, "metrics"), "interval", "metrics.interval",
             &cfg->metrics_interval);
    duration(r, json_object_get(root, "metrics"), "staleness", "metrics.staleness",
             &cfg->metrics_staleness);
    duration(r, json_object_get(root, "health"), "interval", "health.interval",
             &cfg->health_interval);
    duration(r, json_object_get(root, "health"), "timeout", "health.timeout", &cfg->health_timeout);
    {
        uint64_t v = cfg->health_failure_threshold;
        uint_field(r, json_object_get(root, "health"), "failureThreshold",
                   "health.failureThreshold", 1000, &v);
        cfg->health_failure_threshold = v ? (uint32_t)v : 1;
    }
    if (r->bad)
        return -FATIA_E_INVALID;
    p->endpoints = json_incref(eps);
    if (sel && !(p->selector = fatia_strdup(sel)))
        return -ENOMEM;
    return 0;
}

int fatia_pool_file_load(const char *path, struct fatia_gateway_config *cfg,
                         struct fatia_pool_file *ret, struct fatia_diag *diag)
{
    struct fatia_docset set;
    struct rd r = {.diag = diag};
    struct fatia_pool_file p = {0};
    json_t *root;
    int rc;

    fatia_docset_init(&set);
    rc = fatia_docset_load_path(&set, path, false, diag);
    if (rc < 0)
        goto out;
    r.set = &set;
    r.file = set.n ? set.docs[0].file : path;
    if (set.n != 1 || !json_is_object(set.docs[0].root)) {
        fatia_diag_add(diag, FATIA_DIAG_ERROR, path, 1, 1, NULL, NULL,
                       "expected one mapping: a static pool or an InferencePool");
        rc = -FATIA_E_INVALID;
        goto out;
    }
    root = set.docs[0].root;
    if (fatia_json_str(root, "kind")) {
        struct fatia_decode_opts o = {.file = r.file, .map = set.map, .pos = set.docs[0].pos};
        struct fatia_object *obj = NULL;
        const char *kind = fatia_json_str(root, "kind");
        if (strcmp(kind, "InferencePool")) {
            fatia_diag_add(diag, FATIA_DIAG_ERROR, r.file, set.docs[0].pos.line, 1, NULL, "kind",
                           "a pool file holds a static pool or an InferencePool, not a %s", kind);
            rc = -FATIA_E_INVALID;
            goto out;
        }
        rc = fatia_object_decode(root, &o, NULL, diag, &obj);
        if (rc < 0)
            goto out;
        p.inference_pool = json_incref(obj->obj);
        fatia_object_free(obj);
    } else {
        rc = read_static(&r, root, cfg, &p);
        if (rc < 0) {
            fatia_pool_file_release(&p);
            goto out;
        }
    }
    *ret = p;
    rc = 0;
out:
    fatia_docset_release(&set);
    return rc;
}

void fatia_pool_file_release(struct fatia_pool_file *p)
{
    json_decref(p->endpoints);
    json_decref(p->inference_pool);
    fatia_free(p->selector);
    memset(p, 0, sizeof(*p));
}

int fatia_weights_parse(const char *s, struct fatia_sched_weights *w)
{
    char buf[256];
    char *save = NULL;

    if (strlen(s) >= sizeof(buf))
        return -EINVAL;
    snprintf(buf, sizeof(buf), "%s", s);
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        double v;
        if (!eq)
            return -EINVAL;
        *eq = 0;
        if (fatia_parse_double(eq + 1, &v) < 0 || v < 0)
            return -EINVAL;
        if (!strcmp(t, "queue"))
            w->queue = v;
        else if (!strcmp(t, "kv") || !strcmp(t, "kvCache"))
            w->kv = v;
        else if (!strcmp(t, "prefix"))
            w->prefix = v;
        else if (!strcmp(t, "inflight"))
            w->inflight = v;
        else if (!strcmp(t, "tokens") || !strcmp(t, "tokenLoad"))
            w->token_load = v;
        else
            return -EINVAL;
    }
    return 0;
}

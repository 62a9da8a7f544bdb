/*
 * gateway/modelspec.c: reading data/models.yaml (see modelspec.h).
 *
 * The file is read with the model layer's YAML loader, so every error points at file:line and
 * names the entry ("models[2].kvHeads: must be a positive integer"). Validation is hand-written
 * here rather than a registered kind: the file is fatia's data, not a Kubernetes object, and has
 * no apiVersion or metadata.
 */
#include "base/compat.h"

#include "gateway/modelspec.h"

#include <strings.h>

#include "base/alloc.h"
#include "base/datadir.h"
#include "base/error.h"
#include "base/json.h"
#include "model/doc.h"

struct reader {
    struct fatia_diag *diag;
    const struct fatia_docset *set;
    const char *file;
    bool bad;
};

static void rerr(struct reader *r, const json_t *parent, const char *key, size_t index,
                 const char *path, const char *fmt, ...) FATIA_PRINTF(6, 7);

static void rerr(struct reader *r, const json_t *parent, const char *key, size_t index,
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

/* A non-negative integer member; required ones must be > 0. */
static uint64_t get_uint(struct reader *r, const json_t *m, size_t i, const char *key,
                         bool required, uint64_t max)
{
    json_t *v = json_object_get(m, key);
    char path[96];

    snprintf(path, sizeof(path), "models[%zu].%s", i, key);
    if (!v) {
        if (required)
            rerr(r, m, NULL, 0, path, "required field is missing");
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < (required ? 1 : 0) ||
        (uint64_t)json_integer_value(v) > max) {
        rerr(r, m, key, 0, path, "must be an integer in [%d, %" PRIu64 "]", required ? 1 : 0, max);
        return 0;
    }
    return (uint64_t)json_integer_value(v);
}

static void read_one(struct reader *r, const json_t *m, size_t i, struct fatia_model_spec *s)
{
    const char *name = fatia_json_str(m, "name");
    json_t *tied = json_object_get(m, "tiedEmbeddings");
    char path[96];

    memset(s, 0, sizeof(*s));
    snprintf(path, sizeof(path), "models[%zu].name", i);
    if (!name || !*name || strlen(name) >= sizeof(s->name))
        rerr(r, m, name ? "name" : NULL, 0, path, "must be a non-empty string under %zu bytes",
             sizeof(s->name));
    else
        snprintf(s->name, sizeof(s->name), "%s", name);
    s->params = get_uint(r, m, i, "params", true, UINT64_C(1) << 50);
    s->layers = (uint32_t)get_uint(r, m, i, "layers", true, 4096);
    s->hidden = (uint32_t)get_uint(r, m, i, "hiddenSize", false, 1 << 20);
    s->intermediate = (uint32_t)get_uint(r, m, i, "intermediateSize", false, 1 << 22);
    s->heads = (uint32_t)get_uint(r, m, i, "attentionHeads", false, 4096);
    s->kv_heads = (uint32_t)get_uint(r, m, i, "kvHeads", true, 4096);
    s->head_dim = (uint32_t)get_uint(r, m, i, "headDim", true, 4096);
    s->vocab = (uint32_t)get_uint(r, m, i, "vocabSize", false, 1 << 24);
    s->max_context = (uint32_t)get_uint(r, m, i, "maxContext", false, 1 << 26);
    if (tied && !json_is_boolean(tied)) {
        snprintf(path, sizeof(path), "models[%zu].tiedEmbeddings", i);
        rerr(r, m, "tiedEmbeddings", 0, path, "must be true or false");
    }
    s->tied_embeddings = json_is_true(tied);
    if (s->heads && s->kv_heads && s->heads % s->kv_heads) {
        snprintf(path, sizeof(path), "models[%zu].kvHeads", i);
        rerr(r, m, "kvHeads", 0, path, "must divide attentionHeads (%u)", s->heads);
    }
}

int fatia_modelspec_load_all(const char *path, struct fatia_diag *diag,
                             struct fatia_model_spec **ret, size_t *ret_n)
{
    char def[4096];
    struct fatia_docset set;
    struct reader r = {.diag = diag};
    struct fatia_model_spec *v = NULL;
    json_t *models;
    size_t n = 0;
    int rc;

    if (!path) {
        snprintf(def, sizeof(def), "%s/models.yaml", fatia_data_dir());
        path = def;
    }
    fatia_docset_init(&set);
    rc = fatia_docset_load_path(&set, path, false, diag);
    if (rc < 0)
        goto out;
    r.set = &set;
    r.file = set.n ? set.docs[0].file : path;
    models = set.n == 1 ? json_object_get(set.docs[0].root, "models") : NULL;
    if (!json_is_array(models) || json_array_size(models) == 0) {
        fatia_diag_add(diag, FATIA_DIAG_ERROR, path, 1, 1, NULL, "models",
                       "expected one document with a non-empty 'models' list");
        rc = -FATIA_E_INVALID;
        goto out;
    }
    n = json_array_size(models);
    v = fatia_calloc(n, sizeof(*v));
    if (!v) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_array_get(models, i);
        if (!json_is_object(m)) {
            char p[32];
            snprintf(p, sizeof(p), "models[%zu]", i);
            rerr(&r, models, NULL, i, p, "must be a mapping");
            continue;
        }
        read_one(&r, m, i, &v[i]);
    }
    if (r.bad) {
        rc = -FATIA_E_INVALID;
        goto out;
    }
    *ret = v;
    *ret_n = n;
    v = NULL;
    rc = 0;
out:
    fatia_free(v);
    fatia_docset_release(&set);
    return rc;
}

static bool matches(const json_t *m, const char *name)
{
    const char *n = fatia_json_str(m, "name");
    json_t *aliases = json_object_get(m, "aliases"), *a;
    size_t i;

    if (n && !strcasecmp(n, name))
        return true;
    json_array_foreach(aliases, i, a)
    {
        if (json_is_string(a) && !strcasecmp(json_string_value(a), name))
            return true;
    }
    return false;
}

int fatia_modelspec_find(const char *path, const char *name, struct fatia_diag *diag,
                         struct fatia_model_spec *ret)
{
    char def[4096];
    struct fatia_model_spec *v;
    struct fatia_docset set;
    struct fatia_buf names = FATIA_BUF_INIT;
    json_t *models;
    size_t n, i;
    int rc;

    if (!path) {
        snprintf(def, sizeof(def), "%s/models.yaml", fatia_data_dir());
        path = def;
    }
    rc = fatia_modelspec_load_all(path, diag, &v, &n);
    if (rc < 0)
        return rc;
    /* The aliases are not kept in the structs: look them up in the tree again. */
    fatia_docset_init(&set);
    rc = fatia_docset_load_path(&set, path, false, diag);
    if (rc < 0)
        goto out;
    models = json_object_get(set.docs[0].root, "models");
    rc = -ENOENT;
    for (i = 0; i < n; i++) {
        if (matches(json_array_get(models, i), name)) {
            *ret = v[i];
            rc = 0;
            break;
        }
        fatia_buf_printf(&names, "%s%s", i ? ", " : "", v[i].name);
    }
    if (rc == -ENOENT)
        fatia_diag_add(diag, FATIA_DIAG_ERROR, path, 0, 0, NULL, NULL,
                       "unknown model '%s': known models are %s (or give --params, --layers, "
                       "--kv-heads and --head-dim)",
                       name, names.p);
out:
    fatia_buf_release(&names);
    fatia_docset_release(&set);
    fatia_free(v);
    return rc;
}

uint64_t fatia_modelspec_kv_bytes_per_token(const struct fatia_model_spec *m, double elem_bytes)
{
    return (uint64_t)(2.0 * m->layers * m->kv_heads * m->head_dim * elem_bytes);
}

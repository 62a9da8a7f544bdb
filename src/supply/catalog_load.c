/*
 * supply/catalog_load.c: reading the GPU catalog from data files (the supply layer's I/O edge
 * for data, in fatia_supply_io; see catalog.h and docs/supply.md for the format), and where they
 * are ($FATIA_DATA_DIR or the build tree's data/gpus).
 *
 * Each YAML document under the catalog path is one product. It is validated with the same schema
 * walker that validates Kubernetes objects (model/schema.h), so a mistake in a data file is
 * reported like one in a manifest: file:line:column, the entry ("gpu/NVIDIA H200") and the field
 * path. All entries are read before anything is returned; on any error the catalog stays empty
 * (nothing half-loaded).
 *
 * Rejected: compiled-in tables (the issue asks for data, and a user must be able to add a product
 * without a rebuild); one JSON file (YAML allows the comments that carry each number's source).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/datadir.h"
#include "base/error.h"
#include "base/json.h"
#include "base/str.h"
#include "model/doc.h"
#include "model/quantity.h"
#include "model/schema.h"
#include "supply/catalog.h"

void fatia_catalog_default_path(const char *explicit_path, char *buf, size_t n)
{
    if (explicit_path && *explicit_path)
        snprintf(buf, n, "%s", explicit_path);
    else
        fatia_data_path(buf, n, "gpus");
}

#define LIM(n) .flags = (FATIA_S_MIN | FATIA_S_MAX), .min = (n), .max

static const char *const verified_values[] = {"hardware", "dump", "documentation", "inferred",
                                              NULL};
static const struct fatia_schema verified_s = {FATIA_T_STRING, .enums = verified_values};
static const struct fatia_schema count_s = {FATIA_T_INT, LIM(0) = 100000};
static const struct fatia_schema slices_s = {FATIA_T_INT, LIM(1) = FATIA_MIG_MAX_SLICES};
static const struct fatia_schema bytes_s = {FATIA_T_QUANTITY, .flags = FATIA_S_POSITIVE};
static const struct fatia_schema starts_s = {
    FATIA_T_ARRAY, LIM(1) = FATIA_MIG_MAX_SLICES,
    .items = &(const struct fatia_schema){FATIA_T_INT, LIM(0) = FATIA_MIG_MAX_SLICES - 1}};
static const struct fatia_schema pci_ids_s = {
    FATIA_T_ARRAY, LIM(0) = 16,
    .items = &(const struct fatia_schema){FATIA_T_STRING, LIM(10) = 10}};

static const struct fatia_field profile_fields[] = {
    {"name", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"id", &count_s, FATIA_F_REQUIRED, NULL},
    {"index", &count_s, 0, NULL},
    {"computeSlices", &slices_s, FATIA_F_REQUIRED, NULL},
    {"memorySlices", &slices_s, FATIA_F_REQUIRED, NULL},
    {"memory", &bytes_s, FATIA_F_REQUIRED, NULL},
    {"multiprocessors", &count_s, 0, NULL},
    {"copyEngines", &count_s, 0, NULL},
    {"decoders", &count_s, 0, NULL},
    {"encoders", &count_s, 0, NULL},
    {"jpegEngines", &count_s, 0, NULL},
    {"ofaEngines", &count_s, 0, NULL},
    {"instances", &(const struct fatia_schema){FATIA_T_INT, LIM(1) = FATIA_MIG_MAX_INSTANCES},
     FATIA_F_REQUIRED, NULL},
    {"placements", &starts_s, FATIA_F_REQUIRED, NULL},
    {"verified", &verified_s, 0, NULL},
    {"note", &fatia_s_string, 0, NULL},
    {0}};
static const struct fatia_schema profiles_s = {
    FATIA_T_ARRAY, LIM(1) = FATIA_MIG_MAX_PROFILES,
    .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = profile_fields},
    .list_key = "name"};
static const struct fatia_schema balanced_s = {
    FATIA_T_MAP, LIM(1) = FATIA_MIG_MAX_PROFILES,
    .items = &(const struct fatia_schema){FATIA_T_INT, LIM(0) = FATIA_MIG_MAX_INSTANCES}};
static const struct fatia_field mig_fields[] = {{"memorySlices", &slices_s, 0, NULL},
                                                {"computeSlices", &slices_s, 0, NULL},
                                                {"allBalanced", &balanced_s, 0, NULL},
                                                {"profiles", &profiles_s, FATIA_F_REQUIRED, NULL},
                                                {0}};
static const struct fatia_field entry_fields[] = {
    {"product", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"aliases", &fatia_s_string_list, 0, NULL},
    {"pciDeviceIds", &pci_ids_s, 0, NULL},
    {"memory", &bytes_s, FATIA_F_REQUIRED, NULL},
    {"multiprocessors", &count_s, FATIA_F_REQUIRED, NULL},
    {"architecture", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"brand", &fatia_s_nonempty_string, 0, "\"Nvidia\""},
    {"cudaComputeCapability", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"nvlink", &fatia_s_bool, 0, "false"},
    {"contextReserve", &fatia_s_quantity_nonneg, 0, NULL},
    {"verified", &verified_s, FATIA_F_REQUIRED, NULL},
    {"source", &fatia_s_string, 0, NULL},
    {"notes", &fatia_s_any, 0, NULL},
    {"mig", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = mig_fields}, 0, NULL},
    {0}};
static const struct fatia_schema entry_s = {FATIA_T_OBJECT, .fields = entry_fields};

/* Profiles point at these static strings, not at the document (freed after loading). */
static const char *static_verified(const char *s)
{
    for (size_t i = 0; verified_values[i]; i++)
        if (s && !strcmp(s, verified_values[i]))
            return verified_values[i];
    return "inferred";
}

static uint64_t qbytes(const json_t *v)
{
    struct fatia_quantity q;

    if (fatia_quantity_parse_json(v, &q, NULL, 0) < 0)
        return 0;
    return (uint64_t)fatia_quantity_value(&q);
}

static uint32_t jint(const json_t *obj, const char *key)
{
    int64_t v = 0;

    fatia_json_int(obj, key, &v);
    return (uint32_t)v;
}

static int parse_pci_id(const char *s, uint32_t *ret)
{
    uint64_t v = 0;

    if (strncmp(s, "0x", 2) != 0 || strlen(s) != 10)
        return -EINVAL;
    for (const char *p = s + 2; *p; p++) {
        int d = (*p >= '0' && *p <= '9')   ? *p - '0'
                : (*p >= 'a' && *p <= 'f') ? *p - 'a' + 10
                : (*p >= 'A' && *p <= 'F') ? *p - 'A' + 10
                                           : -1;
        if (d < 0)
            return -EINVAL;
        v = v * 16 + (uint64_t)d;
    }
    *ret = (uint32_t)v;
    return 0;
}

/* Reports at a member of the entry, with its position. */
static void entry_error(struct fatia_diag *diag, const struct fatia_doc *d,
                        const struct fatia_srcmap *map, const char *object, const json_t *parent,
                        const char *key, size_t index, const char *path, const char *fmt, ...)
    FATIA_PRINTF(9, 10);

static void entry_error(struct fatia_diag *diag, const struct fatia_doc *d,
                        const struct fatia_srcmap *map, const char *object, const json_t *parent,
                        const char *key, size_t index, const char *path, const char *fmt, ...)
{
    struct fatia_srcpos pos = d->pos;
    va_list ap;

    if (parent)
        fatia_srcmap_member(map, parent, key, index, &pos);
    va_start(ap, fmt);
    fatia_diag_vadd(diag, FATIA_DIAG_ERROR, d->file, pos.line, pos.col, object, path, fmt, ap);
    va_end(ap);
}

static int convert_mig(const json_t *mig, struct fatia_gpu_model *m, const struct fatia_doc *d,
                       const struct fatia_srcmap *map, const char *object, struct fatia_diag *diag)
{
    json_t *profiles = json_object_get(mig, "profiles"), *p, *s, *bal;
    struct fatia_mig_geom *g;
    const char *k;
    size_t i, j;
    char why[256], path[64];

    g = fatia_calloc(1, sizeof(*g));
    if (!g)
        return -ENOMEM;
    m->mig = g;
    g->memory_slices = (uint8_t)jint(mig, "memorySlices");
    g->compute_slices = (uint8_t)jint(mig, "computeSlices");
    json_array_foreach(profiles, i, p)
    {
        struct fatia_mig_profile *mp = &g->profiles[g->n_profiles++];
        int64_t idx = -1;
        snprintf(mp->name, sizeof(mp->name), "%s", fatia_json_str(p, "name"));
        mp->id = (int)jint(p, "id");
        mp->nvml_index = fatia_json_int(p, "index", &idx) ? (int)idx : -1;
        mp->compute_slices = (uint8_t)jint(p, "computeSlices");
        mp->memory_slices = (uint8_t)jint(p, "memorySlices");
        mp->max_instances = (uint8_t)jint(p, "instances");
        mp->memory_bytes = qbytes(json_object_get(p, "memory"));
        mp->multiprocessors = jint(p, "multiprocessors");
        mp->copy_engines = jint(p, "copyEngines");
        mp->decoders = jint(p, "decoders");
        mp->encoders = jint(p, "encoders");
        mp->jpeg_engines = jint(p, "jpegEngines");
        mp->ofa_engines = jint(p, "ofaEngines");
        mp->verified = static_verified(fatia_json_str(p, "verified") ? fatia_json_str(p, "verified")
                                                                     : m->verified);
        json_array_foreach(json_object_get(p, "placements"), j, s) mp->starts[mp->n_starts++] =
            (uint8_t)json_integer_value(s);
    }
    bal = json_object_get(mig, "allBalanced");
    json_object_foreach(bal, k, s)
    {
        const struct fatia_mig_profile *bp = fatia_mig_geom_find(g, k);
        if (!bp) {
            snprintf(path, sizeof(path), "mig.allBalanced[%s]", k);
            entry_error(diag, d, map, object, bal, k, 0, path, "unknown profile \"%s\"", k);
            return -FATIA_E_INVALID;
        }
        g->balanced[bp - g->profiles] = (uint8_t)json_integer_value(s);
    }
    if (fatia_mig_geom_finish(g, why, sizeof(why)) < 0) {
        entry_error(diag, d, map, object, d->root, "mig", 0, "mig", "%s", why);
        return -FATIA_E_INVALID;
    }
    return 0;
}

static int convert_entry(const struct fatia_doc *d, const struct fatia_srcmap *map,
                         const char *object, struct fatia_diag *diag, struct fatia_gpu_model **ret)
{
    const json_t *e = d->root;
    struct fatia_gpu_model *m = fatia_gpu_model_new();
    const char *cc = fatia_json_str(e, "cudaComputeCapability");
    json_t *a, *mig;
    size_t i;
    int major = 0, minor = 0, r = -ENOMEM;
    char extra;

    if (!m)
        return -ENOMEM;
    m->product = fatia_strdup(fatia_json_str(e, "product"));
    m->architecture = fatia_strdup(fatia_json_str(e, "architecture"));
    m->brand = fatia_strdup(fatia_json_str(e, "brand"));
    m->verified = fatia_strdup(fatia_json_str(e, "verified"));
    m->source = fatia_strdup(fatia_json_str(e, "source") ? fatia_json_str(e, "source") : "");
    if (!m->product || !m->architecture || !m->brand || !m->verified || !m->source)
        goto fail;
    m->memory_bytes = qbytes(json_object_get(e, "memory"));
    m->multiprocessors = jint(e, "multiprocessors");
    m->nvlink = fatia_json_bool(e, "nvlink", false);
    if (json_object_get(e, "contextReserve"))
        m->context_reserve = qbytes(json_object_get(e, "contextReserve"));
    if (sscanf(cc, "%d.%d%c", &major, &minor, &extra) != 2 || major < 1 || major > 99 ||
        minor < 0 || minor > 9) {
        entry_error(diag, d, map, object, e, "cudaComputeCapability", 0, "cudaComputeCapability",
                    "expected MAJOR.MINOR such as \"9.0\" (is \"%s\")", cc);
        r = -FATIA_E_INVALID;
        goto fail;
    }
    m->cc_major = (uint8_t)major;
    m->cc_minor = (uint8_t)minor;
    m->mps_max_clients = major >= 7 ? 48 : 16;
    a = json_object_get(e, "aliases");
    if (json_array_size(a)) {
        m->aliases = fatia_calloc(json_array_size(a), sizeof(char *));
        if (!m->aliases)
            goto fail;
        for (i = 0; i < json_array_size(a); i++) {
            m->aliases[i] = fatia_strdup(json_string_value(json_array_get(a, i)));
            if (!m->aliases[i])
                goto fail;
            m->n_aliases++;
        }
    }
    a = json_object_get(e, "pciDeviceIds");
    if (json_array_size(a)) {
        m->pci_device_ids = fatia_calloc(json_array_size(a), sizeof(uint32_t));
        if (!m->pci_device_ids)
            goto fail;
        for (i = 0; i < json_array_size(a); i++) {
            char path[48];
            if (parse_pci_id(json_string_value(json_array_get(a, i)),
                             &m->pci_device_ids[m->n_pci_device_ids]) < 0) {
                snprintf(path, sizeof(path), "pciDeviceIds[%zu]", i);
                entry_error(diag, d, map, object, a, NULL, i, path,
                            "expected 0xDDDDVVVV (device and vendor id in hex)");
                r = -FATIA_E_INVALID;
                goto fail;
            }
            m->n_pci_device_ids++;
        }
    }
    mig = json_object_get(e, "mig");
    if (mig) {
        r = convert_mig(mig, m, d, map, object, diag);
        if (r < 0)
            goto fail;
    }
    *ret = m;
    return 0;
fail:
    fatia_gpu_model_free(m);
    return r;
}

int fatia_catalog_load(struct fatia_catalog *cat, const char *path, struct fatia_diag *diag)
{
    struct fatia_docset docs;
    struct fatia_catalog tmp;
    size_t errors_before = diag->n_errors;
    int r;

    fatia_docset_init(&docs);
    fatia_catalog_init(&tmp);
    r = fatia_docset_load_path(&docs, path, false, diag);
    if (r == -ENOMEM)
        goto out;
    for (size_t i = 0; i < docs.n; i++) {
        const struct fatia_doc *d = &docs.docs[i];
        const char *product = fatia_json_str(d->root, "product");
        struct fatia_gpu_model *m = NULL;
        struct fatia_vctx ctx;
        char object[160];
        size_t n_err;

        snprintf(object, sizeof(object), "gpu/%s", product ? product : "?");
        fatia_vctx_init(&ctx, diag, docs.map, d->file);
        fatia_vctx_set_object(&ctx, object, d->pos);
        n_err = fatia_schema_validate(&ctx, &entry_s, d->root);
        fatia_vctx_release(&ctx);
        if (n_err)
            continue;
        r = convert_entry(d, docs.map, object, diag, &m);
        if (r == -ENOMEM)
            goto out;
        if (r < 0)
            continue;
        r = fatia_catalog_add(&tmp, m);
        if (r == -ENOMEM)
            goto out;
        if (r == -FATIA_E_EXISTS)
            fatia_diag_add(diag, FATIA_DIAG_ERROR, d->file, d->pos.line, d->pos.col, object,
                           "product", "a product or alias of this entry is already in the catalog");
    }
    if (docs.n == 0 && diag->n_errors == errors_before)
        fatia_diag_add(diag, FATIA_DIAG_ERROR, path, 0, 0, NULL, NULL,
                       "no GPU catalog entries found");
    if (diag->n_errors > errors_before) {
        r = r == -ENOENT ? -ENOENT : -FATIA_E_INVALID;
        goto out;
    }
    tmp.path = fatia_strdup(path);
    if (!tmp.path) {
        r = -ENOMEM;
        goto out;
    }
    fatia_catalog_release(cat);
    *cat = tmp;
    /* the strmap's keys live in tmp.keys, which moved with the struct */
    fatia_catalog_init(&tmp);
    r = 0;
out:
    fatia_catalog_release(&tmp);
    fatia_docset_release(&docs);
    return r;
}

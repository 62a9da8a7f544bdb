/*
 * supply/catalog.c: the in-memory GPU catalog: models, name index, MIG geometry helpers (see
 * catalog.h). Loading from files, and where the files are (the environment), is catalog_load.c
 * in fatia_supply_io; this file does no I/O.
 *
 * Names are matched case-insensitively through one map of lowercased keys (product and aliases),
 * because traces spell products as they please ("Tesla V100-SXM2-16GB", "V100M16"). A name that
 * two entries claim is a load error, never a silent pick.
 *
 * The all-balanced rule is mig-parted's (pkg/mig/builder/balanced.go, reference
 * nvidia-slicing.md §2.3): on a GPU with 7 compute slices 2 x 1g + 1 x 2g + 1 x 3g, otherwise
 * 2 x 1g + 1 x 2g, choosing for each g the base profile (no +me/-me/+gfx) with the highest
 * instance limit.
 */
#include "base/compat.h"

#include "supply/catalog.h"

#include <ctype.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/vec.h"

void fatia_catalog_init(struct fatia_catalog *cat)
{
    memset(cat, 0, sizeof(*cat));
    fatia_strmap_init(&cat->by_name);
}

void fatia_catalog_release(struct fatia_catalog *cat)
{
    for (size_t i = 0; i < cat->n; i++)
        fatia_gpu_model_free(cat->v[i]);
    fatia_free(cat->v);
    for (size_t i = 0; i < cat->n_keys; i++)
        fatia_free(cat->keys[i]);
    fatia_free(cat->keys);
    fatia_strmap_release(&cat->by_name);
    fatia_free(cat->path);
    fatia_catalog_init(cat);
}

static char *lower_dup(const char *s)
{
    char *d = fatia_strdup(s);

    for (char *p = d; p && *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return d;
}

static int index_name(struct fatia_catalog *cat, const char *name, struct fatia_gpu_model *m)
{
    char *key = lower_dup(name);

    if (!key)
        return -ENOMEM;
    if (fatia_strmap_has(&cat->by_name, key)) {
        fatia_free(key);
        return -FATIA_E_EXISTS;
    }
    if (fatia_vec_reserve_raw((void **)&cat->keys, &cat->keys_cap, cat->n_keys + 1,
                              sizeof(*cat->keys)) < 0 ||
        fatia_strmap_put(&cat->by_name, key, m) < 0) {
        fatia_free(key);
        return -ENOMEM;
    }
    cat->keys[cat->n_keys++] = key;
    return 0;
}

int fatia_catalog_add(struct fatia_catalog *cat, struct fatia_gpu_model *m)
{
    size_t keys_before = cat->n_keys;
    int r;

    if (fatia_vec_reserve_raw((void **)&cat->v, &cat->cap, cat->n + 1, sizeof(*cat->v)) < 0) {
        fatia_gpu_model_free(m);
        return -ENOMEM;
    }
    r = index_name(cat, m->product, m);
    for (size_t i = 0; r == 0 && i < m->n_aliases; i++)
        r = index_name(cat, m->aliases[i], m);
    if (r < 0) {
        /* undo the names this model took */
        while (cat->n_keys > keys_before) {
            char *k = cat->keys[--cat->n_keys];
            fatia_strmap_del(&cat->by_name, k);
            fatia_free(k);
        }
        fatia_gpu_model_free(m);
        return r;
    }
    cat->v[cat->n++] = m;
    return 0;
}

const struct fatia_gpu_model *fatia_catalog_find(const struct fatia_catalog *cat, const char *name)
{
    char key[FATIA_GPU_NAME_MAX + 32];
    size_t i;

    if (!cat || !name)
        return NULL;
    for (i = 0; name[i] && i < sizeof(key) - 1; i++)
        key[i] = (char)tolower((unsigned char)name[i]);
    if (name[i])
        return NULL;
    key[i] = '\0';
    return fatia_strmap_get(&cat->by_name, key);
}

const struct fatia_gpu_model *fatia_catalog_find_pci(const struct fatia_catalog *cat,
                                                     uint32_t pci_device_id)
{
    for (size_t i = 0; cat && i < cat->n; i++)
        for (size_t j = 0; j < cat->v[i]->n_pci_device_ids; j++)
            if (cat->v[i]->pci_device_ids[j] == pci_device_id)
                return cat->v[i];
    return NULL;
}

struct fatia_gpu_model *fatia_gpu_model_new(void)
{
    struct fatia_gpu_model *m = fatia_calloc(1, sizeof(*m));

    if (m) {
        m->context_reserve = FATIA_DEFAULT_CTX_RESERVE;
        m->mps_max_clients = 48;
    }
    return m;
}

void fatia_gpu_model_free(struct fatia_gpu_model *m)
{
    if (!m)
        return;
    fatia_free(m->product);
    for (size_t i = 0; i < m->n_aliases; i++)
        fatia_free(m->aliases[i]);
    fatia_free(m->aliases);
    fatia_free(m->pci_device_ids);
    fatia_free(m->architecture);
    fatia_free(m->brand);
    fatia_free(m->verified);
    fatia_free(m->source);
    fatia_free(m->mig);
    fatia_free(m);
}

static int dup_str(char **dst, const char *src)
{
    *dst = NULL;
    if (!src)
        return 0;
    *dst = fatia_strdup(src);
    return *dst ? 0 : -ENOMEM;
}

struct fatia_gpu_model *fatia_gpu_model_dup(const struct fatia_gpu_model *m)
{
    struct fatia_gpu_model *d = fatia_gpu_model_new();

    if (!d)
        return NULL;
    *d = *m;
    d->product = d->architecture = d->brand = d->verified = d->source = NULL;
    d->aliases = NULL;
    d->n_aliases = 0;
    d->pci_device_ids = NULL;
    d->n_pci_device_ids = 0;
    d->mig = NULL;
    if (dup_str(&d->product, m->product) < 0 || dup_str(&d->architecture, m->architecture) < 0 ||
        dup_str(&d->brand, m->brand) < 0 || dup_str(&d->verified, m->verified) < 0 ||
        dup_str(&d->source, m->source) < 0)
        goto fail;
    if (m->n_pci_device_ids) {
        d->pci_device_ids = fatia_calloc(m->n_pci_device_ids, sizeof(uint32_t));
        if (!d->pci_device_ids)
            goto fail;
        memcpy(d->pci_device_ids, m->pci_device_ids, m->n_pci_device_ids * sizeof(uint32_t));
        d->n_pci_device_ids = m->n_pci_device_ids;
    }
    if (m->mig) {
        d->mig = fatia_malloc(sizeof(*d->mig));
        if (!d->mig)
            goto fail;
        *d->mig = *m->mig;
    }
    return d;
fail:
    fatia_gpu_model_free(d);
    return NULL;
}

const struct fatia_mig_profile *fatia_mig_geom_find(const struct fatia_mig_geom *g,
                                                    const char *name)
{
    for (size_t i = 0; g && name && i < g->n_profiles; i++)
        if (!strcmp(g->profiles[i].name, name))
            return &g->profiles[i];
    return NULL;
}

const struct fatia_mig_profile *fatia_mig_geom_find_id(const struct fatia_mig_geom *g, int id)
{
    for (size_t i = 0; g && i < g->n_profiles; i++)
        if (g->profiles[i].id == id)
            return &g->profiles[i];
    return NULL;
}

unsigned fatia_mig_profile_flags(const char *name)
{
    unsigned f = 0;

    if (strstr(name, "+me.all"))
        f |= FATIA_MIG_ME_ALL;
    else if (strstr(name, "+me"))
        f |= FATIA_MIG_ME;
    if (strstr(name, "-me"))
        f |= FATIA_MIG_NO_ME;
    if (strstr(name, "+gfx"))
        f |= FATIA_MIG_GFX;
    return f;
}

/* A base profile "<C>g.<N>gb" whose CI spans the GI (no "c." prefix, no suffix). */
static bool is_base_profile(const struct fatia_mig_profile *p)
{
    return p->flags == 0 && !strchr(p->name, 'c');
}

static void compute_balanced(struct fatia_mig_geom *g)
{
    static const uint8_t want7[] = {0, 2, 1, 1}; /* by g: 1g x2, 2g x1, 3g x1 */
    static const uint8_t want4[] = {0, 2, 1, 0};
    const uint8_t *want = g->compute_slices == 7 ? want7 : want4;

    memset(g->balanced, 0, sizeof(g->balanced));
    for (int c = 1; c <= 3; c++) {
        int best = -1;
        for (size_t i = 0; i < g->n_profiles; i++) {
            const struct fatia_mig_profile *p = &g->profiles[i];
            if (p->compute_slices != c || !is_base_profile(p))
                continue;
            if (best < 0 || p->max_instances > g->profiles[best].max_instances)
                best = (int)i;
        }
        if (best >= 0 && want[c])
            g->balanced[best] = want[c];
    }
}

int fatia_mig_geom_finish(struct fatia_mig_geom *g, char *why, size_t why_n)
{
    uint8_t largest = 0;
    bool any_balanced = false;

    if (g->n_profiles == 0 || g->n_profiles > FATIA_MIG_MAX_PROFILES) {
        snprintf(why, why_n, "a MIG geometry needs 1 to %d profiles (has %zu)",
                 FATIA_MIG_MAX_PROFILES, g->n_profiles);
        return -FATIA_E_INVALID;
    }
    for (size_t i = 0; i < g->n_profiles; i++) {
        struct fatia_mig_profile *p = &g->profiles[i];
        p->flags = fatia_mig_profile_flags(p->name);
        largest = FATIA_MAX(largest, p->memory_slices);
        for (size_t j = 0; j < i; j++) {
            if (g->profiles[j].id == p->id) {
                snprintf(why, why_n, "profiles %s and %s have the same id %d", g->profiles[j].name,
                         p->name, p->id);
                return -FATIA_E_INVALID;
            }
            if (!strcmp(g->profiles[j].name, p->name)) {
                snprintf(why, why_n, "profile %s is listed twice", p->name);
                return -FATIA_E_INVALID;
            }
        }
    }
    /* The DRA driver's rule: the slice count is the largest placement size seen. */
    if (g->memory_slices == 0)
        g->memory_slices = largest;
    if (g->memory_slices == 0 || g->memory_slices > FATIA_MIG_MAX_SLICES) {
        snprintf(why, why_n, "memory slices must be 1..%d (is %u)", FATIA_MIG_MAX_SLICES,
                 g->memory_slices);
        return -FATIA_E_INVALID;
    }
    if (g->compute_slices == 0)
        for (size_t i = 0; i < g->n_profiles; i++)
            g->compute_slices = FATIA_MAX(g->compute_slices, g->profiles[i].compute_slices);
    for (size_t i = 0; i < g->n_profiles; i++) {
        const struct fatia_mig_profile *p = &g->profiles[i];
        if (p->memory_slices == 0 || p->compute_slices == 0 ||
            p->compute_slices > g->compute_slices || p->max_instances == 0) {
            snprintf(why, why_n,
                     "profile %s: slices and instance limit must be positive and fit "
                     "the GPU",
                     p->name);
            return -FATIA_E_INVALID;
        }
        for (size_t s = 0; s < p->n_starts; s++) {
            if (p->starts[s] + p->memory_slices > g->memory_slices ||
                (s > 0 && p->starts[s] <= p->starts[s - 1])) {
                snprintf(why, why_n,
                         "profile %s: placement %u:%u does not fit %u memory slices in order",
                         p->name, p->starts[s], p->memory_slices, g->memory_slices);
                return -FATIA_E_INVALID;
            }
        }
        if (p->n_starts == 0) {
            snprintf(why, why_n, "profile %s has no placement", p->name);
            return -FATIA_E_INVALID;
        }
    }
    for (size_t i = 0; i < g->n_profiles; i++)
        any_balanced |= g->balanced[i] != 0;
    if (!any_balanced)
        compute_balanced(g);
    return 0;
}

const char *fatia_gpu_family(int major, int minor)
{
    switch (major) {
    case 1:
        return "tesla";
    case 2:
        return "fermi";
    case 3:
        return "kepler";
    case 5:
        return "maxwell";
    case 6:
        return "pascal";
    case 7:
        return minor < 5 ? "volta" : "turing";
    case 8:
        return minor < 9 ? "ampere" : "ada-lovelace";
    case 9:
        return "hopper";
    case 10:
    case 12:
        return "blackwell";
    }
    return "undefined";
}

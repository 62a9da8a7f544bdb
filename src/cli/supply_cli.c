/*
 * cli/supply_cli.c: loading what the supply commands need (see supply_cli.h).
 *
 * Order: objects from -f (every kind is read; the supply layer picks NodePools and
 * GPUSharingPolicies), then policies imported from upstream configs, added to the same set so
 * that their names collide with the user's like any duplicate; the catalog; the compiled config;
 * the inventory; the plan. Every step reports all its problems before the command gives up, and
 * nothing is planned from partial input.
 *
 * Without -f, the simulated inventory uses the default fleet (data/fleets/default.yaml: one node
 * with 8 x H200 in two NVLink islands), found like the catalog ($FATIA_DATA_DIR, else the source
 * tree).
 */
#include "base/compat.h"

#include "cli/supply_cli.h"

#include <sys/stat.h>

#include <getopt.h>

#include "base/alloc.h"
#include "base/datadir.h"
#include "base/error.h"
#include "base/json.h"
#include "cli/cli.h"
#include "demand/demand.h"
#include "supply/upstream.h"

int fatia_cli_supply_opt(struct supply_opts *o, int c, const char *arg, const char *cmd)
{
    int r = fatia_cli_input_opt(&o->in, c, arg);

    if (r)
        return r < 0 ? -1 : 1;
    switch (c) {
    case 1001:
        if (!strcmp(arg, "auto"))
            o->inventory = SUPPLY_INV_AUTO;
        else if (!strcmp(arg, "sim"))
            o->inventory = SUPPLY_INV_SIM;
        else if (!strcmp(arg, "nvml"))
            o->inventory = SUPPLY_INV_NVML;
        else {
            fprintf(stderr, "fatia %s: unknown inventory '%s': expected auto, nvml or sim\n", cmd,
                    arg);
            return -1;
        }
        return 1;
    case 1002:
        o->catalog = arg;
        return 1;
    case 1003:
        o->nvml_lib = arg;
        return 1;
    case 1004:
        o->node_name = arg;
        return 1;
    case 1005:
        o->pool = arg;
        return 1;
    case 1006:
        o->device_plugin_config = arg;
        return 1;
    case 1007:
        o->mig_parted_config = arg;
        return 1;
    case 1008:
        o->device_plugin_default = arg;
        return 1;
    }
    return 0;
}

void fatia_cli_supply_opts_release(struct supply_opts *o)
{
    fatia_cli_input_release(&o->in);
}

char *fatia_cli_supply_read_file(const char *path, size_t *ret_n)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0, cap = 0;

    if (!f)
        return NULL;
    for (;;) {
        size_t got;
        if (n + 4096 + 1 > cap) {
            char *nb;
            cap = cap ? cap * 2 : 8192;
            if (cap > (64u << 20)) {
                errno = EFBIG;
                goto fail;
            }
            nb = fatia_realloc(buf, cap);
            if (!nb)
                goto fail;
            buf = nb;
        }
        got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f))
        goto fail;
    fclose(f);
    buf[n] = '\0';
    *ret_n = n;
    return buf;
fail:
    fatia_free(buf);
    fclose(f);
    return NULL;
}

static int print_diag(struct fatia_diag *d)
{
    fatia_diag_print(d, stderr);
    return fatia_diag_has_errors(d) ? FATIA_EXIT_FAIL : FATIA_EXIT_OK;
}

static int import_upstream(struct supply_session *s, const struct supply_opts *o,
                           struct fatia_diag *d)
{
    char *dp = NULL, *mig = NULL;
    size_t dp_n = 0, mig_n = 0, i;
    json_t *objs = NULL, *obj;
    int r = 0;

    if (!o->device_plugin_config && !o->mig_parted_config)
        return 0;
    if (o->device_plugin_config &&
        !(dp = fatia_cli_supply_read_file(o->device_plugin_config, &dp_n))) {
        fatia_diag_add(d, FATIA_DIAG_ERROR, o->device_plugin_config, 0, 0, NULL, NULL,
                       "cannot read: %s", fatia_strerror(-errno));
        r = -FATIA_E_INVALID;
        goto out;
    }
    if (o->mig_parted_config && !(mig = fatia_cli_supply_read_file(o->mig_parted_config, &mig_n))) {
        fatia_diag_add(d, FATIA_DIAG_ERROR, o->mig_parted_config, 0, 0, NULL, NULL,
                       "cannot read: %s", fatia_strerror(-errno));
        r = -FATIA_E_INVALID;
        goto out;
    }
    r = fatia_upstream_import(o->device_plugin_config, dp, dp_n, o->device_plugin_default,
                              o->mig_parted_config, mig, mig_n, &objs, d);
    if (r < 0)
        goto out;
    json_array_foreach(objs, i, obj)
    {
        struct fatia_decode_opts dopts = {
            .file = json_object_get(json_object_get(obj, "spec"), "mig") ? o->mig_parted_config
                                                                         : o->device_plugin_config};
        struct fatia_object *fo = NULL;
        if (fatia_object_decode(obj, &dopts, &fatia_demand_checks, d, &fo) < 0)
            continue;
        if (fatia_objset_add(&s->set, fo) == -FATIA_E_EXISTS)
            fatia_diag_add(d, FATIA_DIAG_ERROR, dopts.file, 0, 0, NULL, NULL,
                           "imported policy %s has the name of a policy already given",
                           fatia_json_str(json_object_get(obj, "metadata"), "name"));
    }
    if (fatia_diag_has_errors(d))
        r = -FATIA_E_INVALID;
out:
    json_decref(objs);
    fatia_free(dp);
    fatia_free(mig);
    return r;
}

static const struct fatia_pool *find_pool(const struct supply_session *s,
                                          const struct supply_opts *o, struct fatia_diag *d)
{
    if (o->pool) {
        for (size_t i = 0; i < s->cfg.n_pools; i++)
            if (!strcmp(s->cfg.pools[i].name, o->pool))
                return &s->cfg.pools[i];
        fatia_diag_add(d, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, NULL, "no NodePool named '%s'",
                       o->pool);
        return NULL;
    }
    return s->cfg.n_pools == 1 ? &s->cfg.pools[0] : NULL;
}

static int take_inventory(struct supply_session *s, const struct supply_opts *o,
                          struct fatia_diag *d)
{
    struct fatia_nvml_opts no = {o->nvml_lib, o->node_name, NULL};

    if (o->inventory != SUPPLY_INV_SIM) {
        no.pool = find_pool(s, o, d);
        if (fatia_diag_has_errors(d))
            return -FATIA_E_INVALID;
    }
    switch (o->inventory) {
    case SUPPLY_INV_SIM:
        return fatia_inventory_sim(&s->inv, &s->cfg, &s->cat, d);
    case SUPPLY_INV_NVML:
        return fatia_inventory_nvml(&s->inv, &no, &s->cat, d);
    case SUPPLY_INV_AUTO:
        break;
    }
    return fatia_inventory_auto(&s->inv, &no, &s->cfg, &s->cat, d);
}

int fatia_cli_supply_session_open(struct supply_session *s, const struct supply_opts *o,
                                  const char *cmd)
{
    struct fatia_diag d;
    char catalog[512], fleet[512];
    char *default_paths[1];
    int r;

    memset(s, 0, sizeof(*s));
    fatia_objset_init(&s->set);
    fatia_catalog_init(&s->cat);
    fatia_inventory_init(&s->inv);
    fatia_diag_init(&d);
    if (o->in.paths.n) {
        r = fatia_objset_load(&s->set, o->in.paths.v, o->in.paths.n, o->in.recursive,
                              &fatia_demand_checks, &d);
    } else if (o->inventory != SUPPLY_INV_NVML) {
        fatia_data_path(fleet, sizeof(fleet), "fleets/default.yaml");
        default_paths[0] = fleet;
        r = fatia_objset_load(&s->set, default_paths, 1, false, &fatia_demand_checks, &d);
    } else {
        r = 0;
    }
    if (r == -ENOMEM)
        goto oom;
    if (import_upstream(s, o, &d) == -ENOMEM)
        goto oom;
    fatia_catalog_default_path(o->catalog, catalog, sizeof(catalog));
    if (!fatia_diag_has_errors(&d) && fatia_catalog_load(&s->cat, catalog, &d) == -ENOMEM)
        goto oom;
    if (!fatia_diag_has_errors(&d)) {
        r = fatia_supply_config_load(&s->cfg, &s->set, &d);
        if (r == -ENOMEM)
            goto oom;
        s->have_cfg = r == 0;
    }
    if (!fatia_diag_has_errors(&d) && take_inventory(s, o, &d) == -ENOMEM)
        goto oom;
    if (!fatia_diag_has_errors(&d) && fatia_supply_plan(&s->inv, &s->cfg, &d, &s->plan) == -ENOMEM)
        goto oom;
    r = print_diag(&d);
    fatia_diag_release(&d);
    (void)cmd;
    return r;
oom:
    fprintf(stderr, "fatia %s: out of memory\n", cmd);
    fatia_diag_release(&d);
    return FATIA_EXIT_FAIL;
}

int fatia_cli_supply_session_replan(struct supply_session *s, const struct supply_opts *o,
                                    const char *cmd)
{
    struct fatia_diag d;
    int r;

    fatia_diag_init(&d);
    fatia_plan_free(s->plan);
    s->plan = NULL;
    r = take_inventory(s, o, &d);
    if (r == 0)
        r = fatia_supply_plan(&s->inv, &s->cfg, &d, &s->plan);
    if (r == -ENOMEM)
        fprintf(stderr, "fatia %s: out of memory\n", cmd);
    r = print_diag(&d);
    fatia_diag_release(&d);
    return r;
}

void fatia_cli_supply_session_close(struct supply_session *s)
{
    fatia_plan_free(s->plan);
    fatia_inventory_release(&s->inv);
    if (s->have_cfg)
        fatia_supply_config_release(&s->cfg);
    fatia_catalog_release(&s->cat);
    fatia_objset_release(&s->set);
    memset(s, 0, sizeof(*s));
}

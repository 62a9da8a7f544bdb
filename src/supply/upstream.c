/*
 * supply/upstream.c: importing and exporting the GPU Operator's device-plugin and mig-parted
 * configs (see upstream.h for the mapping). Pure: text in, JSON trees out.
 *
 * The device plugin's fields are copied as they are (renameByDefault,
 * failRequestsGreaterThanOne, resources[{name, replicas, rename, devices}]) so that its own
 * validation messages and defaults apply through GPUSharingPolicy's schema; mig-parted's
 * `devices`, `device-filter`, `mig-enabled`, `mig-devices` map onto gpuIndices, deviceFilter and
 * the mig layer, with the checks of mig-parted's spec (pkg/types/mig_config.go): a known version,
 * `devices` "all" or indices, mig-devices only when mig-enabled.
 *
 * Export groups nodes by what they need: one device-plugin config per (sharing policy, MIG
 * strategy) and one mig-parted config per MIG policy set, with an entry per product (matched by
 * device-filter, the PCI id) so that one named config serves every product it is used on.
 */
#include "base/compat.h"

#include "supply/upstream.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "model/doc.h"

#define DP_LABEL  "nvidia.com/device-plugin.config"
#define MIG_LABEL "nvidia.com/mig.config"

static void dns_name(const char *in, char *buf, size_t n)
{
    size_t o = 0;

    for (const char *p = in; *p && o + 1 < n; p++) {
        char c = *p;
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-'))
            c = '-';
        buf[o++] = c;
    }
    while (o > 0 &&
           !((buf[o - 1] >= 'a' && buf[o - 1] <= 'z') || (buf[o - 1] >= '0' && buf[o - 1] <= '9')))
        o--;
    buf[o] = '\0';
    while (buf[0] && !((buf[0] >= 'a' && buf[0] <= 'z') || (buf[0] >= '0' && buf[0] <= '9')))
        memmove(buf, buf + 1, strlen(buf));
    if (!buf[0])
        snprintf(buf, n, "x");
}

static json_t *policy_obj(const char *name, json_t *selector, json_t *spec)
{
    if (selector)
        json_object_set_new(spec, "nodeSelector", selector);
    return json_pack("{s:s,s:s,s:{s:s},s:o}", "apiVersion", "fatia.dev/v1alpha1", "kind",
                     "GPUSharingPolicy", "metadata", "name", name, "spec", spec);
}

static int parse_text(const char *name, const char *text, size_t n, json_t **ret,
                      struct fatia_diag *diag)
{
    char why[256];
    int r = fatia_yaml_parse(text, n, ret, why, sizeof(why));

    if (r == -ENOMEM)
        return r;
    if (r < 0) {
        fatia_diag_add(diag, FATIA_DIAG_ERROR, name, 0, 0, NULL, NULL, "%s", why);
        return -FATIA_E_INVALID;
    }
    if (!json_is_object(*ret)) {
        fatia_diag_add(diag, FATIA_DIAG_ERROR, name, 0, 0, NULL, NULL, "expected a mapping");
        json_decref(*ret);
        return -FATIA_E_INVALID;
    }
    return 0;
}

static bool is_configmap(const json_t *root)
{
    const char *kind = fatia_json_str(root, "kind");

    return kind && !strcmp(kind, "ConfigMap");
}

/* ---- import: device plugin ---- */

struct dp_key {
    char *key;   /* ConfigMap data key, or NULL for a bare file */
    json_t *cfg; /* owned */
    const char *strategy;
};

static void copy_member(json_t *dst, const json_t *src, const char *key)
{
    json_t *v = json_object_get(src, key);

    if (v)
        json_object_set(dst, key, v);
}

/* The device plugin's sharing config as a GPUSharingPolicy member: its fields, copied. */
static json_t *sharing_member(const json_t *sh)
{
    json_t *m = json_object();

    copy_member(m, sh, "renameByDefault");
    copy_member(m, sh, "failRequestsGreaterThanOne");
    copy_member(m, sh, "resources");
    return m;
}

static json_t *label_selector(const char *k1, const char *v1, const char *k2, const char *v2,
                              const char *absent)
{
    json_t *sel = json_object(), *ml = json_object();

    if (k1)
        json_object_set_new(ml, k1, json_string(v1));
    if (k2)
        json_object_set_new(ml, k2, json_string(v2));
    if (json_object_size(ml))
        json_object_set_new(sel, "matchLabels", ml);
    else
        json_decref(ml);
    if (absent)
        json_object_set_new(sel, "matchExpressions",
                            json_pack("[{s:s,s:s}]", "key", absent, "operator", "DoesNotExist"));
    return sel;
}

static int dp_keys(const char *name, json_t *root, struct dp_key **ret, size_t *ret_n,
                   struct fatia_diag *diag)
{
    json_t *data = is_configmap(root) ? json_object_get(root, "data") : NULL;
    struct dp_key *keys;
    size_t n = 0, errors = diag->n_errors;
    const char *k;
    json_t *v;

    keys = fatia_calloc(data ? json_object_size(data) + 1 : 1, sizeof(*keys));
    if (!keys)
        return -ENOMEM;
    if (!data) {
        keys[0].cfg = json_incref(root);
        n = 1;
    } else {
        json_object_foreach(data, k, v)
        {
            json_t *cfg;
            char sub[320];
            int r;
            snprintf(sub, sizeof(sub), "%s: data[%s]", name, k);
            if (!json_is_string(v)) {
                fatia_diag_add(diag, FATIA_DIAG_ERROR, name, 0, 0, NULL, NULL,
                               "data[%s]: expected the config as a string", k);
                continue;
            }
            r = parse_text(sub, json_string_value(v), json_string_length(v), &cfg, diag);
            if (r == -ENOMEM)
                goto oom;
            if (r < 0)
                continue;
            keys[n].key = fatia_strdup(k);
            keys[n].cfg = cfg;
            if (!keys[n].key)
                goto oom;
            n++;
        }
    }
    for (size_t i = 0; i < n; i++) {
        const char *ver = fatia_json_str(keys[i].cfg, "version");
        const char *strat = fatia_json_str(json_object_get(keys[i].cfg, "flags"), "migStrategy");
        if (!ver || strcmp(ver, "v1"))
            fatia_diag_add(diag, FATIA_DIAG_ERROR, name, 0, 0, NULL,
                           keys[i].key ? keys[i].key : NULL, "unknown version \"%s\"",
                           ver ? ver : "");
        if (strat && strcmp(strat, "none") && strcmp(strat, "single") && strcmp(strat, "mixed"))
            fatia_diag_add(diag, FATIA_DIAG_ERROR, name, 0, 0, NULL,
                           keys[i].key ? keys[i].key : NULL,
                           "flags.migStrategy: unsupported value \"%s\": expected none, single "
                           "or mixed",
                           strat);
        keys[i].strategy = strat ? strat : "none";
    }
    *ret = keys;
    *ret_n = n;
    return diag->n_errors > errors ? -FATIA_E_INVALID : 0;
oom:
    for (size_t i = 0; i <= n; i++) {
        fatia_free(keys[i].key);
        json_decref(keys[i].cfg);
    }
    fatia_free(keys);
    return -ENOMEM;
}

static void dp_keys_free(struct dp_key *keys, size_t n)
{
    for (size_t i = 0; keys && i < n; i++) {
        fatia_free(keys[i].key);
        json_decref(keys[i].cfg);
    }
    fatia_free(keys);
}

static int import_dp(const struct dp_key *keys, size_t n, const char *default_key, json_t *out)
{
    for (size_t i = 0; i < n; i++) {
        json_t *sharing = json_object_get(keys[i].cfg, "sharing");
        json_t *mps = json_object_get(sharing, "mps"),
               *ts = json_object_get(sharing, "timeSlicing");
        const char *member = NULL;
        json_t *sh = NULL;
        char base[200], name[240];

        /* Sharing.SharingStrategy(): MPS wins when it has a replicated resource */
        if (json_array_size(json_object_get(mps, "resources"))) {
            member = "mps";
            sh = mps;
        } else if (json_array_size(json_object_get(ts, "resources"))) {
            member = "timeSlicing";
            sh = ts;
        }
        if (!sh)
            continue;
        dns_name(keys[i].key ? keys[i].key : "config", base, sizeof(base));
        snprintf(name, sizeof(name), "device-plugin-%s", base);
        if (!keys[i].key) {
            json_t *spec = json_pack("{s:o}", member, sharing_member(sh));
            if (json_array_append_new(out, policy_obj(name, NULL, spec)) < 0)
                return -ENOMEM;
            continue;
        }
        if (json_array_append_new(
                out, policy_obj(name, label_selector(DP_LABEL, keys[i].key, NULL, NULL, NULL),
                                json_pack("{s:o}", member, sharing_member(sh)))) < 0)
            return -ENOMEM;
        if (default_key && !strcmp(default_key, keys[i].key)) {
            snprintf(name, sizeof(name), "device-plugin-%s-unlabelled", base);
            if (json_array_append_new(
                    out, policy_obj(name, label_selector(NULL, NULL, NULL, NULL, DP_LABEL),
                                    json_pack("{s:o}", member, sharing_member(sh)))) < 0)
                return -ENOMEM;
        }
    }
    return 0;
}

/* ---- import: mig-parted ---- */

/* mig-parted cuts whatever the device plugin's strategy; a MIG config on a node whose device
 * plugin says migStrategy none is planned with the mixed strategy (upstream would not advertise
 * the devices at all). */
static const char *strategy_of(const char *s)
{
    return !strcmp(s, "single") ? "single" : "mixed";
}

static int mig_entry_spec(const char *name, const char *cfgname, size_t i, const json_t *e,
                          json_t **ret, struct fatia_diag *diag)
{
    json_t *spec = json_object(), *mig = json_object(), *dev = json_object_get(e, "devices");
    json_t *filter = json_object_get(e, "device-filter"), *md = json_object_get(e, "mig-devices");
    json_t *en = json_object_get(e, "mig-enabled");
    char where[320];

    snprintf(where, sizeof(where), "mig-configs[%s][%zu]", cfgname, i);
    if (!dev || !en) {
        fatia_diag_add(diag, FATIA_DIAG_ERROR, name, 0, 0, NULL, where,
                       "missing required field: %s", !dev ? "devices" : "mig-enabled");
        goto bad;
    }
    if (json_is_string(dev)) {
        if (strcmp(json_string_value(dev), "all")) {
            fatia_diag_add(diag, FATIA_DIAG_ERROR, name, 0, 0, NULL, where,
                           "invalid string input for 'devices': %s", json_string_value(dev));
            goto bad;
        }
    } else if (json_is_array(dev)) {
        json_object_set(spec, "gpuIndices", dev);
    } else {
        fatia_diag_add(diag, FATIA_DIAG_ERROR, name, 0, 0, NULL, where,
                       "devices: expected \"all\" or a list of GPU indices");
        goto bad;
    }
    if (json_is_string(filter))
        json_object_set_new(spec, "deviceFilter", json_pack("[O]", filter));
    else if (json_is_array(filter))
        json_object_set(spec, "deviceFilter", filter);
    if (!json_is_boolean(en)) {
        fatia_diag_add(diag, FATIA_DIAG_ERROR, name, 0, 0, NULL, where,
                       "mig-enabled: expected true or false");
        goto bad;
    }
    if (json_is_false(en)) {
        if (json_object_size(md)) {
            fatia_diag_add(diag, FATIA_DIAG_ERROR, name, 0, 0, NULL, where,
                           "MIG devices included when 'mig-enabled' is false");
            goto bad;
        }
        json_object_set_new(mig, "config", json_string("all-disabled"));
    } else if (!md) {
        fatia_diag_add(diag, FATIA_DIAG_ERROR, name, 0, 0, NULL, where,
                       "missing required field 'mig-devices' when 'mig-enabled' is true");
        goto bad;
    } else if (json_object_size(md) == 0) {
        json_object_set_new(mig, "config", json_string("all-enabled"));
    } else {
        json_object_set(mig, "mig-devices", md);
    }
    json_object_set_new(spec, "mig", mig);
    *ret = spec;
    return 0;
bad:
    json_decref(spec);
    json_decref(mig);
    return -FATIA_E_INVALID;
}

static int import_mig(const char *name, json_t *root, const struct dp_key *keys, size_t n_keys,
                      const char *default_key, json_t *out, struct fatia_diag *diag)
{
    json_t *file = root, *data, *configs, *entries, *e, *parsed = NULL;
    const char *cn, *k;
    size_t i, errors = diag->n_errors;
    int r = 0;

    if (is_configmap(root)) {
        data = json_object_get(root, "data");
        file = json_object_get(data, "config.yaml");
        if (!file) {
            json_object_foreach(data, k, file) break;
        }
        if (!json_is_string(file)) {
            fatia_diag_add(diag, FATIA_DIAG_ERROR, name, 0, 0, NULL, "data",
                           "expected the mig-parted config as a string");
            return -FATIA_E_INVALID;
        }
        r = parse_text(name, json_string_value(file), json_string_length(file), &parsed, diag);
        if (r < 0)
            return r;
        file = parsed;
    }
    if (!fatia_json_str(file, "version") || strcmp(fatia_json_str(file, "version"), "v1")) {
        fatia_diag_add(diag, FATIA_DIAG_ERROR, name, 0, 0, NULL, "version",
                       fatia_json_str(file, "version") ? "unknown version"
                                                       : "missing required field: version");
        r = -FATIA_E_INVALID;
        goto out;
    }
    configs = json_object_get(file, "mig-configs");
    if (!json_object_size(configs)) {
        fatia_diag_add(diag, FATIA_DIAG_ERROR, name, 0, 0, NULL, "mig-configs",
                       "at least one entry in mig-configs is required");
        r = -FATIA_E_INVALID;
        goto out;
    }
    json_object_foreach(configs, cn, entries)
    {
        char base[200];
        dns_name(cn, base, sizeof(base));
        json_array_foreach(entries, i, e)
        {
            json_t *spec;
            char pname[400];
            if (mig_entry_spec(name, cn, i, e, &spec, diag) < 0)
                continue;
            /* one policy per device-plugin key (its migStrategy), and one for unlabelled nodes */
            for (size_t kk = 0; kk <= n_keys; kk++) {
                const struct dp_key *dk = kk < n_keys ? &keys[kk] : NULL;
                const char *strategy = "mixed";
                json_t *s = json_deep_copy(spec), *sel;
                if (dk && !dk->key) {
                    /* a bare device-plugin file serves every node: one policy */
                    strategy = strategy_of(dk->strategy);
                    sel = label_selector(MIG_LABEL, cn, NULL, NULL, NULL);
                    snprintf(pname, sizeof(pname), "mig-parted-%s-%zu", base, i);
                    kk = n_keys;
                } else if (dk) {
                    char kb[120];
                    dns_name(dk->key, kb, sizeof(kb));
                    strategy = strategy_of(dk->strategy);
                    sel = label_selector(MIG_LABEL, cn, DP_LABEL, dk->key, NULL);
                    snprintf(pname, sizeof(pname), "mig-parted-%s-%zu-%s", base, i, kb);
                } else {
                    for (size_t d = 0; default_key && d < n_keys; d++)
                        if (keys[d].key && !strcmp(keys[d].key, default_key))
                            strategy = strategy_of(keys[d].strategy);
                    sel = label_selector(MIG_LABEL, cn, NULL, NULL, n_keys ? DP_LABEL : NULL);
                    snprintf(pname, sizeof(pname), "mig-parted-%s-%zu", base, i);
                }
                json_object_set_new(json_object_get(s, "mig"), "strategy", json_string(strategy));
                if (json_array_append_new(out, policy_obj(pname, sel, s)) < 0) {
                    json_decref(spec);
                    r = -ENOMEM;
                    goto out;
                }
            }
            json_decref(spec);
        }
    }
    if (diag->n_errors > errors)
        r = -FATIA_E_INVALID;
out:
    json_decref(parsed);
    return r;
}

int fatia_upstream_import(const char *dp_name, const char *dp_text, size_t dp_n,
                          const char *dp_default_key, const char *mig_name, const char *mig_text,
                          size_t mig_n, json_t **ret_objects, struct fatia_diag *diag)
{
    json_t *out = json_array(), *dp = NULL, *mig = NULL;
    struct dp_key *keys = NULL;
    size_t n_keys = 0;
    const char *def = dp_default_key;
    int r = 0;

    if (!out)
        return -ENOMEM;
    if (dp_text) {
        r = parse_text(dp_name, dp_text, dp_n, &dp, diag);
        if (r < 0)
            goto out;
        r = dp_keys(dp_name, dp, &keys, &n_keys, diag);
        if (r < 0)
            goto out;
        if (!def && n_keys == 1 && keys[0].key)
            def = keys[0].key;
        if (def && keys[0].key) {
            bool found = false;
            for (size_t i = 0; i < n_keys; i++)
                found |= !strcmp(keys[i].key, def);
            if (!found) {
                fatia_diag_add(diag, FATIA_DIAG_ERROR, dp_name, 0, 0, NULL, NULL,
                               "default config \"%s\" is not a key of the ConfigMap", def);
                r = -FATIA_E_INVALID;
                goto out;
            }
        }
        r = import_dp(keys, n_keys, def, out);
        if (r < 0)
            goto out;
    }
    if (mig_text) {
        r = parse_text(mig_name, mig_text, mig_n, &mig, diag);
        if (r < 0)
            goto out;
        r = import_mig(mig_name, mig, keys, n_keys, def, out, diag);
        if (r < 0)
            goto out;
    }
    *ret_objects = out;
    out = NULL;
out:
    json_decref(out);
    json_decref(dp);
    json_decref(mig);
    dp_keys_free(keys, n_keys);
    return r;
}

/* ---- export ---- */

struct node_assign {
    char dp_key[256];
    char mig_name[256];
};

static void export_error(struct fatia_diag *diag, const struct fatia_policy *p, const char *path,
                         const char *fmt, ...) FATIA_PRINTF(4, 5);

static void export_error(struct fatia_diag *diag, const struct fatia_policy *p, const char *path,
                         const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* one report per (policy, message) */
    for (size_t i = 0; i < diag->n; i++)
        if (diag->v[i].object && p && !strcmp(diag->v[i].object, p->obj->id) &&
            !strcmp(diag->v[i].msg, msg))
            return;
    fatia_diag_add(diag, FATIA_DIAG_ERROR, p ? p->obj->file : NULL, p ? p->obj->pos.line : 0,
                   p ? p->obj->pos.col : 0, p ? p->obj->id : NULL, path, "%s", msg);
}

static json_t *dp_config(const struct fatia_policy *sp, const char *strategy)
{
    json_t *cfg = json_pack("{s:s,s:{s:s}}", "version", "v1", "flags", "migStrategy", strategy);

    if (cfg && sp && (sp->share == FATIA_SHARE_TIMESLICE || sp->share == FATIA_SHARE_MPS)) {
        const char *member = sp->share == FATIA_SHARE_MPS ? "mps" : "timeSlicing";
        json_t *src = json_object_get(json_object_get(sp->obj->obj, "spec"), member);
        json_object_set_new(cfg, "sharing", json_pack("{s:o}", member, sharing_member(src)));
    }
    return cfg;
}

/* Checks that the sharing policy says nothing upstream cannot. */
static void check_exportable_share(const struct fatia_policy *sp, struct fatia_diag *diag)
{
    json_t *spec = json_object_get(sp->obj->obj, "spec");
    static const char *const ts_only[] = {"memoryPerReplica", "contextReserve"};
    static const char *const mps_only[] = {"activeThreadPercentage", "pinnedMemoryLimit"};

    if (sp->share == FATIA_SHARE_FRACTIONAL) {
        export_error(diag, sp, "spec.fractional",
                     "fractional sharing has no GPU Operator equivalent");
        return;
    }
    for (size_t i = 0; i < 2; i++) {
        const char *member = sp->share == FATIA_SHARE_MPS ? "mps" : "timeSlicing";
        const char *field = sp->share == FATIA_SHARE_MPS ? mps_only[i] : ts_only[i];
        char path[96];
        if (!json_object_get(json_object_get(spec, member), field))
            continue;
        snprintf(path, sizeof(path), "spec.%s.%s", member, field);
        export_error(diag, sp, path,
                     "fatia's extension has no device-plugin field: the exported config would "
                     "plan with the default");
    }
}

static int mig_entry(const struct fatia_plan_gpu *pg, json_t *devices, json_t **ret)
{
    json_t *e = json_pack("{s:o,s:b}", "devices", devices, "mig-enabled", pg->mig_enabled);
    json_t *md;

    if (!e)
        return -ENOMEM;
    if (pg->inv->pci_device_id) {
        char id[16];
        snprintf(id, sizeof(id), "0x%08" PRIX32, pg->inv->pci_device_id);
        json_object_set_new(e, "device-filter", json_string(id));
    }
    if (pg->mig_enabled) {
        md = json_object();
        for (unsigned i = 0; md && i < pg->layout->n; i++) {
            const char *pn = pg->layout->v[i].profile->name;
            json_int_t c = json_integer_value(json_object_get(md, pn));
            json_object_set_new(md, pn, json_integer(c + 1));
        }
        json_object_set_new(e, "mig-devices", md);
    }
    *ret = e;
    return 0;
}

static int add_entry(json_t *configs, const char *name, json_t *entry, struct fatia_diag *diag,
                     const struct fatia_policy *p)
{
    json_t *list = json_object_get(configs, name), *x;
    size_t i;

    if (!list) {
        list = json_array();
        json_object_set_new(configs, name, list);
    }
    json_array_foreach(list, i, x)
    {
        if (fatia_json_equal(x, entry)) {
            json_decref(entry);
            return 0;
        }
        if (fatia_json_equal(json_object_get(x, "devices"), json_object_get(entry, "devices")) &&
            fatia_json_equal(json_object_get(x, "device-filter"),
                             json_object_get(entry, "device-filter"))) {
            export_error(diag, p, "spec.mig",
                         "mig-parted config \"%s\" would need two layouts for the same GPUs", name);
            json_decref(entry);
            return 0;
        }
    }
    return json_array_append_new(list, entry);
}

static int node_assign(const struct fatia_plan *plan, size_t ni, json_t *dp_configs,
                       json_t *mig_configs, struct node_assign *a, struct fatia_diag *diag)
{
    const struct fatia_plan_node *pn = &plan->nodes[ni];
    const struct fatia_inv_node *n = pn->inv;
    const struct fatia_policy *sp = n->n_gpus ? pn->gpus[0].share_policy : NULL;
    const struct fatia_policy *mps_[FATIA_NODE_MAX_GPUS];
    size_t n_mig = 0;
    const char *strategy = "none";
    char base[200];

    a->dp_key[0] = a->mig_name[0] = '\0';
    for (uint32_t g = 0; g < n->n_gpus; g++) {
        const struct fatia_plan_gpu *pg = &pn->gpus[g];
        if (pg->share_policy != sp) {
            const struct fatia_policy *p = pg->share_policy ? pg->share_policy : sp;
            export_error(diag, p, "spec.gpuIndices",
                         "the device plugin shares every GPU of a node alike: node %s has GPUs "
                         "this policy does not share",
                         n->name);
            return 0;
        }
        if (pg->mig_enabled)
            strategy = fatia_mig_strategy_name(pg->strategy);
        if (pg->mig_policy) {
            size_t k;
            for (k = 0; k < n_mig && mps_[k] != pg->mig_policy; k++)
                ;
            if (k == n_mig)
                mps_[n_mig++] = pg->mig_policy;
        } else if (pg->mig_enabled) {
            fatia_diag_add(diag, FATIA_DIAG_WARNING, NULL, 0, 0, NULL, NULL,
                           "node %s GPU %" PRIu32
                           ": its MIG layout exists but no policy sets it; not exported",
                           n->name, g);
        }
    }
    if (sp)
        check_exportable_share(sp, diag);
    dns_name(sp ? sp->name : "whole", base, sizeof(base));
    snprintf(a->dp_key, sizeof(a->dp_key), "%s%s%s", base, strcmp(strategy, "none") ? "-mig-" : "",
             strcmp(strategy, "none") ? strategy : "");
    if (!json_object_get(dp_configs, a->dp_key))
        json_object_set_new(dp_configs, a->dp_key, dp_config(sp, strategy));
    if (!n_mig)
        return 0;
    /* the mig-parted config name */
    if (n_mig == 1 && mps_[0]->mig_config && !mps_[0]->has_gpu_indices &&
        !mps_[0]->n_device_filter) {
        snprintf(a->mig_name, sizeof(a->mig_name), "%s", mps_[0]->mig_config);
    } else {
        size_t len = (size_t)snprintf(a->mig_name, sizeof(a->mig_name), "fatia");
        for (size_t k = 0; k < n_mig && len < sizeof(a->mig_name); k++) {
            dns_name(mps_[k]->name, base, sizeof(base));
            len += (size_t)snprintf(a->mig_name + len, sizeof(a->mig_name) - len, "-%s", base);
        }
    }
    /* entries: per MIG policy, per product */
    for (size_t k = 0; k < n_mig; k++) {
        bool done[FATIA_NODE_MAX_GPUS] = {false};
        for (uint32_t g = 0; g < n->n_gpus; g++) {
            const struct fatia_plan_gpu *pg = &pn->gpus[g];
            json_t *devices, *entry;
            bool all = true;
            if (done[g] || pg->mig_policy != mps_[k])
                continue;
            devices = json_array();
            for (uint32_t h = g; h < n->n_gpus; h++) {
                const struct fatia_plan_gpu *ph = &pn->gpus[h];
                bool same_product = ph->inv->model == pg->inv->model;
                if (same_product && ph->mig_policy == mps_[k]) {
                    json_array_append_new(devices, json_integer(h));
                    done[h] = true;
                } else if (same_product || !pg->inv->pci_device_id) {
                    all = false;
                }
            }
            for (uint32_t h = 0; h < g; h++)
                if (pn->gpus[h].inv->model == pg->inv->model ||
                    (!pg->inv->pci_device_id && pn->gpus[h].mig_policy != mps_[k]))
                    all = false;
            if (all) {
                json_decref(devices);
                devices = json_string("all");
            }
            if (mig_entry(pg, devices, &entry) < 0 ||
                add_entry(mig_configs, a->mig_name, entry, diag, mps_[k]) < 0)
                return -ENOMEM;
        }
    }
    return 0;
}

static json_t *configmap(const char *name, json_t *data)
{
    return json_pack("{s:s,s:s,s:{s:s,s:s},s:o}", "apiVersion", "v1", "kind", "ConfigMap",
                     "metadata", "name", name, "namespace", "gpu-operator", "data", data);
}

static int yaml_text(const json_t *v, json_t **ret)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    int r = fatia_yaml_dump(v, &b);

    if (r < 0) {
        fatia_buf_release(&b);
        return r;
    }
    *ret = json_string(b.p);
    fatia_buf_release(&b);
    return *ret ? 0 : -ENOMEM;
}

int fatia_upstream_export(const struct fatia_plan *plan, struct fatia_diag *diag, json_t **ret)
{
    json_t *dp_configs = json_object(), *mig_configs = json_object(), *labels = json_object();
    json_t *fleet = json_array(), *dp_data = json_object(), *doc = NULL, *mig_cm = json_null();
    struct node_assign *assign = fatia_calloc(plan->n_nodes + 1, sizeof(*assign));
    size_t errors = diag->n_errors;
    const char *k;
    json_t *v;
    int r = -ENOMEM;

    if (!dp_configs || !mig_configs || !labels || !fleet || !dp_data || !assign)
        goto out;
    for (size_t ni = 0; ni < plan->n_nodes; ni++) {
        json_t *nl;
        r = node_assign(plan, ni, dp_configs, mig_configs, &assign[ni], diag);
        if (r < 0)
            goto out;
        nl = json_pack("{s:s}", DP_LABEL, assign[ni].dp_key);
        if (assign[ni].mig_name[0])
            json_object_set_new(nl, MIG_LABEL, json_string(assign[ni].mig_name));
        json_object_set_new(labels, plan->nodes[ni].inv->name, nl);
    }
    /* the fleet: NodePools with the labels (every node of a pool must agree), or Nodes */
    if (plan->inv->source == FATIA_INV_SIM) {
        for (size_t p = 0; p < plan->cfg->n_pools; p++) {
            const struct fatia_pool *pool = &plan->cfg->pools[p];
            json_t *obj, *spec, *pl = NULL;
            for (size_t ni = 0; ni < plan->n_nodes; ni++) {
                json_t *nl = json_object_get(labels, plan->nodes[ni].inv->name);
                if (plan->nodes[ni].inv->pool != pool)
                    continue;
                if (!pl)
                    pl = nl;
                else if (!fatia_json_equal(pl, nl))
                    fatia_diag_add(diag, FATIA_DIAG_ERROR, pool->obj->file, pool->obj->pos.line,
                                   pool->obj->pos.col, pool->obj->id, NULL,
                                   "its nodes need different GPU Operator configs (a selector on "
                                   "kubernetes.io/hostname?): split the pool to export it");
            }
            obj = json_deep_copy(pool->obj->obj);
            if (!obj)
                goto out;
            json_object_del(obj, "status");
            spec = json_object_get(obj, "spec");
            if (pl) {
                json_t *sl = fatia_json_object_ensure(spec, "labels");
                json_object_foreach(pl, k, v) json_object_set(sl, k, v);
            }
            json_array_append_new(fleet, obj);
        }
    } else {
        for (size_t ni = 0; ni < plan->n_nodes; ni++)
            json_array_append_new(
                fleet, json_pack("{s:s,s:s,s:{s:s,s:O}}", "apiVersion", "v1", "kind", "Node",
                                 "metadata", "name", plan->nodes[ni].inv->name, "labels",
                                 json_object_get(labels, plan->nodes[ni].inv->name)));
    }
    if (diag->n_errors > errors) {
        r = -FATIA_E_UNSUPPORTED;
        goto out;
    }
    json_object_foreach(dp_configs, k, v)
    {
        json_t *text;
        if ((r = yaml_text(v, &text)) < 0)
            goto out;
        json_object_set_new(dp_data, k, text);
    }
    if (json_object_size(mig_configs)) {
        json_t *file = json_pack("{s:s,s:O}", "version", "v1", "mig-configs", mig_configs), *text;
        if (!file || (r = yaml_text(file, &text)) < 0) {
            json_decref(file);
            r = -ENOMEM;
            goto out;
        }
        json_decref(file);
        json_decref(mig_cm);
        mig_cm = configmap("fatia-mig-parted-config", json_pack("{s:o}", "config.yaml", text));
    }
    doc = json_pack("{s:o,s:o,s:O,s:O}", "devicePlugin",
                    configmap("fatia-device-plugin-config", dp_data), "migParted", mig_cm, "fleet",
                    fleet, "nodeLabels", labels);
    dp_data = mig_cm = NULL;
    if (!doc) {
        r = -ENOMEM;
        goto out;
    }
    *ret = doc;
    r = 0;
out:
    json_decref(dp_configs);
    json_decref(mig_configs);
    json_decref(labels);
    json_decref(fleet);
    json_decref(dp_data);
    json_decref(mig_cm);
    fatia_free(assign);
    return r;
}

/*
 * demand/place_oneshot.c: the one-shot placement driver behind `fatia place` (and the golden
 * tests): a fleet, its sharing policies, ResourceFlavors, Pods and Workloads in; where every
 * workload goes, or why not, out.
 *
 * Order: first every Pod that already names its node (spec.nodeName: running pods), in input
 * order, each placed on that node and committed; then every Workload and every other Pod, in input
 * order, each a gang (a Pod alone is a gang of one), committed when placed so that the next one
 * sees it (with FATIA_PLACE_TEST nothing is committed: each is asked "could it ever fit, and
 * where" on the empty fleet). A Workload's pods are count copies of each pod set's template, in
 * pod set order, named <workload>-<podset>-<i>; the flavors of status.admission.podSetAssignments
 * add their node labels and tolerations; a Workload without status.admission is placed as if
 * admitted to flavors without constraints. The fragmentation policy measures against the mix of
 * every pod seen so far, the one being placed included.
 *
 * Output (fatia_place_oneshot's JSON, printed by `fatia place -o json`):
 *   {"policy": "binpack", "placements": [{"workload": "ns/name", "kind": "Workload"|"Pod",
 *     "placed": true, "pods": [{"pod": "ns/name", "node": "...", "devices": [...]}],
 *     "migChanges": [...], "victims": [...]} | {..., "placed": false, "reason": "..."}],
 *    "gpus": {"total": N, "allocated": "12.5", "untouched": N, "full": N}}
 */
#include "base/compat.h"

#include "demand/place_oneshot.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "demand/dra.h"
#include "demand/place.h"
#include "model/objset.h"

static const json_t *flavor_spec(const struct fatia_objset *set, const char *name)
{
    const struct fatia_object *o = fatia_objset_get(set, "ResourceFlavor", NULL, name);
    return o ? json_object_get(o->obj, "spec") : NULL;
}

static const json_t *lookup(void *ud, const char *kind, const char *ns, const char *name)
{
    const struct fatia_object *o = fatia_objset_get(ud, kind, ns, name);
    return o ? o->obj : NULL;
}

static json_t *container_names(const json_t *spec)
{
    json_t *names = json_array();
    size_t i;
    const json_t *c;

    json_array_foreach(json_object_get(spec, "containers"), i, c)
        json_array_append_new(names, json_string(fatia_json_str(c, "name")));
    json_array_foreach(json_object_get(spec, "initContainers"), i, c)
        json_array_append_new(names, json_string(fatia_json_str(c, "name")));
    return names;
}

struct unit {
    const struct fatia_object *obj;
    struct fatia_place_pod **pods; /* n (borrowed from `compiled` for workloads) */
    char **keys;
    json_t **cnames; /* per pod: container names (borrowed from per-podset arrays) */
    size_t n;
    struct fatia_place_pod **compiled; /* owned, one per pod set */
    json_t **ps_names;
    size_t n_compiled;
};

static void unit_release(struct unit *u)
{
    for (size_t i = 0; i < u->n_compiled; i++) {
        fatia_place_pod_free(u->compiled[i]);
        json_decref(u->ps_names[i]);
    }
    for (size_t i = 0; i < u->n; i++)
        fatia_free(u->keys ? u->keys[i] : NULL);
    fatia_free(u->compiled);
    fatia_free(u->ps_names);
    fatia_free(u->pods);
    fatia_free(u->keys);
    fatia_free(u->cnames);
    memset(u, 0, sizeof(*u));
}

static int32_t priority_of(const json_t *obj)
{
    json_int_t p = json_integer_value(json_object_get(json_object_get(obj, "spec"), "priority"));
    return (int32_t)p;
}

static void report(struct fatia_diag *diag, const struct fatia_object *o, const char *path,
                   const char *msg)
{
    fatia_diag_add(diag, FATIA_DIAG_ERROR, o->file, o->pos.line, o->pos.col, o->id, path, "%s",
                   msg);
}

/* Compiles a Pod (a gang of one). */
static int unit_pod(const struct fatia_objset *set, struct fatia_place_state *st,
                    const struct fatia_object *o, struct unit *u, struct fatia_diag *diag)
{
    const json_t *spec = json_object_get(o->obj, "spec");
    char why[512];
    int r;

    u->obj = o;
    u->compiled = fatia_calloc(1, sizeof(*u->compiled));
    u->ps_names = fatia_calloc(1, sizeof(*u->ps_names));
    u->pods = fatia_calloc(1, sizeof(*u->pods));
    u->keys = fatia_calloc(1, sizeof(*u->keys));
    u->cnames = fatia_calloc(1, sizeof(*u->cnames));
    if (!u->compiled || !u->ps_names || !u->pods || !u->keys || !u->cnames)
        return -ENOMEM;
    r = fatia_place_pod_compile(st, o->namespace, json_object_get(o->obj, "metadata"), spec, NULL,
                                0, priority_of(o->obj), &u->compiled[0], why, sizeof(why));
    if (r >= 0)
        r = fatia_place_pod_claims(st, u->compiled[0], spec, lookup, (void *)set, why, sizeof(why));
    if (r == -EINVAL)
        report(diag, o, NULL, why);
    if (r < 0) {
        u->n_compiled = u->compiled[0] ? 1 : 0;
        return r;
    }
    u->n_compiled = 1;
    u->ps_names[0] = container_names(spec);
    u->pods[0] = u->compiled[0];
    u->cnames[0] = u->ps_names[0];
    u->keys[0] = fatia_strdup(o->id + strlen("pod/"));
    u->n = 1;
    return u->keys[0] ? 0 : -ENOMEM;
}

static char *pod_key(const char *ns, const char *name, const char *podset, size_t i)
{
    size_t n = strlen(ns ? ns : "") + strlen(name) + strlen(podset ? podset : "") + 32;
    char *k = fatia_malloc(n);

    if (k)
        snprintf(k, n, "%s/%s-%s-%zu", ns ? ns : "", name, podset ? podset : "main", i);
    return k;
}

static int unit_workload(const struct fatia_objset *set, struct fatia_place_state *st,
                         const struct fatia_object *o, struct unit *u, struct fatia_diag *diag)
{
    const json_t *podsets = json_object_get(json_object_get(o->obj, "spec"), "podSets");
    const json_t *assign = json_object_get(
        json_object_get(json_object_get(o->obj, "status"), "admission"), "podSetAssignments");
    size_t i, total = 0;
    const json_t *ps;
    int r;

    u->obj = o;
    json_array_foreach(podsets, i, ps) total +=
        (size_t)json_integer_value(json_object_get(ps, "count"));
    u->compiled = fatia_calloc(json_array_size(podsets) + 1, sizeof(*u->compiled));
    u->ps_names = fatia_calloc(json_array_size(podsets) + 1, sizeof(*u->ps_names));
    u->pods = fatia_calloc(total + 1, sizeof(*u->pods));
    u->keys = fatia_calloc(total + 1, sizeof(*u->keys));
    u->cnames = fatia_calloc(total + 1, sizeof(*u->cnames));
    if (!u->compiled || !u->ps_names || !u->pods || !u->keys || !u->cnames)
        return -ENOMEM;
    json_array_foreach(podsets, i, ps)
    {
        const char *psname = fatia_json_str(ps, "name");
        const json_t *tmpl = json_object_get(ps, "template");
        const json_t *spec = json_object_get(tmpl, "spec");
        struct fatia_place_flavor fl[8];
        size_t n_fl = 0, j;
        const json_t *a;
        json_int_t count = json_integer_value(json_object_get(ps, "count"));
        char why[512], path[64];

        /* the flavors this pod set was admitted to */
        json_array_foreach(assign, j, a)
        {
            const char *k;
            json_t *fv;
            if (!psname ||
                strcmp(fatia_json_str(a, "name") ? fatia_json_str(a, "name") : "main", psname))
                continue;
            json_object_foreach(json_object_get(a, "flavors"), k, fv)
            {
                const json_t *fs = flavor_spec(set, json_string_value(fv));
                bool dup = false;
                (void)k;
                for (size_t x = 0; x < n_fl; x++)
                    dup |= fs && fl[x].node_labels == json_object_get(fs, "nodeLabels") &&
                           fl[x].tolerations == json_object_get(fs, "tolerations");
                if (!fs) {
                    snprintf(why, sizeof(why), "ResourceFlavor '%s' is not in the input",
                             json_string_value(fv));
                    report(diag, o, "status.admission.podSetAssignments", why);
                    return -EINVAL;
                }
                if (!dup && n_fl < FATIA_ARRAY_SIZE(fl))
                    fl[n_fl++] = (struct fatia_place_flavor){json_object_get(fs, "nodeLabels"),
                                                             json_object_get(fs, "tolerations")};
            }
        }
        r = fatia_place_pod_compile(st, o->namespace, json_object_get(tmpl, "metadata"), spec, fl,
                                    n_fl, priority_of(o->obj), &u->compiled[i], why, sizeof(why));
        if (r >= 0)
            r = fatia_place_pod_claims(st, u->compiled[i], spec, lookup, (void *)set, why,
                                       sizeof(why));
        if (r < 0 && u->compiled[i])
            u->n_compiled = i + 1;
        if (r == -EINVAL) {
            snprintf(path, sizeof(path), "spec.podSets[%zu].template", i);
            report(diag, o, path, why);
        }
        if (r < 0)
            return r;
        u->n_compiled = i + 1;
        u->ps_names[i] = container_names(spec);
        for (json_int_t k = 0; k < count; k++) {
            u->pods[u->n] = u->compiled[i];
            u->cnames[u->n] = u->ps_names[i];
            u->keys[u->n] = pod_key(o->namespace, o->name, psname, (size_t)k);
            if (!u->keys[u->n])
                return -ENOMEM;
            u->n++;
        }
    }
    return 0;
}

static char *pl_claim_name(const char *pod_key, const char *entry)
{
    size_t n = strlen(pod_key) + strlen(entry ? entry : "") + 2;
    char *s = fatia_malloc(n);

    if (s)
        snprintf(s, n, "%s-%s", pod_key, entry ? entry : "");
    return s;
}

static json_t *unit_json(struct fatia_place_state *st, const struct unit *u,
                         const struct fatia_place_result *res)
{
    /* the object's id is kind/ns/name: the workload is ns/name */
    const char *id = strchr(u->obj->id, '/');
    json_t *j = json_pack("{s:s,s:s,s:b}", "workload", id ? id + 1 : u->obj->id, "kind",
                          u->obj->kind->kind, "placed", res->placed);
    json_t *pods, *mig, *vic;

    if (!j)
        return NULL;
    if (!res->placed) {
        json_object_set_new(j, "reason", json_string(res->reason ? res->reason : ""));
        return j;
    }
    pods = json_array();
    for (size_t i = 0; pods && i < res->n_pods; i++) {
        const json_t *names = u->cnames[i];
        const char *cn[64];
        size_t nn = FATIA_MIN(json_array_size(names), FATIA_ARRAY_SIZE(cn));
        json_t *pj;
        for (size_t k = 0; k < nn; k++)
            cn[k] = json_string_value(json_array_get(names, k));
        pj = fatia_place_pod_result_json(st, &res->pods[i], cn, nn);
        if (pj)
            json_object_set_new(pj, "pod", json_string(u->keys[i]));
        if (pj && res->pods[i].claims) {
            /* a template's claim is named <pod>-<entry> (fatia_dra_claim_from_template) */
            json_t *cl = json_deep_copy(res->pods[i].claims), *e;
            size_t k;
            json_array_foreach(cl, k, e)
            {
                if (json_is_null(json_object_get(e, "claim")) || !json_object_get(e, "claim")) {
                    char *n = pl_claim_name(u->keys[i], fatia_json_str(e, "name"));
                    json_object_set_new(e, "claim", n ? json_string(n) : json_null());
                    fatia_free(n);
                }
            }
            json_object_set_new(pj, "claims", cl);
        }
        json_array_append_new(pods, pj);
    }
    json_object_set_new(j, "pods", pods);
    if (res->n_mig) {
        mig = json_array();
        for (size_t i = 0; mig && i < res->n_mig; i++)
            json_array_append_new(mig, fatia_place_mig_change_json(st, &res->mig[i]));
        json_object_set_new(j, "migChanges", mig);
    }
    if (res->n_victims) {
        vic = json_array();
        for (size_t i = 0; vic && i < res->n_victims; i++)
            json_array_append_new(vic, json_string(res->victims[i]));
        json_object_set_new(j, "victims", vic);
    }
    return j;
}

int fatia_place_oneshot(const struct fatia_objset *set, const struct fatia_plan *plan,
                        const struct fatia_place_opts *opts0, json_t **ret, struct fatia_diag *diag)
{
    struct fatia_place_state *st = NULL;
    struct fatia_place_mix *mix = NULL;
    struct fatia_place_opts opts = *opts0;
    struct fatia_place_stats stats;
    struct fatia_dra_classes cls;
    bool have_cls = false;
    char why_dra[512];
    json_t *out = NULL, *list;
    const struct fatia_object *o;
    char buf[32];
    int r;

    if ((r = fatia_place_state_new(plan, &st)) < 0)
        return r;
    fatia_dra_classes_init(&cls);
    for (size_t i = 0; i < set->n; i++) {
        char why[512];
        o = set->v[i];
        if (strcmp(o->kind->kind, "DeviceClass"))
            continue;
        r = fatia_dra_classes_add(&cls, o->obj, why, sizeof(why));
        if (r == -ENOMEM)
            goto out;
        if (r < 0)
            report(diag, o, NULL, why);
        have_cls = true;
    }
    if (have_cls && (r = fatia_place_set_dra(st, &cls, why_dra, sizeof(why_dra))) < 0) {
        if (r != -ENOMEM)
            fatia_diag_add(diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, NULL,
                           "the fleet's ResourceSlices: %s", why_dra);
        goto out;
    }
    if ((r = fatia_place_mix_new(st, 0, &mix)) < 0)
        goto out;
    opts.mix = mix;
    list = json_array();
    out =
        json_pack("{s:s,s:o}", "policy", fatia_place_policy_name(opts.policy), "placements", list);
    if (!out) {
        r = -ENOMEM;
        goto out;
    }
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < set->n; i++) {
            struct unit u = {0};
            struct fatia_place_result *res = NULL;
            bool named;
            o = set->v[i];
            if (strcmp(o->kind->kind, "Pod") && strcmp(o->kind->kind, "Workload"))
                continue;
            named = !strcmp(o->kind->kind, "Pod") &&
                    fatia_json_str(json_object_get(o->obj, "spec"), "nodeName");
            if ((pass == 0) != named)
                continue;
            r = !strcmp(o->kind->kind, "Pod") ? unit_pod(set, st, o, &u, diag)
                                              : unit_workload(set, st, o, &u, diag);
            if (r == -EINVAL) {
                unit_release(&u);
                continue;
            }
            if (r < 0) {
                unit_release(&u);
                goto out;
            }
            for (size_t k = 0; k < u.n; k++)
                if ((r = fatia_place_mix_add(mix, u.pods[k])) < 0) {
                    unit_release(&u);
                    goto out;
                }
            r = fatia_place_workload(st, u.pods, u.n, pass == 0 ? opts0 : &opts, &res);
            if (r >= 0 && res->placed && !(opts.flags & FATIA_PLACE_TEST))
                r = fatia_place_commit(st, u.pods, (const char *const *)u.keys, res);
            if (r >= 0)
                json_array_append_new(list, unit_json(st, &u, res));
            fatia_place_result_free(res);
            unit_release(&u);
            if (r < 0)
                goto out;
        }
    }
    fatia_place_state_stats(st, &stats);
    snprintf(buf, sizeof(buf), "%.3f", (double)stats.gpu_milli_allocated / 1000.0);
    json_object_set_new(out, "gpus",
                        json_pack("{s:I,s:s,s:I,s:I}", "total", (json_int_t)stats.gpus, "allocated",
                                  buf, "untouched", (json_int_t)stats.gpus_untouched, "full",
                                  (json_int_t)stats.gpus_full));
    *ret = out;
    out = NULL;
    r = fatia_diag_has_errors(diag) ? -FATIA_E_INVALID : 0;
    if (r < 0) {
        json_decref(*ret);
        *ret = NULL;
    }
out:
    json_decref(out);
    fatia_place_mix_free(mix);
    fatia_place_state_free(st);
    fatia_dra_classes_release(&cls);
    return r;
}

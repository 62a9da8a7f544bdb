/*
 * apiserver/crd.c: the CustomResourceDefinitions of fatia's compiled kinds.
 *
 * Model: on a cluster, Kueue's kinds, HardwareProfile, InferencePool and fatia.dev's kinds would
 * be CRDs; Kubernetes' own groups (the core group, apps, batch, resource.k8s.io, ...) are built
 * in. fatiad compiles every kind in, and lists the ones that would be CRDs as the
 * CustomResourceDefinition objects a cluster holds, so that clients reading CRDs see the same
 * thing: kubectl's default validation lists CRDs before it lets an object of a kind missing from
 * the OpenAPI documents through (without the list, `kubectl apply -f` of a file mixing served and
 * unserved kinds gave up on the whole file), `kubectl get crds` names them.
 *
 * A CRD is generated from the kind table alone (names, scope, versions with the storage version
 * marked, the openAPIV3Schema of the OpenAPI documents, the status subresource, the printer
 * columns), so it cannot drift from what is served. They are stored objects, written by fatiad at
 * start in one transaction (fatia_api_crd_sync): created when missing, updated when the
 * generated one changed (a new fatia), deleted when their kind is gone; uids and creation times
 * survive restarts. The marker annotation FATIA_CRD_COMPILED tells fatiad's CRDs from others.
 *
 * Invariant: for every compiled kind whose group is not built in, exactly one CRD named
 * "<plural>.<group>" whose spec is fatia_api_crd_of_kind's; nobody else writes them (crd_serve.c's
 * admission refuses a change or a delete of one, and a user's CRD for a compiled resource).
 *
 * Rejected: deciding "is a CRD" by a flag in every kind table: the kinds other engineers add
 * would have to remember it; the group decides upstream too (a built-in group is served by
 * kube-apiserver's own code, anything else by apiextensions-apiserver or an aggregated server).
 */
#include "base/compat.h"

#include "apiserver/internal.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "model/kinds/kinds.h"

#define FATIA_CRD_COMPILED "fatia.dev/compiled-kind"

/* Kubernetes 1.34's own API groups (kube-apiserver serves them with compiled types). */
static const char *const builtin_groups[] = {"",
                                             "admissionregistration.k8s.io",
                                             "apiextensions.k8s.io",
                                             "apiregistration.k8s.io",
                                             "apps",
                                             "authentication.k8s.io",
                                             "authorization.k8s.io",
                                             "autoscaling",
                                             "batch",
                                             "certificates.k8s.io",
                                             "coordination.k8s.io",
                                             "discovery.k8s.io",
                                             "events.k8s.io",
                                             "flowcontrol.apiserver.k8s.io",
                                             "internal.apiserver.k8s.io",
                                             "networking.k8s.io",
                                             "node.k8s.io",
                                             "policy",
                                             "rbac.authorization.k8s.io",
                                             "resource.k8s.io",
                                             "scheduling.k8s.io",
                                             "storage.k8s.io",
                                             "storagemigration.k8s.io",
                                             NULL};

bool fatia_api_crd_builtin_group(const char *group)
{
    for (const char *const *g = builtin_groups; *g; g++)
        if (!strcmp(*g, group))
            return true;
    return false;
}

static json_t *str_list(const char *const *v)
{
    json_t *a = json_array();

    for (; v && *v; v++)
        json_array_append_new(a, json_string(*v));
    return a;
}

static json_t *printer_columns(const struct fatia_kind *k)
{
    json_t *cols = json_array();

    for (const struct fatia_column *c = k->columns; c && c->name; c++) {
        json_t *col;
        if (c->compute || !c->json_path)
            continue; /* a built-in printer's cell: no CRD could say it */
        col =
            json_pack("{s:s,s:s,s:s}", "name", c->name, "type", c->type, "jsonPath", c->json_path);
        if (c->priority)
            json_object_set_new(col, "priority", json_integer(c->priority));
        if (c->desc)
            json_object_set_new(col, "description", json_string(c->desc));
        json_array_append_new(cols, col);
    }
    return cols;
}

/* The openAPIV3Schema of the storage version: the OpenAPI document's, with metadata left to the
 * server as in every CRD ({type: object}). Other versions are converted before validation, so
 * their schema is open. */
static json_t *version_schema(const struct fatia_kind *k, bool storage)
{
    json_t *s;

    if (!storage)
        return json_pack("{s:s,s:b}", "type", "object", "x-kubernetes-preserve-unknown-fields",
                         true);
    s = fatia_api_openapi_schema(k->schema, true);
    json_object_set_new(json_object_get(s, "properties"), "metadata",
                        json_pack("{s:s}", "type", "object"));
    return s;
}

static json_t *version_entry(const struct fatia_kind *k, const char *name, bool storage,
                             const char *warning)
{
    json_t *v = json_pack("{s:s,s:b,s:b,s:{s:o}}", "name", name, "served", true, "storage", storage,
                          "schema", "openAPIV3Schema", version_schema(k, storage));
    json_t *cols = printer_columns(k);

    if (warning) {
        json_object_set_new(v, "deprecated", json_true());
        json_object_set_new(v, "deprecationWarning", json_string(warning));
    }
    if (k->has_status)
        json_object_set_new(v, "subresources", json_pack("{s:{}}", "status"));
    if (json_array_size(cols))
        json_object_set_new(v, "additionalPrinterColumns", cols);
    else
        json_decref(cols);
    return v;
}

json_t *fatia_api_crd_of_kind(const struct fatia_kind *k)
{
    char name[300], list_kind[200];
    json_t *names, *versions, *crd;

    snprintf(name, sizeof(name), "%s.%s", k->plural, k->group);
    snprintf(list_kind, sizeof(list_kind), "%sList", k->kind);
    names = json_pack("{s:s,s:s,s:s,s:s}", "plural", k->plural, "singular", k->singular, "kind",
                      k->kind, "listKind", list_kind);
    if (k->short_names)
        json_object_set_new(names, "shortNames", str_list(k->short_names));
    if (k->categories)
        json_object_set_new(names, "categories", str_list(k->categories));
    versions = json_array();
    json_array_append_new(versions, version_entry(k, k->version, true, NULL));
    for (const struct fatia_kind_version *o = k->others; o && o->version; o++)
        json_array_append_new(versions, version_entry(k, o->version, false, o->warning));
    crd = json_pack(
        "{s:s,s:s,s:{s:s,s:{s:s}},s:{s:s,s:o,s:s,s:o,s:{s:s}},"
        "s:{s:O,s:[s],s:[{s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s}]}}",
        "apiVersion", "apiextensions.k8s.io/v1", "kind", "CustomResourceDefinition", "metadata",
        "name", name, "annotations", FATIA_CRD_COMPILED, "true", "spec", "group", k->group, "names",
        names, "scope", k->namespaced ? "Namespaced" : "Cluster", "versions", versions,
        "conversion", "strategy", "None", "status", "acceptedNames", names, "storedVersions",
        k->version, "conditions", "type", "NamesAccepted", "status", "True", "reason",
        "NoConflicts", "message", "no conflicts found", "type", "Established", "status", "True",
        "reason", "InitialNamesAccepted", "message", "the initial names have been accepted");
    return crd;
}

static void sync_done(struct fatia_apiserver *s, struct wtxn *tx, int err)
{
    (void)s;
    (void)tx;
    if (err < 0)
        fatia_error("customresourcedefinitions of the compiled kinds: not written: %s",
                    fatia_strerror(err));
}

/* Puts the CRD want (taken) for entry e: created, or updated keeping uid and creation time when
 * the stored one differs. 0 when nothing was to do. */
static int sync_one(struct fatia_apiserver *s, struct wtxn *tx, struct rtable *t, json_t *want,
                    const char *ts)
{
    const char *name = fatia_json_str(json_object_get(want, "metadata"), "name");
    struct entry *e = fatia_api_rtable_get_or_add(t, NULL, name);
    json_t *meta = json_object_get(want, "metadata");
    const json_t *old;
    int64_t gen = 1;
    char uid[37];

    if (!e) {
        json_decref(want);
        return -ENOMEM;
    }
    old = e->latest ? e->latest->tree : NULL;
    if (old && json_equal(json_object_get(old, "spec"), json_object_get(want, "spec")) &&
        json_equal(json_object_get(old, "status"), json_object_get(want, "status"))) {
        json_decref(want);
        return 0;
    }
    if (old) {
        const json_t *om = json_object_get(old, "metadata");
        json_object_set(meta, "uid", json_object_get(om, "uid"));
        json_object_set(meta, "creationTimestamp", json_object_get(om, "creationTimestamp"));
        if (fatia_json_int(om, "generation", &gen) &&
            !json_equal(json_object_get(old, "spec"), json_object_get(want, "spec")))
            gen++;
    } else {
        fatia_api_random_uid(uid);
        json_object_set_new(meta, "uid", json_string(uid));
        json_object_set_new(meta, "creationTimestamp", json_string(ts));
    }
    json_object_set_new(meta, "generation", json_integer(gen));
    return fatia_api_wtxn_put(s, tx, t, e, old ? FATIA_STORE_MODIFIED : FATIA_STORE_ADDED, want);
}

int fatia_api_crd_sync(struct fatia_apiserver *s)
{
    struct rtable *t = fatia_api_server_table_for(s, &fatia_kind_crd);
    struct wtxn *tx;
    char ts[40];
    int r = 0;

    if (!t)
        return 0;
    fatia_time_format_rfc3339(fatia_now_real_usec() / FATIA_USEC_PER_SEC * FATIA_USEC_PER_SEC,
                              false, ts, sizeof(ts));
    tx = fatia_api_wtxn_new(sync_done, NULL);
    if (!tx)
        return -ENOMEM;
    for (size_t i = 0; fatia_kinds[i] && r >= 0; i++)
        if (!fatia_api_crd_builtin_group(fatia_kinds[i]->group))
            r = sync_one(s, tx, t, fatia_api_crd_of_kind(fatia_kinds[i]), ts);
    /* fatiad's CRDs of kinds it no longer compiles in */
    for (size_t i = 0; i < t->entries.n && r >= 0; i++) {
        struct entry *e = t->entries.v[i];
        const json_t *spec = e->latest ? json_object_get(e->latest->tree, "spec") : NULL;
        const json_t *ann = json_object_get(
            json_object_get(e->latest ? e->latest->tree : NULL, "metadata"), "annotations");
        const char *group = fatia_json_str(spec, "group");
        const char *plural = fatia_json_str(json_object_get(spec, "names"), "plural");
        if (!fatia_json_str(ann, FATIA_CRD_COMPILED) || !group || !plural)
            continue;
        const struct fatia_kind *k = fatia_kind_by_resource(group, plural);
        if (!k || fatia_api_crd_builtin_group(k->group))
            r = fatia_api_wtxn_delete(s, tx, t, e);
    }
    if (r < 0) {
        fatia_api_wtxn_abort(s, tx);
        return r;
    }
    if (tx->ops.n)
        fatia_api_wtxn_commit(s, tx);
    else
        fatia_api_wtxn_free(tx); /* every CRD as generated: nothing to write */
    return 0;
}

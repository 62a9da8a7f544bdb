/*
 * apiserver/crd_serve.c: user-written CustomResourceDefinitions served as kinds (issue 17).
 *
 * Model: a CRD written through the API (create, update, patch, apply) passes two admission
 * plugins of the server's own: the mutating one writes its status as apiextensions-apiserver's
 * controllers would once they ran (acceptedNames, NamesAccepted and Established true,
 * storedVersions; NamesAccepted and Established false when a name is another kind's of the
 * group, and then the kind is not served); the validating one refuses what kube-apiserver refuses (the name is not
 * <plural>.<group>, no storage version or two, a schema that is not structural, a scope change)
 * and what would shadow fatia itself: a group of Kubernetes' own or a resource fatia compiles
 * in. The CRDs fatiad writes for its compiled kinds (crd.c) may not be changed or deleted.
 *
 * When a CRD's write commits (fatia_api_crd_committed, from txn.c), its kind is built
 * (model/crd_kind.c: names, versions, the storage schema as schema tables) and served: a table
 * of the cache (tables past the compiled kinds' are reserved for them, so pointers to tables stay
 * valid), the model's lookups, discovery, and the OpenAPI documents, rebuilt. An update builds a
 * new kind and swaps it in (objects stay: they are stored in the storage version). A deletion
 * takes the kind out of every lookup, answers 404 for its resource at once, and deletes its
 * objects in one transaction (watchers see each DELETED). At start, the stored CRDs are served
 * before the objects are loaded (fatia_api_crd_serve_stored), so their objects find a table.
 *
 * Rejected: upstream's Terminating phase with the customresourcecleanup finalizer. Deleting the
 * objects in the same breath is what a client observes once the finalizer ran; a crash between
 * the CRD's delete and its objects' leaves them stored and unserved (skipped at start), and a
 * CRD of the same name created later serves them again.
 */
#include "base/compat.h"

#include "apiserver/internal.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "model/crd_kind.h"
#include "model/kinds/kinds.h"

#define FATIA_CRD_COMPILED "fatia.dev/compiled-kind"

static bool is_compiled_crd(const json_t *crd)
{
    return fatia_json_str(json_object_get(json_object_get(crd, "metadata"), "annotations"),
                          FATIA_CRD_COMPILED) != NULL;
}

/* ---- admission ---- */

static void add_err(struct fatia_admit_attrs *a, const char *why)
{
    const char *sep = strstr(why, ": ");
    char path[512];

    if (sep && (size_t)(sep - why) < sizeof(path)) {
        memcpy(path, why, (size_t)(sep - why));
        path[sep - why] = '\0';
        fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, a->name, path, "%s", sep + 2);
    } else {
        fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, a->name, NULL, "%s", why);
    }
}

static int validate_crd(void *arg, struct fatia_admit_attrs *a)
{
    const json_t *spec = json_object_get(a->obj, "spec");
    const char *group = fatia_json_str(spec, "group");
    const char *plural = fatia_json_str(json_object_get(spec, "names"), "plural");
    const char *name = fatia_json_str(json_object_get(a->obj, "metadata"), "name");
    const struct fatia_kind *k;
    char want[300], why[1024];
    int r;

    if (a->old && is_compiled_crd(a->old)) {
        fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, a->name, NULL,
                       "it is the CRD of one of fatia's compiled kinds and may not be %s",
                       a->op == FATIA_ADMIT_DELETE ? "deleted" : "changed");
        return -FATIA_E_FORBIDDEN;
    }
    if (a->op == FATIA_ADMIT_DELETE)
        return 0;
    if (is_compiled_crd(a->obj)) {
        fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, a->name,
                       "metadata.annotations[" FATIA_CRD_COMPILED "]",
                       "Forbidden: only fatiad writes the CRDs of its compiled kinds");
        return -FATIA_E_INVALID;
    }
    if (!group || !plural)
        return 0; /* the CRD kind's schema reported it */
    snprintf(want, sizeof(want), "%s.%s", plural, group);
    if (name && strcmp(name, want))
        fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, a->name, "metadata.name",
                       "Invalid value: \"%s\": must be spec.names.plural+\".\"+spec.group", name);
    if (fatia_api_crd_builtin_group(group) || !strchr(group, '.'))
        fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, a->name, "spec.group",
                       "Invalid value: \"%s\": %s", group,
                       strchr(group, '.') ? "is one of Kubernetes' own API groups"
                                          : "should be a domain with at least one dot");
    k = fatia_kind_by_resource(group, plural);
    if (k && !fatia_kind_is_custom(k))
        fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, a->name, "spec.names.plural",
                       "Invalid value: \"%s\": %s.%s is served by fatia itself (a compiled "
                       "kind) and may not be replaced",
                       plural, plural, group);
    if (a->old) {
        const char *os = fatia_json_str(json_object_get(a->old, "spec"), "scope");
        const char *ns = fatia_json_str(spec, "scope");
        if (os && ns && strcmp(os, ns))
            fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, a->name, "spec.scope",
                           "Invalid value: \"%s\": field is immutable", ns);
    }
    why[0] = '\0';
    r = fatia_kind_custom_new(a->obj, &k, why, sizeof(why));
    if (r == -ENOMEM)
        return r;
    if (r < 0)
        add_err(a, why);
    else
        fatia_kind_custom_free(k);
    fatia_api_crd_rules_check(arg, a);
    return a->diag->n_errors ? -FATIA_E_INVALID : 0;
}

/* Is the CRD (its status) Established? */
static bool established(const json_t *status)
{
    size_t i;
    json_t *c;

    json_array_foreach(json_object_get(status, "conditions"), i, c)
    {
        const char *t = fatia_json_str(c, "type"), *st = fatia_json_str(c, "status");
        if (t && st && !strcmp(t, "Established"))
            return !strcmp(st, "True");
    }
    return false;
}

static json_t *condition(const char *type, const char *reason, const char *msg, const char *ts,
                         const json_t *old_status)
{
    size_t i;
    json_t *c;

    json_array_foreach(json_object_get(old_status, "conditions"), i, c)
    {
        if (!strcmp(fatia_json_str(c, "type") ? fatia_json_str(c, "type") : "", type) &&
            !strcmp(fatia_json_str(c, "status") ? fatia_json_str(c, "status") : "", "True") &&
            fatia_json_str(c, "lastTransitionTime"))
            ts = fatia_json_str(c, "lastTransitionTime");
    }
    return json_pack("{s:s,s:s,s:s,s:s,s:s}", "type", type, "status", "True", "lastTransitionTime",
                     ts, "reason", reason, "message", msg);
}

/* A name of the CRD names (spec.names) that another kind of its group already has, as
 * apiextensions-apiserver's naming controller finds them: the reason and message of a
 * NamesAccepted False; false when every name is free. */
static bool in_list(const char *const *v, const char *name)
{
    for (; v && *v; v++)
        if (!strcmp(*v, name))
            return true;
    return false;
}

static bool resource_taken(const struct fatia_kind *k, const char *name)
{
    return !strcmp(k->plural, name) || !strcmp(k->singular, name) || in_list(k->short_names, name);
}

static bool names_conflict(const char *group, const json_t *names, const char **ret_reason,
                           char *msg, size_t msg_n)
{
    const char *plural = fatia_json_str(names, "plural"), *kind = fatia_json_str(names, "kind");
    const char *singular = fatia_json_str(names, "singular");
    const char *list_kind = fatia_json_str(names, "listKind");
    const struct fatia_kind *k;
    size_t i;
    json_t *sn;

    for (size_t j = 0; (k = fatia_kind_at(j)); j++) {
        char lk[200];
        if (strcmp(k->group, group) || (plural && !strcmp(k->plural, plural)))
            continue;
        snprintf(lk, sizeof(lk), "%sList", k->kind);
        if (singular && resource_taken(k, singular)) {
            *ret_reason = "SingularConflict";
            snprintf(msg, msg_n, "\"%s\" is already in use", singular);
            return true;
        }
        json_array_foreach(json_object_get(names, "shortNames"), i, sn)
        {
            if (json_is_string(sn) && resource_taken(k, json_string_value(sn))) {
                *ret_reason = "ShortNamesConflict";
                snprintf(msg, msg_n, "\"%s\" is already in use", json_string_value(sn));
                return true;
            }
        }
        if (kind && (!strcmp(k->kind, kind) || !strcmp(lk, kind))) {
            *ret_reason = "KindConflict";
            snprintf(msg, msg_n, "\"%s\" is already in use", kind);
            return true;
        }
        if (list_kind && (!strcmp(k->kind, list_kind) || !strcmp(lk, list_kind))) {
            *ret_reason = "ListKindConflict";
            snprintf(msg, msg_n, "\"%s\" is already in use", list_kind);
            return true;
        }
    }
    return false;
}

/* The status the controllers of apiextensions-apiserver would write. */
static int mutate_crd(void *arg, struct fatia_admit_attrs *a)
{
    const json_t *spec = json_object_get(a->obj, "spec");
    const json_t *old_status = a->old ? json_object_get(a->old, "status") : NULL;
    json_t *names = json_deep_copy(json_object_get(spec, "names")), *status, *stored, *v;
    const char *kind = fatia_json_str(names, "kind");
    char ts[40], buf[300];
    size_t i;

    (void)arg;
    if (!json_is_object(names) || !kind)
        return 0; /* the schema reports it */
    if (!fatia_json_str(names, "singular")) {
        size_t j;
        for (j = 0; kind[j] && j + 1 < sizeof(buf); j++)
            buf[j] = (char)(kind[j] >= 'A' && kind[j] <= 'Z' ? kind[j] + 32 : kind[j]);
        buf[j] = '\0';
        json_object_set_new(names, "singular", json_string(buf));
        json_object_set(json_object_get(json_object_get(a->obj, "spec"), "names"), "singular",
                        json_object_get(names, "singular"));
    }
    if (!fatia_json_str(names, "listKind")) {
        snprintf(buf, sizeof(buf), "%sList", kind);
        json_object_set_new(names, "listKind", json_string(buf));
        json_object_set(json_object_get(json_object_get(a->obj, "spec"), "names"), "listKind",
                        json_object_get(names, "listKind"));
    }
    fatia_time_format_rfc3339(fatia_now_real_usec() / FATIA_USEC_PER_SEC * FATIA_USEC_PER_SEC,
                              false, ts, sizeof(ts));
    stored = json_deep_copy(json_object_get(old_status, "storedVersions"));
    if (!json_is_array(stored)) {
        json_decref(stored);
        stored = json_array();
    }
    json_array_foreach(json_object_get(spec, "versions"), i, v)
    {
        const char *name = fatia_json_str(v, "name");
        bool have = false;
        size_t j;
        json_t *s;
        if (!name || !fatia_json_bool(v, "storage", false))
            continue;
        json_array_foreach(stored, j, s) have |= !strcmp(json_string_value(s), name);
        if (!have)
            json_array_append_new(stored, json_string(name));
    }
    {
        const char *group = fatia_json_str(spec, "group"), *reason = NULL;
        char msg[300];
        bool was = old_status && established(old_status);
        if (group && names_conflict(group, names, &reason, msg, sizeof(msg))) {
            /* upstream keeps the names it accepted before; a new CRD is not served */
            json_t *accepted = json_deep_copy(json_object_get(old_status, "acceptedNames"));
            json_decref(names);
            status = json_pack(
                "{s:o,s:[{s:s,s:s,s:s,s:s,s:s},o],s:o}", "acceptedNames",
                accepted ? accepted : json_object(), "conditions", "type", "NamesAccepted",
                "status", "False", "lastTransitionTime", ts, "reason", reason, "message", msg,
                was ? condition("Established", "InitialNamesAccepted",
                                "the initial names have been accepted", ts, old_status)
                    : json_pack("{s:s,s:s,s:s,s:s,s:s}", "type", "Established", "status", "False",
                                "lastTransitionTime", ts, "reason", "NotAccepted", "message",
                                "not all names are accepted"),
                "storedVersions", stored);
            if (!status)
                return -ENOMEM;
            json_object_set_new(a->obj, "status", status);
            return 0;
        }
    }
    status =
        json_pack("{s:o,s:[o,o],s:o}", "acceptedNames", names, "conditions",
                  condition("NamesAccepted", "NoConflicts", "no conflicts found", ts, old_status),
                  condition("Established", "InitialNamesAccepted",
                            "the initial names have been accepted", ts, old_status),
                  "storedVersions", stored);
    if (!status)
        return -ENOMEM;
    json_object_set_new(a->obj, "status", status);
    return 0;
}

int fatia_api_crd_add_plugins(struct fatia_apiserver *s)
{
    static const struct fatia_kind *const kinds[] = {&fatia_kind_crd, NULL};
    const struct fatia_admission m = {.name = "customresourcedefinition-status",
                                      .phase = FATIA_ADMIT_MUTATING,
                                      .ops = FATIA_ADMIT_CREATE | FATIA_ADMIT_UPDATE,
                                      .kinds = kinds,
                                      .admit = mutate_crd,
                                      .bare_message = true};
    const struct fatia_admission v = {.name = "customresourcedefinition-validation",
                                      .phase = FATIA_ADMIT_VALIDATING,
                                      .ops = FATIA_ADMIT_CREATE | FATIA_ADMIT_UPDATE |
                                             FATIA_ADMIT_DELETE,
                                      .kinds = kinds,
                                      .admit = validate_crd,
                                      .arg = s,
                                      .bare_message = true};
    int r = fatia_apiserver_add_admission(s, &m);

    return r < 0 ? r : fatia_apiserver_add_admission(s, &v);
}

/* ---- serving ---- */

static struct rtable *table_of(struct fatia_apiserver *s, const char *group, const char *plural)
{
    for (size_t i = 0; i < s->n_tables; i++)
        if (!strcmp(s->tables[i].kind->group, group) && !strcmp(s->tables[i].kind->plural, plural))
            return &s->tables[i];
    return NULL;
}

static int serve(struct fatia_apiserver *s, const json_t *crd)
{
    const struct fatia_kind *k;
    struct rtable *t;
    char why[1024] = "", key[300];
    int r = fatia_kind_custom_new(crd, &k, why, sizeof(why));

    if (r < 0) {
        fatia_error("customresourcedefinition %s: not served: %s",
                    fatia_json_str(json_object_get(crd, "metadata"), "name"),
                    r == -ENOMEM ? "out of memory" : why);
        return r;
    }
    t = table_of(s, k->group, k->plural);
    if (t && !fatia_kind_is_custom(t->kind)) {
        fatia_kind_custom_free(k); /* a compiled kind's: never replaced */
        return -EEXIST;
    }
    if (!t) {
        char *mk;
        if (s->n_tables == s->cap_tables) {
            fatia_kind_custom_free(k);
            return -ENOSPC;
        }
        t = &s->tables[s->n_tables];
        memset(t, 0, sizeof(*t));
        t->index = s->n_tables;
        snprintf(t->resource, sizeof(t->resource), "%s.%s", k->plural, k->group);
        snprintf(key, sizeof(key), "%s/%s", k->group, k->plural);
        mk = fatia_strdup(key);
        if (!mk || fatia_strmap_put(&s->by_resource, mk, t) < 0) {
            fatia_free(mk);
            fatia_kind_custom_free(k);
            return -ENOMEM;
        }
        s->n_tables++;
    } else {
        fatia_kind_custom_unregister(t->kind);
    }
    t->kind = k;
    t->ns_budget = fatia_api_kind_budget(k);
    t->gone = false;
    return fatia_kind_custom_register(k);
}

static void delete_done(struct fatia_apiserver *s, struct wtxn *tx, int err)
{
    (void)s;
    (void)tx;
    if (err < 0)
        fatia_error("the objects of a deleted customresourcedefinition: not deleted: %s",
                    fatia_strerror(err));
}

static int unserve(struct fatia_apiserver *s, const json_t *crd)
{
    const json_t *spec = json_object_get(crd, "spec");
    const char *group = fatia_json_str(spec, "group");
    const char *plural = fatia_json_str(json_object_get(spec, "names"), "plural");
    struct rtable *t = group && plural ? table_of(s, group, plural) : NULL;
    struct wtxn *tx;
    int r = 0;

    if (!t || !fatia_kind_is_custom(t->kind) || t->gone)
        return 0;
    t->gone = true;
    fatia_kind_custom_unregister(t->kind);
    tx = fatia_api_wtxn_new(delete_done, NULL);
    if (!tx)
        return -ENOMEM;
    for (size_t i = 0; i < t->entries.n && r >= 0; i++)
        if (t->entries.v[i]->latest)
            r = fatia_api_wtxn_delete(s, tx, t, t->entries.v[i]);
    if (r < 0) {
        fatia_api_wtxn_abort(s, tx);
        return r;
    }
    if (tx->ops.n)
        fatia_api_wtxn_commit(s, tx);
    else
        fatia_api_wtxn_free(tx);
    return 0;
}

static void rebuild_openapi(struct fatia_apiserver *s)
{
    int r;

    fatia_api_openapi_release(s);
    r = fatia_api_openapi_build(s);
    if (r < 0)
        fatia_error("openapi documents: not rebuilt: %s", fatia_strerror(r));
}

void fatia_api_crd_committed(struct fatia_apiserver *s, enum fatia_store_event type,
                             const json_t *crd)
{
    int r;

    if (is_compiled_crd(crd))
        return;
    if (type != FATIA_STORE_DELETED && !established(json_object_get(crd, "status")))
        return; /* its names conflict with another kind's: not served (NamesAccepted False) */
    r = type == FATIA_STORE_DELETED ? unserve(s, crd) : serve(s, crd);
    if (r < 0 && r != -FATIA_E_INVALID)
        fatia_error("customresourcedefinition %s: %s",
                    fatia_json_str(json_object_get(crd, "metadata"), "name"), fatia_strerror(r));
    rebuild_openapi(s);
}

static int serve_row(void *arg, const struct fatia_store_row *row)
{
    json_t *tree;

    if (strcmp(row->group, "apiextensions.k8s.io") || strcmp(row->kind, "CustomResourceDefinition"))
        return 0;
    tree = fatia_json_loadb(row->json, row->json_len, 0, NULL);
    if (tree && !is_compiled_crd(tree) && established(json_object_get(tree, "status")))
        (void)serve(arg, tree);
    json_decref(tree);
    return 0;
}

int fatia_api_crd_serve_stored(struct fatia_apiserver *s)
{
    return fatia_store_load(s->store, serve_row, s);
}

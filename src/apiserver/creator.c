/*
 * apiserver/creator.c: the creator annotation, fatia.dev/creator: who made an object of a
 * workload kind, for usage per user (docs/selfservice.md, "Usage metering").
 *
 * Model. The value is the name of an authenticated user, set by fatiad at create and never
 * changed after:
 *
 *     create by a tenant            -> the tenant's name; a request naming anyone else is
 *                                      refused (403, the field path in the message)
 *     create by a trusted identity  -> the creator of the object's controller (ownerReferences
 *       (system:masters: fatiad's       with controller: true, looked up in fatiad's own
 *       controllers, the admin)         tables by kind, namespace, name and uid; absent when
 *                                      that owner has none or is gone), else the value the
 *                                      request names (a restore), else the identity's name
 *     update, patch, apply          -> the stored value; a request that names another value
 *                                      is refused (403), one that leaves it out (a PUT of a
 *                                      fresh object, a merge patch that deletes it) gets it
 *                                      back. A trusted write may only fill it in on an
 *                                      object that has none (made before this rule).
 *
 * So a Job's Workload, a Notebook's Pod and that Pod's Workload, an InferenceService's
 * Deployment, ReplicaSet and Pods all carry the name of the tenant who wrote the top object,
 * and a value copied from a pod template (which a tenant writes) never reaches a pod: a
 * controller's create takes its owner's value, not the template's.
 *
 * It runs after the admission plugins (what they see is the tenant's write) and after the
 * managed fields are computed: no field manager owns the annotation, so a server-side apply that
 * leaves it out never removes it.
 *
 * Kinds: the workload kinds and what controllers make from them (the list below); other kinds
 * (Events, Leases, ConfigMaps, ...) are not stamped, which keeps their writes as they were.
 *
 * Rejected: an admission plugin (the tenancy rules run first of all plugins and would see the
 * server's value as the tenant's; and a plugin would be one registration per mode); taking the
 * owner's value on a tenant's create too (a tenant could name another user's Job as its
 * object's owner and charge that user); silently overwriting a forged value on create (a test
 * could not tell a forgery from a mistake, and the tenant would not learn why).
 */
#include "base/compat.h"

#include "apiserver/internal.h"
#include "base/error.h"
#include "base/json.h"
#include "client/plugin.h"

#define ANN "fatia.dev/creator"

static const struct {
    const char *group, *kind;
} stamped[] = {
    {"", "Pod"},
    {"batch", "Job"},
    {"batch", "CronJob"},
    {"apps", "Deployment"},
    {"apps", "ReplicaSet"},
    {"apps", "StatefulSet"},
    {"kueue.x-k8s.io", "Workload"},
    {"kubeflow.org", "Notebook"},
    {"serving.kserve.io", "InferenceService"},
    {"serving.kserve.io", "LLMInferenceService"},
    {"jobset.x-k8s.io", "JobSet"},
};

bool fatia_api_creator_stamped(const struct fatia_kind *k)
{
    for (size_t i = 0; i < sizeof(stamped) / sizeof(stamped[0]); i++)
        if (!strcmp(k->group, stamped[i].group) && !strcmp(k->kind, stamped[i].kind))
            return true;
    return false;
}

static const char *creator_of(const json_t *obj)
{
    return fatia_json_str(json_object_get(json_object_get(obj, "metadata"), "annotations"), ANN);
}

static bool trusted(const struct fatia_user *u)
{
    return !u || fatia_user_in_group(u, FATIA_GROUP_ADMIN);
}

/* The stored object that ref (an ownerReference) names in ns, or NULL. */
static const json_t *owner_obj(struct fatia_apiserver *s, const char *ns, const json_t *ref)
{
    const char *av = fatia_json_str(ref, "apiVersion"), *kind = fatia_json_str(ref, "kind");
    const char *name = fatia_json_str(ref, "name"), *uid = fatia_json_str(ref, "uid");
    const struct fatia_kind *k;
    struct rtable *t;
    struct entry *e;
    char key[600];

    if (!av || !kind || !name || !uid)
        return NULL;
    k = fatia_kind_find(av, kind, NULL);
    t = k ? fatia_api_server_table_for(s, k) : NULL;
    if (!t)
        return NULL;
    fatia_api_entry_key(t, k->namespaced ? ns : NULL, name, key, sizeof(key));
    e = fatia_api_rtable_find(t, key);
    if (!e || !e->latest)
        return NULL;
    if (strcmp(uid, nz(fatia_json_str(json_object_get(e->latest->tree, "metadata"), "uid"))))
        return NULL;
    return e->latest->tree;
}

/* The creator a trusted identity's create gets: its controller's, or NULL (none) when the
 * object has a controller reference. *has_ctl says whether it has one. */
static const char *controller_creator(const struct opctx *c, const json_t *meta, bool *has_ctl)
{
    size_t i;
    const json_t *ref;

    *has_ctl = false;
    json_array_foreach(json_object_get(meta, "ownerReferences"), i, ref)
    {
        if (!json_is_true(json_object_get(ref, "controller")))
            continue;
        *has_ctl = true;
        return creator_of(owner_obj(c->s, fatia_json_str(meta, "namespace"), ref));
    }
    return NULL;
}

static int set(json_t *meta, const char *v)
{
    json_t *anns = json_object_get(meta, "annotations");

    if (!v) {
        if (json_is_object(anns))
            json_object_del(anns, ANN);
        if (json_is_object(anns) && !json_object_size(anns))
            json_object_del(meta, "annotations");
        return 0;
    }
    if (!json_is_object(anns)) {
        anns = json_object();
        if (!anns || json_object_set_new(meta, "annotations", anns) < 0)
            return -ENOMEM;
    }
    return json_object_set_new(anns, ANN, json_string(v)) < 0 ? -ENOMEM : 0;
}

static int refuse(const struct opctx *c, const json_t *meta, struct opres *r, const char *why)
{
    fatia_api_opres_fail(r, 403, "Forbidden",
                         "%s \"%s\" is forbidden: metadata.annotations[" ANN "]: %s",
                         c->t->resource, nz(fatia_json_str(meta, "name")), why);
    return -FATIA_E_FORBIDDEN;
}

static int stamp(json_t *meta, const char *v, struct opres *r)
{
    int rc = set(meta, v);

    if (rc < 0)
        fatia_api_opres_from_errno(r, rc, "write");
    return rc;
}

int fatia_api_creator_stamp(const struct opctx *c, json_t *tree, const json_t *old, struct opres *r)
{
    json_t *meta = json_object_get(tree, "metadata");
    const char *want = creator_of(tree), *user = c->user ? c->user->name : "system:fatiad";
    const char *stored, *v;
    bool has_ctl;

    if (!fatia_api_creator_stamped(c->t->kind) || !json_is_object(meta))
        return 0;
    if (old) {
        stored = creator_of(old);
        if (want && (!stored || strcmp(want, stored)) && !(!stored && trusted(c->user)))
            return refuse(c, meta, r,
                          stored ? "the creator of an object never changes"
                                 : "only fatiad sets the creator");
        return stamp(meta, stored ? stored : want, r);
    }
    if (!trusted(c->user)) {
        if (want && strcmp(want, user))
            return refuse(c, meta, r,
                          "fatiad sets the creator to the authenticated user; leave it out");
        return stamp(meta, user, r);
    }
    v = controller_creator(c, meta, &has_ctl);
    if (!has_ctl)
        v = want ? want : user;
    return stamp(meta, v, r);
}

/*
 * controller/serviceaccount.c: the `default` ServiceAccount of every namespace, as
 * kube-controller-manager's serviceaccounts-controller (pkg/controller/serviceaccount/
 * serviceaccounts_controller.go) keeps it: created when a namespace appears, and again when it is
 * deleted while its namespace lives. A terminating namespace gets none (its deletion would race
 * the create).
 *
 * Model: the key is the namespace's name; a pass creates "default" when the ServiceAccount
 * informer has none there. A 409 (created meanwhile) is quiet.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "controller/ctl_internal.h"

struct sa_ctl {
    struct ctl *ctl;
    struct wq *q;
    struct informer *namespaces, *accounts;
};

static void reconcile(void *arg, const char *ns)
{
    struct sa_ctl *a = arg;
    const json_t *n = fatia_ctlr_informer_get(a->namespaces, NULL, ns);
    const char *phase;
    json_t *sa;

    if (!n || fatia_ctlr_obj_deleting(n))
        return;
    phase = fatia_json_str(json_object_get(n, "status"), "phase");
    if (phase && !strcmp(phase, "Terminating"))
        return;
    if (fatia_ctlr_informer_get(a->accounts, ns, "default"))
        return;
    sa = json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", "v1", "kind", "ServiceAccount",
                   "metadata", "name", "default", "namespace", ns);
    if (sa)
        fatia_ctlr_create(a->ctl, sa,
                          &(struct op_opts){.wq = a->q, .key = ns, .quiet_conflict = true});
    json_decref(sa);
}

static void on_namespace(void *arg, const json_t *old, const json_t *obj)
{
    struct sa_ctl *a = arg;

    (void)old;
    if (obj && fatia_ctlr_meta_str(obj, "name"))
        fatia_ctlr_wq_add(a->q, fatia_ctlr_meta_str(obj, "name"));
}

static void on_account(void *arg, const json_t *old, const json_t *obj)
{
    struct sa_ctl *a = arg;
    const char *name = old && !obj ? fatia_ctlr_meta_str(old, "name") : NULL;

    if (name && !strcmp(name, "default") && fatia_ctlr_meta_str(old, "namespace"))
        fatia_ctlr_wq_add(a->q, fatia_ctlr_meta_str(old, "namespace"));
}

int fatia_ctlr_sa_ctl_new(struct ctl *c, struct sa_ctl **ret)
{
    struct sa_ctl *a = fatia_calloc(1, sizeof(*a));
    int rc;

    if (!a)
        return -ENOMEM;
    a->ctl = c;
    a->q = fatia_ctlr_wq_new(c, "serviceaccount", reconcile, a);
    a->namespaces = fatia_ctlr_informer(c, fatia_kind_find("v1", "Namespace", NULL));
    a->accounts = fatia_ctlr_informer(c, fatia_kind_find("v1", "ServiceAccount", NULL));
    if (!a->q || !a->namespaces || !a->accounts) {
        fatia_ctlr_sa_ctl_free(a);
        return -ENOMEM;
    }
    if ((rc = fatia_ctlr_informer_on(a->namespaces, on_namespace, a)) < 0 ||
        (rc = fatia_ctlr_informer_on(a->accounts, on_account, a)) < 0) {
        fatia_ctlr_sa_ctl_free(a);
        return rc;
    }
    *ret = a;
    return 0;
}

void fatia_ctlr_sa_ctl_free(struct sa_ctl *a)
{
    if (!a)
        return;
    fatia_ctlr_wq_free(a->q);
    fatia_free(a);
}

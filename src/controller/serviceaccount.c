/*
 * controller/serviceaccount.c: the `default` ServiceAccount of every namespace, as
 * kube-controller-manager's serviceaccounts-controller (pkg/controller/serviceaccount/
 * serviceaccounts_controller.go) keeps it: created when a namespace appears, and again when it is
 * deleted while its namespace lives. A terminating namespace gets none (its deletion would race
 * the create).
 *
 * It also publishes fatiad's CA certificate as the ConfigMap kube-root-ca.crt (key ca.crt) of
 * every namespace, as kube-controller-manager's root-ca-cert-publisher
 * (pkg/controller/certificates/rootcacertpublisher/publisher.go) does: created with the
 * namespace, made again when deleted, its data put back when edited. The kube-api-access
 * volume of every pod (apiserver/saadmit.c) projects it as ca.crt.
 *
 * Model: the key is the namespace's name; a pass creates "default" when the ServiceAccount
 * informer has none there, and the ConfigMap when missing or different. A 409 (created
 * meanwhile) is quiet.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "controller/ctl_internal.h"

struct sa_ctl {
    struct ctl *ctl;
    struct wq *q;
    struct informer *namespaces, *accounts, *configmaps;
};

#define ROOT_CA_NAME "kube-root-ca.crt"

static void publish_ca(struct sa_ctl *a, const char *ns)
{
    const char *ca = fatia_ctlr_opts(a->ctl)->root_ca;
    const json_t *cm = fatia_ctlr_informer_get(a->configmaps, ns, ROOT_CA_NAME);
    const char *have = fatia_json_str(json_object_get(cm, "data"), "ca.crt");
    json_t *obj;

    if (!ca || (have && !strcmp(have, ca) && json_object_size(json_object_get(cm, "data")) == 1))
        return;
    if (cm) {
        obj = json_deep_copy(cm);
        if (obj)
            json_object_set_new(obj, "data", json_pack("{s:s}", "ca.crt", ca));
    } else {
        obj = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                        "metadata", "name", ROOT_CA_NAME, "namespace", ns, "data", "ca.crt", ca);
    }
    if (obj && cm)
        fatia_ctlr_update(a->ctl, obj, &(struct op_opts){.wq = a->q, .key = ns});
    else if (obj)
        fatia_ctlr_create(a->ctl, obj,
                          &(struct op_opts){.wq = a->q, .key = ns, .quiet_conflict = true});
    json_decref(obj);
}

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
    publish_ca(a, ns);
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

static void on_configmap(void *arg, const json_t *old, const json_t *obj)
{
    struct sa_ctl *a = arg;
    const json_t *o = obj ? obj : old;
    const char *name = o ? fatia_ctlr_meta_str(o, "name") : NULL;

    if (name && !strcmp(name, ROOT_CA_NAME) && fatia_ctlr_meta_str(o, "namespace"))
        fatia_ctlr_wq_add(a->q, fatia_ctlr_meta_str(o, "namespace"));
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
    a->configmaps = fatia_ctlr_informer(c, fatia_kind_find("v1", "ConfigMap", NULL));
    if (!a->q || !a->namespaces || !a->accounts || !a->configmaps) {
        fatia_ctlr_sa_ctl_free(a);
        return -ENOMEM;
    }
    if ((rc = fatia_ctlr_informer_on(a->namespaces, on_namespace, a)) < 0 ||
        (rc = fatia_ctlr_informer_on(a->accounts, on_account, a)) < 0 ||
        (rc = fatia_ctlr_informer_on(a->configmaps, on_configmap, a)) < 0) {
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

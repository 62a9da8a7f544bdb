/*
 * apiserver/saadmit.c: the ServiceAccount admission plugin for Pods, as kube-apiserver's
 * (plugin/pkg/admission/serviceaccount/admission.go): a pod created without a service account
 * runs as `default`, and unless automountServiceAccountToken is false (on the pod, else on its
 * ServiceAccount) it gets the `kube-api-access-<5>` projected volume mounted read-only at
 * /var/run/secrets/kubernetes.io/serviceaccount in every container and init container:
 *     serviceAccountToken {expirationSeconds 3607, path token}   (a bound token, satoken.c)
 *     configMap kube-root-ca.crt, key ca.crt                     (controller/serviceaccount.c)
 *     downwardAPI metadata.namespace, path namespace
 * defaultMode 0644, as upstream. The node agent makes the token through the TokenRequest bound
 * to the pod and writes the files (agent/refvol.c), renewing the token at 80 % of its life.
 *
 * Invariants: only creates are mutated (a pod's volumes are immutable afterwards); a container
 * that already mounts something at the path keeps it, as upstream; an existing kube-api-access
 * projected volume is reused, never duplicated.
 *
 * Choices: without a tokens file (fatiad's --no-auth mode, sa_enabled false) no volume is added:
 * no token can be made there, and every client is an administrator anyway; nor without the
 * controllers (fatia_apiserver_set_sa_automount off: --no-controllers), which make the
 * `default` ServiceAccount and the kube-root-ca.crt ConfigMap the volume needs. Rejected: refusing
 * a pod whose ServiceAccount does not exist yet, as upstream does (a namespace's first pods race
 * the `default` ServiceAccount's creation here, and the agent waits for the account instead:
 * the TokenRequest's 404 leaves the pod in ContainerCreating until it exists).
 */
#include "base/compat.h"

#include "apiserver/internal.h"
#include "base/error.h"
#include "base/json.h"
#include "model/kinds/kinds.h"

#define SA_MOUNT_PATH "/var/run/secrets/kubernetes.io/serviceaccount"
#define SA_VOL_PREFIX "kube-api-access-"
#define SA_TOKEN_EXP  3607 /* upstream's: an hour and a few seconds, so kubelet can tell it */

static bool automount(struct fatia_apiserver *s, const char *ns, const json_t *spec, const char *sa)
{
    const json_t *v = json_object_get(spec, "automountServiceAccountToken");
    struct rtable *t;
    const struct entry *e;
    char key[600];

    if (json_is_boolean(v))
        return json_is_true(v);
    t = fatia_api_server_table_for(s, &fatia_kind_serviceaccount);
    if (!t)
        return true;
    fatia_api_entry_key(t, ns, sa, key, sizeof(key));
    e = fatia_api_rtable_find(t, key);
    v = e && e->committed ? json_object_get(e->committed->tree, "automountServiceAccountToken")
                          : NULL;
    return !json_is_false(v);
}

static bool mounts_path(const json_t *c)
{
    size_t i;
    json_t *m;

    json_array_foreach(json_object_get(c, "volumeMounts"), i, m)
    {
        const char *p = fatia_json_str(m, "mountPath");
        if (p && !strcmp(p, SA_MOUNT_PATH))
            return true;
    }
    return false;
}

static json_t *volume_new(const char *name)
{
    return json_pack(
        "{s:s,s:{s:i,s:[{s:{s:i,s:s}},{s:{s:s,s:[{s:s,s:s}]}},{s:{s:[{s:s,s:{s:s,s:s}}]}}]}}",
        "name", name, "projected", "defaultMode", 0644, "sources", "serviceAccountToken",
        "expirationSeconds", SA_TOKEN_EXP, "path", "token", "configMap", "name", "kube-root-ca.crt",
        "items", "key", "ca.crt", "path", "ca.crt", "downwardAPI", "items", "path", "namespace",
        "fieldRef", "apiVersion", "v1", "fieldPath", "metadata.namespace");
}

static int admit(void *arg, struct fatia_admit_attrs *a)
{
    struct fatia_apiserver *s = arg;
    json_t *spec = json_object_get(a->obj, "spec"), *vols, *v, *c;
    const char *sa, *lists[] = {"initContainers", "containers"};
    char name[40] = "";
    bool need = false;
    size_t i;

    if (!s->sa_enabled || !s->sa_automount || !json_is_object(spec) || !a->ns)
        return 0;
    sa = fatia_json_str(spec, "serviceAccountName");
    if (!sa || !*sa)
        sa = fatia_json_str(spec, "serviceAccount");
    if (!sa || !*sa)
        sa = "default";
    if (json_object_set_new(spec, "serviceAccountName", json_string(sa)) < 0)
        return -ENOMEM;
    if (!automount(s, a->ns, spec, fatia_json_str(spec, "serviceAccountName")))
        return 0;
    vols = json_object_get(spec, "volumes");
    json_array_foreach(vols, i, v)
    {
        const char *vn = fatia_json_str(v, "name");
        if (vn && !strncmp(vn, SA_VOL_PREFIX, strlen(SA_VOL_PREFIX)) &&
            json_object_get(v, "projected"))
            snprintf(name, sizeof(name), "%s", vn);
    }
    if (!name[0]) {
        char suffix[6];
        fatia_api_random_suffix(suffix);
        snprintf(name, sizeof(name), SA_VOL_PREFIX "%s", suffix);
        need = true;
    }
    for (int l = 0; l < 2; l++)
        json_array_foreach(json_object_get(spec, lists[l]), i, c)
        {
            json_t *mounts = json_object_get(c, "volumeMounts");
            if (mounts_path(c))
                continue;
            if (!mounts) {
                mounts = json_array();
                if (!mounts || json_object_set_new(c, "volumeMounts", mounts) < 0)
                    return -ENOMEM;
            }
            if (json_array_append_new(mounts, json_pack("{s:s,s:b,s:s}", "name", name, "readOnly",
                                                        1, "mountPath", SA_MOUNT_PATH)) < 0)
                return -ENOMEM;
        }
    if (!need)
        return 0;
    if (!vols) {
        vols = json_array();
        if (!vols || json_object_set_new(spec, "volumes", vols) < 0)
            return -ENOMEM;
    }
    return json_array_append_new(vols, volume_new(name)) < 0 ? -ENOMEM : 0;
}

static const struct fatia_kind *const sa_kinds[] = {&fatia_kind_pod, NULL};

int fatia_api_saadmit_register(struct fatia_apiserver *s)
{
    return fatia_apiserver_add_admission(s, &(struct fatia_admission){
                                                .name = "ServiceAccount",
                                                .phase = FATIA_ADMIT_MUTATING,
                                                .ops = FATIA_ADMIT_CREATE,
                                                .kinds = sa_kinds,
                                                .admit = admit,
                                                .arg = s,
                                            });
}

void fatia_apiserver_set_sa_automount(struct fatia_apiserver *s, bool on)
{
    s->sa_automount = on;
}

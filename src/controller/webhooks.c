/*
 * controller/webhooks.c: the mutating admission plugins that belong with the controllers.
 *
 *   hardware-profile-injection  (OpenShift AI's webhook, demand/profile.h): a Pod, Job or Workload
 *                               naming a HardwareProfile gets its resources, queue, priority and
 *                               node scheduling, under DESIGN §7's rules; a request outside the
 *                               profile's min..max, or naming a disabled or missing profile, is
 *                               refused with an error that names the field;
 *   kueue-defaults              (Kueue's job and pod webhooks): a Job that names a LocalQueue is
 *                               created suspended, so that nothing runs before admission; a bare
 *                               Pod that names one gets the scheduling gate
 *                               kueue.x-k8s.io/admission, the label kueue.x-k8s.io/managed and
 *                               Kueue's finalizer (the workload controller lifts the gate on
 *                               admission and the finalizer once the pod has ended).
 *
 * The tenant rules and the quota door (tenancy.c) wrap them: tenancy-restrict runs before the
 * profile plugin (it must see the tenant's own write), quota-door after it and before
 * kueue-defaults (a queue label it defaults gets the gate like any other). Without the
 * controllers the daemon registers fatia_controllers_tenant_webhooks instead: the tenant rules
 * and the closed door, no profile injection or Kueue defaults (nothing would act on them).
 *
 * The profile plugin runs first, because it may be the one that sets the queue label. Both run
 * on the loop and read HardwareProfiles from the client's cache (no copy). This file only
 * describes the plugins (client/plugin.h); the daemon registers them with the API server, so
 * the controller library never calls into it (docs/ARCHITECTURE.md, "How the layers link"). Pods
 * owned by a Job are left to the Job's own admission (Kueue suspends the Job, not its pods).
 */
#include "base/compat.h"

#include "base/error.h"
#include "base/json.h"
#include "controller/controller.h"
#include "controller/ctl.h"
#include "controller/kueue.h"
#include "controller/tenancy.h"
#include "demand/profile.h"
#include "model/kind.h"

static const json_t *lookup_profile(void *ud, const char *ns, const char *name)
{
    struct fatia_client *c = ud;
    const struct fatia_kind *k =
        fatia_kind_find("infrastructure.opendatahub.io/v1", "HardwareProfile", NULL);

    return k ? fatia_client_cached(c, k, ns, name) : NULL;
}

static int profile_admit(void *arg, struct fatia_admit_attrs *a)
{
    return fatia_profile_admit(a->kind, a->old, a->obj, lookup_profile, arg, a->diag);
}

static bool is_kind(const struct fatia_kind *k, const char *group, const char *kind)
{
    return !strcmp(k->group, group) && !strcmp(k->kind, kind);
}

static int add_unique(json_t *arr, json_t *item, const char *key)
{
    size_t i;
    json_t *v;
    const char *want = key ? fatia_json_str(item, key) : json_string_value(item);

    json_array_foreach(arr, i, v)
    {
        const char *have = key ? fatia_json_str(v, key) : json_string_value(v);
        if (have && want && !strcmp(have, want)) {
            json_decref(item);
            return 0;
        }
    }
    return json_array_append_new(arr, item) < 0 ? -ENOMEM : 0;
}

static int kueue_defaults(void *arg, struct fatia_admit_attrs *a)
{
    json_t *meta = json_object_get(a->obj, "metadata");
    const char *queue = fatia_ctlr_obj_label(a->obj, KUEUE_LABEL_QUEUE);

    (void)arg;
    if (!queue || !*queue || !json_is_object(meta))
        return 0;
    if (is_kind(a->kind, "batch", "Job")) {
        json_t *spec = json_object_get(a->obj, "spec");
        if (json_is_object(spec) && json_object_set_new(spec, "suspend", json_true()) < 0)
            return -ENOMEM;
        return 0;
    }
    if (is_kind(a->kind, "", "Pod")) {
        json_t *spec = json_object_get(a->obj, "spec"), *gates, *labels, *fin;
        if (fatia_ctlr_owner_of_kind(a->obj, "batch/v1", "Job") || !json_is_object(spec))
            return 0;
        gates = fatia_json_array_ensure(spec, "schedulingGates");
        labels = fatia_json_object_ensure(meta, "labels");
        fin = fatia_json_array_ensure(meta, "finalizers");
        if (!gates || !labels || !fin ||
            add_unique(gates, json_pack("{s:s}", "name", KUEUE_GATE_ADMISSION), "name") < 0 ||
            json_object_set_new(labels, KUEUE_LABEL_MANAGED, json_string("true")) < 0 ||
            add_unique(fin, json_string(KUEUE_FINALIZER_POD), NULL) < 0)
            return -ENOMEM;
    }
    return 0;
}

int fatia_controllers_webhooks(struct fatia_client *client,
                               struct fatia_admission out[FATIA_CONTROLLERS_N_WEBHOOKS],
                               size_t *ret_n)
{
    static const struct fatia_kind *kinds[5];
    static const struct fatia_kind *kueue_kinds[3];
    int r;

    *ret_n = 0;
    kinds[0] = fatia_kind_find("v1", "Pod", NULL);
    kinds[1] = fatia_kind_find("batch/v1", "Job", NULL);
    kinds[2] = fatia_kind_find("kueue.x-k8s.io/v1beta2", "Workload", NULL);
    kinds[3] = fatia_kind_find("kubeflow.org/v1", "Notebook", NULL);
    kinds[4] = NULL;
    kueue_kinds[0] = kinds[0];
    kueue_kinds[1] = kinds[1];
    kueue_kinds[2] = NULL;
    if (!kinds[0] || !kinds[1] || !kinds[2] || !kinds[3])
        return -EINVAL;
    /* in the order they run: the tenant rules see the tenant's own write */
    r = fatia_controller_tenancy_restrict(&out[0]);
    if (r < 0)
        return r;
    out[2] = (struct fatia_admission){.name = "hardware-profile-injection",
                                      .phase = FATIA_ADMIT_MUTATING,
                                      .ops = FATIA_ADMIT_CREATE | FATIA_ADMIT_UPDATE,
                                      .kinds = kinds,
                                      .admit = profile_admit,
                                      .arg = client};
    r = fatia_controller_quota_door(client, &out[3]);
    if (r < 0)
        return r;
    out[4] = (struct fatia_admission){.name = "kueue-defaults",
                                      .phase = FATIA_ADMIT_MUTATING,
                                      .ops = FATIA_ADMIT_CREATE,
                                      .kinds = kueue_kinds,
                                      .admit = kueue_defaults,
                                      .arg = NULL};
    r = fatia_controller_quota_plugins(client, &out[5]);
    if (r == 0)
        r = fatia_controller_svcalloc_plugin(client, &out[7]);
    if (r == 0)
        r = fatia_controller_kueue_apps_plugin(&out[8]);
    if (r < 0)
        return r;
    *ret_n = FATIA_CONTROLLERS_N_WEBHOOKS;
    return 0;
}

int fatia_controllers_tenant_webhooks(
    struct fatia_admission out[FATIA_CONTROLLERS_N_TENANT_WEBHOOKS], size_t *ret_n)
{
    int r;

    *ret_n = 0;
    r = fatia_controller_tenancy_restrict(&out[0]);
    if (r == 0)
        r = fatia_controller_quota_door(NULL, &out[2]); /* closed: no cache to read */
    if (r < 0)
        return r;
    *ret_n = FATIA_CONTROLLERS_N_TENANT_WEBHOOKS;
    return 0;
}

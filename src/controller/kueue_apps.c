/*
 * controller/kueue_apps.c: Kueue's integrations for Deployments and StatefulSets (Kueue's
 * pkg/controller/jobs/deployment and jobs/statefulset webhooks), as the admission plugin
 * kueue-apps: both ride on the pod integration (workload.c), as Kueue's do.
 *
 *   Deployment   the queue-name label of the Deployment is copied to its pod template, so each
 *                pod its ReplicaSets make is a plain Pod of that queue: gated at creation
 *                (kueue-defaults, webhooks.c), one Workload per pod, admitted one by one.
 *   StatefulSet  the template also gets Kueue's pod group: the label
 *                kueue.x-k8s.io/pod-group-name (Kueue's workload name for the StatefulSet:
 *                statefulset-<name>-<5 hex>) and the annotations pod-group-total-count (the
 *                replicas), pod-group-fast-admission and pod-group-serving "true"; the pods of the
 *                group share one Workload of that count, admitted whole or not at all (a gang).
 *
 * Invariants: only objects that carry the queue-name label are touched; the template's own
 * labels stay (the queue label is the Deployment's). Rejected: Kueue's rule that a StatefulSet's
 * replicas change only to and from zero (fatia re-counts the group instead: workload.c).
 */
#include "base/compat.h"

#include "base/error.h"
#include "base/json.h"
#include "controller/controller.h"
#include "controller/ctl.h"
#include "controller/kueue.h"
#include "model/kind.h"

static int kueue_apps(void *arg, struct fatia_admit_attrs *a)
{
    const char *queue = fatia_ctlr_obj_label(a->obj, KUEUE_LABEL_QUEUE);
    json_t *tmpl = json_object_get(json_object_get(a->obj, "spec"), "template");
    json_t *tm, *labels, *anns;
    char group[300], count[32];
    int64_t replicas = 1;

    (void)arg;
    if (!queue || !*queue || !json_is_object(tmpl))
        return 0;
    tm = fatia_json_object_ensure(tmpl, "metadata");
    labels = tm ? fatia_json_object_ensure(tm, "labels") : NULL;
    if (!labels || json_object_set_new(labels, KUEUE_LABEL_QUEUE, json_string(queue)) < 0)
        return -ENOMEM;
    if (strcmp(a->kind->kind, "StatefulSet"))
        return 0;
    fatia_json_int(json_object_get(a->obj, "spec"), "replicas", &replicas);
    fatia_ctlr_kueue_workload_name(
        "StatefulSet", "apps",
        fatia_ctlr_meta_str(a->obj, "name") ? fatia_ctlr_meta_str(a->obj, "name") : "", "", group,
        sizeof(group));
    snprintf(count, sizeof(count), "%lld", (long long)(replicas < 0 ? 0 : replicas));
    anns = fatia_json_object_ensure(tm, "annotations");
    if (!anns || json_object_set_new(labels, KUEUE_LABEL_POD_GROUP, json_string(group)) < 0 ||
        json_object_set_new(anns, KUEUE_ANN_GROUP_COUNT, json_string(count)) < 0 ||
        json_object_set_new(anns, "kueue.x-k8s.io/pod-group-fast-admission", json_string("true")) <
            0 ||
        json_object_set_new(anns, "kueue.x-k8s.io/pod-group-serving", json_string("true")) < 0)
        return -ENOMEM;
    return 0;
}

int fatia_controller_kueue_apps_plugin(struct fatia_admission *ret)
{
    static const struct fatia_kind *kinds[3];

    kinds[0] = fatia_kind_find("apps/v1", "Deployment", NULL);
    kinds[1] = fatia_kind_find("apps/v1", "StatefulSet", NULL);
    kinds[2] = NULL;
    if (!kinds[0] || !kinds[1])
        return -EINVAL;
    *ret = (struct fatia_admission){.name = "kueue-apps",
                                    .phase = FATIA_ADMIT_MUTATING,
                                    .ops = FATIA_ADMIT_CREATE | FATIA_ADMIT_UPDATE,
                                    .kinds = kinds,
                                    .admit = kueue_apps};
    return 0;
}

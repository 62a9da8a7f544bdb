/*
 * model/kinds/kubeflow.c: kubeflow.org/v1 Notebook, the object OpenShift AI's dashboard creates
 * for a workbench (reference/workbenches-serving.md; Kubeflow's notebook-controller, api/v1).
 *
 * Model: spec.template is a pod template (the same schema as a Job's, so a Notebook's pod is
 * checked as strictly as a Job's); everything else a workbench means lives in metadata:
 *   kueue.x-k8s.io/queue-name                  (label) the LocalQueue its pod waits in;
 *   opendatahub.io/hardware-profile-name       (annotation) the profile injected into the
 *   opendatahub.io/hardware-profile-namespace   template (demand/profile.h);
 *   kubeflow-resource-stopped                  (annotation, any value: Kubeflow writes the stop
 *                                               time) the workbench is stopped: no pod runs;
 *   notebooks.opendatahub.io/last-activity     (annotation) written by the culler.
 * status is Kubeflow's: conditions (copied from the pod's), readyReplicas, containerState.
 *
 * Checked here beyond the pod template: the stopped annotation is not empty (Kubeflow tests
 * presence, and an empty value in a patch is almost always a mistake meaning "remove"), and the
 * template has at least one container. Rejected: a NotebookSpec of our own (an image, a size):
 * the dashboard writes the pod template, and a second way to say the same thing would drift.
 */
#include "base/compat.h"

#include "base/json.h"
#include "model/kinds/kinds.h"

static void check_spec(struct fatia_vctx *ctx, json_t *spec)
{
    const json_t *ctrs = fatia_json_path(spec, "template.spec.containers");

    if (json_array_size(ctrs) == 0)
        fatia_verr_at(ctx, spec, "template.spec.containers",
                      "a workbench needs at least one container");
}

static const struct fatia_field spec_fields[] = {
    {"template", &fatia_s_pod_template_spec, FATIA_F_REQUIRED, NULL}, {0}};

static void check_notebook(struct fatia_vctx *ctx, json_t *obj)
{
    const char *stopped =
        fatia_json_str(fatia_json_path(obj, "metadata.annotations"), "kubeflow-resource-stopped");

    if (stopped && !*stopped)
        fatia_verr_at(ctx, obj, "metadata.annotations[kubeflow-resource-stopped]",
                      "must not be empty: set it (to the time of the stop, as Kubeflow does) to "
                      "stop the workbench, remove it to start it");
}

static const struct fatia_field fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = spec_fields, .check = check_spec},
     FATIA_F_REQUIRED, NULL},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};

static const struct fatia_column columns[] = {
    {"Ready", "integer", ".status.readyReplicas", 0, "Ready pods (0 or 1)"},
    {"Stopped", "string", ".metadata.annotations.kubeflow-resource-stopped", 0,
     "When the workbench was stopped"},
    {"Queue", "string", ".metadata.labels.kueue\\.x-k8s\\.io/queue-name", 0, "Kueue LocalQueue"},
    {"Profile", "string", ".metadata.annotations.opendatahub\\.io/hardware-profile-name", 1,
     "Hardware profile"},
    {NULL}};

const struct fatia_kind fatia_kind_notebook = {
    .group = "kubeflow.org",
    .version = "v1",
    .kind = "Notebook",
    .plural = "notebooks",
    .singular = "notebook",
    .short_names = (const char *const[]){"nb", NULL},
    .namespaced = true,
    .has_status = true,
    .name_rule = FATIA_NAME_LABEL,
    .schema =
        &(const struct fatia_schema){FATIA_T_OBJECT, .fields = fields, .check = check_notebook},
    .columns = columns};

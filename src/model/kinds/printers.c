/*
 * model/kinds/printers.c: the cells of kubectl's built-in Node, Pod and Job printers that no JSONPath
 * gives (k8s.io/kubernetes pkg/printers/internalversion/printers.go: printNode, printPod,
 * printJob), so that `kubectl get nodes,pods,jobs` against fatiad read as on a cluster:
 *
 *     NAME          READY   STATUS      RESTARTS   AGE        NAME     STATUS     COMPLETIONS   DURATION
 *     train-a1-x    1/1     Running     0          12s        train    Complete   1/1           42s
 *
 * Pod STATUS is the phase, replaced by the reason of a container that waits or ended
 * ("Completed", "Error", "OOMKilled", "ContainerCreating"), by "Terminating" once a deletion is
 * pending, and by "SchedulingGated" while a scheduling gate holds it. Pure: now comes in.
 */
#include "base/compat.h"

#include "base/clock.h"
#include "base/json.h"
#include "model/kinds/kinds.h"

json_t *fatia_print_node_status(const json_t *node, int64_t now)
{
    json_t *conds = fatia_json_path(node, "status.conditions"), *c;
    const char *ready = "Unknown";
    char buf[64];
    size_t i;

    (void)now;
    json_array_foreach(conds, i, c)
    {
        const char *t = fatia_json_str(c, "type"), *s = fatia_json_str(c, "status");
        if (t && !strcmp(t, "Ready"))
            ready = s && !strcmp(s, "True") ? "Ready" : "NotReady";
    }
    snprintf(buf, sizeof(buf), "%s%s", ready,
             json_is_true(fatia_json_path(node, "spec.unschedulable")) ? ",SchedulingDisabled"
                                                                       : "");
    return json_string(buf);
}

json_t *fatia_print_pod_ready(const json_t *pod, int64_t now)
{
    json_t *st = fatia_json_path(pod, "status.containerStatuses"), *c;
    size_t total = json_array_size(fatia_json_path(pod, "spec.containers")), ready = 0, i;
    char buf[32];

    (void)now;
    json_array_foreach(st, i, c) ready += json_is_true(json_object_get(c, "ready"));
    snprintf(buf, sizeof(buf), "%zu/%zu", ready, total);
    return json_string(buf);
}

json_t *fatia_print_pod_status(const json_t *pod, int64_t now)
{
    const char *reason = fatia_json_str(json_object_get(pod, "status"), "reason");
    const char *phase = fatia_json_str(json_object_get(pod, "status"), "phase");
    json_t *st = fatia_json_path(pod, "status.containerStatuses"), *c;
    size_t i;

    (void)now;
    if (fatia_json_path(pod, "metadata.deletionTimestamp"))
        return json_string("Terminating");
    if (json_array_size(fatia_json_path(pod, "spec.schedulingGates")))
        return json_string("SchedulingGated");
    json_array_foreach(st, i, c)
    {
        const char *w = fatia_json_str(fatia_json_path(c, "state.waiting"), "reason");
        json_t *term = fatia_json_path(c, "state.terminated");
        const char *t = fatia_json_str(term, "reason");
        int64_t code = 0;
        char buf[64];
        if (w && *w)
            return json_string(w);
        if (t && *t)
            return json_string(t);
        if (term) {
            fatia_json_int(term, "exitCode", &code);
            snprintf(buf, sizeof(buf), code ? "ExitCode:%" PRId64 : "Completed", code);
            return json_string(buf);
        }
    }
    return json_string(reason && *reason ? reason : phase ? phase : "Pending");
}

json_t *fatia_print_pod_restarts(const json_t *pod, int64_t now)
{
    json_t *st = fatia_json_path(pod, "status.containerStatuses"), *c;
    int64_t total = 0, n;
    size_t i;

    (void)now;
    json_array_foreach(st, i, c) if (fatia_json_int(c, "restartCount", &n)) total += n;
    return json_integer(total);
}

static bool has_condition(const json_t *job, const char *type)
{
    json_t *conds = fatia_json_path(job, "status.conditions"), *c;
    size_t i;

    json_array_foreach(conds, i, c)
    {
        const char *t = fatia_json_str(c, "type"), *s = fatia_json_str(c, "status");
        if (t && s && !strcmp(t, type) && !strcmp(s, "True"))
            return true;
    }
    return false;
}

json_t *fatia_print_job_status(const json_t *job, int64_t now)
{
    (void)now;
    if (has_condition(job, "Complete"))
        return json_string("Complete");
    if (has_condition(job, "Failed"))
        return json_string("Failed");
    if (fatia_json_path(job, "metadata.deletionTimestamp"))
        return json_string("Terminating");
    if (json_is_true(fatia_json_path(job, "spec.suspend")))
        return json_string("Suspended");
    return json_string("Running");
}

json_t *fatia_print_job_completions(const json_t *job, int64_t now)
{
    int64_t succeeded = 0, completions = 1, parallelism = 1;
    char buf[48];

    (void)now;
    fatia_json_int(json_object_get(job, "status"), "succeeded", &succeeded);
    fatia_json_int(json_object_get(job, "spec"), "parallelism", &parallelism);
    if (fatia_json_int(json_object_get(job, "spec"), "completions", &completions))
        snprintf(buf, sizeof(buf), "%" PRId64 "/%" PRId64, succeeded, completions);
    else if (parallelism > 1)
        snprintf(buf, sizeof(buf), "%" PRId64 "/1 of %" PRId64, succeeded, parallelism);
    else
        snprintf(buf, sizeof(buf), "%" PRId64 "/1", succeeded);
    return json_string(buf);
}

json_t *fatia_print_job_duration(const json_t *job, int64_t now)
{
    const char *start = fatia_json_str(json_object_get(job, "status"), "startTime");
    const char *end = fatia_json_str(json_object_get(job, "status"), "completionTime");
    fatia_usec_t t0, t1 = now;
    int64_t s;
    char buf[32];

    if (!start || fatia_time_parse_rfc3339(start, &t0) < 0)
        return NULL;
    if (end && fatia_time_parse_rfc3339(end, &t1) < 0)
        t1 = now;
    s = (t1 - t0) / FATIA_USEC_PER_SEC;
    if (s < 0)
        s = 0;
    if (s < 120)
        snprintf(buf, sizeof(buf), "%" PRId64 "s", s);
    else if (s < 3600)
        snprintf(buf, sizeof(buf), "%" PRId64 "m%" PRId64 "s", s / 60, s % 60);
    else
        snprintf(buf, sizeof(buf), "%" PRId64 "h%" PRId64 "m", s / 3600, (s / 60) % 60);
    return json_string(buf);
}

/*
 * agent/podstatus.c: shim status → Pod status (see podstatus.h).
 *
 * The shim records container states already in the API's shape (waiting / running / terminated
 * with kubelet's reasons); here they are put in the spec's order, given the image the spec names
 * (recorded, never pulled) and the fields the API has (imageID, containerID, started, ready), and
 * the conditions are derived as kubelet's status manager does:
 *
 *   PodReadyToStartContainers  True once the shim (the pod's "sandbox") runs
 *   Initialized                every init container terminated with 0
 *   ContainersReady, Ready     every app container running (no probes: running is ready);
 *                              False with reason PodCompleted once the pod is terminal
 */
#include "base/compat.h"

#include "agent/podstatus.h"

#include "base/alloc.h"
#include "base/json.h"

static const json_t *find_named(const json_t *arr, const char *name)
{
    size_t i;
    json_t *e;

    json_array_foreach(arr, i, e)
    {
        const char *n = fatia_json_str(e, "name");
        if (n && !strcmp(n, name))
            return e;
    }
    return NULL;
}

static json_t *statuses(const json_t *spec_ctrs, const json_t *shim_ctrs, bool terminal,
                        const char *wait_reason, const char *wait_msg, bool *all_ready,
                        bool *all_ok, json_t *unready, json_t *incomplete)
{
    json_t *out = json_array();
    size_t i;
    json_t *c;

    json_array_foreach(spec_ctrs, i, c)
    {
        const char *name = fatia_json_str(c, "name"), *image = fatia_json_str(c, "image");
        const json_t *s = name ? find_named(shim_ctrs, name) : NULL;
        const json_t *state = json_object_get(s, "state");
        json_t *o;
        int64_t rc = 0;
        bool ready = fatia_json_bool(s, "ready", false);

        if (!name)
            continue;
        o = json_pack("{s:s,s:s,s:s,s:b,s:b}", "name", name, "image", image ? image : "", "imageID",
                      fatia_json_str(s, "imageID") ? fatia_json_str(s, "imageID") : "", "ready",
                      ready, "started", fatia_json_bool(s, "started", false));
        if (s && fatia_json_int(s, "restartCount", &rc))
            json_object_set_new(o, "restartCount", json_integer(rc));
        else
            json_object_set_new(o, "restartCount", json_integer(0));
        if (state) {
            json_object_set_new(o, "state", json_deep_copy(state));
        } else if (terminal) {
            /* the pod ended before this container ran (kubelet's status for a container it
               cannot find in a terminal pod) */
            json_object_set_new(
                o, "state",
                json_pack("{s:{s:i,s:s,s:s}}", "terminated", "exitCode", 137, "reason",
                          "ContainerStatusUnknown", "message",
                          "The container could not be located when the pod was terminated"));
        } else {
            json_t *w =
                json_pack("{s:s}", "reason", wait_reason ? wait_reason : "ContainerCreating");
            if (wait_msg && wait_msg[0])
                json_object_set_new(w, "message", json_string(wait_msg));
            json_object_set_new(o, "state", json_pack("{s:o}", "waiting", w));
        }
        json_object_set_new(o, "lastState",
                            json_object_get(s, "lastState")
                                ? json_deep_copy(json_object_get(s, "lastState"))
                                : json_object());
        if (fatia_json_str(s, "containerID"))
            json_object_set_new(o, "containerID", json_string(fatia_json_str(s, "containerID")));
        if (!ready) {
            *all_ready = false;
            json_array_append_new(unready, json_string(name));
        }
        {
            const json_t *t = json_object_get(json_object_get(o, "state"), "terminated");
            int64_t code = -1;
            if (!t || !fatia_json_int(t, "exitCode", &code) || code != 0) {
                *all_ok = false;
                json_array_append_new(incomplete, json_string(name));
            }
        }
        json_array_append_new(out, o);
    }
    return out;
}

static json_t *condition(const json_t *pod, const char *type, bool status, const char *reason,
                         const char *message, const char *now)
{
    const json_t *conds = json_object_get(json_object_get(pod, "status"), "conditions");
    const char *st = status ? "True" : "False", *ltt = now;
    size_t i;
    json_t *c, *o;

    json_array_foreach(conds, i, c)
    {
        const char *t = fatia_json_str(c, "type"), *s = fatia_json_str(c, "status");
        if (t && !strcmp(t, type) && s && !strcmp(s, st) && fatia_json_str(c, "lastTransitionTime"))
            ltt = fatia_json_str(c, "lastTransitionTime");
    }
    o = json_pack("{s:s,s:s,s:n,s:s}", "type", type, "status", st, "lastProbeTime",
                  "lastTransitionTime", ltt);
    if (reason)
        json_object_set_new(o, "reason", json_string(reason));
    if (message)
        json_object_set_new(o, "message", json_string(message));
    return o;
}

static char *names_msg(const char *what, const json_t *names)
{
    char buf[1024];
    size_t len = (size_t)snprintf(buf, sizeof(buf), "containers with %s status: [", what);
    size_t i;
    json_t *n;

    json_array_foreach(names, i, n)
    {
        if (len < sizeof(buf))
            len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? " " : "",
                                    json_string_value(n));
    }
    if (len < sizeof(buf))
        snprintf(buf + len, sizeof(buf) - len, "]");
    return fatia_strdup(buf);
}

json_t *fatia_pod_status_build(const json_t *pod, const json_t *shim, const char *start_time,
                               const char *wait_reason, const char *wait_msg, fatia_usec_t now)
{
    const json_t *spec = json_object_get(pod, "spec");
    const char *phase = shim ? fatia_json_str(shim, "phase") : NULL;
    json_t *st, *conds, *unready = json_array(), *incomplete = json_array(), *junk = json_array();
    bool all_ready = true, all_ok = true, inits_ready = true, inits_ok = true;
    bool terminal;
    char nowbuf[40];
    char *msg;

    if (!phase)
        phase = "Pending";
    terminal = !strcmp(phase, "Succeeded") || !strcmp(phase, "Failed");
    fatia_time_format_rfc3339(now, false, nowbuf, sizeof(nowbuf));
    /* a pod in a container has an address of its own (the shim's CNI result), known once its
     * sandbox exists (podIPs merge by ip: a placeholder written first would stay in the list);
     * a process shares the host's */
    const char *rt = shim ? fatia_json_str(shim, "runtime") : NULL;
    const char *pip = shim && fatia_json_str(shim, "podIP") ? fatia_json_str(shim, "podIP")
                      : rt && !strcmp(rt, "oci")            ? NULL
                                                            : "127.0.0.1";
    st = json_pack("{s:s,s:s,s:s,s:[{s:s}]}", "phase", phase, "startTime", start_time, "hostIP",
                   "127.0.0.1", "hostIPs", "ip", "127.0.0.1");
    if (st && shim && pip) { /* none before the sandbox exists, as kubelet */
        json_object_set_new(st, "podIP", json_string(pip));
        json_object_set_new(st, "podIPs", json_pack("[{s:s}]", "ip", pip));
    }
    if (!st)
        goto oom;
    if (shim && fatia_json_str(shim, "reason"))
        json_object_set_new(st, "reason", json_string(fatia_json_str(shim, "reason")));
    if (shim && fatia_json_str(shim, "message"))
        json_object_set_new(st, "message", json_string(fatia_json_str(shim, "message")));
    if (json_array_size(json_object_get(spec, "initContainers"))) {
        json_t *inc = json_array();
        json_object_set_new(st, "initContainerStatuses",
                            statuses(json_object_get(spec, "initContainers"),
                                     json_object_get(shim, "initContainers"), terminal,
                                     "PodInitializing", NULL, &inits_ready, &inits_ok, junk, inc));
        msg = inits_ok ? NULL : names_msg("incomplete", inc);
        json_decref(inc);
        conds = json_array();
        json_array_append_new(conds,
                              condition(pod, "Initialized", inits_ok,
                                        inits_ok ? NULL : "ContainersNotInitialized", msg, nowbuf));
        fatia_free(msg);
    } else {
        conds = json_array();
        json_array_append_new(conds, condition(pod, "Initialized", true, NULL, NULL, nowbuf));
    }
    json_object_set_new(st, "containerStatuses",
                        statuses(json_object_get(spec, "containers"),
                                 json_object_get(shim, "containers"), terminal,
                                 inits_ok ? wait_reason : "PodInitializing", wait_msg, &all_ready,
                                 &all_ok, unready, incomplete));
    json_array_append_new(conds, condition(pod, "PodReadyToStartContainers",
                                           shim && !fatia_json_bool(shim, "done", false), NULL,
                                           NULL, nowbuf));
    if (terminal) {
        json_array_append_new(
            conds, condition(pod, "ContainersReady", false, "PodCompleted", NULL, nowbuf));
        json_array_append_new(conds, condition(pod, "Ready", false, "PodCompleted", NULL, nowbuf));
    } else if (all_ready) {
        json_array_append_new(conds, condition(pod, "ContainersReady", true, NULL, NULL, nowbuf));
        json_array_append_new(conds, condition(pod, "Ready", true, NULL, NULL, nowbuf));
    } else {
        msg = names_msg("unready", unready);
        json_array_append_new(
            conds, condition(pod, "ContainersReady", false, "ContainersNotReady", msg, nowbuf));
        json_array_append_new(conds,
                              condition(pod, "Ready", false, "ContainersNotReady", msg, nowbuf));
        fatia_free(msg);
    }
    json_object_set_new(st, "conditions", conds);
    json_decref(unready);
    json_decref(incomplete);
    json_decref(junk);
    return st;
oom:
    json_decref(unready);
    json_decref(incomplete);
    json_decref(junk);
    return NULL;
}

/* Conditions compare field by field, an absent field equal to a null one (a patch clears a
 * field with null). */
static bool same_condition(const json_t *a, const json_t *b)
{
    const char *keys[] = {"type", "status", "reason", "message", "lastTransitionTime"};

    for (size_t i = 0; i < FATIA_ARRAY_SIZE(keys); i++) {
        const char *x = fatia_json_str(a, keys[i]), *y = fatia_json_str(b, keys[i]);
        if ((x || y) && (!x || !y || strcmp(x, y)))
            return false;
    }
    return true;
}

bool fatia_pod_status_same(const json_t *pod, const json_t *status)
{
    const json_t *cur = json_object_get(pod, "status");
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)status, key, v)
    {
        const json_t *c = json_object_get(cur, key);
        if (!strcmp(key, "conditions")) {
            size_t i;
            json_t *cond;
            json_array_foreach(v, i, cond)
            {
                const json_t *have = NULL;
                size_t k;
                json_t *x;
                json_array_foreach(c, k, x)
                {
                    const char *t = fatia_json_str(x, "type");
                    if (t && !strcmp(t, fatia_json_str(cond, "type")))
                        have = x;
                }
                if (!have || !same_condition(have, cond))
                    return false;
            }
            continue;
        }
        if (!c || !fatia_json_equal(c, v))
            return false;
    }
    /* a reason or message the status no longer has must be cleared */
    if ((json_object_get(cur, "reason") && !json_object_get(status, "reason")) ||
        (json_object_get(cur, "message") && !json_object_get(status, "message")))
        return false;
    return true;
}

/*
 * controller/nodelifecycle.c: the node-lifecycle controller: nodes whose agent stopped renewing
 * their Lease go NotReady and get the unreachable taint; their pods are evicted once their
 * toleration of it runs out; a node whose lease is renewed again gets its taint removed
 * (kube-controller-manager's node lifecycle controller and taint manager, docs/fleet.md).
 *
 * Model, per Node that has a Lease kube-node-lease/<node> (a node that never had one runs no
 * agent, e.g. a simulated node of --no-agent, and is not judged):
 *
 *     lease fresh (renewTime + leaseDurationSeconds >= now) ──lease stale──► lost:
 *       taint node.kubernetes.io/unreachable:NoExecute (timeAdded = now), Ready Unknown,
 *       Event NodeNotReady; each pod bound to the node, not terminal, not being deleted:
 *         tolerates the taint without tolerationSeconds ─► stays
 *         tolerationSeconds T (its own, else --node-toleration-seconds, 300) ─► deleted (uid
 *         precondition, Event TaintManagerEviction) once timeAdded + T has passed
 *     lost ──lease renewed──► fresh: taint removed, Event NodeReady (the device controller sets
 *       Ready True again once the taint is gone)
 *
 * A pod on the lost node that is being deleted (an evicted one: the node's agent, which would take
 * its finalizer fatia.dev/agent off once its processes are gone, does not answer) loses that
 * finalizer once its toleration has passed, so it goes. A Job's evicted pod is replaced by the Job controller; placement keeps the replacement off the
 * lost node because the device controller hands the node's taints (and spec.unschedulable, as
 * node.kubernetes.io/unschedulable:NoSchedule: kubectl cordon) to placement (device.c). A pod's
 * slices are released when the pod is deleted, that is once its toleration (the deadline) has
 * passed, never at the moment the node is lost. A node that comes back kills the pods it still
 * runs that the API no longer has (its agent's own reconciliation): the replaced ones go, the
 * others stay.
 *
 * Judged every second on the controller's clock against renewTime (the renewer's clock): the
 * clocks of the hosts must agree to well within a lease duration (NTP), as Kubernetes assumes.
 * Rejected: kube's rate limits on tainting (0.1 node/s, zone states): fatia's fleets are small,
 * and a disruption that takes most nodes at once still evicts only after the toleration.
 */
#include "base/compat.h"

#include <event2/event.h>

#define AGENT_FINALIZER "fatia.dev/agent" /* the node agent's (agent/podspec.h) */

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "controller/ctl_internal.h"

#define COMPONENT   "node-lifecycle-controller"
#define LEASE_NS    "kube-node-lease"
#define TAINT_KEY   "node.kubernetes.io/unreachable"
#define DEFAULT_DUR 40
#define DEFAULT_TOL 300

struct nodelifecycle_ctl {
    struct ctl *ctl;
    struct informer *nodes, *leases, *pods;
    struct wq *q; /* node names */
    struct event *tick;
    int64_t tol_default;
};

/* The unreachable taint of a node, or NULL. */
static const json_t *lost_taint(const json_t *node)
{
    const json_t *taints = json_object_get(json_object_get(node, "spec"), "taints"), *t;
    size_t i;

    json_array_foreach(taints, i, t)
    {
        const char *k = fatia_json_str(t, "key"), *e = fatia_json_str(t, "effect");
        if (k && e && !strcmp(k, TAINT_KEY) && !strcmp(e, "NoExecute"))
            return t;
    }
    return NULL;
}

/* 1 lost, 0 fresh, -1 no lease (not judged). */
static int lease_lost(struct nodelifecycle_ctl *n, const char *node, fatia_usec_t now,
                      int64_t *ret_age_s)
{
    const json_t *lease = fatia_ctlr_informer_get(n->leases, LEASE_NS, node);
    const json_t *spec = json_object_get(lease, "spec");
    const char *ts = fatia_json_str(spec, "renewTime");
    int64_t dur = DEFAULT_DUR;
    fatia_usec_t t;

    if (!lease)
        return -1;
    if (!ts)
        ts = fatia_json_str(spec, "acquireTime");
    if (!ts || fatia_time_parse_rfc3339(ts, &t) < 0)
        t = 0;
    if (!fatia_json_int(spec, "leaseDurationSeconds", &dur) || dur <= 0)
        dur = DEFAULT_DUR;
    *ret_age_s = (now - t) / FATIA_USEC_PER_SEC;
    return now - t > dur * FATIA_USEC_PER_SEC;
}

/* How long pod tolerates the unreachable taint: -1 forever, else seconds. */
static int64_t toleration_s(const struct nodelifecycle_ctl *n, const json_t *pod)
{
    const json_t *tols = json_object_get(json_object_get(pod, "spec"), "tolerations"), *t;
    size_t i;

    json_array_foreach(tols, i, t)
    {
        const char *k = fatia_json_str(t, "key"), *op = fatia_json_str(t, "operator");
        const char *e = fatia_json_str(t, "effect");
        int64_t s;
        bool key_ok =
            (k && !strcmp(k, TAINT_KEY)) || ((!k || !k[0]) && op && !strcmp(op, "Exists"));
        if (!key_ok || (e && e[0] && strcmp(e, "NoExecute")))
            continue;
        if (!fatia_json_int(t, "tolerationSeconds", &s))
            return -1;
        return s < 0 ? 0 : s;
    }
    return n->tol_default;
}

/* A pod being deleted on a lost node waits for the finalizer of an agent that does not answer:
 * it goes (the agent's own finalizer taken off for it), so the Job controller, which never
 * replaces a pod before it is gone, replaces it elsewhere. The process, if the node still runs
 * it, is killed by that agent when it comes back (the API no longer has the pod). */
static void release_agent_finalizer(struct nodelifecycle_ctl *n, const char *key, const char *node,
                                    const json_t *pod)
{
    const json_t *fins = json_object_get(json_object_get(pod, "metadata"), "finalizers"), *f;
    json_t *o, *keep;
    size_t i;
    bool found = false;

    json_array_foreach(fins, i, f)
    {
        if (json_is_string(f) && !strcmp(json_string_value(f), AGENT_FINALIZER))
            found = true;
    }
    if (!found || !(o = json_deep_copy(pod)))
        return;
    keep = json_array();
    json_array_foreach(fins, i, f)
    {
        if (!json_is_string(f) || strcmp(json_string_value(f), AGENT_FINALIZER))
            json_array_append(keep, (json_t *)f);
    }
    json_object_set_new(json_object_get(o, "metadata"), "finalizers", keep);
    fatia_info("node-lifecycle: pod %s on lost node %s: its agent's finalizer released", key, node);
    fatia_ctlr_update(
        n->ctl, o,
        &(struct op_opts){.wq = n->q, .key = node, .quiet_missing = true, .quiet_conflict = true});
    json_decref(o);
}

static void evict_pods(struct nodelifecycle_ctl *n, const char *node, const json_t *taint,
                       fatia_usec_t now)
{
    const char *added = fatia_json_str(taint, "timeAdded");
    fatia_usec_t t0;

    if (!added || fatia_time_parse_rfc3339(added, &t0) < 0)
        t0 = now;
    INFORMER_FOREACH(n->pods, it)
    {
        const json_t *pod = it->obj, *st = json_object_get(pod, "status");
        const char *on = fatia_json_str(json_object_get(pod, "spec"), "nodeName");
        const char *phase = fatia_json_str(st, "phase");
        int64_t tol;
        char nsbuf[300];
        const char *name;
        if (!on || strcmp(on, node))
            continue;
        if (!fatia_ctlr_obj_deleting(pod) && phase &&
            (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")))
            continue;
        tol = toleration_s(n, pod);
        if (tol < 0 || now - t0 < tol * FATIA_USEC_PER_SEC)
            continue;
        if (fatia_ctlr_obj_deleting(pod)) {
            release_agent_finalizer(n, it->key, node, pod);
            continue;
        }
        name = fatia_ctlr_split_key(it->key, nsbuf, sizeof(nsbuf));
        fatia_info("node-lifecycle: evicting pod %s from lost node %s (toleration %" PRId64 " s)",
                   it->key, node, tol);
        fatia_ctlr_event(n->ctl, pod, COMPONENT, "Normal", "TaintManagerEviction",
                         "Marking for deletion Pod %s: node %s is unreachable", it->key, node);
        fatia_ctlr_delete(
            n->ctl, n->pods->kind, nsbuf, name, fatia_ctlr_meta_str(pod, "uid"),
            &(struct op_opts){
                .wq = n->q, .key = node, .quiet_missing = true, .quiet_conflict = true});
    }
}

static void reconcile(void *arg, const char *node)
{
    struct nodelifecycle_ctl *n = arg;
    const json_t *obj = fatia_ctlr_informer_get(n->nodes, NULL, node), *taint;
    fatia_usec_t now = fatia_ctlr_now(n->ctl);
    int64_t age = 0;
    int lost;

    if (!obj)
        return;
    lost = lease_lost(n, node, now, &age);
    if (lost < 0)
        return;
    taint = lost_taint(obj);
    if (lost && !taint) {
        json_t *o = json_deep_copy(obj);
        json_t *taints =
            o ? fatia_json_array_ensure(fatia_json_object_ensure(o, "spec"), "taints") : NULL;
        if (!taints) {
            json_decref(o);
            return;
        }
        json_array_append_new(taints,
                              json_pack("{s:s,s:s,s:o}", "key", TAINT_KEY, "effect", "NoExecute",
                                        "timeAdded", fatia_ctlr_json_time(now)));
        fatia_warn("node-lifecycle: node %s lost: its lease was last renewed %" PRId64
                   " s ago; tainted %s:NoExecute",
                   node, age, TAINT_KEY);
        fatia_ctlr_event(
            n->ctl, obj, COMPONENT, "Normal", "NodeNotReady",
            "Node %s status is now: NodeNotReady (lease not renewed for %" PRId64 " s)", node, age);
        fatia_ctlr_update(n->ctl, o,
                          &(struct op_opts){.wq = n->q, .key = node, .quiet_conflict = true});
        json_decref(o);
        return;
    }
    if (lost) {
        const json_t *ready = fatia_ctlr_cond_get(obj, "Ready");
        const char *rs = ready ? fatia_json_str(ready, "status") : NULL;
        if (!rs || strcmp(rs, "Unknown")) {
            json_t *o = json_deep_copy(obj);
            json_t *conds =
                o ? fatia_json_array_ensure(fatia_json_object_ensure(o, "status"), "conditions")
                  : NULL;
            if (conds) {
                fatia_ctlr_cond_set(conds, "Ready", "Unknown", "NodeStatusUnknown",
                                    "fatia's node agent stopped renewing the node's lease", now);
                fatia_ctlr_update_status(
                    n->ctl, o, &(struct op_opts){.wq = n->q, .key = node, .quiet_conflict = true});
            }
            json_decref(o);
            return;
        }
        evict_pods(n, node, taint, now);
        return;
    }
    if (taint) {
        json_t *o = json_deep_copy(obj);
        json_t *taints = json_object_get(json_object_get(o, "spec"), "taints"), *t;
        size_t i;
        json_array_foreach(taints, i, t)
        {
            const char *k = fatia_json_str(t, "key");
            if (k && !strcmp(k, TAINT_KEY)) {
                json_array_remove(taints, i);
                break;
            }
        }
        fatia_info("node-lifecycle: node %s is back: its lease is renewed; taint removed", node);
        fatia_ctlr_event(n->ctl, obj, COMPONENT, "Normal", "NodeReady",
                         "Node %s status is now: NodeReady", node);
        fatia_ctlr_update(n->ctl, o,
                          &(struct op_opts){.wq = n->q, .key = node, .quiet_conflict = true});
        json_decref(o);
    }
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
    struct nodelifecycle_ctl *n = arg;

    (void)fd;
    (void)what;
    if (!fatia_ctlr_ready(n->ctl))
        return;
    INFORMER_FOREACH(n->nodes, it)
    fatia_ctlr_wq_add(n->q, it->key);
}

static void on_synced(void *arg)
{
    struct nodelifecycle_ctl *n = arg;
    struct timeval tv = {1, 0};

    event_add(n->tick, &tv);
}

int fatia_ctlr_nodelifecycle_ctl_new(struct ctl *c, struct nodelifecycle_ctl **ret)
{
    struct nodelifecycle_ctl *n = fatia_calloc(1, sizeof(*n));
    const struct fatia_controllers_opts *o = fatia_ctlr_opts(c);
    int r;

    if (!n)
        return -ENOMEM;
    n->ctl = c;
    n->tol_default = o->default_toleration_set ? o->default_toleration_s : DEFAULT_TOL;
    n->nodes = fatia_ctlr_informer(c, fatia_kind_find("v1", "Node", NULL));
    n->pods = fatia_ctlr_informer(c, fatia_kind_find("v1", "Pod", NULL));
    n->leases = fatia_ctlr_informer(c, fatia_kind_find("coordination.k8s.io/v1", "Lease", NULL));
    n->q = fatia_ctlr_wq_new(c, "node-lifecycle", reconcile, n);
    n->tick = event_new(fatia_ctlr_base(c), -1, EV_PERSIST, tick_cb, n);
    if (!n->nodes || !n->pods || !n->leases || !n->q || !n->tick) {
        fatia_ctlr_nodelifecycle_ctl_free(n);
        return -ENOMEM;
    }
    r = fatia_ctlr_on_synced(c, on_synced, n);
    if (r < 0) {
        fatia_ctlr_nodelifecycle_ctl_free(n);
        return r;
    }
    *ret = n;
    return 0;
}

void fatia_ctlr_nodelifecycle_ctl_free(struct nodelifecycle_ctl *n)
{
    if (!n)
        return;
    fatia_ctlr_wq_free(n->q);
    if (n->tick)
        event_free(n->tick);
    fatia_free(n);
}

/* ---- the taints other controllers must keep (device.c) ---- */

bool fatia_ctlr_lifecycle_taint(const json_t *t)
{
    const char *k = fatia_json_str(t, "key");

    return k && (!strcmp(k, TAINT_KEY) || !strcmp(k, "node.kubernetes.io/not-ready"));
}

json_t *fatia_ctlr_node_runtime_taints(const json_t *node)
{
    const json_t *spec = json_object_get(node, "spec"), *t;
    json_t *out = json_array();
    size_t i;

    if (!out)
        return NULL;
    json_array_foreach(json_object_get(spec, "taints"), i, t)
    {
        if (fatia_ctlr_lifecycle_taint(t))
            json_array_append_new(out, json_pack("{s:O?,s:O?}", "key", json_object_get(t, "key"),
                                                 "effect", json_object_get(t, "effect")));
    }
    if (json_is_true(json_object_get(spec, "unschedulable")))
        json_array_append_new(out, json_pack("{s:s,s:s}", "key", "node.kubernetes.io/unschedulable",
                                             "effect", "NoSchedule"));
    if (!json_array_size(out)) {
        json_decref(out);
        return NULL;
    }
    return out;
}

json_t *fatia_ctlr_node_taints_merge(const json_t *have, const json_t *want_taints)
{
    const json_t *spec = json_object_get(have, "spec"), *t;
    json_t *out = json_array();
    bool cordon = json_is_true(json_object_get(spec, "unschedulable")), had_cordon = false;
    size_t i;

    if (!out)
        return NULL;
    json_array_foreach(want_taints, i, t)
    {
        const char *k = fatia_json_str(t, "key");
        if (!k || strncmp(k, "node.kubernetes.io/", strlen("node.kubernetes.io/")))
            json_array_append(out, (json_t *)t);
    }
    json_array_foreach(json_object_get(spec, "taints"), i, t)
    {
        const char *k = fatia_json_str(t, "key");
        if (fatia_ctlr_lifecycle_taint(t))
            json_array_append(out, (json_t *)t);
        else if (cordon && k && !strcmp(k, "node.kubernetes.io/unschedulable") && !had_cordon) {
            json_array_append(out, (json_t *)t); /* kept with its timeAdded */
            had_cordon = true;
        }
    }
    if (cordon && !had_cordon)
        json_array_append_new(out, json_pack("{s:s,s:s}", "key", "node.kubernetes.io/unschedulable",
                                             "effect", "NoSchedule"));
    return out;
}

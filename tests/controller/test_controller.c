/*
 * tests/controller/test_controller.c: fatiad's controllers in one process, on an in-memory store
 * and a real event loop (so that ASan and UBSan see every path the end-to-end tests drive through
 * HTTP): the walkthrough fleet and examples/ are applied, then
 *   - a Job with a hardware profile: Workload (Kueue's name and owner), admission, unsuspend,
 *     placement (the pod contract's annotations), completion by hand, Finished, quota back to 0;
 *   - borrowing and reclamation: the borrower is evicted, its pod deleted, its quota released,
 *     the lender's job placed on the slices it freed;
 *   - a restart of the controllers (a new manager over the same API server): every binding is
 *     rebuilt before anything is placed, so a new pod never gets a held slice;
 *   - /metrics text; Kueue's workload names;
 *   - an object event that changes nothing does not start a loop of ClusterQueue status writes.
 * Pods are completed by the test (no node agent runs here).
 */
#include "base/compat.h"

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <event2/event.h>

#include "apiserver/apiserver.h"
#include "apiserver/client.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "controller/controller.h"
#include "controller/kueue.h"
#include "demand/demand.h"
#include "model/doc.h"
#include "model/kind.h"
#include "store/store.h"

struct env {
    struct event_base *base;
    struct fatia_store *store;
    struct fatia_apiserver *s;
    struct fatia_client *c;
    struct fatia_controllers *ctl;
};

struct answer {
    bool done;
    int code;
    json_t *obj;
};

static void on_done(void *arg, const struct fatia_client_result *res)
{
    struct answer *a = arg;

    a->done = true;
    a->code = res->code;
    a->obj = json_incref((json_t *)(res->obj ? res->obj : res->status));
}

static void spin(struct env *e, fatia_usec_t usec)
{
    fatia_usec_t end = fatia_now_mono_usec() + usec;
    struct timeval tv = {0, 2000};

    while (fatia_now_mono_usec() < end) {
        event_base_loopexit(e->base, &tv);
        event_base_dispatch(e->base);
    }
}

typedef bool (*pred_fn)(struct env *e, void *arg);

/* Runs the loop until pred holds (at most 10 s of wall time). */
static bool run_until(struct env *e, pred_fn pred, void *arg)
{
    fatia_usec_t end = fatia_now_mono_usec() + 10 * FATIA_USEC_PER_SEC;

    while (fatia_now_mono_usec() < end) {
        if (pred(e, arg))
            return true;
        spin(e, 5000);
    }
    return pred(e, arg);
}

static const struct fatia_kind *kind(const char *av, const char *k)
{
    const struct fatia_kind *r = fatia_kind_find(av, k, NULL);
    assert_non_null(r);
    return r;
}

static int write(struct env *e, const char *verb, json_t *obj)
{
    struct answer a = {0};
    int r;

    if (!strcmp(verb, "create"))
        r = fatia_client_create(e->c, obj, NULL, on_done, &a);
    else if (!strcmp(verb, "update"))
        r = fatia_client_update(e->c, obj, NULL, on_done, &a);
    else
        r = fatia_client_update_status(e->c, obj, NULL, on_done, &a);
    assert_int_equal(r, 0);
    while (!a.done)
        event_base_loop(e->base, EVLOOP_ONCE);
    if (a.code >= 300 && a.code != 409)
        fprintf(stderr, "%s: %d %s\n", verb, a.code, fatia_json_str(a.obj, "message"));
    json_decref(a.obj);
    return a.code;
}

static void apply_path(struct env *e, const char *path)
{
    struct fatia_docset ds;
    struct fatia_diag d;

    fatia_docset_init(&ds);
    fatia_diag_init(&d);
    assert_true(fatia_docset_load_path(&ds, path, false, &d) >= 0);
    assert_false(fatia_diag_has_errors(&d));
    for (size_t i = 0; i < ds.n; i++) {
        json_t *copy = json_deep_copy(ds.docs[i].root);
        int code = write(e, "create", copy);
        json_decref(copy);
        assert_true(code == 201);
    }
    fatia_diag_release(&d);
    fatia_docset_release(&ds);
}

static const json_t *get(struct env *e, const char *av, const char *k, const char *ns,
                         const char *name)
{
    return fatia_client_cached(e->c, kind(av, k), ns, name);
}

static void start_controllers(struct env *e)
{
    struct fatia_controllers_opts o = {.inventory = FATIA_INVENTORY_SIM,
                                       .job_backoff = 100 * FATIA_USEC_PER_MSEC};

    assert_int_equal(fatia_controllers_new(e->base, e->c, &o, &e->ctl), 0);
    assert_int_equal(fatia_controllers_start(e->ctl), 0);
}

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));

    e->base = event_base_new();
    assert_int_equal(fatia_store_open(":memory:", NULL, &e->store), 0);
    assert_int_equal(fatia_apiserver_new(e->base, e->store, &fatia_demand_checks, NULL, &e->s), 0);
    e->c = fatia_client_new_local(e->s, &fatia_user_system);
    {
        struct fatia_admission plugins[FATIA_CONTROLLERS_N_WEBHOOKS];
        size_t n;
        assert_int_equal(fatia_controllers_webhooks(e->c, plugins, &n), 0);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(fatia_apiserver_add_admission(e->s, &plugins[i]), 0);
    }
    apply_path(e, "examples/fleet/00-box.yaml");
    apply_path(e, "examples/fleet/10-sharing.yaml");
    apply_path(e, "examples");
    start_controllers(e);
    *state = e;
    return 0;
}

static void shutdown_done(void *arg)
{
    *(bool *)arg = true;
}

static int teardown(void **state)
{
    struct env *e = *state;
    bool done = false;

    fatia_controllers_stop(e->ctl);
    spin(e, 20000);
    fatia_apiserver_shutdown(e->s, shutdown_done, &done);
    while (!done)
        event_base_loop(e->base, EVLOOP_ONCE);
    fatia_controllers_free(e->ctl);
    fatia_client_free(e->c);
    fatia_apiserver_free(e->s);
    fatia_store_close(e->store);
    event_base_free(e->base);
    free(e);
    return 0;
}

/* ---- helpers over the cache ---- */

static json_t *job(const char *ns, const char *name, const char *profile)
{
    json_t *j = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s}},s:{s:{s:{s:s,s:[{s:s,s:s,s:[s]}]}}}}",
                          "apiVersion", "batch/v1", "kind", "Job", "metadata", "name", name,
                          "namespace", ns, "annotations", "opendatahub.io/hardware-profile-name",
                          profile, "opendatahub.io/hardware-profile-namespace", "gpu-catalog",
                          "spec", "template", "spec", "restartPolicy", "Never", "containers",
                          "name", "main", "image", "busybox", "command", "true");
    assert_non_null(j);
    return j;
}

struct podq {
    const char *ns, *job;
    const json_t *pod; /* out */
    const char *phase; /* wanted phase of the newest pod, or NULL: bound */
};

/* The job's newest pod that is bound (and not finished). */
static const json_t *bound_pod(struct env *e, const char *ns, const char *jobname)
{
    struct answer a = {0};
    struct fatia_list_opts lo = {0};
    char sel[300];
    const json_t *best = NULL;
    size_t i;
    json_t *p;

    snprintf(sel, sizeof(sel), "batch.kubernetes.io/job-name=%s", jobname);
    lo.label_selector = sel;
    assert_int_equal(fatia_client_list(e->c, kind("v1", "Pod"), ns, &lo, on_done, &a), 0);
    while (!a.done)
        event_base_loop(e->base, EVLOOP_ONCE);
    json_array_foreach(json_object_get(a.obj, "items"), i, p)
    {
        const char *ph = fatia_json_str(json_object_get(p, "status"), "phase");
        if (fatia_json_str(json_object_get(p, "spec"), "nodeName") &&
            !(ph && (!strcmp(ph, "Succeeded") || !strcmp(ph, "Failed"))) &&
            !json_object_get(json_object_get(p, "metadata"), "deletionTimestamp"))
            best = get(e, "v1", "Pod", ns, fatia_json_str(json_object_get(p, "metadata"), "name"));
    }
    json_decref(a.obj);
    return best;
}

static bool has_bound(struct env *e, void *arg)
{
    struct podq *q = arg;

    q->pod = bound_pod(e, q->ns, q->job);
    return q->pod != NULL;
}

static const json_t *workload_of(struct env *e, const char *ns, const char *jobname)
{
    const json_t *j = get(e, "batch/v1", "Job", ns, jobname);
    char name[300];

    if (!j)
        return NULL;
    fatia_ctlr_kueue_workload_name("Job", "batch", jobname,
                                   fatia_json_str(json_object_get(j, "metadata"), "uid"), name,
                                   sizeof(name));
    return get(e, "kueue.x-k8s.io/v1beta2", "Workload", ns, name);
}

static const char *cond_status(const json_t *obj, const char *type)
{
    size_t i;
    json_t *c;

    json_array_foreach(json_object_get(json_object_get(obj, "status"), "conditions"), i, c)
    {
        if (!strcmp(fatia_json_str(c, "type"), type))
            return fatia_json_str(c, "status");
    }
    return NULL;
}

struct condq {
    const char *ns, *job, *type, *status;
    bool workload; /* the job's workload, else the job */
};

static bool has_cond(struct env *e, void *arg)
{
    struct condq *q = arg;
    const json_t *o =
        q->workload ? workload_of(e, q->ns, q->job) : get(e, "batch/v1", "Job", q->ns, q->job);
    const char *s = o ? cond_status(o, q->type) : NULL;

    return s && !strcmp(s, q->status);
}

/* Writes a pod's phase as the node agent would; retries when it raced a controller's write. */
static void set_phase(struct env *e, const json_t *pod, const char *phase)
{
    char ns[256], name[256];
    int code = 0;

    snprintf(ns, sizeof(ns), "%s", fatia_json_str(json_object_get(pod, "metadata"), "namespace"));
    snprintf(name, sizeof(name), "%s", fatia_json_str(json_object_get(pod, "metadata"), "name"));
    for (int i = 0; i < 50; i++) {
        json_t *np = json_deep_copy(get(e, "v1", "Pod", ns, name));
        assert_non_null(np);
        json_object_set_new(fatia_json_object_ensure(np, "status"), "phase", json_string(phase));
        code = write(e, "update_status", np);
        json_decref(np);
        if (code != 409)
            break;
        spin(e, 10000);
    }
    assert_int_equal(code, 200);
}

static int64_t cq_gpu_usage(struct env *e, const char *cq)
{
    const json_t *o = get(e, "kueue.x-k8s.io/v1beta2", "ClusterQueue", NULL, cq);
    size_t i, j;
    json_t *f, *r;

    json_array_foreach(json_object_get(json_object_get(o, "status"), "flavorsUsage"), i, f)
    {
        json_array_foreach(json_object_get(f, "resources"), j, r)
        {
            if (!strcmp(fatia_json_str(r, "name"), "nvidia.com/gpu"))
                return strtoll(fatia_json_str(r, "total"), NULL, 10);
        }
    }
    return -1;
}

struct usageq {
    const char *cq;
    int64_t want;
};

static bool usage_is(struct env *e, void *arg)
{
    struct usageq *q = arg;

    return cq_gpu_usage(e, q->cq) == q->want;
}

static const char *annotation(const json_t *o, const char *k)
{
    return fatia_json_str(json_object_get(json_object_get(o, "metadata"), "annotations"), k);
}

/* ---- tests ---- */

static void test_names(void **state)
{
    char buf[300];

    (void)state;
    /* the hashes: python3 hashlib.sha1(b"Job\nbatch\ntrain\nuid-1").hexdigest()[:5] */
    fatia_ctlr_kueue_workload_name("Job", "batch", "train", "uid-1", buf, sizeof(buf));
    assert_string_equal(buf, "job-train-a6870");
    fatia_ctlr_kueue_workload_name("Pod", "", "Notebook", "u", buf, sizeof(buf));
    assert_string_equal(buf, "pod-notebook-0ec4c");
}

static void test_job_lifecycle(void **state)
{
    struct env *e = *state;
    json_t *j = job("team-a", "train", "training-2gpu");
    struct podq pq = {"team-a", "train", NULL, NULL};
    struct condq cq = {"team-a", "train", "Complete", "True", false};
    struct condq wq = {"team-a", "train", "Finished", "True", true};
    struct usageq uq = {"team-a", 0};
    const json_t *wl, *ref;
    const char *devs;

    assert_int_equal(write(e, "create", j), 201);
    json_decref(j);
    assert_true(run_until(e, has_bound, &pq));
    wl = workload_of(e, "team-a", "train");
    assert_non_null(wl);
    ref = json_array_get(json_object_get(json_object_get(wl, "metadata"), "ownerReferences"), 0);
    assert_string_equal(fatia_json_str(ref, "kind"), "Job");
    assert_string_equal(cond_status(wl, "Admitted"), "True");
    assert_string_equal(annotation(pq.pod, "fatia.dev/slices"), "gpu-2,gpu-3");
    devs = annotation(pq.pod, "fatia.dev/devices");
    assert_non_null(devs);
    assert_non_null(strstr(devs, "\"kind\":\"whole\""));
    assert_non_null(strstr(devs, "\"container\":\"main\""));
    set_phase(e, pq.pod, "Succeeded");
    assert_true(run_until(e, has_cond, &cq));
    assert_true(run_until(e, has_cond, &wq));
    assert_true(run_until(e, usage_is, &uq));
}

static void test_reclaim_and_restart(void **state)
{
    struct env *e = *state;
    struct podq a1 = {"team-a", "a1", NULL, NULL}, a2 = {"team-a", "a2", NULL, NULL};
    struct podq b1 = {"team-b", "b1", NULL, NULL}, b2 = {"team-b", "b2", NULL, NULL};
    struct condq ev = {"team-a", "a2", "Evicted", "True", true};
    struct usageq ua = {"team-a", 4}, ua2 = {"team-a", 0}, ub = {"team-b", 0};
    const char *names[] = {"a1", "a2"};
    char held[64], borrowed[64];
    json_t *j;

    for (int i = 0; i < 2; i++) {
        j = job("team-a", names[i], "training-2gpu");
        assert_int_equal(write(e, "create", j), 201);
        json_decref(j);
        assert_true(run_until(e, has_bound, i ? &a2 : &a1));
    }
    assert_true(run_until(e, usage_is, &ua)); /* 2 nominal + 2 borrowed */
    snprintf(borrowed, sizeof(borrowed), "%s", annotation(a2.pod, "fatia.dev/slices"));
    j = job("team-b", "b1", "training-2gpu");
    assert_int_equal(write(e, "create", j), 201);
    json_decref(j);
    assert_true(run_until(e, has_cond, &ev));
    assert_true(run_until(e, has_bound, &b1));
    snprintf(held, sizeof(held), "%s", annotation(b1.pod, "fatia.dev/slices"));
    assert_string_equal(held, borrowed); /* the lender got the slices the borrower let go */

    /* a restart of the controllers: bindings come back from the pods before anything is placed */
    fatia_controllers_stop(e->ctl);
    spin(e, 20000);
    fatia_controllers_free(e->ctl);
    j = job("team-b", "b2", "training-2gpu");
    assert_int_equal(write(e, "create", j), 201);
    json_decref(j);
    start_controllers(e);
    spin(e, 300000);
    /* every whole GPU is held by a1 and b1: b2 waits, and nothing was given twice */
    assert_null(bound_pod(e, "team-b", "b2"));
    assert_non_null(bound_pod(e, "team-a", "a1"));
    set_phase(e, bound_pod(e, "team-b", "b1"), "Succeeded");
    assert_true(run_until(e, has_bound, &b2));
    assert_string_equal(annotation(b2.pod, "fatia.dev/slices"), held);
    /* finish everything */
    for (int round = 0; round < 20; round++) {
        const char *jobs[][2] = {{"team-a", "a1"}, {"team-a", "a2"}, {"team-b", "b2"}};
        for (size_t k = 0; k < 3; k++) {
            const json_t *p = bound_pod(e, jobs[k][0], jobs[k][1]);
            if (p)
                set_phase(e, p, "Succeeded");
        }
        spin(e, 50000);
    }
    assert_true(run_until(e, usage_is, &ua2));
    assert_true(run_until(e, usage_is, &ub));
}

struct claimq {
    const char *ns, *name;
    bool allocated;
};

static bool claim_is(struct env *e, void *arg)
{
    struct claimq *q = arg;
    const json_t *c = get(e, "resource.k8s.io/v1", "ResourceClaim", q->ns, q->name);

    return c &&
           (json_object_get(json_object_get(c, "status"), "allocation") != NULL) == q->allocated;
}

struct boundq {
    const char *ns, *name;
};

static bool pod_bound(struct env *e, void *arg)
{
    struct boundq *q = arg;
    const json_t *p = get(e, "v1", "Pod", q->ns, q->name);

    return p && fatia_json_str(json_object_get(p, "spec"), "nodeName");
}

static void test_claims(void **state)
{
    struct env *e = *state;
    json_t *pod = json_loads(
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"nccl\","
        "\"namespace\":\"team-b\"},\"spec\":{\"restartPolicy\":\"Never\",\"resourceClaims\":"
        "[{\"name\":\"gpus\",\"resourceClaimTemplateName\":\"two-nvlinked-gpus\"}],"
        "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\",\"resources\":"
        "{\"claims\":[{\"name\":\"gpus\"}]}}]}}",
        0, NULL);
    struct boundq bq = {"team-b", "nccl"};
    struct claimq allocated = {"team-b", "nccl-gpus", true}, freed = {"team-b", "nccl-gpus", false};
    const json_t *p;

    assert_non_null(pod);
    assert_int_equal(write(e, "create", pod), 201);
    json_decref(pod);
    assert_true(run_until(e, pod_bound, &bq));
    assert_true(run_until(e, claim_is, &allocated));
    p = get(e, "v1", "Pod", "team-b", "nccl");
    assert_string_equal(annotation(p, "fatia.dev/slices"), "gpu-2,gpu-3");
    assert_non_null(strstr(annotation(p, "fatia.dev/devices"), "\"claim\":\"team-b/nccl-gpus\""));
    set_phase(e, p, "Succeeded");
    assert_true(run_until(e, claim_is, &freed));
}

static void test_metrics(void **state)
{
    struct env *e = *state;
    struct fatia_buf out = FATIA_BUF_INIT;

    spin(e, 50000);
    assert_int_equal(fatia_controllers_metrics(e->ctl, &out), 0);
    assert_non_null(strstr(out.p, "# TYPE kueue_pending_workloads gauge"));
    assert_non_null(strstr(out.p, "kueue_cluster_queue_nominal_quota{cohort=\"research\","
                                  "cluster_queue=\"team-a\",flavor=\"h200\","
                                  "resource=\"nvidia.com/gpu\"} 2\n"));
    assert_non_null(strstr(out.p, "fatia_slices{node=\"box-0\",kind=\"timeslice\","
                                  "resource=\"nvidia.com/gpu.shared\",profile=\"\","
                                  "state=\"free\"} 8\n"));
    fatia_buf_release(&out);
}

/* ClusterQueue team-a's status is written only when it changes: an object event that changes
 * nothing in the engine (a label on the ClusterQueue; the echo of the status write that follows)
 * must not start a loop of status writes. Before the fix each event marked the engine's tree
 * dirty, the queue-status reconcile that ran before the next cycle reported weightedShare 0, the
 * cycle's 500, and every write's echo dirtied the tree again: 50 writes a second (the work
 * queue's per-key limit), fairSharing.weightedShare flipping between 500 and 0. */
static void test_cq_status_quiet(void **state)
{
    struct env *e = *state;
    struct podq a1 = {"team-a", "q1", NULL, NULL}, a2 = {"team-a", "q2", NULL, NULL};
    struct usageq ua = {"team-a", 4};
    const char *names[] = {"q1", "q2", "q3"};
    const char *const CQV = "kueue.x-k8s.io/v1beta2";
    json_t *j, *cq;
    int64_t shares[8];
    size_t n_shares = 0, writes = 0;
    char rv[64] = "";
    fatia_usec_t end;

    for (int i = 0; i < 3; i++) {
        j = job("team-a", names[i], "training-2gpu");
        assert_int_equal(write(e, "create", j), 201);
        json_decref(j);
        if (i < 2)
            assert_true(run_until(e, has_bound, i ? &a2 : &a1));
    }
    assert_true(run_until(e, usage_is, &ua)); /* 2 nominal + 2 borrowed; q3 waits */
    spin(e, 1500000);                         /* the status interval passes: all written */
    cq = json_deep_copy(get(e, CQV, "ClusterQueue", NULL, "team-a"));
    assert_non_null(cq);
    assert_int_equal(json_integer_value(fatia_json_path(cq, "status.fairSharing.weightedShare")),
                     500);
    json_object_set_new(
        fatia_json_object_ensure(fatia_json_object_ensure(cq, "metadata"), "labels"), "touched",
        json_string("yes"));
    assert_int_equal(write(e, "update", cq), 200);
    json_decref(cq);
    /* count its writes for 2 s (sampled every 2 ms: under the rate limit writes are 20 ms apart) */
    end = fatia_now_mono_usec() + 2 * FATIA_USEC_PER_SEC;
    while (fatia_now_mono_usec() < end) {
        const json_t *o = get(e, CQV, "ClusterQueue", NULL, "team-a");
        const char *v = fatia_json_str(json_object_get(o, "metadata"), "resourceVersion");
        if (v && strcmp(v, rv)) {
            int64_t share =
                json_integer_value(fatia_json_path(o, "status.fairSharing.weightedShare"));
            bool seen = false;
            snprintf(rv, sizeof(rv), "%s", v);
            writes++;
            for (size_t k = 0; k < n_shares; k++)
                seen |= shares[k] == share;
            if (!seen && n_shares < 8)
                shares[n_shares++] = share;
        }
        spin(e, 2000);
    }
    /* the first is the label update itself */
    if (writes > 3 || n_shares != 1)
        fail_msg("ClusterQueue team-a written %zu times in 2 s after a label update, "
                 "%zu different weightedShares (first %lld)",
                 writes, n_shares, (long long)shares[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test_setup_teardown(test_job_lifecycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reclaim_and_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claims, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cq_status_quiet, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

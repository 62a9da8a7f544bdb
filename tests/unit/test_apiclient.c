/*
 * tests/unit/test_apiclient.c: the in-process client and the admission chain, on an in-memory
 * store with a real event loop: create, get, list with selectors, update with conflicts, status,
 * patch, delete, watch (initial state, events, stop), answers never delivered inside the call,
 * a mutating plugin that sees the old object on update, a validating plugin that rejects (and a
 * rejected write changes nothing), and the authorization of a tenant client; deletecollection
 * (called as the HTTP handler calls it) running a DELETE-time plugin and authorization for
 * every object it would delete, all or nothing.
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
#include "apiserver/internal.h"
#include "base/error.h"
#include "base/json.h"
#include "demand/demand.h"
#include "model/kind.h"
#include "store/store.h"

struct env {
    struct event_base *base;
    struct fatia_store *store;
    struct fatia_apiserver *s;
    struct fatia_client *c;
};

struct answer {
    bool done;
    int code;
    json_t *obj;
    json_t *status;
    uint64_t rv;
};

static void on_done(void *arg, const struct fatia_client_result *res)
{
    struct answer *a = arg;

    assert_false(a->done); /* exactly once */
    a->done = true;
    a->code = res->code;
    a->obj = json_incref((json_t *)res->obj);
    a->status = json_incref((json_t *)res->status);
    a->rv = res->rv;
}

static void wait_for(struct env *e, struct answer *a)
{
    for (int i = 0; i < 10000 && !a->done; i++)
        event_base_loop(e->base, EVLOOP_ONCE);
    assert_true(a->done);
}

static void answer_release(struct answer *a)
{
    json_decref(a->obj);
    json_decref(a->status);
    memset(a, 0, sizeof(*a));
}

static const struct fatia_kind *kind(const char *group, const char *plural)
{
    const struct fatia_kind *k = fatia_kind_by_resource(group, plural);
    assert_non_null(k);
    return k;
}

/* Runs a write and waits for its answer; returns the code. */
static int create(struct env *e, const char *json, struct answer *a)
{
    json_t *obj = json_loads(json, 0, NULL);

    assert_non_null(obj);
    memset(a, 0, sizeof(*a));
    assert_int_equal(fatia_client_create(e->c, obj, NULL, on_done, a), 0);
    assert_false(a->done); /* never inside the call */
    json_decref(obj);
    wait_for(e, a);
    return a->code;
}

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    struct answer a;

    e->base = event_base_new();
    assert_int_equal(fatia_store_open(":memory:", NULL, &e->store), 0);
    assert_int_equal(fatia_apiserver_new(e->base, e->store, &fatia_demand_checks, NULL, &e->s), 0);
    e->c = fatia_client_new_local(e->s, &fatia_user_system);
    assert_int_equal(create(e,
                            "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
                            "\"metadata\":{\"name\":\"team-a\"}}",
                            &a),
                     201);
    answer_release(&a);
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

    fatia_client_free(e->c);
    fatia_apiserver_shutdown(e->s, shutdown_done, &done);
    while (!done)
        event_base_loop(e->base, EVLOOP_ONCE);
    fatia_apiserver_free(e->s);
    fatia_store_close(e->store);
    event_base_free(e->base);
    free(e);
    return 0;
}

#define LQ(name, cq)                                                                               \
    "{\"apiVersion\":\"kueue.x-k8s.io/"                                                            \
    "v1beta2\",\"kind\":\"LocalQueue\",\"metadata\":{\"name\":\"" name                             \
    "\",\"namespace\":\"team-a\",\"labels\":{\"tier\":\"gold\"}},\"spec\":{\"clusterQueue\":\"" cq \
    "\"}}"

static void test_crud(void **state)
{
    struct env *e = *state;
    const struct fatia_kind *lq = kind("kueue.x-k8s.io", "localqueues");
    struct answer a = {0}, b = {0};
    json_t *upd;
    uint64_t rv1;

    assert_int_equal(create(e, LQ("q1", "cq"), &a), 201);
    assert_int_equal(json_integer_value(fatia_json_path(a.obj, "metadata.generation")), 1);
    assert_string_equal(fatia_json_str(fatia_json_path(a.obj, "spec"), "stopPolicy"), "None");
    rv1 = a.rv;
    assert_true(rv1 > 0);
    answer_release(&a);
    assert_int_equal(create(e, LQ("q1", "cq"), &a), 409);
    assert_string_equal(fatia_json_str(a.status, "reason"), "AlreadyExists");
    answer_release(&a);

    /* get, cached read, list with a selector */
    assert_int_equal(fatia_client_get(e->c, lq, "team-a", "q1", on_done, &a), 0);
    wait_for(e, &a);
    assert_int_equal(a.code, 200);
    assert_int_equal(a.rv, rv1);
    answer_release(&a);
    assert_non_null(fatia_client_cached(e->c, lq, "team-a", "q1"));
    assert_null(fatia_client_cached(e->c, lq, "team-a", "nope"));
    assert_int_equal(fatia_client_list(e->c, lq, "team-a",
                                       &(struct fatia_list_opts){.label_selector = "tier=gold"},
                                       on_done, &a),
                     0);
    wait_for(e, &a);
    assert_int_equal(json_array_size(json_object_get(a.obj, "items")), 1);
    answer_release(&a);

    /* update: a stale resourceVersion conflicts */
    assert_int_equal(fatia_client_get(e->c, lq, "team-a", "q1", on_done, &b), 0);
    wait_for(e, &b);
    upd = json_deep_copy(b.obj);
    json_object_set_new(json_object_get(upd, "spec"), "clusterQueue", json_string("cq2"));
    assert_int_equal(fatia_client_update(e->c, upd, NULL, on_done, &a), 0);
    wait_for(e, &a);
    assert_int_equal(a.code, 200);
    assert_true(a.rv > rv1);
    assert_int_equal(json_integer_value(fatia_json_path(a.obj, "metadata.generation")), 2);
    answer_release(&a);
    assert_int_equal(fatia_client_update(e->c, upd, NULL, on_done, &a), 0); /* same stale rv */
    wait_for(e, &a);
    assert_int_equal(a.code, 409);
    answer_release(&a);

    /* status: only .status changes */
    json_object_set_new(upd, "status", json_pack("{s:i}", "pendingWorkloads", 7));
    json_object_del(json_object_get(upd, "metadata"), "resourceVersion");
    assert_int_equal(fatia_client_update_status(e->c, upd, NULL, on_done, &a), 0);
    wait_for(e, &a);
    assert_int_equal(a.code, 200);
    assert_int_equal(json_integer_value(fatia_json_path(a.obj, "status.pendingWorkloads")), 7);
    assert_string_equal(json_string_value(fatia_json_path(a.obj, "spec.clusterQueue")), "cq2");
    answer_release(&a);
    json_decref(upd);
    answer_release(&b);

    /* patch, delete */
    assert_int_equal(fatia_client_patch(e->c, lq, "team-a", "q1", NULL, FATIA_PATCH_MERGE,
                                        "{\"spec\":{\"stopPolicy\":\"Hold\"}}",
                                        strlen("{\"spec\":{\"stopPolicy\":\"Hold\"}}"), NULL,
                                        on_done, &a),
                     0);
    wait_for(e, &a);
    assert_int_equal(a.code, 200);
    assert_string_equal(json_string_value(fatia_json_path(a.obj, "spec.stopPolicy")), "Hold");
    answer_release(&a);
    assert_int_equal(fatia_client_delete(e->c, lq, "team-a", "q1",
                                         &(struct fatia_delete_opts){.uid = "wrong"}, on_done, &a),
                     0);
    wait_for(e, &a);
    assert_int_equal(a.code, 409);
    answer_release(&a);
    assert_int_equal(fatia_client_delete(e->c, lq, "team-a", "q1", NULL, on_done, &a), 0);
    wait_for(e, &a);
    assert_int_equal(a.code, 200);
    answer_release(&a);
    assert_null(fatia_client_cached(e->c, lq, "team-a", "q1"));
}

struct events {
    int n;
    enum fatia_watch_event type[16];
    char name[16][32];
};

static void on_event(void *arg, enum fatia_watch_event type, const json_t *obj, uint64_t rv)
{
    struct events *ev = arg;

    (void)rv;
    if (ev->n == 16)
        return;
    ev->type[ev->n] = type;
    snprintf(ev->name[ev->n], sizeof(ev->name[0]), "%s",
             obj ? fatia_json_str(json_object_get(obj, "metadata"), "name") : "");
    ev->n++;
}

static void test_watch(void **state)
{
    struct env *e = *state;
    const struct fatia_kind *lq = kind("kueue.x-k8s.io", "localqueues");
    struct fatia_client_watch *w;
    struct events ev = {0};
    struct answer a;

    assert_int_equal(create(e, LQ("w0", "cq"), &a), 201);
    answer_release(&a);
    assert_int_equal(fatia_client_watch(e->c, lq, "team-a", NULL, on_event, &ev, &w), 0);
    assert_int_equal(ev.n, 0); /* not inside the call either */
    assert_int_equal(create(e, LQ("w1", "cq"), &a), 201);
    answer_release(&a);
    assert_int_equal(fatia_client_delete(e->c, lq, "team-a", "w0", NULL, on_done, &a), 0);
    wait_for(e, &a);
    answer_release(&a);
    for (int i = 0; i < 100 && ev.n < 4; i++)
        event_base_loop(e->base, EVLOOP_NONBLOCK);
    assert_int_equal(ev.n, 4);
    assert_int_equal(ev.type[0], FATIA_WATCH_ADDED); /* the current state */
    assert_string_equal(ev.name[0], "w0");
    assert_int_equal(ev.type[1], FATIA_WATCH_BOOKMARK);
    assert_int_equal(ev.type[2], FATIA_WATCH_ADDED);
    assert_string_equal(ev.name[2], "w1");
    assert_int_equal(ev.type[3], FATIA_WATCH_DELETED);
    assert_string_equal(ev.name[3], "w0");
    fatia_client_watch_stop(e->c, w);
    assert_int_equal(create(e, LQ("w2", "cq"), &a), 201);
    answer_release(&a);
    event_base_loop(e->base, EVLOOP_NONBLOCK);
    assert_int_equal(ev.n, 4); /* stopped */
}

/* A mutating plugin: records the old object's queue on update and stamps an annotation. */
static int stamp(void *arg, struct fatia_admit_attrs *a)
{
    char *seen_old = arg;
    json_t *ann = fatia_json_object_ensure(json_object_get(a->obj, "metadata"), "annotations");

    if (a->op == FATIA_ADMIT_UPDATE)
        snprintf(seen_old, 64, "%s",
                 json_string_value(fatia_json_path(a->old, "spec.clusterQueue")));
    json_object_set_new(ann, "fatia.dev/stamped", json_string("yes"));
    return 0;
}

/* A validating plugin: no queue named "forbidden". */
static int refuse(void *arg, struct fatia_admit_attrs *a)
{
    (void)arg;
    if (!strcmp(json_string_value(fatia_json_path(a->obj, "spec.clusterQueue")), "forbidden")) {
        fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, "spec.clusterQueue",
                       "may not be \"forbidden\"");
        return -FATIA_E_INVALID;
    }
    return 0;
}

static void test_admission(void **state)
{
    struct env *e = *state;
    const struct fatia_kind *lq = kind("kueue.x-k8s.io", "localqueues");
    const struct fatia_kind *only[] = {lq, NULL};
    char seen_old[64] = "";
    struct answer a;
    uint64_t rv;

    assert_int_equal(
        fatia_apiserver_add_admission(
            e->s, &(struct fatia_admission){.name = "stamp",
                                            .phase = FATIA_ADMIT_MUTATING,
                                            .ops = FATIA_ADMIT_CREATE | FATIA_ADMIT_UPDATE,
                                            .kinds = only,
                                            .admit = stamp,
                                            .arg = seen_old}),
        0);
    assert_int_equal(
        fatia_apiserver_add_admission(
            e->s, &(struct fatia_admission){.name = "refuse",
                                            .phase = FATIA_ADMIT_VALIDATING,
                                            .ops = FATIA_ADMIT_CREATE | FATIA_ADMIT_UPDATE,
                                            .admit = refuse}),
        0);
    assert_int_equal(create(e, LQ("a1", "first"), &a), 201);
    assert_string_equal(
        fatia_json_str(fatia_json_path(a.obj, "metadata.annotations"), "fatia.dev/stamped"), "yes");
    answer_release(&a);
    assert_int_equal(fatia_client_patch(e->c, lq, "team-a", "a1", NULL, FATIA_PATCH_MERGE,
                                        "{\"spec\":{\"clusterQueue\":\"second\"}}",
                                        strlen("{\"spec\":{\"clusterQueue\":\"second\"}}"), NULL,
                                        on_done, &a),
                     0);
    wait_for(e, &a);
    assert_int_equal(a.code, 200);
    assert_string_equal(seen_old, "first"); /* the plugin saw the old object */
    rv = a.rv;
    answer_release(&a);

    /* rejected: 422 with the plugin's cause, and nothing changed */
    assert_int_equal(fatia_client_patch(e->c, lq, "team-a", "a1", NULL, FATIA_PATCH_MERGE,
                                        "{\"spec\":{\"clusterQueue\":\"forbidden\"}}",
                                        strlen("{\"spec\":{\"clusterQueue\":\"forbidden\"}}"), NULL,
                                        on_done, &a),
                     0);
    wait_for(e, &a);
    assert_int_equal(a.code, 422);
    assert_string_equal(json_string_value(fatia_json_path(a.status, "details.causes[0].field")),
                        "spec.clusterQueue");
    answer_release(&a);
    assert_int_equal(fatia_client_get(e->c, lq, "team-a", "a1", on_done, &a), 0);
    wait_for(e, &a);
    assert_int_equal(a.rv, rv);
    assert_string_equal(json_string_value(fatia_json_path(a.obj, "spec.clusterQueue")), "second");
    answer_release(&a);
}

static void test_tenant(void **state)
{
    struct env *e = *state;
    const struct fatia_user alice = {.name = "alice",
                                     .namespaces = (const char *const[]){"team-b", NULL}};
    struct fatia_client *c = fatia_client_new_local(e->s, &alice);
    json_t *obj = json_loads(LQ("t1", "cq"), 0, NULL);
    struct answer a = {0};

    assert_int_equal(fatia_client_create(c, obj, NULL, on_done, &a), 0);
    wait_for(e, &a);
    assert_int_equal(a.code, 403);
    answer_release(&a);
    json_decref(obj);
    fatia_client_free(c);
}

/* A DELETE-time rule a plugin enforces (as the tenant rules of docs/apiserver.md do): objects
 * labelled keep=yes may not be deleted. */
static int keep_rule(void *arg, struct fatia_admit_attrs *a)
{
    const char *keep = fatia_json_str(fatia_json_path(a->old, "metadata.labels"), "keep");

    ++*(int *)arg;
    if (a->op == FATIA_ADMIT_DELETE && keep && !strcmp(keep, "yes")) {
        fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, "metadata.labels.keep",
                       "objects labelled keep=yes may not be deleted");
        return -FATIA_E_FORBIDDEN;
    }
    return 0;
}

struct colanswer {
    bool done;
    int code;
    char msg[400];
};

static void on_col(void *arg, struct opres *r)
{
    struct colanswer *a = arg;

    a->done = true;
    a->code = r->code;
    snprintf(a->msg, sizeof(a->msg), "%s", r->status ? fatia_json_str(r->status, "message") : "");
    fatia_api_opres_release(r);
}

/* DELETE on the collection of localqueues in ns (NULL: every namespace) as user u. */
static int delete_collection(struct env *e, const struct fatia_user *u, const char *ns,
                             const char *selector, struct colanswer *a)
{
    struct opctx c = {.s = e->s,
                      .user = u,
                      .t = fatia_api_server_table_for(e->s, kind("kueue.x-k8s.io", "localqueues")),
                      .ns = ns,
                      .fv = FATIA_FV_WARN};
    struct fatia_api_query q = {.label_selector = selector,
                                .timeout_seconds = -1,
                                .grace_period = -1,
                                .tail_lines = -1,
                                .limit_bytes = -1,
                                .since_seconds = -1};

    memset(a, 0, sizeof(*a));
    fatia_api_op_delete_collection(&c, &q, NULL, on_col, a);
    for (int i = 0; i < 10000 && !a->done; i++)
        event_base_loop(e->base, EVLOOP_ONCE);
    assert_true(a->done);
    return a->code;
}

static size_t count_lqs(struct env *e)
{
    struct answer a = {0};
    size_t n;

    assert_int_equal(
        fatia_client_list(e->c, kind("kueue.x-k8s.io", "localqueues"), NULL, NULL, on_done, &a), 0);
    wait_for(e, &a);
    n = json_array_size(json_object_get(a.obj, "items"));
    answer_release(&a);
    return n;
}

#define LQL(name, ns, labels)                                                                   \
    "{\"apiVersion\":\"kueue.x-k8s.io/"                                                         \
    "v1beta2\",\"kind\":\"LocalQueue\",\"metadata\":{\"name\":\"" name "\",\"namespace\":\"" ns \
    "\",\"labels\":" labels "},\"spec\":{\"clusterQueue\":\"cq\"}}"

static void test_delete_collection(void **state)
{
    struct env *e = *state;
    const struct fatia_kind *lq = kind("kueue.x-k8s.io", "localqueues");
    const struct fatia_kind *only[] = {lq, NULL};
    const struct fatia_user tenant = {.name = "mallory",
                                      .namespaces = (const char *const[]){"team-a", NULL}};
    struct colanswer ca;
    struct answer a;
    int calls = 0;

    assert_int_equal(create(e,
                            "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
                            "\"metadata\":{\"name\":\"team-b\"}}",
                            &a),
                     201);
    answer_release(&a);
    assert_int_equal(create(e, LQL("kept", "team-a", "{\"keep\":\"yes\"}"), &a), 201);
    answer_release(&a);
    assert_int_equal(create(e, LQL("x1", "team-a", "{\"tier\":\"x\"}"), &a), 201);
    answer_release(&a);
    assert_int_equal(create(e, LQL("x2", "team-a", "{\"tier\":\"x\"}"), &a), 201);
    answer_release(&a);
    assert_int_equal(create(e, LQL("other", "team-b", "{\"tier\":\"x\"}"), &a), 201);
    answer_release(&a);
    assert_int_equal(fatia_apiserver_add_admission(
                         e->s, &(struct fatia_admission){.name = "keep",
                                                         .phase = FATIA_ADMIT_VALIDATING,
                                                         .ops = FATIA_ADMIT_DELETE,
                                                         .kinds = only,
                                                         .admit = keep_rule,
                                                         .arg = &calls}),
                     0);

    /* DELETE of the kept one: 403 from the plugin */
    assert_int_equal(fatia_client_delete(e->c, lq, "team-a", "kept", NULL, on_done, &a), 0);
    wait_for(e, &a);
    assert_int_equal(a.code, 403);
    answer_release(&a);

    /* the collection that holds it: the same 403, and nothing deleted */
    assert_int_equal(delete_collection(e, &fatia_user_system, "team-a", NULL, &ca), 403);
    assert_non_null(strstr(ca.msg, "keep=yes may not be deleted"));
    assert_non_null(strstr(ca.msg, "localqueues.kueue.x-k8s.io \"kept\""));
    assert_int_equal(count_lqs(e), 4);
    /* ... every namespace at once: the same */
    assert_int_equal(delete_collection(e, &fatia_user_system, NULL, NULL, &ca), 403);
    assert_int_equal(count_lqs(e), 4);

    /* a tenant: not across namespaces, not in another tenant's */
    assert_int_equal(delete_collection(e, &tenant, NULL, "tier=x", &ca), 403);
    assert_int_equal(delete_collection(e, &tenant, "team-b", NULL, &ca), 403);
    assert_int_equal(count_lqs(e), 4);
    /* in its own, by label: the plugin ran for each object (x1, x2), and they went */
    calls = 0;
    assert_int_equal(delete_collection(e, &tenant, "team-a", "tier=x", &ca), 200);
    assert_int_equal(calls, 2);
    assert_int_equal(count_lqs(e), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_crud, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admission, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tenant, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_collection, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/unit/test_apiserver.c: the API server's pure parts and the store: request targets and
 * routes, query options, the HTTP head and chunked parsers, the three patch formats, tokens and
 * authorization, and the store (commit, reload, rv monotonic, group commit, schema version).
 */
#include "base/compat.h"

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <unistd.h>

#include "apiserver/auth.h"
#include "apiserver/http.h"
#include "apiserver/patch.h"
#include "apiserver/request.h"
#include "base/error.h"
#include "base/json.h"
#include "model/kind.h"
#include "store/store.h"

/* ---- targets and routes ---- */

static void route(const char *target, struct fatia_api_target *t, struct fatia_api_route *r)
{
    assert_int_equal(fatia_api_target_parse(target, strlen(target), t), 0);
    assert_int_equal(fatia_api_route_parse(t, r), 0);
}

static void test_routes(void **state)
{
    struct fatia_api_target t;
    struct fatia_api_route r;
    const char *s;
    (void)state;

    route("/api/v1/namespaces/team-a/pods/web/log?follow=true", &t, &r);
    assert_int_equal(r.type, FATIA_ROUTE_RESOURCE);
    assert_string_equal(r.group, "");
    assert_string_equal(r.version, "v1");
    assert_string_equal(r.resource, "pods");
    assert_string_equal(r.ns, "team-a");
    assert_string_equal(r.name, "web");
    assert_string_equal(r.sub, "log");
    assert_string_equal(fatia_api_target_param(&t, "follow"), "true");
    fatia_api_target_release(&t);

    route("/apis/kueue.x-k8s.io/v1beta2/clusterqueues", &t, &r);
    assert_string_equal(r.group, "kueue.x-k8s.io");
    assert_null(r.ns);
    assert_null(r.name);
    fatia_api_target_release(&t);

    route("/api/v1/namespaces/team-a/status", &t, &r);
    assert_string_equal(r.resource, "namespaces");
    assert_string_equal(r.name, "team-a");
    assert_string_equal(r.sub, "status");
    fatia_api_target_release(&t);

    route("/api/v1/watch/namespaces/a/pods", &t, &r);
    assert_true(r.watch_prefix);
    assert_string_equal(r.ns, "a");
    fatia_api_target_release(&t);

    route("/openapi/v3/apis/batch/v1", &t, &r);
    assert_int_equal(r.type, FATIA_ROUTE_OPENAPI_V3_GV);
    assert_string_equal(r.group, "batch");
    fatia_api_target_release(&t);

    /* percent-decoding; an encoded slash in a segment and a truncated escape are refused */
    s = "/api/v1/x?labelSelector=a%3Db%2Cc+in+(x)";
    assert_int_equal(fatia_api_target_parse(s, strlen(s), &t), 0);
    assert_string_equal(fatia_api_target_param(&t, "labelSelector"), "a=b,c in (x)");
    fatia_api_target_release(&t);
    assert_int_equal(fatia_api_target_parse("/api/a%2Fb", 10, &t), -EINVAL);
    assert_int_equal(fatia_api_target_parse("/api/a%2", 8, &t), -EINVAL);
    assert_int_equal(fatia_api_target_parse("api", 3, &t), -EINVAL);
    assert_int_equal(fatia_api_target_parse("/nope/x", 7, &t), 0);
    assert_int_equal(fatia_api_route_parse(&t, &r), -ENOENT);
    fatia_api_target_release(&t);
}

static void test_query(void **state)
{
    struct fatia_api_target t;
    struct fatia_api_query q;
    char why[256];
    const char *s = "/x?limit=5&watch=1&dryRun=All&fieldValidation=Strict&timeoutSeconds=9"
                    "&includeObject=Object&continue=abc";
    (void)state;

    assert_int_equal(fatia_api_target_parse(s, strlen(s), &t), 0);
    assert_int_equal(fatia_api_query_parse(&t, &q, why, sizeof(why)), 0);
    assert_int_equal(q.limit, 5);
    assert_true(q.watch);
    assert_true(q.dry_run);
    assert_int_equal(q.fv, FATIA_FV_STRICT);
    assert_int_equal(q.timeout_seconds, 9);
    assert_int_equal(q.include_object, 2);
    assert_string_equal(q.continue_token, "abc");
    fatia_api_target_release(&t);

    s = "/x?limit=ten";
    assert_int_equal(fatia_api_target_parse(s, strlen(s), &t), 0);
    assert_int_equal(fatia_api_query_parse(&t, &q, why, sizeof(why)), -EINVAL);
    assert_non_null(strstr(why, "limit"));
    fatia_api_target_release(&t);
}

/* Booleans as kube-apiserver's Convert_Slice_string_To_bool: only "0" and any-case "false" are
 * false; the first of repeated values counts; nothing is refused. */
static void test_query_bool(void **state)
{
    static const struct {
        const char *q;
        bool watch;
    } cases[] = {
        {"/x?watch=True", true},       {"/x?watch=TRUE", true},
        {"/x?watch=1", true},          {"/x?watch=true", true},
        {"/x?watch=", true},           {"/x?watch", true},
        {"/x?watch=yes", true},        {"/x?watch=no", true},
        {"/x?watch=f", true},          {"/x?watch=0", false},
        {"/x?watch=false", false},     {"/x?watch=FALSE", false},
        {"/x?watch=False", false},     {"/x", false},
        {"/x?watch=0&watch=1", false}, {"/x?watch=1&watch=false", true},
        {"/x?watch=%46alse", false},
    };
    struct fatia_api_target t;
    struct fatia_api_query q;
    char why[256];
    (void)state;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(fatia_api_target_parse(cases[i].q, strlen(cases[i].q), &t), 0);
        assert_int_equal(fatia_api_query_parse(&t, &q, why, sizeof(why)), 0);
        if (q.watch != cases[i].watch)
            fail_msg("%s: watch %d, want %d", cases[i].q, q.watch, cases[i].watch);
        fatia_api_target_release(&t);
    }
    const char *s = "/x?allowWatchBookmarks=True&sendInitialEvents=TRUE&follow=1&timestamps=no"
                    "&previous=false";
    assert_int_equal(fatia_api_target_parse(s, strlen(s), &t), 0);
    assert_int_equal(fatia_api_query_parse(&t, &q, why, sizeof(why)), 0);
    assert_true(q.allow_bookmarks && q.send_initial_events && q.follow && q.timestamps);
    assert_false(q.previous);
    fatia_api_target_release(&t);
}

/* ---- patches ---- */

static json_t *J(const char *s)
{
    json_t *v = json_loads(s, JSON_DECODE_ANY, NULL);
    assert_non_null(v);
    return v;
}

static void assert_json(const json_t *v, const char *want)
{
    json_t *w = J(want);
    if (!json_equal(v, w)) {
        char *got = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
        fail_msg("got %s, want %s", got, want);
    }
    json_decref(w);
}

static void test_merge_patch(void **state)
{
    json_t *doc = J("{\"a\":{\"b\":1,\"c\":2},\"l\":[1,2]}"), *p, *res;
    char why[256];
    (void)state;

    p = J("{\"a\":{\"b\":null,\"d\":3},\"l\":[3]}");
    assert_int_equal(fatia_patch_merge(doc, p, &res, why, sizeof(why)), 0);
    assert_json(res, "{\"a\":{\"c\":2,\"d\":3},\"l\":[3]}");
    assert_json(doc, "{\"a\":{\"b\":1,\"c\":2},\"l\":[1,2]}"); /* unchanged */
    json_decref(res);
    json_decref(p);
    json_decref(doc);
}

static void test_json_patch(void **state)
{
    json_t *doc = J("{\"a\":[1,2],\"b\":{\"x~/y\":1}}"), *p, *res = NULL;
    char why[256];
    (void)state;

    p = J("[{\"op\":\"add\",\"path\":\"/a/-\",\"value\":3},"
          "{\"op\":\"add\",\"path\":\"/a/0\",\"value\":0},"
          "{\"op\":\"remove\",\"path\":\"/b/x~0~1y\"},"
          "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/c\"},"
          "{\"op\":\"move\",\"from\":\"/c/0\",\"path\":\"/d\"},"
          "{\"op\":\"test\",\"path\":\"/d\",\"value\":0},"
          "{\"op\":\"replace\",\"path\":\"/b\",\"value\":true}]");
    assert_int_equal(fatia_patch_json(doc, p, &res, why, sizeof(why)), 0);
    assert_json(res, "{\"a\":[0,1,2,3],\"b\":true,\"c\":[1,2,3],\"d\":0}");
    json_decref(res);
    json_decref(p);

    p = J("[{\"op\":\"test\",\"path\":\"/a/0\",\"value\":9}]");
    assert_int_equal(fatia_patch_json(doc, p, &res, why, sizeof(why)), -FATIA_E_CONFLICT);
    json_decref(p);
    p = J("[{\"op\":\"replace\",\"path\":\"/missing\",\"value\":1}]");
    assert_int_equal(fatia_patch_json(doc, p, &res, why, sizeof(why)), -FATIA_E_CONFLICT);
    json_decref(p);
    p = J("[{\"op\":\"frobnicate\",\"path\":\"/a\"}]");
    assert_int_equal(fatia_patch_json(doc, p, &res, why, sizeof(why)), -EINVAL);
    json_decref(p);
    p = J("{\"op\":\"add\"}");
    assert_int_equal(fatia_patch_json(doc, p, &res, why, sizeof(why)), -EINVAL);
    json_decref(p);
    json_decref(doc);
}

static void test_strategic_patch(void **state)
{
    const struct fatia_kind *pod = fatia_kind_by_resource("", "pods");
    const struct fatia_kind *cq = fatia_kind_by_resource("kueue.x-k8s.io", "clusterqueues");
    json_t *doc = J("{\"metadata\":{\"finalizers\":[\"a\",\"b\"]},\"spec\":{\"containers\":["
                    "{\"name\":\"c1\",\"image\":\"i1\",\"env\":[{\"name\":\"A\",\"value\":\"1\"}]},"
                    "{\"name\":\"c2\",\"image\":\"i2\"}],\"tolerations\":[{\"key\":\"k\"}]}}");
    json_t *p, *res;
    char why[256];
    (void)state;

    /* containers merge by name, env by name; tolerations (no strategy) are replaced */
    p = J("{\"spec\":{\"containers\":[{\"name\":\"c1\",\"image\":\"new\",\"env\":[{\"name\":\"B\","
          "\"value\":\"2\"}]},{\"name\":\"c3\",\"image\":\"i3\"}],\"tolerations\":[]}}");
    assert_int_equal(fatia_patch_strategic(doc, p, pod, &res, why, sizeof(why)), 0);
    assert_json(res, "{\"metadata\":{\"finalizers\":[\"a\",\"b\"]},\"spec\":{\"containers\":["
                     "{\"name\":\"c1\",\"image\":\"new\",\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
                     "{\"name\":\"B\",\"value\":\"2\"}]},{\"name\":\"c2\",\"image\":\"i2\"},"
                     "{\"name\":\"c3\",\"image\":\"i3\"}],\"tolerations\":[]}}");
    json_decref(res);
    json_decref(p);

    /* directives: delete an item, order a list, delete from a primitive list, merge a set */
    p = J("{\"metadata\":{\"finalizers\":[\"c\"],\"$deleteFromPrimitiveList/finalizers\":[\"a\"]},"
          "\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"c2\"},{\"name\":\"c1\"}],"
          "\"containers\":[{\"name\":\"c1\",\"$patch\":\"delete\"}]}}");
    assert_int_equal(fatia_patch_strategic(doc, p, pod, &res, why, sizeof(why)), 0);
    assert_json(res, "{\"metadata\":{\"finalizers\":[\"b\",\"c\"]},\"spec\":{\"containers\":["
                     "{\"name\":\"c2\",\"image\":\"i2\"}],\"tolerations\":[{\"key\":\"k\"}]}}");
    json_decref(res);
    json_decref(p);

    /* $patch: replace; a kind without merge keys replaces lists */
    p = J("{\"spec\":{\"$patch\":\"replace\",\"containers\":[{\"name\":\"only\"}]}}");
    assert_int_equal(fatia_patch_strategic(doc, p, cq, &res, why, sizeof(why)), 0);
    assert_json(json_object_get(res, "spec"), "{\"containers\":[{\"name\":\"only\"}]}");
    json_decref(res);
    json_decref(p);

    /* an item of a keyed list without its key */
    p = J("{\"spec\":{\"containers\":[{\"image\":\"x\"}]}}");
    assert_int_equal(fatia_patch_strategic(doc, p, pod, &res, why, sizeof(why)), -EINVAL);
    json_decref(p);
    json_decref(doc);
}

/* ---- tokens ---- */

static void test_tokens(void **state)
{
    const char *text = "# comment\n"
                       "0123456789abcdef0123 admin system:masters * rw\n"
                       "\n"
                       "fedcba9876543210fedc alice - team-a,team-b ro\n";
    struct fatia_auth *a;
    const struct fatia_user *u;
    char why[256];
    (void)state;

    assert_int_equal(fatia_auth_parse(text, strlen(text), &a, why, sizeof(why)), 0);
    assert_null(fatia_auth_lookup(a, "nope"));
    u = fatia_auth_lookup(a, "0123456789abcdef0123");
    assert_non_null(u);
    assert_true(fatia_user_is_admin(u));
    assert_null(u->namespaces); /* "*" */
    u = fatia_auth_lookup(a, "fedcba9876543210fedc");
    assert_string_equal(u->name, "alice");
    assert_false(fatia_user_is_admin(u));
    /* what these grant is RBAC's (authz.c: view in team-a and team-b, for ro): tests/unit/
     * test_rbac.c and tests/cli/apiserver-rbac.sh */
    assert_true(u->read_only);
    assert_string_equal(u->namespaces[0], "team-a");
    assert_string_equal(u->namespaces[1], "team-b");
    assert_null(u->namespaces[2]);
    fatia_auth_free(a);

    assert_int_equal(fatia_auth_parse("short u - * rw\n", 15, &a, why, sizeof(why)),
                     -FATIA_E_PARSE);
    assert_non_null(strstr(why, "line 1"));
    assert_int_equal(
        fatia_auth_parse("0123456789abcdef0123 u - * maybe\n", 34, &a, why, sizeof(why)),
        -FATIA_E_PARSE);

    /* id= and expires=: an expired token is as unknown; a bad field is named */
    text = "0123456789abcdef0123 old - * rw id=aaaa expires=2001-01-01T00:00:00Z\n"
           "fedcba9876543210fedc new - * rw expires=2999-01-01T00:00:00Z id=bbbb\n"
           "00001111222233334444 plain - * rw id=cccc\n";
    assert_int_equal(fatia_auth_parse(text, strlen(text), &a, why, sizeof(why)), 0);
    assert_null(fatia_auth_lookup(a, "0123456789abcdef0123"));
    assert_non_null(fatia_auth_lookup(a, "fedcba9876543210fedc"));
    assert_non_null(fatia_auth_lookup(a, "00001111222233334444"));
    fatia_auth_free(a);
    text = "0123456789abcdef0123 u - * rw expires=tomorrow\n";
    assert_int_equal(fatia_auth_parse(text, strlen(text), &a, why, sizeof(why)), -FATIA_E_PARSE);
    assert_non_null(strstr(why, "expires"));
    text = "0123456789abcdef0123 u - * rw color=blue\n";
    assert_int_equal(fatia_auth_parse(text, strlen(text), &a, why, sizeof(why)), -FATIA_E_PARSE);
    assert_non_null(strstr(why, "color=blue"));
    text = "0123456789abcdef0123 u - * rw id=a id=b\n";
    assert_int_equal(fatia_auth_parse(text, strlen(text), &a, why, sizeof(why)), -FATIA_E_PARSE);
    text = "0123456789abcdef0123 u - * rw id=a expires=2999-01-01T00:00:00Z extra\n";
    assert_int_equal(fatia_auth_parse(text, strlen(text), &a, why, sizeof(why)), -FATIA_E_PARSE);
}

/* ---- store ---- */

static void op(struct fatia_store_op *o, uint64_t rv, enum fatia_store_event type, const char *name,
               const char *json)
{
    *o = (struct fatia_store_op){.rv = rv,
                                 .type = type,
                                 .group = "",
                                 .kind = "Namespace",
                                 .ns = "",
                                 .name = name,
                                 .uid = "u",
                                 .json = json,
                                 .json_len = strlen(json)};
}

static int count_row(void *arg, const struct fatia_store_row *row)
{
    (*(int *)arg)++;
    assert_non_null(row->json);
    return 0;
}

static void test_store(void **state)
{
    char dir[] = "/tmp/fatia-store-XXXXXX", path[256];
    struct fatia_store *s;
    struct fatia_store_op ops[3];
    struct fatia_store_batch b1 = {0}, b2 = {0}, *done;
    int n = 0, got = 0;
    (void)state;

    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/store.db", dir);
    assert_int_equal(fatia_store_open(path, NULL, &s), 0);
    assert_int_equal(fatia_store_rv(s), 0);
    op(&ops[0], 1, FATIA_STORE_ADDED, "a", "{\"a\":1}");
    op(&ops[1], 2, FATIA_STORE_ADDED, "b", "{\"b\":1}");
    assert_int_equal(fatia_store_commit(s, ops, 2), 0);
    /* resourceVersions must increase: a batch that goes back changes nothing */
    op(&ops[0], 2, FATIA_STORE_MODIFIED, "a", "{\"a\":2}");
    assert_int_equal(fatia_store_commit(s, ops, 1), -EINVAL);
    assert_int_equal(fatia_store_rv(s), 2);

    /* group commit through the writer thread */
    assert_int_equal(fatia_store_writer_start(s), 0);
    op(&ops[0], 3, FATIA_STORE_MODIFIED, "a", "{\"a\":3}");
    op(&ops[1], 4, FATIA_STORE_DELETED, "b", "{\"b\":1}");
    op(&ops[2], 5, FATIA_STORE_ADDED, "c", "{\"c\":1}");
    b1 = (struct fatia_store_batch){.ops = ops, .n = 2};
    b2 = (struct fatia_store_batch){.ops = ops + 2, .n = 1};
    assert_int_equal(fatia_store_submit(s, &b1), 0);
    assert_int_equal(fatia_store_submit(s, &b2), 0);
    while (got < 2) {
        usleep(1000);
        while ((done = fatia_store_reap(s))) {
            assert_int_equal(done->result, 0);
            assert_ptr_equal(done, got == 0 ? &b1 : &b2); /* in submission order */
            got++;
        }
    }
    fatia_store_close(s);

    /* reopen: the objects, the log and the rv are there */
    assert_int_equal(fatia_store_open(path, NULL, &s), 0);
    assert_int_equal(fatia_store_rv(s), 5);
    assert_int_equal(fatia_store_load(s, count_row, &n), 0);
    assert_int_equal(n, 2); /* a and c */
    n = 0;
    assert_int_equal(fatia_store_load_log(s, 0, count_row, &n), 0);
    assert_int_equal(n, 5);
    assert_int_equal(fatia_store_log_first(s), 1);
    assert_int_equal(fatia_store_check(s), 0);
    fatia_store_close(s);

    /* an independent reader opens it read-only */
    {
        struct fatia_store *ro;
        assert_int_equal(fatia_store_open(path, &(struct fatia_store_opts){.read_only = true}, &ro),
                         0);
        assert_int_equal(fatia_store_rv(ro), 5);
        fatia_store_close(ro);
    }
    snprintf(path, sizeof(path), "%s/store.db", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/store.db-wal", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/store.db-shm", dir);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routes),          cmocka_unit_test(test_query),
        cmocka_unit_test(test_query_bool),

        cmocka_unit_test(test_merge_patch),     cmocka_unit_test(test_json_patch),
        cmocka_unit_test(test_strategic_patch), cmocka_unit_test(test_tokens),
        cmocka_unit_test(test_store),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

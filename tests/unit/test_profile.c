/*
 * tests/unit/test_profile.c: hardware profile injection, golden cases.
 *
 * Every tests/golden/demand/profiles/<case>/input.yaml is a sequence of documents processed in
 * order: a HardwareProfile enters (or replaces an entry of) the catalog, or leaves it when
 * annotated fatia.test/op: delete; a Pod, Job or Workload is admitted as a create, or as an
 * update of the previous admitted version of the same object when annotated
 * fatia.test/op: update (the test annotations are removed first). For each admission the
 * output shows the verdict, every error and warning with its field path, and, when admitted,
 * what the profile touches (labels, annotations, containers' resources, node selector,
 * tolerations, queue fields). expected.txt holds the output. `test_profile --golden CASE_DIR`
 * prints one case; the one golden runner (tests/golden/run, suite profiles) compares it, and
 * FATIA_GOLDEN_UPDATE=1 rewrites it.
 *
 * Unit tests follow: the catalog view (`fatia profiles -o json`), default requests for the
 * simulator, and atomicity (a rejected admission leaves the object untouched).
 */
#include "base/compat.h"

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "base/alloc.h"
#include "base/buf.h"
#include "base/error.h"
#include "base/json.h"
#include "demand/demand.h"
#include "demand/profile.h"
#include "model/object.h"

struct golden {
    json_t *catalog; /* "ns/name" -> HardwareProfile */
    json_t *stored;  /* id -> last admitted object */
    struct fatia_buf out;
};

static const json_t *lookup(void *ud, const char *ns, const char *name)
{
    char key[600];

    snprintf(key, sizeof(key), "%s/%s", ns, name);
    return json_object_get(ud, key);
}

static void view_pod_spec(json_t *view, const char *at, const json_t *spec)
{
    json_t *v = json_object(), *ctrs = json_array();
    size_t i;
    json_t *c;

    json_array_foreach(json_object_get(spec, "containers"), i, c)
    {
        json_t *e = json_pack("{s:O}", "name", json_object_get(c, "name"));
        if (json_object_get(c, "resources"))
            json_object_set(e, "resources", json_object_get(c, "resources"));
        json_array_append_new(ctrs, e);
    }
    json_object_set_new(v, "containers", ctrs);
    if (json_object_get(spec, "nodeSelector"))
        json_object_set(v, "nodeSelector", json_object_get(spec, "nodeSelector"));
    if (json_object_get(spec, "tolerations"))
        json_object_set(v, "tolerations", json_object_get(spec, "tolerations"));
    json_object_set_new(view, at, v);
}

/* What the profile rules touch, for the golden output. */
static json_t *view(const json_t *obj)
{
    json_t *v = json_object(), *meta = json_object();
    const json_t *m = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
    const char *kind = fatia_json_str(obj, "kind");
    size_t i;
    json_t *ps;

    if (json_object_get(m, "labels"))
        json_object_set(meta, "labels", json_object_get(m, "labels"));
    if (json_object_get(m, "annotations"))
        json_object_set(meta, "annotations", json_object_get(m, "annotations"));
    json_object_set_new(v, "metadata", meta);
    if (!strcmp(kind, "Pod")) {
        view_pod_spec(v, "spec", spec);
    } else if (!strcmp(kind, "Job")) {
        json_object_set(v, "suspend", json_object_get(spec, "suspend"));
        view_pod_spec(v, "spec.template.spec", fatia_json_path(spec, "template.spec"));
    } else {
        if (json_object_get(spec, "queueName"))
            json_object_set(v, "spec.queueName", json_object_get(spec, "queueName"));
        if (json_object_get(spec, "priorityClassRef"))
            json_object_set(v, "spec.priorityClassRef", json_object_get(spec, "priorityClassRef"));
        json_array_foreach(json_object_get(spec, "podSets"), i, ps)
        {
            char at[128];
            snprintf(at, sizeof(at), "podSet %s", fatia_json_str(ps, "name"));
            view_pod_spec(v, at, fatia_json_path(ps, "template.spec"));
        }
    }
    return v;
}

static void run_doc(struct golden *g, json_t *root, const char *file, const char *case_name)
{
    struct fatia_diag diag;
    struct fatia_decode_opts o = {.file = file};
    struct fatia_object *obj = NULL;
    json_t *ann = fatia_json_path(root, "metadata.annotations");
    const char *op = fatia_json_str(ann, "fatia.test/op");
    bool update = op && !strcmp(op, "update"), del = op && !strcmp(op, "delete");
    const json_t *old;
    int r;

    json_incref(root);
    json_object_del(ann, "fatia.test/op");
    if (json_is_object(ann) && !json_object_size(ann))
        json_object_del(json_object_get(root, "metadata"), "annotations");
    fatia_diag_init(&diag);
    if (fatia_object_decode(root, &o, &fatia_demand_checks, &diag, &obj) != 0) {
        fatia_diag_print(&diag, stderr);
        fail_msg("%s: a document does not validate", case_name);
    }
    if (!strcmp(obj->kind->kind, "HardwareProfile")) {
        char key[600];
        snprintf(key, sizeof(key), "%s/%s", obj->namespace, obj->name);
        if (del) {
            json_object_del(g->catalog, key);
            fatia_buf_printf(&g->out, "DELETE %s\n", obj->id);
        } else {
            json_object_set(g->catalog, key, obj->obj);
            fatia_buf_printf(&g->out, "PROFILE %s\n", obj->id);
        }
        goto out;
    }
    old = update ? json_object_get(g->stored, obj->id) : NULL;
    if (update && !old)
        fail_msg("%s: update of %s, which was never admitted", case_name, obj->id);
    {
        json_t *before = json_deep_copy(obj->obj);
        r = fatia_profile_admit(obj->kind, old, obj->obj, lookup, g->catalog, &diag);
        fatia_buf_printf(&g->out, "%s %s: %s\n", update ? "UPDATE" : "CREATE", obj->id,
                         r == 0 ? "admitted" : fatia_err_name(r));
        if (r != 0 && !json_equal(before, obj->obj))
            fail_msg("%s: a rejected admission changed %s", case_name, obj->id);
        json_decref(before);
    }
    for (size_t i = 0; i < diag.n; i++)
        fatia_buf_printf(&g->out, "  %s: %s: %s\n",
                         diag.v[i].level == FATIA_DIAG_ERROR ? "error" : "warning",
                         diag.v[i].path ? diag.v[i].path : "-", diag.v[i].msg);
    if (r == 0) {
        json_t *v = view(obj->obj);
        struct fatia_buf y = FATIA_BUF_INIT;
        fatia_yaml_dump(v, &y);
        for (char *line = y.p; line && *line;) {
            char *nl = strchr(line, '\n');
            fatia_buf_printf(&g->out, "    %.*s\n", (int)(nl ? nl - line : (long)strlen(line)),
                             line);
            line = nl ? nl + 1 : NULL;
        }
        fatia_buf_release(&y);
        json_decref(v);
        json_object_set(g->stored, obj->id, obj->obj);
    }
out:
    fatia_object_free(obj);
    json_decref(root);
    fatia_diag_release(&diag);
}

static bool run_case(const char *dir, const char *name)
{
    struct fatia_docset docs;
    struct fatia_diag diag;
    struct golden g = {json_object(), json_object(), FATIA_BUF_INIT};
    char path[700];
    bool ok;

    snprintf(path, sizeof(path), "%s/input.yaml", dir);
    fatia_docset_init(&docs);
    fatia_diag_init(&diag);
    if (fatia_docset_load_path(&docs, path, false, &diag) != 0) {
        fatia_diag_print(&diag, stderr);
        fail_msg("%s does not load", path);
    }
    for (size_t i = 0; i < docs.n; i++)
        run_doc(&g, docs.docs[i].root, path, name);
    /* the one golden runner (tests/golden/run) compares this with expected.txt */
    ok = fwrite(g.out.p, 1, g.out.len, stdout) == g.out.len;
    fatia_buf_release(&g.out);
    json_decref(g.catalog);
    json_decref(g.stored);
    fatia_diag_release(&diag);
    fatia_docset_release(&docs);
    return ok;
}

static json_t *load_one(const char *yaml)
{
    struct fatia_diag diag;
    struct fatia_decode_opts o = {0};
    struct fatia_object *obj = NULL;
    json_t *root, *out;
    char why[256];

    assert_int_equal(fatia_yaml_parse(yaml, strlen(yaml), &root, why, sizeof(why)), 0);
    fatia_diag_init(&diag);
    assert_int_equal(fatia_object_decode(root, &o, &fatia_demand_checks, &diag, &obj), 0);
    out = json_incref(obj->obj);
    fatia_object_free(obj);
    json_decref(root);
    fatia_diag_release(&diag);
    return out;
}

#define PROFILE                                                                                   \
    "apiVersion: infrastructure.opendatahub.io/v1\nkind: HardwareProfile\nmetadata:\n  name: "    \
    "nb\n  namespace: cat\n  annotations:\n    opendatahub.io/display-name: Notebook\n    "       \
    "opendatahub.io/dashboard-feature-visibility: '[\"workbench\"]'\nspec:\n  identifiers:\n  - " \
    "{displayName: CPU, identifier: cpu, minCount: 1, defaultCount: 2, maxCount: 4}\n  - "        \
    "{displayName: Memory, identifier: memory, minCount: 1Gi, defaultCount: 8Gi}\n  scheduling: " \
    "{type: Queue, kueue: {localQueueName: gpu, priorityClass: interactive}}\n"

static void test_catalog(void **state)
{
    json_t *hwp = load_one(PROFILE), *j, *req;
    struct fatia_profile *p;
    char why[256];
    (void)state;

    assert_int_equal(fatia_profile_parse(hwp, &p, why, sizeof(why)), 0);
    assert_true(fatia_profile_visible_in(p, "workbench"));
    assert_false(fatia_profile_visible_in(p, "model-serving"));
    assert_true(fatia_profile_visible_in(p, NULL));
    j = fatia_profile_to_json(p);
    assert_string_equal(fatia_json_str(j, "displayName"), "Notebook");
    assert_string_equal(fatia_json_str(fatia_json_path(j, "resources[1]"), "default"), "8Gi");
    assert_null(json_object_get(fatia_json_path(j, "resources[1]"), "max"));
    assert_string_equal(fatia_json_str(fatia_json_path(j, "resources[0]"), "max"), "4");
    assert_string_equal(fatia_json_str(json_object_get(j, "scheduling"), "localQueue"), "gpu");
    req = fatia_profile_default_requests(p);
    assert_string_equal(fatia_json_str(req, "cpu"), "2");
    assert_string_equal(fatia_json_str(req, "memory"), "8Gi");
    json_decref(req);
    json_decref(j);
    fatia_profile_free(p);
    json_decref(hwp);
}

/* Kinds the rules do not concern pass untouched; the lookup may be absent. */
static void test_other_kinds(void **state)
{
    json_t *ns = load_one("apiVersion: v1\nkind: Namespace\nmetadata: {name: a, annotations: "
                          "{opendatahub.io/hardware-profile-name: nb}}\n");
    json_t *copy = json_deep_copy(ns);
    struct fatia_diag diag;
    (void)state;

    fatia_diag_init(&diag);
    assert_int_equal(
        fatia_profile_admit(fatia_kind_by_name("Namespace"), NULL, ns, NULL, NULL, &diag), 0);
    assert_true(json_equal(ns, copy));
    assert_int_equal(diag.n, 0);
    fatia_diag_release(&diag);
    json_decref(ns);
    json_decref(copy);
}

static const json_t *raw_lookup(void *ud, const char *ns, const char *name)
{
    (void)ns;
    (void)name;
    return ud;
}

/* Rejections that validated input cannot reach, for callers that pass raw trees: a profile
 * that is not one, a pod without containers, an unreadable stored record. */
static void test_edge_rejections(void **state)
{
    json_t *bad = json_loads("{\"metadata\": {\"name\": \"p\", \"namespace\": \"c\"}, "
                             "\"spec\": {\"identifiers\": [{\"identifier\": \"cpu\", "
                             "\"minCount\": \"x\", \"defaultCount\": 1}]}}",
                             0, NULL);
    json_t *pod = json_loads("{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": "
                             "{\"name\": \"a\", \"namespace\": \"n\", \"annotations\": "
                             "{\"opendatahub.io/hardware-profile-name\": \"p\"}}, \"spec\": "
                             "{\"containers\": []}}",
                             0, NULL);
    json_t *good = load_one(PROFILE), *copy;
    const struct fatia_kind *k = fatia_kind_by_name("Pod");
    struct fatia_diag diag;
    (void)state;

    assert_non_null(bad);
    assert_non_null(pod);
    copy = json_deep_copy(pod);
    fatia_diag_init(&diag);
    assert_int_equal(fatia_profile_admit(k, NULL, pod, raw_lookup, bad, &diag), -FATIA_E_INVALID);
    assert_non_null(strstr(diag.v[0].msg, "hardware profile 'n/p' is invalid"));
    assert_true(json_equal(pod, copy));
    fatia_diag_release(&diag);
    fatia_diag_init(&diag);
    assert_int_equal(fatia_profile_admit(k, NULL, pod, raw_lookup, good, &diag), -FATIA_E_INVALID);
    assert_non_null(strstr(diag.v[0].msg, "has no container"));
    assert_true(json_equal(pod, copy));
    fatia_diag_release(&diag);
    /* a Job whose stored record is garbage: a warning, nothing cleaned, the profile applied */
    {
        json_t *job =
            json_loads("{\"apiVersion\": \"batch/v1\", \"kind\": \"Job\", \"metadata\": {\"name\": "
                       "\"j\", \"namespace\": \"n\", \"annotations\": "
                       "{\"opendatahub.io/hardware-profile-name\": \"nb\", "
                       "\"opendatahub.io/hardware-profile-namespace\": \"cat\", "
                       "\"fatia.dev/injected\": \"{garbage\"}}, \"spec\": {\"suspend\": true, "
                       "\"template\": {\"spec\": {\"containers\": [{\"name\": \"c\"}]}}}}",
                       0, NULL);
        json_t *old = json_deep_copy(job);
        fatia_diag_init(&diag);
        assert_int_equal(
            fatia_profile_admit(fatia_kind_by_name("Job"), old, job, raw_lookup, good, &diag), 0);
        assert_int_equal(diag.n, 1);
        assert_int_equal(diag.v[0].level, FATIA_DIAG_WARNING);
        assert_non_null(strstr(diag.v[0].msg, "unreadable"));
        assert_string_equal(
            fatia_json_str(fatia_json_path(job, "metadata.labels"), "kueue.x-k8s.io/queue-name"),
            "gpu");
        fatia_diag_release(&diag);
        json_decref(job);
        json_decref(old);
    }
    json_decref(bad);
    json_decref(pod);
    json_decref(copy);
    json_decref(good);
}

int main(int argc, char **argv)
{
    /* tests/golden/run (suite "profiles") calls `test_profile --golden CASE_DIR` for each case: the output
     * goes to stdout, the runner compares it with expected.txt */
    if (argc == 3 && !strcmp(argv[1], "--golden")) {
        const char *name = strrchr(argv[2], '/');
        return run_case(argv[2], name ? name + 1 : argv[2]) ? 0 : 1;
    }
    (void)argc;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_catalog),
        cmocka_unit_test(test_other_kinds),
        cmocka_unit_test(test_edge_rejections),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

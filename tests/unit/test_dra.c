/*
 * tests/unit/test_dra.c: DRA objects and claim allocation.
 *
 *   - validation of DeviceClass / ResourceSlice / ResourceClaim(Template) with the demand
 *     layer's checks registered (CEL compile errors with their column, NVIDIA configs);
 *   - golden allocation cases: every tests/golden/demand/claims/<case>/input.yaml is loaded
 *     (DeviceClasses, ResourceSlices, claims already allocated, then claims and Pods in document
 *     order) and the allocation of each claim, or the explanation of why it does not fit, is
 *     compared with expected.txt next to it (a claim annotated fatia.test/node: NAME is
 *     allocated on that node, as placement asks). `test_dra --golden CASE_DIR` prints one
 *     case; the one golden runner (tests/golden/run, suite claims) compares it, and
 *     FATIA_GOLDEN_UPDATE=1 rewrites the expected files (review the diff before committing);
 *   - NVIDIA sharing configs, claims -> quota through deviceClassMappings, natural device order.
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
#include "demand/dra.h"
#include "model/kinds/kinds.h"
#include "model/objset.h"

/* ---- validation ---- */

struct vcase {
    const char *yaml;
    const char *path; /* NULL = valid */
    const char *msg;
};

#define CLAIM_HEAD                                                              \
    "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, " \
    "namespace: ns1}\nspec:\n  devices:\n"
#define CLASS_HEAD "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: k}\nspec:\n"
#define SLICE_HEAD                                                                        \
    "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\nspec:\n  " \
    "driver: gpu.nvidia.com\n  pool: {name: n1, generation: 0, resourceSliceCount: 1}\n"
#define NV_PARAMS(x)                                                                     \
    CLAIM_HEAD "    requests: [{name: g, exactly: {deviceClassName: k}}]\n    config:\n" \
               "    - opaque:\n        driver: gpu.nvidia.com\n        parameters: " x "\n"

static const struct vcase vcases[] = {
    {CLASS_HEAD "  selectors: [{cel: {expression: \"device.driver == 'x'\"}}]\n", NULL, NULL},
    {CLASS_HEAD "  selectors: [{cel: {expression: \"device.driver == 'x' && devcie.y\"}}]\n",
     "spec.selectors[0].cel.expression",
     "compilation failed: 1:25: undeclared reference to 'devcie'"},
    {CLASS_HEAD "  selectors: [{cel: {expression: \"device.driver\"}}]\n",
     "spec.selectors[0].cel.expression", "must evaluate to bool"},
    {CLASS_HEAD "  selectors: [{cel: {expression: \"[0,1,2,3,4,5,6,7,8,9].all(a, "
                "[0,1,2,3,4,5,6,7,8,9].all(b, [0,1,2,3,4,5,6,7,8,9].all(c, "
                "[0,1,2,3,4,5,6,7,8,9].all(d, [0,1,2,3,4,5,6,7,8,9].all(e, "
                "[0,1,2,3,4,5,6,7,8,9].all(f, true))))))\"}}]\n",
     "spec.selectors[0].cel.expression", "too complex, exceeds cost limit"},
    {CLAIM_HEAD "    requests: [{name: g, exactly: {deviceClassName: k, selectors: [{cel: "
                "{expression: \"device.attributes['x'].y ==\"}}]}}]\n",
     "spec.devices.requests[0].exactly.selectors[0].cel.expression",
     "compilation failed: 1:28: syntax error: unexpected end of input"},
    {CLAIM_HEAD
     "    requests: [{name: g, firstAvailable: [{name: a, deviceClassName: k}, {name: b, "
     "deviceClassName: k, selectors: [{cel: {expression: \"1\"}}]}]}]\n",
     "spec.devices.requests[0].firstAvailable[1].selectors[0].cel.expression", "not int"},
    {CLAIM_HEAD "    requests: [{name: g, exactly: {deviceClassName: k}, firstAvailable: [{name: "
                "a, deviceClassName: k}]}]\n",
     "spec.devices.requests[0]", "exactly one of exactly and firstAvailable"},
    {CLAIM_HEAD
     "    requests: [{name: g, exactly: {deviceClassName: k, allocationMode: All, count: "
     "2}}]\n",
     "spec.devices.requests[0].exactly.count", "must not be set when allocationMode is All"},
    {CLAIM_HEAD "    requests: [{name: g, exactly: {deviceClassName: k}}]\n    constraints: "
                "[{matchAttribute: gpu.nvidia.com/parentUUID, requests: [g, h]}]\n",
     "spec.devices.constraints[0].requests[1]", "\"h\" is not a request of this claim"},
    {CLAIM_HEAD "    requests: [{name: g, exactly: {deviceClassName: k}}]\n    constraints: "
                "[{matchAttribute: parentUUID}]\n",
     "spec.devices.constraints[0].matchAttribute", "must include a domain"},
    {NV_PARAMS("{apiVersion: resource.nvidia.com/v1beta1, kind: GpuConfig, sharing: {strategy: "
               "MPS, mpsConfig: {defaultActiveThreadPercentage: 50, "
               "defaultPinnedDeviceMemoryLimit: 10Gi}}}"),
     NULL, NULL},
    {NV_PARAMS("{apiVersion: resource.nvidia.com/v1beta1, kind: GpuConfig, sharing: {strategy: "
               "TimeSlicing, mpsConfig: {}}}"),
     "spec.devices.config[0].opaque.parameters.sharing.mpsConfig",
     "must not be set with the TimeSlicing strategy"},
    {NV_PARAMS("{apiVersion: resource.nvidia.com/v1beta1, kind: GpuConfig, sharing: {strategy: "
               "TimeSlicing, timeSlicingConfig: {interval: Forever}}}"),
     "spec.devices.config[0].opaque.parameters.sharing.timeSlicingConfig.interval",
     "unknown time-slice interval \"Forever\""},
    {NV_PARAMS("{apiVersion: resource.nvidia.com/v1beta1, kind: GpuConfig, sharing: {strategy: "
               "MPS, mpsConfig: {defaultPinnedDeviceMemoryLimit: 100Ki}}}"),
     "spec.devices.config[0].opaque.parameters.sharing.mpsConfig.defaultPinnedDeviceMemoryLimit",
     "must be at least 1Mi"},
    {NV_PARAMS("{apiVersion: resource.nvidia.com/v1beta1, kind: MigDeviceConfig, sharing: "
               "{strategy: TimeSlicing, timeSlicingConfig: {interval: Short}}}"),
     "spec.devices.config[0].opaque.parameters.sharing.timeSlicingConfig",
     "MIG devices have no time-slicing settings"},
    {NV_PARAMS("{apiVersion: resource.nvidia.com/v1beta1, kind: GpuConfig, shareing: {}}"),
     "spec.devices.config[0].opaque.parameters.shareing", "unknown field \"shareing\""},
    {NV_PARAMS("{apiVersion: resource.nvidia.com/v1, kind: GpuConfig}"),
     "spec.devices.config[0].opaque.parameters.apiVersion", "unsupported apiVersion"},
    {NV_PARAMS("{apiVersion: resource.nvidia.com/v1beta1, kind: GpuConfig, sharing: {strategy: "
               "Fractional}}"),
     "spec.devices.config[0].opaque.parameters.sharing.strategy",
     "unknown GPU sharing strategy \"Fractional\""},
    {"apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: t, "
     "namespace: ns1}\nspec:\n  spec:\n    devices:\n      requests: [{name: g, exactly: "
     "{deviceClassName: k, selectors: [{cel: {expression: \"device.nosuch\"}}]}}]\n",
     "spec.spec.devices.requests[0].exactly.selectors[0].cel.expression",
     "undefined field 'nosuch'"},
    {SLICE_HEAD "  nodeName: a\n  devices:\n  - {name: gpu-0, attributes: {type: {string: gpu}, "
                "driverVersion: {version: 580.159.4}, fatia.dev/nvlinkIsland: {int: 0}}, "
                "capacity: {memory: {value: 141Gi}}}\n",
     NULL, NULL},
    {SLICE_HEAD "  devices: []\n", "spec",
     "exactly one of nodeName, nodeSelector, allNodes and perDeviceNodeSelection"},
    {SLICE_HEAD "  nodeName: a\n  devices:\n  - {name: gpu-0, attributes: {v: {version: '1.2'}}}\n",
     "spec.devices[0].attributes[v].version", "No Major.Minor.Patch elements found"},
    {SLICE_HEAD "  nodeName: a\n  devices:\n  - {name: gpu-0, attributes: {x: {int: 1, bool: "
                "true}}}\n",
     "spec.devices[0].attributes[x]", "exactly one of int, bool, string and version"},
    {SLICE_HEAD "  nodeName: a\n  devices:\n  - {name: gpu-0, attributes: {9bad: {int: 1}}}\n",
     "spec.devices[0].attributes[9bad]", "C identifier"},
    {SLICE_HEAD "  nodeName: a\n  devices:\n  - {name: gpu-0}\n  - {name: gpu-0}\n",
     "spec.devices[1].name", "duplicate value \"gpu-0\""},
};

static void test_validate(void **state)
{
    size_t failed = 0;
    (void)state;

    for (size_t i = 0; i < FATIA_ARRAY_SIZE(vcases); i++) {
        const struct vcase *c = &vcases[i];
        struct fatia_docset docs;
        struct fatia_diag diag;
        bool ok;
        fatia_docset_init(&docs);
        fatia_diag_init(&diag);
        assert_int_equal(fatia_docset_load_buf(&docs, "case.yaml", c->yaml, strlen(c->yaml), &diag),
                         0);
        for (size_t d = 0; d < docs.n; d++) {
            struct fatia_decode_opts o = {
                .file = "case.yaml", .map = docs.map, .pos = docs.docs[d].pos};
            struct fatia_object *obj = NULL;
            if (fatia_object_decode(docs.docs[d].root, &o, &fatia_demand_checks, &diag, &obj) == 0)
                fatia_object_free(obj);
        }
        if (!c->path) {
            ok = diag.n_errors == 0;
        } else {
            ok = diag.n_errors == 1;
            for (size_t e = 0; e < diag.n && ok; e++)
                if (diag.v[e].level == FATIA_DIAG_ERROR)
                    ok = diag.v[e].path && !strcmp(diag.v[e].path, c->path) &&
                         strstr(diag.v[e].msg, c->msg);
        }
        if (!ok) {
            fprintf(stderr, "validation case %zu: want %s: %s; got:\n", i,
                    c->path ? c->path : "(valid)", c->msg ? c->msg : "");
            fatia_diag_print(&diag, stderr);
            failed++;
        }
        fatia_diag_release(&diag);
        fatia_docset_release(&docs);
    }
    if (failed)
        fail_msg("%zu validation cases failed", failed);
}

/* The checks a decode runs are the ones its caller passes, and only those of the object's kind:
 * NULL is the schemas alone (the bad selector passes), fatia_demand_checks refuses it, and a set
 * whose check is for another kind runs nothing on a DeviceClass. */
static int other_kind_calls;

static void count_check(struct fatia_vctx *ctx, json_t *obj)
{
    (void)ctx;
    (void)obj;
    other_kind_calls++;
}

static int decode_class(const struct fatia_checks *checks, size_t *ret_errors)
{
    static const char yaml[] =
        CLASS_HEAD "  selectors: [{cel: {expression: \"device.driver == 'x' && devcie.y\"}}]\n";
    struct fatia_docset docs;
    struct fatia_diag diag;
    struct fatia_object *obj = NULL;
    int r;

    fatia_docset_init(&docs);
    fatia_diag_init(&diag);
    assert_int_equal(fatia_docset_load_buf(&docs, "c.yaml", yaml, strlen(yaml), &diag), 0);
    r = fatia_object_decode(docs.docs[0].root, &(struct fatia_decode_opts){.map = docs.map}, checks,
                            &diag, &obj);
    *ret_errors = diag.n_errors;
    fatia_object_free(obj);
    fatia_diag_release(&diag);
    fatia_docset_release(&docs);
    return r;
}

static void test_checks_explicit(void **state)
{
    static const struct fatia_check ns_only[] = {{&fatia_kind_namespace, count_check}};
    const struct fatia_checks other = {ns_only, 1};
    size_t errors;
    (void)state;

    assert_int_equal(decode_class(NULL, &errors), 0);
    assert_int_equal(errors, 0);
    assert_int_equal(decode_class(&fatia_demand_checks, &errors), -FATIA_E_INVALID);
    assert_int_equal(errors, 1);
    other_kind_calls = 0;
    assert_int_equal(decode_class(&other, &errors), 0);
    assert_int_equal(other_kind_calls, 0);
}

/* ---- golden allocation cases ---- */

struct golden {
    struct fatia_objset set;
    struct fatia_dra_inventory inv;
    struct fatia_dra_classes cls;
    struct fatia_dra_state st;
    json_t *claims; /* "ns/name" -> claim (mutable copies) */
    struct fatia_buf out;
};

static void print_allocation(struct golden *g, const char *id, const struct fatia_dra_allocation *a,
                             json_t *claim)
{
    json_t *st = fatia_dra_allocation_to_json(&g->inv, a);
    json_t *status;

    assert_non_null(st);
    fatia_buf_printf(&g->out, "%s: allocated on %s:", id, a->node ? a->node : "(no node)");
    for (size_t i = 0; i < a->n_results; i++) {
        const struct fatia_dra_device *d = &g->inv.devs[a->results[i].device];
        fatia_buf_printf(&g->out, " %s=%s%s", a->results[i].request, d->name,
                         a->results[i].admin_access ? "(admin)" : "");
    }
    fatia_buf_putc(&g->out, '\n');
    for (size_t i = 0; a->sharing && i < a->n_results; i++) {
        const struct fatia_dra_sharing *s = &a->sharing[i];
        if (s->strategy == FATIA_DRA_SHARE_NONE)
            continue;
        fatia_buf_printf(&g->out, "  sharing %s: %s", g->inv.devs[a->results[i].device].name,
                         s->strategy == FATIA_DRA_SHARE_MPS ? "MPS" : "TimeSlicing");
        if (s->interval >= 0)
            fatia_buf_printf(&g->out, " interval=%d", s->interval);
        if (s->thread_percentage >= 0)
            fatia_buf_printf(&g->out, " threads=%d%%", s->thread_percentage);
        if (s->pinned_mem)
            fatia_buf_printf(&g->out, " pinned=%" PRIu64, s->pinned_mem);
        fatia_buf_putc(&g->out, '\n');
    }
    fatia_buf_puts(&g->out, "  status.allocation: ");
    fatia_json_dump_buf(st, &g->out, JSON_COMPACT | JSON_SORT_KEYS);
    fatia_buf_putc(&g->out, '\n');
    status = fatia_json_object_ensure(claim, "status");
    json_object_set_new(status, "allocation", st);
    fatia_dra_state_commit(&g->st, a);
}

/* Allocates claim (unless already allocated); returns 0 if it is allocated afterwards. */
static int allocate(struct golden *g, const char *id, json_t *claim)
{
    struct fatia_dra_allocation *a = NULL;
    struct fatia_dra_alloc_opts opts = {0};
    struct fatia_buf why = FATIA_BUF_INIT;
    int r;

    if (fatia_dra_claim_allocated(claim))
        return 0;
    /* fatia.test/node: allocate on that node (opts.node), as placement asks */
    opts.node = fatia_json_str(fatia_json_path(claim, "metadata.annotations"), "fatia.test/node");
    r = fatia_dra_allocate(&g->inv, &g->cls, &g->st, json_object_get(claim, "spec"), &opts, &a,
                           &why);
    if (r == 0) {
        print_allocation(g, id, a, claim);
        fatia_dra_allocation_free(a);
    } else {
        fatia_buf_printf(&g->out, "%s: %s: %s\n", id, fatia_err_name(r), why.p);
    }
    fatia_buf_release(&why);
    return r;
}

static void run_pod(struct golden *g, const struct fatia_object *pod)
{
    const char *ns = pod->namespace,
               *uid = fatia_json_str(json_object_get(pod->obj, "metadata"), "uid");
    size_t i;
    json_t *pc;

    json_array_foreach(fatia_json_path(pod->obj, "spec.resourceClaims"), i, pc)
    {
        const char *entry = fatia_json_str(pc, "name");
        const char *cname = fatia_json_str(pc, "resourceClaimName");
        const char *tname = fatia_json_str(pc, "resourceClaimTemplateName");
        char key[300], id[400];
        json_t *claim;
        if (tname) {
            struct fatia_object *t = fatia_objset_get(&g->set, "ResourceClaimTemplate", ns, tname);
            assert_non_null(t);
            assert_int_equal(fatia_dra_claim_from_template(t->obj, pod->name, entry, &claim), 0);
            snprintf(key, sizeof(key), "%s/%s", ns,
                     fatia_json_str(json_object_get(claim, "metadata"), "name"));
            json_object_set_new(g->claims, key, claim);
        } else {
            snprintf(key, sizeof(key), "%s/%s", ns, cname);
            claim = json_object_get(g->claims, key);
            assert_non_null(claim);
        }
        snprintf(id, sizeof(id), "pod/%s/%s claim %s -> resourceclaim/%s", ns, pod->name, entry,
                 key);
        if (fatia_dra_claim_allocated(claim))
            fatia_buf_printf(&g->out, "%s: already allocated on %s\n", id,
                             fatia_dra_claim_node(claim) ? fatia_dra_claim_node(claim) : "-");
        if (allocate(g, id, claim) == 0) {
            assert_int_equal(fatia_dra_claim_reserve(claim, "pods", pod->name, uid), 0);
            assert_int_equal(fatia_dra_claim_reserve(claim, "pods", pod->name, uid), 0);
            fatia_buf_printf(&g->out, "  reserved for %zu pod(s)\n",
                             json_array_size(fatia_json_path(claim, "status.reservedFor")));
        }
    }
}

static bool run_case(const char *dir)
{
    char path[700], *paths[1] = {path};
    struct golden g;
    struct fatia_diag diag;
    struct fatia_object *o;
    bool ok;

    snprintf(path, sizeof(path), "%s/input.yaml", dir);
    memset(&g, 0, sizeof(g));
    fatia_objset_init(&g.set);
    fatia_dra_inventory_init(&g.inv);
    fatia_dra_classes_init(&g.cls);
    fatia_buf_init(&g.out, 0);
    g.claims = json_object();
    fatia_diag_init(&diag);
    if (fatia_objset_load(&g.set, paths, 1, false, &fatia_demand_checks, &diag) != 0) {
        fatia_diag_print(&diag, stderr);
        fail_msg("%s does not load", path);
    }
    for (size_t i = 0; (o = fatia_objset_next(&g.set, "ResourceSlice", &i));) {
        char why[256];
        if (fatia_dra_inventory_add_slice(&g.inv, o->obj, why, sizeof(why)) != 0)
            fail_msg("%s: %s", path, why);
    }
    assert_int_equal(fatia_dra_inventory_finish(&g.inv), 0);
    for (size_t i = 0; (o = fatia_objset_next(&g.set, "DeviceClass", &i));) {
        char why[256];
        if (fatia_dra_classes_add(&g.cls, o->obj, why, sizeof(why)) != 0)
            fail_msg("%s: %s", path, why);
    }
    assert_int_equal(fatia_dra_state_init(&g.st, &g.inv), 0);
    for (size_t i = 0; (o = fatia_objset_next(&g.set, "ResourceClaim", &i));) {
        char key[300];
        snprintf(key, sizeof(key), "%s/%s", o->namespace, o->name);
        json_object_set_new(g.claims, key, json_deep_copy(o->obj));
        fatia_dra_state_mark_claim(&g.st, &g.inv, o->obj);
    }
    fatia_buf_printf(&g.out, "inventory:");
    for (size_t i = 0; i < g.inv.n; i++)
        fatia_buf_printf(&g.out, " %s/%s", g.inv.devs[i].pool, g.inv.devs[i].name);
    fatia_buf_putc(&g.out, '\n');
    for (size_t i = 0; i < g.set.n; i++) {
        o = g.set.v[i];
        if (!strcmp(o->kind->kind, "ResourceClaim")) {
            char key[300], id[400];
            snprintf(key, sizeof(key), "%s/%s", o->namespace, o->name);
            snprintf(id, sizeof(id), "resourceclaim/%s", key);
            allocate(&g, id, json_object_get(g.claims, key));
        } else if (!strcmp(o->kind->kind, "Pod")) {
            run_pod(&g, o);
        }
    }
    /* the one golden runner (tests/golden/run) compares this with expected.txt */
    ok = fwrite(g.out.p, 1, g.out.len, stdout) == g.out.len;
    json_decref(g.claims);
    fatia_buf_release(&g.out);
    fatia_dra_state_release(&g.st);
    fatia_dra_classes_release(&g.cls);
    fatia_dra_inventory_release(&g.inv);
    fatia_objset_release(&g.set);
    fatia_diag_release(&diag);
    return ok;
}

/* ---- policy: denied sharing ---- */

static void test_sharing_denied(void **state)
{
    const char *yaml = "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: "
                       "s}\nspec:\n  driver: gpu.nvidia.com\n  nodeName: a\n  pool: {name: a, "
                       "generation: 1, resourceSliceCount: 1}\n  devices:\n  - {name: gpu-0, "
                       "attributes: {type: {string: gpu}}}\n";
    const char *claim = "{\"devices\": {\"requests\": [{\"name\": \"g\", \"exactly\": "
                        "{\"deviceClassName\": \"k\", \"count\": 1}}], \"config\": [{\"opaque\": "
                        "{\"driver\": \"gpu.nvidia.com\", \"parameters\": {\"apiVersion\": "
                        "\"resource.nvidia.com/v1beta1\", \"kind\": \"GpuConfig\", \"sharing\": "
                        "{\"strategy\": \"MPS\"}}}}]}}";
    json_t *slice, *spec, *cls;
    struct fatia_dra_inventory inv;
    struct fatia_dra_classes c;
    struct fatia_dra_state st;
    struct fatia_dra_alloc_opts opts = {.sharing_denied = FATIA_DRA_DENY_MPS};
    struct fatia_dra_allocation *a = NULL;
    struct fatia_buf why = FATIA_BUF_INIT;
    char err[256];
    (void)state;

    assert_int_equal(fatia_yaml_parse(yaml, strlen(yaml), &slice, err, sizeof(err)), 0);
    spec = json_loads(claim, 0, NULL);
    cls = json_pack("{s:{s:s},s:{}}", "metadata", "name", "k", "spec");
    fatia_dra_inventory_init(&inv);
    fatia_dra_classes_init(&c);
    assert_int_equal(fatia_dra_inventory_add_slice(&inv, slice, err, sizeof(err)), 0);
    assert_int_equal(fatia_dra_inventory_finish(&inv), 0);
    assert_int_equal(fatia_dra_classes_add(&c, cls, err, sizeof(err)), 0);
    assert_int_equal(fatia_dra_classes_add(&c, cls, err, sizeof(err)), -FATIA_E_EXISTS);
    assert_int_equal(fatia_dra_state_init(&st, &inv), 0);
    assert_int_equal(fatia_dra_allocate(&inv, &c, &st, spec, &opts, &a, &why), -FATIA_E_INVALID);
    assert_non_null(strstr(why.p, "MPS sharing is not allowed on this fleet"));
    fatia_buf_reset(&why);
    opts.sharing_denied = FATIA_DRA_DENY_TIMESLICING;
    assert_int_equal(fatia_dra_allocate(&inv, &c, &st, spec, &opts, &a, &why), 0);
    assert_int_equal(a->sharing[0].strategy, FATIA_DRA_SHARE_MPS);
    fatia_dra_allocation_free(a);
    /* a node filter that names another node: nothing fits */
    opts.node = "b";
    assert_int_equal(fatia_dra_allocate(&inv, &c, &st, spec, &opts, &a, &why), -FATIA_E_NOFIT);
    fatia_buf_release(&why);
    fatia_dra_state_release(&st);
    fatia_dra_classes_release(&c);
    fatia_dra_inventory_release(&inv);
    json_decref(slice);
    json_decref(spec);
    json_decref(cls);
}

/* ---- quota ---- */

static const json_t *lookup_template(void *ud, const char *ns, const char *name)
{
    (void)ns;
    return json_object_get(ud, name);
}

static void test_quota(void **state)
{
    const char *cfg = "{\"spec\": {\"resources\": {\"deviceClassMappings\": ["
                      "{\"name\": \"nvidia.com/gpu\", \"deviceClassNames\": [\"gpu.nvidia.com\"]},"
                      "{\"name\": \"example.com/mig\", \"deviceClassNames\": [\"mig.nvidia.com\","
                      " \"mig-small\"]}]}}}";
    const char *templates =
        "{\"two\": {\"spec\": {\"spec\": {\"devices\": {\"requests\": ["
        "{\"name\": \"a\", \"exactly\": {\"deviceClassName\": \"gpu.nvidia.com\", \"count\": 2}},"
        "{\"name\": \"m\", \"firstAvailable\": [{\"name\": \"x\", \"deviceClassName\": "
        "\"mig.nvidia.com\", \"count\": 1}, {\"name\": \"y\", \"deviceClassName\": \"mig-small\", "
        "\"count\": 1}]},"
        "{\"name\": \"admin\", \"exactly\": {\"deviceClassName\": \"gpu.nvidia.com\", "
        "\"adminAccess\": true}}]}}}},"
        "\"all\": {\"spec\": {\"spec\": {\"devices\": {\"requests\": [{\"name\": \"a\", "
        "\"exactly\": {\"deviceClassName\": \"gpu.nvidia.com\", \"allocationMode\": \"All\"}}]}}}},"
        "\"unmapped\": {\"spec\": {\"spec\": {\"devices\": {\"requests\": [{\"name\": \"a\", "
        "\"exactly\": {\"deviceClassName\": \"tpu\", \"count\": 1}}]}}}},"
        "\"mixed\": {\"spec\": {\"spec\": {\"devices\": {\"requests\": [{\"name\": \"a\", "
        "\"firstAvailable\": [{\"name\": \"x\", \"deviceClassName\": \"gpu.nvidia.com\", "
        "\"count\": 1}, {\"name\": \"y\", \"deviceClassName\": \"mig.nvidia.com\", \"count\": "
        "1}]}]}}}}}";
    json_t *config = json_loads(cfg, 0, NULL), *tmpl = json_loads(templates, 0, NULL);
    struct fatia_dra_mappings m;
    json_t *req = json_object(), *pod;
    char why[512];
    (void)state;

    assert_non_null(config);
    assert_non_null(tmpl);
    assert_int_equal(fatia_dra_mappings_from_config(config, &m, why, sizeof(why)), 0);
    assert_string_equal(fatia_dra_mappings_lookup(&m, "mig-small"), "example.com/mig");
    assert_null(fatia_dra_mappings_lookup(&m, "tpu"));
    pod = json_pack("{s:[{s:s,s:s},{s:s,s:s}]}", "resourceClaims", "name", "g",
                    "resourceClaimTemplateName", "two", "name", "shared", "resourceClaimName",
                    "some-claim");
    assert_int_equal(
        fatia_dra_pod_claim_requests(&m, pod, "ns", lookup_template, tmpl, req, why, sizeof(why)),
        0);
    assert_string_equal(fatia_json_str(req, "nvidia.com/gpu"), "2");
    assert_string_equal(fatia_json_str(req, "example.com/mig"), "1");
    /* adding again sums */
    assert_int_equal(
        fatia_dra_pod_claim_requests(&m, pod, "ns", lookup_template, tmpl, req, why, sizeof(why)),
        0);
    assert_string_equal(fatia_json_str(req, "nvidia.com/gpu"), "4");
    json_decref(pod);

    pod = json_pack("{s:[{s:s,s:s}]}", "resourceClaims", "name", "g", "resourceClaimTemplateName",
                    "all");
    assert_int_equal(
        fatia_dra_pod_claim_requests(&m, pod, "ns", lookup_template, tmpl, req, why, sizeof(why)),
        -EINVAL);
    assert_non_null(strstr(why, "spec.resourceClaims[0]: ResourceClaimTemplate 'all': "
                                "devices.requests[0].exactly.allocationMode: All is not "
                                "supported"));
    json_decref(pod);
    pod = json_pack("{s:[{s:s,s:s}]}", "resourceClaims", "name", "g", "resourceClaimTemplateName",
                    "unmapped");
    assert_int_equal(
        fatia_dra_pod_claim_requests(&m, pod, "ns", lookup_template, tmpl, req, why, sizeof(why)),
        -EINVAL);
    assert_non_null(strstr(why, "DeviceClass 'tpu' is not in the deviceClassMappings"));
    json_decref(pod);
    pod = json_pack("{s:[{s:s,s:s}]}", "resourceClaims", "name", "g", "resourceClaimTemplateName",
                    "mixed");
    assert_int_equal(
        fatia_dra_pod_claim_requests(&m, pod, "ns", lookup_template, tmpl, req, why, sizeof(why)),
        -EINVAL);
    assert_non_null(strstr(why, "every alternative must map to 'nvidia.com/gpu'"));
    json_decref(pod);
    pod = json_pack("{s:[{s:s,s:s}]}", "resourceClaims", "name", "g", "resourceClaimTemplateName",
                    "missing");
    assert_int_equal(
        fatia_dra_pod_claim_requests(&m, pod, "ns", lookup_template, tmpl, req, why, sizeof(why)),
        -EINVAL);
    assert_non_null(strstr(why, "ResourceClaimTemplate 'ns/missing' not found"));
    json_decref(pod);
    /* a Workload: per podSet, per pod */
    {
        json_t *wl = json_pack("{s:{s:s},s:{s:[{s:s,s:{s:{s:[{s:s,s:s}]}}},{s:s,s:{s:{}}},"
                               "{s:s,s:{s:{s:[{s:s,s:s}]}}}]}}",
                               "metadata", "namespace", "ns", "spec", "podSets", "name", "workers",
                               "template", "spec", "resourceClaims", "name", "g",
                               "resourceClaimTemplateName", "two", "name", "launcher", "template",
                               "spec", "name", "bad", "template", "spec", "resourceClaims", "name",
                               "g", "resourceClaimTemplateName", "all");
        json_t *per = NULL;
        assert_non_null(wl);
        assert_int_equal(fatia_dra_workload_claim_requests(&m, wl, lookup_template, tmpl, &per, why,
                                                           sizeof(why)),
                         -EINVAL);
        assert_non_null(strstr(why, "spec.podSets[2].template.spec.resourceClaims[0]"));
        json_array_remove(fatia_json_path(wl, "spec.podSets"), 2);
        assert_int_equal(fatia_dra_workload_claim_requests(&m, wl, lookup_template, tmpl, &per, why,
                                                           sizeof(why)),
                         0);
        assert_string_equal(fatia_json_str(json_object_get(per, "workers"), "nvidia.com/gpu"), "2");
        assert_null(json_object_get(per, "launcher"));
        json_decref(per);
        json_decref(wl);
    }
    fatia_dra_mappings_release(&m);

    /* a class mapped twice is an error */
    json_decref(config);
    config = json_loads("[{\"name\": \"a\", \"deviceClassNames\": [\"k\"]}, {\"name\": \"b\", "
                        "\"deviceClassNames\": [\"k\"]}]",
                        0, NULL);
    assert_int_equal(fatia_dra_mappings_parse(config, &m, why, sizeof(why)), -EINVAL);
    assert_non_null(strstr(why, "DeviceClass 'k' already maps to 'a'"));
    json_decref(config);
    json_decref(tmpl);
    json_decref(req);
}

int main(int argc, char **argv)
{
    /* tests/golden/run (suite "claims") calls `test_dra --golden CASE_DIR` for each case: the output
     * goes to stdout, the runner compares it with expected.txt */
    if (argc == 3 && !strcmp(argv[1], "--golden")) {
        return run_case(argv[2]) ? 0 : 1;
    }
    (void)argc;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validate),
        cmocka_unit_test(test_checks_explicit),
        cmocka_unit_test(test_sharing_denied),
        cmocka_unit_test(test_quota),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/unit/test_protobuf.c: the Kubernetes protobuf codec (apiserver/protobuf.h).
 *
 *   - real clients: the bodies kubectl 1.33 sends in protobuf for `kubectl create namespace`,
 *     `job`, `deployment`, ... (tests/data/protobuf/, the .pb files, captured from its requests) decode to
 *     the JSON kubectl 1.27 sends for the same command (the .json files), Go's zero values aside;
 *   - every served built-in kind (each kind of the registry that has a message) round-trips a
 *     full object, JSON -> protobuf -> JSON, unchanged: Times, MicroTimes, Quantities,
 *     IntOrStrings, maps, bytes, nested lists;
 *   - the envelope: magic, typeMeta, a kind without a message (a custom resource) is -ENOENT;
 *   - hostile input: truncated and malformed messages, wrong wire types, nesting, huge lengths
 *     fail cleanly; every prefix of a valid body is either decoded or refused, never read past;
 *   - Accept negotiation as kube-apiserver's (q, order, as=Table).
 */
#include "base/compat.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "apiserver/protobuf.h"
#include "base/alloc.h"
#include "model/kind.h"

static json_t *J(const char *s)
{
    json_error_t e;
    json_t *v = json_loads(s, 0, &e);
    if (!v)
        fail_msg("bad JSON in the test: %s: %s", e.text, s);
    return v;
}

static char *slurp(const char *path, size_t *ret_n)
{
    FILE *f = fopen(path, "rb");
    char *p;
    long n;

    if (!f)
        fail_msg("%s: cannot open", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    p = malloc((size_t)n + 1);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
    p[n] = '\0';
    fclose(f);
    *ret_n = (size_t)n;
    return p;
}

/* Go's zero values out of a tree: what omitempty leaves out of a JSON body. */
static void drop_zeros(json_t *v)
{
    const char *k;
    json_t *e;
    void *tmp;
    size_t i;

    if (json_is_array(v)) {
        json_array_foreach(v, i, e) drop_zeros(e);
        return;
    }
    if (!json_is_object(v))
        return;
    json_object_foreach_safe(v, tmp, k, e)
    {
        drop_zeros(e);
        if (json_is_null(e) || json_is_false(e) || (json_is_integer(e) && !json_integer_value(e)) ||
            (json_is_string(e) && !json_string_length(e)) ||
            (json_is_object(e) && !json_object_size(e)))
            json_object_del(v, k);
    }
}

static void assert_same(json_t *got, json_t *want, const char *what)
{
    if (!json_equal(got, want)) {
        char *g = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT);
        char *w = json_dumps(want, JSON_SORT_KEYS | JSON_COMPACT);
        fail_msg("%s:\n got  %s\n want %s", what, g, w);
    }
}

static void test_kubectl_bodies(void **state)
{
    static const char *const names[] = {
        "namespaces",           "jobs",           "cronjobs",     "deployments",
        "configmaps",           "secrets",        "services",     "serviceaccounts",
        "priorityclasses",      "resourcequotas", "rolebindings", "clusterrolebindings",
        "poddisruptionbudgets",
    };
    (void)state;

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char path[256], why[256];
        size_t n, jn;
        char *pb, *js;
        json_t *got, *want, *again;
        struct fatia_buf b = FATIA_BUF_INIT;

        snprintf(path, sizeof(path), "tests/data/protobuf/kubectl-create-%s.pb", names[i]);
        pb = slurp(path, &n);
        snprintf(path, sizeof(path), "tests/data/protobuf/kubectl-create-%s.json", names[i]);
        js = slurp(path, &jn);
        if (fatia_api_pb_unwrap(pb, n, &got, why, sizeof(why)) < 0)
            fail_msg("%s: %s", names[i], why);
        want = J(js);
        drop_zeros(got);
        drop_zeros(want);
        assert_same(got, want, names[i]);

        /* and back: our encoding of it decodes to the same tree */
        assert_int_equal(fatia_api_pb_wrap(got, &b), 0);
        assert_int_equal(fatia_api_pb_unwrap(b.p, b.len, &again, why, sizeof(why)), 0);
        drop_zeros(again);
        assert_same(again, want, names[i]);
        json_decref(got);
        json_decref(want);
        json_decref(again);
        fatia_buf_release(&b);
        free(pb);
        free(js);
    }
}

/* One full object per served built-in kind; kinds without one get a metadata-only object. */
static const struct {
    const char *kind;
    const char *json;
} samples[] = {
    {"Namespace",
     "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"team-a\","
     "\"uid\":\"5d3c\",\"resourceVersion\":\"12\",\"generation\":1,"
     "\"creationTimestamp\":\"2026-01-02T03:04:05Z\",\"labels\":{\"a\":\"b\","
     "\"kubernetes.io/metadata.name\":\"team-a\"},\"annotations\":{\"x\":\"\"},"
     "\"finalizers\":[\"f/one\"],\"managedFields\":[{\"manager\":\"kubectl\","
     "\"operation\":\"Update\",\"apiVersion\":\"v1\",\"time\":"
     "\"2026-01-02T03:04:05Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\""
     ":{\"f:labels\":{\".\":{}}}}}]},\"spec\":{\"finalizers\":[\"kubernetes\"]},"
     "\"status\":{\"phase\":\"Active\"}}"},
    {"Node", "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"box-0\"},\"spec\":{"
             "\"unschedulable\":true,\"taints\":[{\"key\":\"k\",\"value\":\"v\",\"effect\":"
             "\"NoSchedule\",\"timeAdded\":\"2026-01-02T03:04:05Z\"}]},\"status\":{\"capacity\":{"
             "\"cpu\":\"16\",\"memory\":\"128Gi\",\"nvidia.com/gpu\":\"8\"},\"allocatable\":{"
             "\"cpu\":\"15500m\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
             "\"lastHeartbeatTime\":\"2026-01-02T03:04:05Z\",\"lastTransitionTime\":"
             "\"2026-01-02T03:04:06Z\",\"reason\":\"KubeletReady\",\"message\":\"ok\"}],"
             "\"addresses\":[{\"type\":\"Hostname\",\"address\":\"box-0\"}],\"nodeInfo\":{"
             "\"machineID\":\"m\",\"systemUUID\":\"s\",\"bootID\":\"b\",\"kernelVersion\":\"6.1\","
             "\"osImage\":\"Debian\",\"containerRuntimeVersion\":\"fatia://process\","
             "\"kubeletVersion\":\"v1.33.0-fatia\",\"kubeProxyVersion\":\"\",\"operatingSystem\":"
             "\"linux\",\"architecture\":\"amd64\"}}}"},
    {"Pod",
     "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"n\","
     "\"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":\"j\","
     "\"uid\":\"u\",\"controller\":true,\"blockOwnerDeletion\":true}]},\"spec\":{"
     "\"restartPolicy\":\"Never\",\"nodeName\":\"box-0\",\"terminationGracePeriodSeconds\":30,"
     "\"nodeSelector\":{\"a\":\"b\"},\"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\","
     "\"effect\":\"NoExecute\",\"tolerationSeconds\":300}],\"containers\":[{\"name\":\"c\","
     "\"image\":\"busybox\",\"command\":[\"sh\",\"-c\"],\"args\":[\"echo hi\"],\"env\":[{"
     "\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"valueFrom\":{\"fieldRef\":{"
     "\"fieldPath\":\"metadata.name\"}}}],\"ports\":[{\"name\":\"http\",\"containerPort\":"
     "8080,\"protocol\":\"TCP\"}],\"resources\":{\"requests\":{\"cpu\":\"500m\","
     "\"nvidia.com/gpu\":\"1\"},\"limits\":{\"nvidia.com/gpu\":\"1\"}},\"readinessProbe\":{"
     "\"httpGet\":{\"path\":\"/\",\"port\":\"http\"},\"periodSeconds\":5},\"livenessProbe\":{"
     "\"tcpSocket\":{\"port\":8080}},\"securityContext\":{\"runAsUser\":1000,"
     "\"runAsNonRoot\":true,\"allowPrivilegeEscalation\":false},\"stdin\":true,\"tty\":true}"
     "]},\"status\":{\"phase\":\"Running\",\"startTime\":\"2026-01-02T03:04:05Z\",\"podIP\":"
     "\"10.0.0.1\",\"containerStatuses\":[{\"name\":\"c\",\"ready\":true,\"restartCount\":2,"
     "\"image\":\"busybox\",\"imageID\":\"\",\"state\":{\"running\":{\"startedAt\":"
     "\"2026-01-02T03:04:05Z\"}},\"lastState\":{\"terminated\":{\"exitCode\":137,\"reason\":"
     "\"OOMKilled\",\"signal\":9}}}]}}"},
    {"Event",
     "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"e.1\",\"namespace\":"
     "\"n\"},\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p\",\"namespace\":\"n\","
     "\"uid\":\"u\",\"fieldPath\":\"spec.containers{c}\"},\"reason\":\"Started\","
     "\"message\":\"m\",\"type\":\"Normal\",\"count\":3,\"firstTimestamp\":"
     "\"2026-01-02T03:04:05Z\",\"lastTimestamp\":\"2026-01-02T03:04:07Z\",\"eventTime\":"
     "\"2026-01-02T03:04:05.123456Z\",\"series\":{\"count\":2,\"lastObservedTime\":"
     "\"2026-01-02T03:04:09.000001Z\"},\"source\":{\"component\":\"c\",\"host\":\"h\"},"
     "\"reportingComponent\":\"rc\",\"reportingInstance\":\"ri\",\"action\":\"Run\"}"},
    {"Job",
     "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"j\",\"namespace\":"
     "\"n\",\"labels\":{\"kueue.x-k8s.io/queue-name\":\"q\"}},\"spec\":{\"parallelism\":2,"
     "\"completions\":4,\"backoffLimit\":0,\"suspend\":false,\"ttlSecondsAfterFinished\":0,"
     "\"activeDeadlineSeconds\":600,\"completionMode\":\"Indexed\",\"selector\":{"
     "\"matchLabels\":{\"a\":\"b\"},\"matchExpressions\":[{\"key\":\"k\",\"operator\":\"In\","
     "\"values\":[\"x\",\"y\"]}]},\"podFailurePolicy\":{\"rules\":[{\"action\":\"Ignore\","
     "\"onExitCodes\":{\"operator\":\"In\",\"values\":[1,2,3]}}]},\"template\":{\"metadata\":"
     "{\"labels\":{\"a\":\"b\"}},\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{"
     "\"name\":\"c\",\"image\":\"i\"}]}}},\"status\":{\"active\":1,\"succeeded\":0,"
     "\"startTime\":\"2026-01-02T03:04:05Z\",\"conditions\":[{\"type\":\"Suspended\","
     "\"status\":\"False\",\"lastProbeTime\":\"2026-01-02T03:04:05Z\"}]}}"},
    {"DeviceClass",
     "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{"
     "\"name\":\"gpu.nvidia.com\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":"
     "\"device.driver == 'gpu.nvidia.com'\"}}]}}"},
    {"ResourceSlice",
     "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":"
     "\"box-0-gpu\"},\"spec\":{\"driver\":\"gpu.nvidia.com\",\"nodeName\":\"box-0\",\"pool\":{"
     "\"name\":\"box-0\",\"generation\":3,\"resourceSliceCount\":1},\"devices\":[{\"name\":"
     "\"gpu-0\",\"attributes\":{\"uuid\":{\"string\":\"GPU-1\"},\"index\":{\"int\":0},\"mig\":{"
     "\"bool\":false},\"driverVersion\":{\"version\":\"550.0.0\"}},\"capacity\":{\"memory\":{"
     "\"value\":\"141Gi\"}}}]}}"},
    {"ResourceClaim",
     "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"
     "\"c\",\"namespace\":\"n\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\","
     "\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\",\"allocationMode\":\"ExactCount\","
     "\"count\":2}}]}},\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\","
     "\"driver\":\"gpu.nvidia.com\",\"pool\":\"box-0\",\"device\":\"gpu-0\"}]}},\"reservedFor\":[{"
     "\"resource\":\"pods\",\"name\":\"p\",\"uid\":\"u\"}]}}"},
    {"ResourceClaimTemplate",
     "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaimTemplate\",\"metadata\":{"
     "\"name\":\"t\",\"namespace\":\"n\"},\"spec\":{\"metadata\":{\"labels\":{\"a\":\"b\"}},"
     "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":"
     "\"gpu.nvidia.com\"}}]}}}}"},
    {"Secret", "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"s\"},\"type\":"
               "\"Opaque\",\"data\":{\"k\":\"dmFsdWU=\",\"two\":\"YWI=\",\"empty\":\"\"}}"},
};

static void test_served_kinds_round_trip(void **state)
{
    size_t served = 0;
    (void)state;

    for (const struct fatia_kind *const *kp = fatia_kinds; *kp; kp++) {
        const struct fatia_kind *k = *kp;
        char av[128], why[256], generic[512];
        const char *text = NULL;
        json_t *obj, *back;
        struct fatia_buf b = FATIA_BUF_INIT;

        snprintf(av, sizeof(av), "%s%s%s", k->group, *k->group ? "/" : "", k->version);
        if (!fatia_api_pb_for_kind(av, k->kind))
            continue; /* JSON only: not a built-in kind */
        served++;
        for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++)
            if (!strcmp(samples[i].kind, k->kind))
                text = samples[i].json;
        if (!text) {
            snprintf(generic, sizeof(generic),
                     "{\"apiVersion\":\"%s\",\"kind\":\"%s\",\"metadata\":{\"name\":\"x\","
                     "\"namespace\":\"n\",\"labels\":{\"a\":\"b\"},\"creationTimestamp\":"
                     "\"2026-01-02T03:04:05Z\"}}",
                     av, k->kind);
            text = generic;
            print_message("protobuf: %s has no full sample here (metadata only)\n", k->kind);
        }
        obj = J(text);
        if (fatia_api_pb_wrap(obj, &b) < 0)
            fail_msg("%s: encode failed", k->kind);
        assert_memory_equal(b.p, "k8s\0", 4);
        if (fatia_api_pb_unwrap(b.p, b.len, &back, why, sizeof(why)) < 0)
            fail_msg("%s: decode failed: %s", k->kind, why);
        /* Go's JSON would leave empty strings out: the decoder does too */
        drop_zeros(obj);
        drop_zeros(back);
        assert_same(back, obj, k->kind);
        json_decref(obj);
        json_decref(back);
        fatia_buf_release(&b);
    }
    assert_true(served >= 9); /* Namespace, Node, Pod, Event, Job and the 4 DRA kinds at least */
}

/* Zero and explicit values the JSON form must keep: 0 and false of pointer fields, Times. */
static void test_values(void **state)
{
    const struct fatia_pb_msg *m = fatia_api_pb_find("k8s.io.api.batch.v1.JobSpec");
    struct fatia_buf b = FATIA_BUF_INIT;
    json_t *v = J("{\"backoffLimit\":0,\"suspend\":false,\"parallelism\":-1}"), *back;
    char why[128];
    (void)state;

    assert_non_null(m);
    assert_int_equal(fatia_api_pb_encode(m, v, &b), 0);
    assert_int_equal(fatia_api_pb_decode(m, b.p, b.len, &back, why, sizeof(why)), 0);
    assert_same(back, v, "JobSpec zeros");
    json_decref(back);
    json_decref(v);
    fatia_buf_release(&b);

    /* Time is whole seconds; MicroTime keeps microseconds; Duration is Go's string */
    m = fatia_api_pb_find("k8s.io.apimachinery.pkg.apis.meta.v1.Duration");
    assert_non_null(m);
    static const char *const durations[] = {"0s", "1h2m3s", "1.5s", "90m0s", "2m0.001s", "500ms"};
    static const char *const canon[] = {"0s", "1h2m3s", "1.5s", "1h30m0s", "2m0.001s", "500ms"};
    for (size_t i = 0; i < sizeof(durations) / sizeof(durations[0]); i++) {
        json_t *d = json_string(durations[i]);
        fatia_buf_reset(&b);
        assert_int_equal(fatia_api_pb_encode(m, d, &b), 0);
        assert_int_equal(fatia_api_pb_decode(m, b.p, b.len, &back, why, sizeof(why)), 0);
        assert_string_equal(json_string_value(back), canon[i]);
        json_decref(back);
        json_decref(d);
    }
    fatia_buf_release(&b);
}

static void test_envelope(void **state)
{
    char why[256];
    json_t *v;
    struct fatia_buf b = FATIA_BUF_INIT;
    json_t *cr = J("{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"ClusterQueue\","
                   "\"metadata\":{\"name\":\"a\"}}");
    json_t *st = J("{\"apiVersion\":\"v1\",\"kind\":\"Status\",\"metadata\":{},\"status\":"
                   "\"Failure\",\"message\":\"jobs.batch \\\"j\\\" already exists\",\"reason\":"
                   "\"AlreadyExists\",\"details\":{\"name\":\"j\",\"group\":\"batch\",\"kind\":"
                   "\"jobs\"},\"code\":409}");
    (void)state;

    assert_int_equal(fatia_api_pb_wrap(cr, &b), -ENOENT);
    assert_int_equal(b.len, 0);
    assert_int_equal(fatia_api_pb_unwrap("{}", 2, &v, why, sizeof(why)), -EINVAL);
    assert_non_null(strstr(why, "107 56 115 0"));
    /* a CR in protobuf: the kind has no message */
    assert_int_equal(fatia_api_pb_unwrap("k8s\0\x0a\x26\x0a\x16kueue.x-k8s.io/v1beta2\x12\x0c"
                                         "ClusterQueue",
                                         44, &v, why, sizeof(why)),
                     -ENOENT);
    assert_non_null(strstr(why, "ClusterQueue"));
    /* Status, the error answer, in and out */
    assert_int_equal(fatia_api_pb_wrap(st, &b), 0);
    assert_int_equal(fatia_api_pb_unwrap(b.p, b.len, &v, why, sizeof(why)), 0);
    assert_same(v, st, "Status");
    json_decref(v);
    json_decref(st);
    json_decref(cr);
    fatia_buf_release(&b);
}

static void test_hostile(void **state)
{
    const struct fatia_pb_msg *pod = fatia_api_pb_find("k8s.io.api.core.v1.Pod");
    char why[256];
    json_t *v;
    struct fatia_buf b = FATIA_BUF_INIT;
    json_t *obj = J(samples[2].json);
    (void)state;

    /* every prefix of a valid body: decoded or refused, never read past (ASan in CI's fuzz) */
    assert_int_equal(fatia_api_pb_wrap(obj, &b), 0);
    for (size_t n = 0; n < b.len; n++) {
        char *copy = malloc(n ? n : 1);
        memcpy(copy, b.p, n);
        if (fatia_api_pb_unwrap(copy, n, &v, why, sizeof(why)) == 0)
            json_decref(v);
        free(copy);
    }
    /* a length past the end, a varint of 11 bytes, a group, a wrong wire type */
    assert_int_equal(fatia_api_pb_decode(pod, "\x0a\x7f", 2, &v, why, sizeof(why)), -EINVAL);
    assert_int_equal(fatia_api_pb_decode(pod, "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
                                         12, &v, why, sizeof(why)),
                     -EINVAL);
    assert_int_equal(fatia_api_pb_decode(pod, "\x0b", 1, &v, why, sizeof(why)), -EINVAL);
    assert_int_equal(fatia_api_pb_decode(pod, "\x08\x01", 2, &v, why, sizeof(why)), -EINVAL);
    assert_non_null(strstr(why, "metadata"));
    /* field number 0 */
    assert_int_equal(fatia_api_pb_decode(pod, "\x02\x00", 2, &v, why, sizeof(why)), -EINVAL);
    /* an unknown field is skipped */
    assert_int_equal(fatia_api_pb_decode(pod, "\xa8\x1f\x05", 3, &v, why, sizeof(why)), 0);
    assert_int_equal(json_object_size(v), 0);
    json_decref(v);
    /* invalid UTF-8 in a string */
    assert_int_equal(fatia_api_pb_decode(fatia_api_pb_find("k8s.io.apimachinery.pkg.apis.meta.v1"
                                                           ".ObjectMeta"),
                                         "\x0a\x02\xc3\x28", 4, &v, why, sizeof(why)),
                     -EINVAL);
    /* (nesting: no message of the tables is recursive, so a body nests no deeper than the
     * schema; the decoder's depth bound stays as a guard, and embedded JSON goes through the
     * body limits in handlers.c) */
    json_decref(obj);
    fatia_buf_release(&b);
}

static void test_accept(void **state)
{
    static const struct {
        const char *accept;
        bool pb;
    } cases[] = {
        {"application/vnd.kubernetes.protobuf,application/json", true},
        {"application/vnd.kubernetes.protobuf", true},
        {"application/json, application/vnd.kubernetes.protobuf", false},
        {"application/json;q=0.5, application/vnd.kubernetes.protobuf", true},
        {"application/vnd.kubernetes.protobuf;q=0, application/json", false},
        {"application/json;as=Table;v=v1;g=meta.k8s.io,application/json", false},
        {"application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json",
         false},
        {"*/*", false},
        {"", false},
        {"text/html, application/vnd.kubernetes.protobuf", true},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (fatia_api_pb_accepted(cases[i].accept, strlen(cases[i].accept)) != cases[i].pb)
            fail_msg("Accept: %s: want %s", cases[i].accept, cases[i].pb ? "protobuf" : "JSON");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kubectl_bodies), cmocka_unit_test(test_served_kinds_round_trip),
        cmocka_unit_test(test_values),         cmocka_unit_test(test_envelope),
        cmocka_unit_test(test_hostile),        cmocka_unit_test(test_accept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/agent/test_podrefs.c: ConfigMaps and Secrets in a container's environment (env
 * valueFrom configMapKeyRef / secretKeyRef, envFrom with prefix, optional), as kubelet's
 * makeEnvironmentVariables: missing objects and keys, base64 decoding, the lookup confined to
 * the pod's namespace, and no value ever in an error message; and the downward API's
 * status.podIP: 127.0.0.1 for processes, the runtime's stand-in for a container (podrefs.h).
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <string.h>

#include "agent/podrefs.h"
#include "agent/podspec.h"
#include "base/alloc.h"
#include "base/error.h"

/* the objects of namespace "ns" only, as the agent's lookup gives them */
static json_t *objs;

static const json_t *get(void *ctx, bool secret, const char *name)
{
    const json_t *by = json_object_get(objs, secret ? "Secret" : "ConfigMap");
    (void)ctx;
    return json_object_get(by, name);
}

static const struct fatia_podrefs refs = {.get = get, .ns = "ns"};

static json_t *pod_env(const char *env, const char *from)
{
    json_error_t je;
    json_t *pod = json_pack("{s:s,s:{s:s,s:s},s:{s:[{s:s}]}}", "kind", "Pod", "metadata", "name",
                            "p", "namespace", "ns", "spec", "containers", "name", "main");
    json_t *c = json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0);
    if (env)
        json_object_set_new(c, "env", json_loads(env, 0, &je));
    if (from)
        json_object_set_new(c, "envFrom", json_loads(from, 0, &je));
    return pod;
}

static int run(const char *env, const char *from, struct fatia_env *e, char *why, size_t n)
{
    json_t *pod = pod_env(env, from);
    const json_t *c =
        json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0);
    int r;

    why[0] = '\0';
    r = fatia_podspec_env_refs(pod, c, NULL, &refs, e, why, n);
    json_decref(pod);
    return r;
}

static int setup(void **state)
{
    json_error_t je;
    (void)state;
    /* "c2VjcmV0LXB3" is base64 of "secret-pw"; "aGk=" of "hi" */
    objs = json_loads("{\"ConfigMap\":{\"cfg\":{\"data\":{\"mode\":\"fast\",\"LEVEL\":\"3\"},"
                      "\"binaryData\":{\"blob\":\"aGk=\"}}},"
                      "\"Secret\":{\"db\":{\"data\":{\"pw\":\"c2VjcmV0LXB3\",\"USER\":\"YWRt\"}},"
                      "\"bad\":{\"data\":{\"k\":\"!!!\"}}}}",
                      0, &je);
    return objs ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    json_decref(objs);
    return 0;
}

static void test_key_refs(void **state)
{
    struct fatia_env e = {0};
    char why[300];

    (void)state;
    assert_int_equal(
        run("[{\"name\":\"M\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"cfg\",\"key\":"
            "\"mode\"}}},{\"name\":\"P\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"db\","
            "\"key\":\"pw\"}}},{\"name\":\"B\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":"
            "\"cfg\",\"key\":\"blob\"}}},{\"name\":\"X\",\"value\":\"$(P)-$(M)\"}]",
            NULL, &e, why, sizeof(why)),
        0);
    assert_string_equal(fatia_env_get(&e, "M"), "fast");
    assert_string_equal(fatia_env_get(&e, "P"), "secret-pw");
    assert_string_equal(fatia_env_get(&e, "B"), "hi");
    assert_string_equal(fatia_env_get(&e, "X"), "secret-pw-fast");
    fatia_env_release(&e);
}

static void test_missing(void **state)
{
    struct fatia_env e = {0};
    char why[300];

    (void)state;
    assert_int_equal(run("[{\"name\":\"M\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"nope\","
                         "\"key\":\"mode\"}}}]",
                         NULL, &e, why, sizeof(why)),
                     -ESRCH);
    assert_string_equal(why, "configmap \"nope\" not found");
    fatia_env_release(&e);
    assert_int_equal(run("[{\"name\":\"P\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"db\","
                         "\"key\":\"nokey\"}}}]",
                         NULL, &e, why, sizeof(why)),
                     -ESRCH);
    assert_string_equal(why, "couldn't find key nokey in Secret ns/db");
    fatia_env_release(&e);
    /* optional: a missing object or key leaves the variable unset */
    assert_int_equal(run("[{\"name\":\"P\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"db\","
                         "\"key\":\"nokey\",\"optional\":true}}},{\"name\":\"Q\",\"valueFrom\":{"
                         "\"configMapKeyRef\":{\"name\":\"nope\",\"key\":\"k\",\"optional\":"
                         "true}}}]",
                         "[{\"secretRef\":{\"name\":\"gone\",\"optional\":true}}]", &e, why,
                         sizeof(why)),
                     0);
    assert_null(fatia_env_get(&e, "P"));
    assert_null(fatia_env_get(&e, "Q"));
    fatia_env_release(&e);
    assert_int_equal(run(NULL, "[{\"secretRef\":{\"name\":\"gone\"}}]", &e, why, sizeof(why)),
                     -ESRCH);
    assert_string_equal(why, "secret \"gone\" not found");
    fatia_env_release(&e);
    /* a stored value that is not base64 is an error that names the key, not the value */
    assert_int_equal(run("[{\"name\":\"K\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"bad\","
                         "\"key\":\"k\"}}}]",
                         NULL, &e, why, sizeof(why)),
                     -FATIA_E_INVALID);
    assert_null(strstr(why, "!!!"));
    fatia_env_release(&e);
}

static void test_env_from(void **state)
{
    struct fatia_env e = {0};
    char why[300];

    (void)state;
    /* envFrom first, then env overrides, as kubelet */
    assert_int_equal(run("[{\"name\":\"C_mode\",\"value\":\"mine\"}]",
                         "[{\"configMapRef\":{\"name\":\"cfg\"},\"prefix\":\"C_\"},"
                         "{\"secretRef\":{\"name\":\"db\"}}]",
                         &e, why, sizeof(why)),
                     0);
    assert_string_equal(fatia_env_get(&e, "C_mode"), "mine");
    assert_string_equal(fatia_env_get(&e, "C_LEVEL"), "3");
    assert_null(fatia_env_get(&e, "C_blob")); /* binaryData is not in envFrom */
    assert_string_equal(fatia_env_get(&e, "USER"), "adm");
    assert_string_equal(fatia_env_get(&e, "pw"), "secret-pw");
    fatia_env_release(&e);
}

/* status.podIP: the host's loopback without pod_ip (processes), else pod_ip (a container's
 * stand-in, filled in by oci.c), in $(VAR) expansion too; status.hostIP is the host's either way */
static void test_pod_ip(void **state)
{
    static const char *env = "[{\"name\":\"POD_IP\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":"
                             "\"status.podIP\"}}},{\"name\":\"H\",\"valueFrom\":{\"fieldRef\":"
                             "{\"fieldPath\":\"status.hostIP\"}}},{\"name\":\"L\",\"value\":"
                             "\"$(POD_IP):8000\"}]";
    struct fatia_podrefs ctr = refs;
    json_t *pod = pod_env(env, NULL);
    const json_t *c =
        json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0);
    struct fatia_env e = {0};
    char why[300];

    (void)state;
    assert_int_equal(run(env, NULL, &e, why, sizeof(why)), 0);
    assert_string_equal(fatia_env_get(&e, "POD_IP"), "127.0.0.1");
    assert_string_equal(fatia_env_get(&e, "L"), "127.0.0.1:8000");
    fatia_env_release(&e);
    ctr.pod_ip = "{{ip}}";
    assert_int_equal(fatia_podspec_env_refs(pod, c, NULL, &ctr, &e, why, sizeof(why)), 0);
    assert_string_equal(fatia_env_get(&e, "POD_IP"), "{{ip}}");
    assert_string_equal(fatia_env_get(&e, "L"), "{{ip}}:8000");
    assert_string_equal(fatia_env_get(&e, "H"), "127.0.0.1");
    fatia_env_release(&e);
    json_decref(pod);
}

static void test_b64(void **state)
{
    char *s;
    size_t n;

    (void)state;
    assert_int_equal(fatia_pod_ref_b64_decode("YWJj", &s, &n), 0);
    assert_int_equal(n, 3);
    assert_string_equal(s, "abc");
    fatia_free(s);
    assert_int_equal(fatia_pod_ref_b64_decode("YQ==", &s, &n), 0);
    assert_string_equal(s, "a");
    fatia_free(s);
    assert_int_equal(fatia_pod_ref_b64_decode("", &s, &n), 0);
    assert_int_equal(n, 0);
    fatia_free(s);
    assert_int_equal(fatia_pod_ref_b64_decode("YQ=a", &s, &n), -FATIA_E_INVALID);
    assert_int_equal(fatia_pod_ref_b64_decode("Y===", &s, &n), -FATIA_E_INVALID);
    assert_int_equal(fatia_pod_ref_b64_decode("YQ==YQ==", &s, &n), -FATIA_E_INVALID);
    assert_int_equal(fatia_pod_ref_b64_decode("YQ", &s, &n), -FATIA_E_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_refs), cmocka_unit_test(test_missing),
        cmocka_unit_test(test_env_from), cmocka_unit_test(test_b64),
        cmocka_unit_test(test_pod_ip),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

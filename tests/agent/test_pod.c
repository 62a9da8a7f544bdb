/*
 * tests/agent/test_pod.c: the node agent's pure parts: the fatia.dev/devices contract and the
 * variables each slice kind gives a container, environments ($(VAR) expansion, the downward API,
 * ConfigMap references), command lines, limits, the pod status built from a shim's record, CRI
 * log entries, the namespace uid map, kubelet's cpu weight, the host ports of a pod.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/cgroup.h"
#include "agent/crilog.h"
#include "agent/podspec.h"
#include "agent/podstatus.h"
#include "agent/uidmap.h"
#include "base/error.h"

static json_t *pod_with(const char *devices)
{
    json_error_t je;
    json_t *pod = json_loads(
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\","
        "\"uid\":\"u-1\",\"labels\":{\"app\":\"web\"},\"annotations\":{}},"
        "\"spec\":{\"nodeName\":\"node-0\",\"containers\":["
        "{\"name\":\"main\",\"image\":\"img:1\",\"command\":[\"run\"],\"args\":[\"$(A)\",\"$$(A)\","
        "\"$(NOPE)\"],\"env\":[{\"name\":\"A\",\"value\":\"a\"},{\"name\":\"B\",\"value\":\"x$(A)"
        "y\"},"
        "{\"name\":\"N\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}},"
        "{\"name\":\"L\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.labels['app']\"}}},"
        "{\"name\":\"NODE\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"spec.nodeName\"}}},"
        "{\"name\":\"MEM\",\"valueFrom\":{\"resourceFieldRef\":{\"resource\":\"limits.memory\","
        "\"divisor\":\"1Mi\"}}},"
        "{\"name\":\"LD_PRELOAD\",\"value\":\"/own.so\"},"
        "{\"name\":\"CUDA_VISIBLE_DEVICES\",\"value\":\"all\"}],"
        "\"resources\":{\"limits\":{\"memory\":\"64Mi\",\"cpu\":\"500m\"},\"requests\":{\"cpu\":"
        "\"250m\"}}},"
        "{\"name\":\"side\",\"args\":[\"/bin/"
        "side\"],\"resources\":{\"limits\":{\"memory\":\"1Gi\"}}}"
        "]}}",
        0, &je);

    assert_non_null(pod);
    if (devices)
        json_object_set_new(json_object_get(json_object_get(pod, "metadata"), "annotations"),
                            FATIA_ANN_DEVICES, json_string(devices));
    return pod;
}

static const json_t *container(const json_t *pod, int i)
{
    return json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), (size_t)i);
}

static void test_env_and_argv(void **state)
{
    json_t *pod = pod_with(NULL), *argv;
    struct fatia_env env = {0};
    char why[300];

    (void)state;
    assert_int_equal(fatia_podspec_env(pod, container(pod, 0), "/home/p", &env, why, sizeof(why)),
                     0);
    assert_string_equal(fatia_env_get(&env, "A"), "a");
    assert_string_equal(fatia_env_get(&env, "B"), "xay");
    assert_string_equal(fatia_env_get(&env, "N"), "p");
    assert_string_equal(fatia_env_get(&env, "L"), "web");
    assert_string_equal(fatia_env_get(&env, "NODE"), "node-0");
    assert_string_equal(fatia_env_get(&env, "MEM"), "64");
    assert_string_equal(fatia_env_get(&env, "HOME"), "/home/p");
    assert_string_equal(fatia_env_get(&env, "HOSTNAME"), "p");
    assert_string_equal(fatia_env_get(&env, "PATH"), FATIA_AGENT_DEFAULT_PATH);
    assert_int_equal(fatia_podspec_argv(container(pod, 0), &env, &argv, why, sizeof(why)), 0);
    assert_int_equal(json_array_size(argv), 4);
    assert_string_equal(json_string_value(json_array_get(argv, 0)), "run");
    assert_string_equal(json_string_value(json_array_get(argv, 1)), "a");
    assert_string_equal(json_string_value(json_array_get(argv, 2)), "$(A)");
    assert_string_equal(json_string_value(json_array_get(argv, 3)), "$(NOPE)");
    json_decref(argv);
    fatia_env_release(&env);
    /* args alone are the command line; nothing at all is an error */
    assert_int_equal(fatia_podspec_argv(container(pod, 1), &env, &argv, why, sizeof(why)), 0);
    assert_string_equal(json_string_value(json_array_get(argv, 0)), "/bin/side");
    json_decref(argv);
    json_object_del((json_t *)container(pod, 1), "args");
    assert_int_equal(fatia_podspec_argv(container(pod, 1), &env, &argv, why, sizeof(why)), -EINVAL);
    assert_non_null(strstr(why, "no image entrypoint"));
    json_decref(pod);
}

static void test_env_refused(void **state)
{
    json_t *pod = pod_with(NULL);
    json_t *c = (json_t *)container(pod, 1);
    struct fatia_env env = {0};
    char why[300];
    json_error_t je;

    (void)state;
    json_object_set_new(c, "env",
                        json_loads("[{\"name\":\"S\",\"valueFrom\":{\"secretKeyRef\":{\"name\":"
                                   "\"db\",\"key\":\"pw\"}}}]",
                                   0, &je));
    assert_int_equal(fatia_podspec_env(pod, c, NULL, &env, why, sizeof(why)), -ESRCH);
    assert_non_null(strstr(why, "secret \"db\" not found"));
    fatia_env_release(&env);
    json_object_set_new(c, "env",
                        json_loads("[{\"name\":\"S\",\"valueFrom\":{\"secretKeyRef\":{\"name\":"
                                   "\"db\",\"key\":\"pw\",\"optional\":true}}}]",
                                   0, &je));
    assert_int_equal(fatia_podspec_env(pod, c, NULL, &env, why, sizeof(why)), 0);
    assert_null(fatia_env_get(&env, "S"));
    fatia_env_release(&env);
    json_decref(pod);
}

static void test_devices_parse(void **state)
{
    struct fatia_pod_devices d;
    char why[300];
    json_t *pod;

    static const struct {
        const char *json, *err;
    } bad[] = {
        {"{}", "not a JSON array"},
        {"[{\"slice\":\"gpu-0\",\"kind\":\"whole\"}]", "[0].uuid"},
        {"[{\"slice\":\"gpu-0\",\"kind\":\"magic\",\"uuid\":\"GPU-1\"}]", "[0].kind"},
        {"[{\"slice\":\"gpu-0-mig-1g10gb-19-0\",\"kind\":\"mig\",\"uuid\":\"GPU-1\"}]",
         "[0].migUuid"},
        {"[{\"slice\":\"gpu-0-ts0\",\"kind\":\"timeslice\",\"uuid\":\"GPU-1\",\"memoryBytes\":-1}]",
         "[0].memoryBytes"},
        {"[{\"slice\":\"gpu-0-mps0\",\"kind\":\"mps\",\"uuid\":\"GPU-1\",\"mps\":"
         "{\"threadPercentage\":0}}]",
         "[0].mps.threadPercentage"},
        {"[{\"kind\":\"whole\",\"uuid\":\"GPU-1\"}]", "[0].slice"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        pod = pod_with(bad[i].json);
        assert_int_equal(fatia_pod_devices_parse(pod, &d, why, sizeof(why)), -FATIA_E_INVALID);
        if (!strstr(why, bad[i].err))
            fail_msg("case %zu: '%s' lacks '%s'", i, why, bad[i].err);
        json_decref(pod);
    }
    pod = pod_with("[{\"slice\":\"gpu-3-ts1\",\"kind\":\"timeslice\",\"uuid\":\"GPU-a\","
                   "\"memoryBytes\":\"4Gi\"},{\"container\":\"side\",\"slice\":\"gpu-12\","
                   "\"kind\":\"whole\",\"uuid\":\"GPU-b\",\"minor\":5}]");
    assert_int_equal(fatia_pod_devices_parse(pod, &d, why, sizeof(why)), 0);
    assert_int_equal(d.n, 2);
    assert_string_equal(d.v[0].container, "main"); /* no container: the first one */
    assert_int_equal(d.v[0].memory_bytes, 4ull << 30);
    assert_int_equal(d.v[0].minor, 3);
    assert_int_equal(d.v[1].minor, 5);
    fatia_pod_devices_release(&d);
    json_decref(pod);
}

static const char *get(struct fatia_env *e, const char *k)
{
    const char *v = fatia_env_get(e, k);
    return v ? v : "(unset)";
}

static void test_devices_env(void **state)
{
    json_t *pod = pod_with(
        "[{\"container\":\"main\",\"slice\":\"gpu-0-ts1\",\"kind\":\"timeslice\",\"uuid\":\"GPU-"
        "0\","
        "\"memoryBytes\":1073741824},"
        "{\"container\":\"main\",\"slice\":\"gpu-1-mig-3g71gb-9-4\",\"kind\":\"mig\","
        "\"uuid\":\"GPU-1\",\"migUuid\":\"MIG-1\"},"
        "{\"container\":\"main\",\"slice\":\"gpu-2-mps1\",\"kind\":\"mps\",\"uuid\":\"GPU-2\","
        "\"mps\":{\"threadPercentage\":30,\"pinnedMemoryBytes\":2147483648}},"
        "{\"container\":\"side\",\"slice\":\"gpu-3\",\"kind\":\"whole\",\"uuid\":\"GPU-3\"}]");
    struct fatia_devenv_opts o = {.vgpu_lib = "/lib/libfatia-vgpu.so",
                                  .acct_file = "/run/x/gpu-0-ts1.acct",
                                  .mps_pipe_dir = "/run/mps/GPU-2/pipe"};
    struct fatia_pod_devices d;
    struct fatia_env env = {0};
    char why[300], name[100];

    (void)state;
    assert_int_equal(fatia_pod_devices_parse(pod, &d, why, sizeof(why)), 0);
    /* the MPS share is capped too, at its pinned memory */
    fatia_pod_devices_acct_name(&d, "main", name, sizeof(name));
    assert_string_equal(name, "gpu-0-ts1+gpu-2-mps1");
    fatia_pod_devices_acct_name(&d, "side", name, sizeof(name));
    assert_string_equal(name, "");
    assert_int_equal(fatia_podspec_env(pod, container(pod, 0), NULL, &env, why, sizeof(why)), 0);
    assert_int_equal(fatia_pod_devices_env(&d, "main", &o, &env, why, sizeof(why)), 0);
    assert_string_equal(get(&env, "CUDA_VISIBLE_DEVICES"), "GPU-0,MIG-1,GPU-2");
    assert_string_equal(get(&env, "NVIDIA_VISIBLE_DEVICES"), "GPU-0,MIG-1,GPU-2");
    assert_string_equal(get(&env, "FATIA_SLICES"), "gpu-0-ts1,gpu-1-mig-3g71gb-9-4,gpu-2-mps1");
    assert_string_equal(get(&env, "LD_PRELOAD"), "/lib/libfatia-vgpu.so:/own.so");
    assert_string_equal(get(&env, "FATIA_VGPU_SHARED_FILE"), "/run/x/gpu-0-ts1.acct");
    assert_string_equal(get(&env, "FATIA_VGPU_MEMORY_LIMIT_0"), "1073741824");
    assert_string_equal(get(&env, "FATIA_VGPU_MEMORY_LIMIT_1"), "(unset)");
    assert_string_equal(get(&env, "FATIA_VGPU_MEMORY_LIMIT_2"), "2147483648");
    assert_string_equal(get(&env, "CUDA_MPS_PIPE_DIRECTORY"), "/run/mps/GPU-2/pipe");
    assert_string_equal(get(&env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "30");
    assert_string_equal(get(&env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "2=2048M");
    fatia_env_release(&env);
    assert_int_equal(fatia_pod_devices_env(&d, "side", &o, &env, why, sizeof(why)), 0);
    assert_string_equal(get(&env, "CUDA_VISIBLE_DEVICES"), "GPU-3");
    assert_string_equal(get(&env, "LD_PRELOAD"), "(unset)");
    assert_string_equal(get(&env, "CUDA_MPS_PIPE_DIRECTORY"), "(unset)");
    fatia_env_release(&env);
    /* a container with no device sees no GPU */
    assert_int_equal(fatia_pod_devices_env(&d, "other", &o, &env, why, sizeof(why)), 0);
    assert_string_equal(get(&env, "CUDA_VISIBLE_DEVICES"), "");
    assert_string_equal(get(&env, "NVIDIA_VISIBLE_DEVICES"), "void");
    fatia_env_release(&env);
    /* a capped slice without the library is refused, not run uncapped */
    o.vgpu_lib = NULL;
    assert_int_equal(fatia_pod_devices_env(&d, "main", &o, &env, why, sizeof(why)), -EINVAL);
    fatia_env_release(&env);
    fatia_pod_devices_release(&d);
    json_decref(pod);
}

static void test_limits(void **state)
{
    json_t *pod = pod_with(NULL);
    struct fatia_pod_limits l;

    (void)state;
    fatia_podspec_limits(pod, &l);
    assert_int_equal(l.memory_limit, (64 << 20) + (1 << 30));
    assert_int_equal(l.cpu_limit_milli, -1); /* side has no cpu limit */
    assert_int_equal(l.cpu_request_milli, 250);
    assert_int_equal(fatia_cgroup_cpu_weight(250), 10);
    assert_int_equal(fatia_cgroup_cpu_weight(1000), 39);
    assert_int_equal(fatia_cgroup_cpu_weight(0), 1);
    json_decref(pod);
}

static void test_status(void **state)
{
    json_t *pod = pod_with(NULL), *st;
    json_error_t je;
    json_t *shim = json_loads(
        "{\"phase\":\"Running\",\"containers\":["
        "{\"name\":\"main\",\"restartCount\":1,\"started\":true,\"ready\":true,\"containerID\":"
        "\"fatia://u-1/main/1\",\"state\":{\"running\":{\"startedAt\":\"2026-01-01T00:00:01Z\"}},"
        "\"lastState\":{\"terminated\":{\"exitCode\":1,\"reason\":\"Error\"}}},"
        "{\"name\":\"side\",\"restartCount\":0,\"started\":false,\"ready\":false,\"state\":"
        "{\"waiting\":{\"reason\":\"CrashLoopBackOff\"}}}]}",
        0, &je);

    (void)state;
    assert_non_null(shim);
    st = fatia_pod_status_build(pod, NULL, "2026-01-01T00:00:00Z", "ContainerCreating", NULL, 0);
    assert_string_equal(json_string_value(json_object_get(st, "phase")), "Pending");
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(
                json_object_get(json_array_get(json_object_get(st, "containerStatuses"), 0),
                                "state"),
                "waiting"),
            "reason")),
        "ContainerCreating");
    json_decref(st);
    st = fatia_pod_status_build(pod, shim, "2026-01-01T00:00:00Z", NULL, NULL, 0);
    assert_string_equal(json_string_value(json_object_get(st, "phase")), "Running");
    {
        const json_t *cs = json_object_get(st, "containerStatuses");
        assert_int_equal(json_array_size(cs), 2);
        assert_string_equal(json_string_value(json_object_get(json_array_get(cs, 0), "image")),
                            "img:1");
        assert_int_equal(json_integer_value(json_object_get(json_array_get(cs, 0), "restartCount")),
                         1);
        assert_string_equal(
            json_string_value(json_object_get(json_array_get(cs, 0), "containerID")),
            "fatia://u-1/main/1");
    }
    /* once written, the pod holds it; a later change of one condition is a difference */
    json_object_set(pod, "status", st);
    assert_true(fatia_pod_status_same(pod, st));
    json_object_set_new(
        json_object_get(json_array_get(json_object_get(shim, "containers"), 1), "state"), "running",
        json_pack("{s:s}", "startedAt", "x"));
    json_object_del(
        json_object_get(json_array_get(json_object_get(shim, "containers"), 1), "state"),
        "waiting");
    json_object_set_new(json_array_get(json_object_get(shim, "containers"), 1), "ready",
                        json_true());
    json_decref(st);
    st = fatia_pod_status_build(pod, shim, "2026-01-01T00:00:00Z", NULL, NULL, 0);
    assert_false(fatia_pod_status_same(pod, st));
    json_decref(st);
    json_decref(shim);
    /* a pod that failed before its containers ran (its shim died at start): none is left
       waiting in a terminal pod */
    shim = json_pack("{s:i,s:s,s:[],s:s,s:s,s:b}", "seq", 1, "phase", "Failed", "containers",
                     "reason", "SupervisorLost", "message", "gone", "done", 1);
    assert_non_null(shim);
    st = fatia_pod_status_build(pod, shim, "2026-01-01T00:00:00Z", NULL, NULL, 0);
    assert_string_equal(json_string_value(json_object_get(st, "phase")), "Failed");
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(
                json_object_get(json_array_get(json_object_get(st, "containerStatuses"), 1),
                                "state"),
                "terminated"),
            "reason")),
        "ContainerStatusUnknown");
    json_decref(st);
    json_decref(shim);
    json_decref(pod);
}

static void test_crilog(void **state)
{
    char dir[] = "/tmp/fatia-crilog-XXXXXX", path[100], buf[300];
    struct fatia_crilog l;
    struct fatia_linebuf lb = {0};
    struct fatia_crilog_entry e;
    FILE *f;
    int n = 0;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/0.log", dir);
    assert_int_equal(fatia_crilog_open(&l, path, 0), 0);
    assert_int_equal(fatia_linebuf_feed(&lb, &l, "stdout", 1767225600000000, "a\nbb", 4), 0);
    assert_int_equal(fatia_linebuf_feed(&lb, &l, "stdout", 1767225600000001, "b\n\n", 3), 0);
    assert_int_equal(fatia_linebuf_flush(&lb, &l, "stdout", 1767225600000002), 0);
    fatia_crilog_close(&l);
    f = fopen(path, "r");
    while (fgets(buf, sizeof(buf), f)) {
        buf[strcspn(buf, "\n")] = '\0';
        assert_int_equal(fatia_crilog_parse(buf, strlen(buf), &e), 0);
        assert_false(e.partial);
        assert_false(e.is_stderr);
        n++;
        if (n == 1)
            assert_true(e.msg_len == 1 && e.msg[0] == 'a' && e.t == 1767225600000000);
        if (n == 2)
            assert_true(e.msg_len == 3 && !memcmp(e.msg, "bbb", 3));
        if (n == 3)
            assert_int_equal(e.msg_len, 0);
    }
    fclose(f);
    assert_int_equal(n, 3);
    assert_int_equal(fatia_crilog_parse("garbage", 7, &e), -FATIA_E_PARSE);
    assert_int_equal(fatia_crilog_parse("2026-01-01T00:00:00Z stdin F x", 30, &e), -FATIA_E_PARSE);
    assert_int_equal(fatia_crilog_parse("2026-01-01T00:00:00Z stderr P", 29, &e), 0);
    assert_true(e.partial && e.is_stderr && e.msg_len == 0);
    unlink(path);
    rmdir(dir);
}

static void test_uidmap(void **state)
{
    char dir[] = "/tmp/fatia-uidmap-XXXXXX", map[100], st[100], why[200];
    struct fatia_uidmap m;
    uint32_t uid, gid;
    FILE *f;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(map, sizeof(map), "%s/map", dir);
    snprintf(st, sizeof(st), "%s/state", dir);
    f = fopen(map, "w");
    fputs("# fixed\nteam-a 300000:300001\nteam-b 5000\n", f);
    fclose(f);
    assert_int_equal(fatia_uidmap_load(&m, map, st, 5000, 10, why, sizeof(why)), 0);
    assert_int_equal(fatia_uidmap_get(&m, "team-a", &uid, &gid), 0);
    assert_int_equal(uid, 300000);
    assert_int_equal(gid, 300001);
    /* 5000 is team-b's: the next namespace gets 5001, and keeps it after a reload */
    assert_int_equal(fatia_uidmap_get(&m, "ml", &uid, &gid), 0);
    assert_int_equal(uid, 5001);
    assert_int_equal(fatia_uidmap_get(&m, "web", &uid, &gid), 0);
    assert_int_equal(uid, 5002);
    fatia_uidmap_release(&m);
    assert_int_equal(fatia_uidmap_load(&m, map, st, 5000, 10, why, sizeof(why)), 0);
    assert_int_equal(fatia_uidmap_get(&m, "web", &uid, &gid), 0);
    assert_int_equal(uid, 5002);
    assert_int_equal(fatia_uidmap_get(&m, "ml", &uid, &gid), 0);
    assert_int_equal(uid, 5001);
    fatia_uidmap_release(&m);
    f = fopen(map, "w");
    fputs("bad-line\n", f);
    fclose(f);
    assert_int_equal(fatia_uidmap_load(&m, map, st, 5000, 10, why, sizeof(why)), -FATIA_E_PARSE);
    assert_non_null(strstr(why, "line 1"));
    unlink(map);
    unlink(st);
    rmdir(dir);
}

/* hostPort: the portmap mappings of containers[] (never initContainers), the refusals naming
 * the field */
static void test_host_ports(void **state)
{
    static const struct {
        const char *ports, *err;
    } bad[] = {
        {"[{\"containerPort\":80,\"hostPort\":70000}]", "spec.containers[1].ports[0].hostPort"},
        {"[{\"containerPort\":80,\"hostPort\":-1}]", "spec.containers[1].ports[0].hostPort"},
        {"[{\"containerPort\":\"80\",\"hostPort\":80}]",
         "spec.containers[1].ports[0].containerPort"},
        {"[{\"hostPort\":80}]", "spec.containers[1].ports[0].containerPort"},
        {"[{\"containerPort\":80,\"hostPort\":80,\"protocol\":\"SCTP\"}]",
         "spec.containers[1].ports[0].protocol"},
        {"[{\"containerPort\":80,\"hostPort\":80,\"hostIP\":\"::1\"}]",
         "spec.containers[1].ports[0].hostIP"},
        {"[{\"containerPort\":80,\"hostPort\":80,\"hostIP\":\"10.0.0.1; rm\"}]",
         "spec.containers[1].ports[0].hostIP"},
        /* the same port twice, 0.0.0.0 against a given address (the first container has 8080) */
        {"[{\"containerPort\":81,\"hostPort\":8080,\"hostIP\":\"127.0.0.1\"}]",
         "spec.containers[1].ports[0].hostPort: Duplicate value: 8080/TCP, as "
         "spec.containers[0].ports[0].hostPort"},
    };

    char text[1024], why[300];
    json_t *pod, *m;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(text, sizeof(text),
                 "{\"spec\":{\"containers\":[{\"name\":\"a\",\"ports\":[{\"containerPort\":"
                 "8080,\"hostPort\":8080}]},{\"name\":\"b\",\"ports\":%s}]}}",
                 bad[i].ports);
        pod = json_loads(text, 0, NULL);
        assert_non_null(pod);
        why[0] = '\0';
        m = (json_t *)1;
        assert_int_equal(fatia_pod_host_ports(pod, &m, why, sizeof(why)), -FATIA_E_INVALID);
        assert_null(m);
        if (!strstr(why, bad[i].err))
            fail_msg("case %zu: '%s' does not name %s", i, why, bad[i].err);
        json_decref(pod);
    }
    pod = json_loads("{\"spec\":{\"initContainers\":[{\"name\":\"i\",\"ports\":[{"
                     "\"containerPort\":1,\"hostPort\":1}]}],\"containers\":[{\"name\":\"a\","
                     "\"ports\":[{\"containerPort\":53,\"hostPort\":5353,\"protocol\":\"UDP\"},"
                     "{\"containerPort\":53,\"hostPort\":5353},{\"containerPort\":9000},"
                     "{\"containerPort\":9001,\"hostPort\":0},{\"containerPort\":80,"
                     "\"hostPort\":8080,\"hostIP\":\"127.0.0.1\"},{\"containerPort\":81,"
                     "\"hostPort\":8080,\"hostIP\":\"127.0.0.2\"},{\"containerPort\":82,"
                     "\"hostPort\":8081,\"hostIP\":\"0.0.0.0\"}]}]}}",
                     0, NULL);
    assert_non_null(pod);
    assert_int_equal(fatia_pod_host_ports(pod, &m, why, sizeof(why)), 0);
    /* UDP and TCP of one port, two addresses of one port; no hostPort or 0: none */
    assert_int_equal(json_array_size(m), 5);
    assert_string_equal(json_string_value(json_object_get(json_array_get(m, 0), "protocol")),
                        "udp");
    assert_string_equal(json_string_value(json_object_get(json_array_get(m, 1), "protocol")),
                        "tcp");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(m, 2), "containerPort")),
                     80);
    assert_string_equal(json_string_value(json_object_get(json_array_get(m, 3), "hostIP")),
                        "127.0.0.2");
    assert_null(json_object_get(json_array_get(m, 4), "hostIP")); /* 0.0.0.0: every address */
    assert_string_equal(json_string_value(json_object_get(json_array_get(m, 4), "field")),
                        "spec.containers[0].ports[6].hostPort");
    json_decref(m);
    json_decref(pod);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_and_argv),  cmocka_unit_test(test_env_refused),
        cmocka_unit_test(test_devices_parse), cmocka_unit_test(test_devices_env),
        cmocka_unit_test(test_limits),        cmocka_unit_test(test_status),
        cmocka_unit_test(test_crilog),        cmocka_unit_test(test_uidmap),
        cmocka_unit_test(test_host_ports),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/agent/test_oci.c: the OCI runtime's pure parts: Kubernetes' command-line rule over an
 * image's Entrypoint/Cmd, the container's user (runAsUser, the image's User, a name resolved
 * against the image's passwd and group as runc does, runAsNonRoot), the
 * config.json (user namespace mappings, the sandbox's namespaces, capabilities, no_new_privs,
 * read-only root, volume mounts and their refusals, limits), CDI specs read from a directory and
 * applied (env, device nodes and their cgroup rule, mounts, hooks, a missing device); the
 * node spec's parsers of /proc/devices and of a MIG capability's access file.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/cdi.h"
#include "agent/cdi_apply.h"
#include "agent/oci.h"
#include "base/error.h"

static json_t *J(const char *s)
{
    json_error_t je;
    json_t *j = json_loads(s, 0, &je);
    if (!j)
        fail_msg("bad JSON in test: %s: %s", je.text, s);
    return j;
}

static char *dump(const json_t *j)
{
    return json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
}

static void test_merge_command(void **state)
{
    json_t *img = J("{\"Entrypoint\":[\"/ep\"],\"Cmd\":[\"c1\",\"c2\"]}");

    static const struct {
        const char *ctr, *want_cmd, *want_args;
    } cases[] = {
        {"{\"name\":\"a\"}", "[\"/ep\"]", "[\"c1\",\"c2\"]"},
        {"{\"name\":\"a\",\"command\":[\"x\"]}", "[\"x\"]", "[]"},
        {"{\"name\":\"a\",\"args\":[\"y\"]}", "[\"/ep\"]", "[\"y\"]"},
        {"{\"name\":\"a\",\"command\":[\"x\"],\"args\":[\"y\"]}", "[\"x\"]", "[\"y\"]"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *c = J(cases[i].ctr), *m = fatia_oci_merge_command(c, img);
        char *a = dump(json_object_get(m, "command")), *b = dump(json_object_get(m, "args"));
        assert_string_equal(a, cases[i].want_cmd);
        assert_string_equal(b, cases[i].want_args);
        free(a);
        free(b);
        json_decref(m);
        json_decref(c);
    }
    json_decref(img);
}

static void test_user(void **state)
{
    json_t *pod = J("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"securityContext\":"
                    "{\"runAsUser\":7}}}");
    json_t *c = J("{\"name\":\"m\"}"), *c2 = J("{\"name\":\"m\",\"securityContext\":"
                                               "{\"runAsUser\":1000,\"runAsGroup\":2000}}");
    json_t *img = J("{\"User\":\"33:44\"}"), *named = J("{\"User\":\"www-data\"}");
    json_t *nr = J("{\"name\":\"m\",\"securityContext\":{\"runAsNonRoot\":true}}");
    json_t *bare = J("{\"metadata\":{\"name\":\"p\"},\"spec\":{}}");
    json_t *big = J("{\"name\":\"m\",\"securityContext\":{\"runAsUser\":65536}}");
    struct fatia_imguser ids;
    char why[512];

    (void)state;
    assert_int_equal(fatia_oci_user(pod, c, NULL, NULL, &ids, why, sizeof(why)), 0);
    assert_int_equal(ids.uid, 7); /* the pod's securityContext */
    assert_int_equal(fatia_oci_user(pod, c2, NULL, NULL, &ids, why, sizeof(why)), 0);
    assert_int_equal(ids.uid, 1000);
    assert_int_equal(ids.gid, 2000);
    assert_int_equal(fatia_oci_user(bare, c, img, NULL, &ids, why, sizeof(why)), 0);
    assert_int_equal(ids.uid, 33); /* the image's numeric User */
    assert_int_equal(ids.gid, 44);
    /* a name without the image's passwd: refused, never uid 0 */
    assert_int_equal(fatia_oci_user(bare, c, named, NULL, &ids, why, sizeof(why)), -EINVAL);
    assert_non_null(strstr(why, "the image's User 'www-data': unable to find user www-data"));
    assert_int_equal(fatia_oci_user(bare, nr, NULL, NULL, &ids, why, sizeof(why)),
                     -FATIA_E_INVALID);
    assert_non_null(strstr(why, "runAsNonRoot and image will run as root"));
    assert_int_equal(fatia_oci_user(bare, big, NULL, NULL, &ids, why, sizeof(why)),
                     -FATIA_E_INVALID);
    assert_non_null(strstr(why, "runAsUser"));
    json_decref(pod);
    json_decref(c);
    json_decref(c2);
    json_decref(img);
    json_decref(named);
    json_decref(nr);
    json_decref(bare);
    json_decref(big);
}

/* user[:group] against an image's /etc/passwd and /etc/group, as runc reads them. */
static void test_imguser(void **state)
{
    const struct fatia_imguser_files f = {
        .passwd = "root:x:0:0:root:/root:/bin/sh\n"
                  "  \n"
                  "evil:x:abc:abc::/:/bin/sh\n" /* malformed: skipped, not uid 0 */
                  "app:x:1000:1001:App:/home/app:/bin/sh\n"
                  "app:x:2000:2000::/:/bin/sh\n" /* the first match wins */
                  "nobody:x:65534:65534:nobody:/:/bin/false\n"
                  "huge:x:70000:70000::/:/bin/sh",
        .group = "root:x:0:\napp:x:1001:\nvideo:x:44:app,other\naudio:x:29:other,app\n"
                 "far:x:90000:app\nstaff:x:50:appx\nnogroup:x:65534:\n"};
    struct fatia_imguser u;
    json_t *named = J("{\"User\":\"app\"}"), *bare = J("{\"metadata\":{\"name\":\"p\"}}");
    json_t *c = J("{\"name\":\"m\"}"), *nr = J("{\"name\":\"m\",\"securityContext\":"
                                               "{\"runAsNonRoot\":true,\"runAsGroup\":7}}");
    char why[512];

    (void)state;
    assert_int_equal(fatia_oci_imguser_resolve("app", &f, 65535, &u, why, sizeof(why)), 0);
    assert_int_equal(u.uid, 1000);
    assert_int_equal(u.gid, 1001);
    assert_int_equal(u.n_groups, 2); /* video and audio list it; far is out of range; appx no */
    assert_int_equal(u.groups[0], 44);
    assert_int_equal(u.groups[1], 29);
    assert_string_equal(u.home, "/home/app"); /* HOME when the environment has none */
    assert_int_equal(fatia_oci_imguser_resolve("app:app", &f, 65535, &u, why, sizeof(why)), 0);
    assert_int_equal(u.uid, 1000);
    assert_int_equal(u.gid, 1001);
    assert_int_equal(u.n_groups, 0); /* an explicit group: no supplementary ones (runc) */
    assert_int_equal(fatia_oci_imguser_resolve("nobody:video", &f, 65535, &u, why, sizeof(why)), 0);
    assert_int_equal(u.uid, 65534);
    assert_int_equal(u.gid, 44);
    assert_int_equal(fatia_oci_imguser_resolve("1000", &f, 65535, &u, why, sizeof(why)), 0);
    assert_int_equal(u.gid, 1001); /* a numeric uid's entry gives its gid */
    assert_int_equal(fatia_oci_imguser_resolve("4242:5", &f, 65535, &u, why, sizeof(why)), 0);
    assert_int_equal(u.uid, 4242);   /* numbers stand alone */
    assert_string_equal(u.home, ""); /* no entry: no home */
    assert_int_equal(u.gid, 5);
    assert_int_equal(fatia_oci_imguser_resolve("", &f, 65535, &u, why, sizeof(why)), 0);
    assert_int_equal(u.uid, 0);
    assert_int_equal(fatia_oci_imguser_resolve("evil", &f, 65535, &u, why, sizeof(why)), -EINVAL);
    assert_string_equal(why, "unable to find user evil: no matching entries in passwd file");
    assert_int_equal(fatia_oci_imguser_resolve("ghost", &f, 65535, &u, why, sizeof(why)), -EINVAL);
    assert_int_equal(fatia_oci_imguser_resolve("app:ghosts", &f, 65535, &u, why, sizeof(why)),
                     -EINVAL);
    assert_string_equal(why, "unable to find group ghosts: no matching entries in group file");
    assert_int_equal(fatia_oci_imguser_resolve("app:far", &f, 65535, &u, why, sizeof(why)),
                     -ERANGE);
    assert_int_equal(fatia_oci_imguser_resolve("huge", &f, 65535, &u, why, sizeof(why)), -ERANGE);
    assert_non_null(strstr(why, "out of 0..65535"));
    assert_int_equal(fatia_oci_imguser_resolve("70000", &f, 65535, &u, why, sizeof(why)), -ERANGE);
    assert_int_equal(fatia_oci_imguser_resolve("ro", &f, 65535, &u, why, sizeof(why)),
                     -EINVAL); /* no prefix match */
    /* through the container: runAsNonRoot with the name's uid 1000 passes; runAsGroup wins */
    assert_int_equal(fatia_oci_user(bare, nr, named, &f, &u, why, sizeof(why)), 0);
    assert_int_equal(u.uid, 1000);
    assert_int_equal(u.gid, 7);
    assert_int_equal(fatia_oci_user(bare, c, named, &f, &u, why, sizeof(why)), 0);
    assert_int_equal(u.gid, 1001);
    json_decref(named);
    json_decref(bare);
    json_decref(c);
    json_decref(nr);
}

static json_t *build(const char *pod, const char *ctr, int *ret_r, char *why, size_t why_n)
{
    json_t *p = J(pod), *c = J(ctr), *argv = J("[\"sh\"]"), *env = J("[\"A=1\"]"), *cfg = NULL;
    struct fatia_oci_in in = {.pod = p,
                              .ctr = c,
                              .argv = argv,
                              .env = env,
                              .host_base = 327680,
                              .run_dir = "/run-dir",
                              .cgroups_path = "/fatia-pods/pod-u/m"};

    *ret_r = fatia_oci_spec_build(&in, &cfg, why, why_n);
    json_decref(p);
    json_decref(c);
    json_decref(argv);
    json_decref(env);
    return cfg;
}

static const json_t *mount_at(const json_t *cfg, const char *dst)
{
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(cfg, "mounts"), i, m)
    {
        if (!strcmp(json_string_value(json_object_get(m, "destination")), dst))
            return m;
    }
    return NULL;
}

static void test_spec(void **state)
{
    const char *pod = "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"volumes\":["
                      "{\"name\":\"e\",\"emptyDir\":{}},{\"name\":\"h\",\"hostPath\":{\"path\":"
                      "\"/etc\"}},{\"name\":\"d\",\"downwardAPI\":{}},{\"name\":\"s\",\"iscsi\":"
                      "{}},{\"name\":\"c\",\"secret\":{}}]}}";
    char why[512], *s;
    int r;
    json_t *cfg = build(pod,
                        "{\"name\":\"m\",\"securityContext\":{\"readOnlyRootFilesystem\":true,"
                        "\"capabilities\":{\"drop\":[\"NET_RAW\"],\"add\":[\"sys_ptrace\"]}},"
                        "\"resources\":{\"limits\":{\"memory\":\"32Mi\",\"cpu\":\"500m\"}},"
                        "\"volumeMounts\":[{\"name\":\"e\",\"mountPath\":\"/e\"},{\"name\":\"d\","
                        "\"mountPath\":\"/d\"}]}",
                        &r, why, sizeof(why));
    const json_t *lin, *caps;

    (void)state;
    assert_int_equal(r, 0);
    lin = json_object_get(cfg, "linux");
    s = dump(json_object_get(lin, "uidMappings"));
    assert_string_equal(s, "[{\"containerID\":0,\"hostID\":327680,\"size\":65536}]");
    free(s);
    s = dump(json_object_get(lin, "namespaces"));
    /* user, network, IPC and UTS are the sandbox's (paths filled by the shim) */
    assert_non_null(strstr(s, "{\"fatiaSandbox\":true,\"type\":\"user\"}"));
    assert_non_null(strstr(s, "{\"fatiaSandbox\":true,\"type\":\"network\"}"));
    assert_non_null(strstr(s, "{\"type\":\"pid\"}"));
    free(s);
    assert_true(json_is_true(json_object_get(json_object_get(cfg, "root"), "readonly")));
    assert_true(json_is_true(json_object_get(json_object_get(cfg, "process"), "noNewPrivileges")));
    caps = json_object_get(json_object_get(json_object_get(cfg, "process"), "capabilities"),
                           "bounding");
    s = dump(caps);
    assert_null(strstr(s, "CAP_NET_RAW"));
    assert_non_null(strstr(s, "CAP_SYS_PTRACE"));
    assert_non_null(strstr(s, "CAP_CHOWN"));
    free(s);
    s = dump(json_object_get(json_object_get(lin, "resources"), "memory"));
    assert_string_equal(s, "{\"limit\":33554432}");
    free(s);
    s = dump(json_object_get(json_object_get(lin, "resources"), "cpu"));
    assert_string_equal(s, "{\"period\":100000,\"quota\":50000,\"shares\":512}");
    free(s);
    s = dump(json_array_get(json_object_get(json_object_get(lin, "resources"), "devices"), 0));
    assert_string_equal(s, "{\"access\":\"rwm\",\"allow\":false}");
    free(s);
    assert_string_equal(json_string_value(json_object_get(mount_at(cfg, "/e"), "source")),
                        "/run-dir/volumes/e");
    s = dump(json_object_get(mount_at(cfg, "/d"), "options"));
    assert_non_null(strstr(s, "\"ro\"")); /* downwardAPI: read-only */
    free(s);
    json_decref(cfg);

    /* refusals name the field */
    static const struct {
        const char *ctr, *want;
    } bad[] = {
        {"{\"name\":\"m\",\"volumeMounts\":[{\"name\":\"x\",\"mountPath\":\"/x\"}]}",
         "volumeMounts[0].name"},
        {"{\"name\":\"m\",\"volumeMounts\":[{\"name\":\"e\",\"mountPath\":\"rel\"}]}",
         "volumeMounts[0].mountPath"},
        {"{\"name\":\"m\",\"volumeMounts\":[{\"name\":\"e\",\"mountPath\":\"/e\",\"subPath\":"
         "\"../../etc\"}]}",
         "volumeMounts[0].subPath"},
        /* a hostile tenant's symlink in its own emptyDir would be followed on the host */
        {"{\"name\":\"m\",\"volumeMounts\":[{\"name\":\"e\",\"mountPath\":\"/e\",\"subPath\":"
         "\"link\"}]}",
         "volumeMounts[0].subPath: not served on emptyDir"},
        {"{\"name\":\"m\",\"volumeMounts\":[{\"name\":\"s\",\"mountPath\":\"/s\"}]}",
         "spec.volumes[3]"},
        {"{\"name\":\"m\",\"securityContext\":{\"privileged\":true}}", "privileged"},
        {"{\"name\":\"m\",\"workingDir\":\"rel\"}", "workingDir"},
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cfg = build(pod, bad[i].ctr, &r, why, sizeof(why));
        assert_int_equal(r, -FATIA_E_INVALID);
        assert_null(cfg);
        if (!strstr(why, bad[i].want))
            fail_msg("case %zu: '%s' lacks '%s'", i, why, bad[i].want);
    }
    /* a secret volume is bound from the pod's volumes directory, read-only whatever the mount
     * says (as kubelet's) */
    cfg = build(pod,
                "{\"name\":\"m\",\"volumeMounts\":[{\"name\":\"c\",\"mountPath\":\"/c\","
                "\"readOnly\":false}]}",
                &r, why, sizeof(why));
    assert_int_equal(r, 0);
    s = dump(json_object_get(cfg, "mounts"));
    assert_non_null(strstr(s, "\"destination\":\"/c\""));
    assert_non_null(strstr(s, "/volumes/c\""));
    assert_non_null(strstr(s, "\"rbind\",\"ro\""));
    free(s);
    json_decref(cfg);
}

static void write_spec(const char *dir, const char *name, const char *text)
{
    char p[600];
    FILE *f;

    snprintf(p, sizeof(p), "%s/%s", dir, name);
    f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_cdi(void **state)
{
    char dir[] = "/tmp/fatia-cdi-test.XXXXXX", why[512], *s;
    const char *one[] = {"gpu-0"}, *missing[] = {"gpu-0", "gpu-9"};
    json_t *edits = NULL, *cfg;
    int r;

    (void)state;
    assert_non_null(mkdtemp(dir));
    write_spec(dir, "a.json",
               "{\"cdiVersion\":\"0.6.0\",\"kind\":\"fatia.dev/gpu\",\"containerEdits\":"
               "{\"env\":[\"COMMON=1\"]},\"devices\":[{\"name\":\"gpu-0\",\"containerEdits\":"
               "{\"env\":[\"A=old\"],\"deviceNodes\":[{\"path\":\"/dev/nvidia0\",\"type\":\"c\","
               "\"major\":195,\"minor\":0}],\"mounts\":[{\"hostPath\":\"/usr/lib/x.so\","
               "\"containerPath\":\"/usr/lib/x.so\",\"options\":[\"ro\",\"bind\"]}],"
               "\"hooks\":[{\"hookName\":\"createContainer\",\"path\":\"/bin/true\"}]}},"
               "{\"name\":\"gpu-1\",\"containerEdits\":{\"env\":[\"B=1\"]}}]}");
    write_spec(dir, "b.json", /* later file wins for gpu-0 */
               "{\"cdiVersion\":\"0.6.0\",\"kind\":\"fatia.dev/gpu\",\"devices\":[{\"name\":"
               "\"gpu-0\",\"containerEdits\":{\"env\":[\"A=new\"],\"deviceNodes\":[{\"path\":"
               "\"/dev/nvidia0\",\"type\":\"c\",\"major\":195,\"minor\":0}]}}]}");
    write_spec(dir, "other.json",
               "{\"cdiVersion\":\"0.6.0\",\"kind\":\"nvidia.com/gpu\",\"devices\":[{\"name\":"
               "\"gpu-0\",\"containerEdits\":{\"env\":[\"WRONG=1\"]}}]}");
    r = fatia_cdi_edits(dir, FATIA_CDI_KIND, one, 1, &edits, why, sizeof(why));
    assert_int_equal(r, 0);
    s = dump(json_object_get(edits, "env"));
    assert_string_equal(s, "[\"COMMON=1\",\"A=new\"]");
    free(s);
    cfg = J("{\"process\":{\"env\":[\"A=pod\",\"P=1\"]},\"linux\":{\"resources\":{\"devices\":"
            "[{\"allow\":false,\"access\":\"rwm\"}]}}}");
    assert_int_equal(fatia_cdi_apply(cfg, edits, why, sizeof(why)), 0);
    s = dump(json_object_get(json_object_get(cfg, "process"), "env"));
    assert_string_equal(s, "[\"A=new\",\"P=1\",\"COMMON=1\"]");
    free(s);
    s = dump(json_object_get(json_object_get(cfg, "linux"), "devices"));
    assert_string_equal(s,
                        "[{\"major\":195,\"minor\":0,\"path\":\"/dev/nvidia0\",\"type\":\"c\"}]");
    free(s);
    s = dump(
        json_object_get(json_object_get(json_object_get(cfg, "linux"), "resources"), "devices"));
    assert_string_equal(s, "[{\"access\":\"rwm\",\"allow\":false},{\"access\":\"rwm\",\"allow\":"
                           "true,\"major\":195,\"minor\":0,\"type\":\"c\"}]");
    free(s);
    json_decref(cfg);
    json_decref(edits);
    edits = NULL;

    /* gpu-0 in a.json only, with hooks and mounts */
    {
        char p[600];
        snprintf(p, sizeof(p), "%s/b.json", dir);
        unlink(p);
    }
    r = fatia_cdi_edits(dir, FATIA_CDI_KIND, one, 1, &edits, why, sizeof(why));
    assert_int_equal(r, 0);
    cfg = J("{}");
    assert_int_equal(fatia_cdi_apply(cfg, edits, why, sizeof(why)), 0);
    s = dump(json_object_get(cfg, "hooks"));
    assert_string_equal(s, "{\"createContainer\":[{\"path\":\"/bin/true\"}]}");
    free(s);
    s = dump(json_object_get(cfg, "mounts"));
    assert_string_equal(s, "[{\"destination\":\"/usr/lib/x.so\",\"options\":[\"ro\",\"bind\"],"
                           "\"source\":\"/usr/lib/x.so\",\"type\":\"bind\"}]");
    free(s);
    json_decref(cfg);
    json_decref(edits);
    edits = NULL;

    /* a device no spec has */
    r = fatia_cdi_edits(dir, FATIA_CDI_KIND, missing, 2, &edits, why, sizeof(why));
    assert_int_equal(r, -ENOENT);
    assert_non_null(strstr(why, "fatia.dev/gpu=gpu-9"));
    assert_null(edits);

    /* a node outside /dev is refused */
    cfg = J("{}");
    edits = J("{\"deviceNodes\":[{\"path\":\"/etc/shadow\",\"type\":\"c\",\"major\":1,"
              "\"minor\":1}]}");
    assert_int_equal(fatia_cdi_apply(cfg, edits, why, sizeof(why)), -EINVAL);
    assert_non_null(strstr(why, "deviceNodes[0].path"));
    json_decref(cfg);
    json_decref(edits);
    {
        char cmd[700];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
    }
}

/* The nvidia-caps major and a MIG capability's minor, as the driver writes them. */
static void test_cdi_proc(void **state)
{
    const char *devices = "Character devices:\n  1 mem\n195 nvidia\n241 nvidia-caps\n"
                          "242 nvidia-caps-imex-channels\n\nBlock devices:\n  7 loop\n";

    (void)state;
    assert_int_equal(fatia_agent_cdi_proc_major(devices, "nvidia-caps"), 241);
    assert_int_equal(fatia_agent_cdi_proc_major(devices, "nvidia"), 195);
    assert_int_equal(fatia_agent_cdi_proc_major(devices, "nvidia-cap"), -ENOENT); /* no prefix */
    assert_int_equal(fatia_agent_cdi_proc_major(devices, "loop"), -ENOENT); /* a block major */
    assert_int_equal(fatia_agent_cdi_proc_major("  1 mem\n", "mem"), -ENOENT);
    assert_int_equal(fatia_agent_cdi_cap_minor(
                         "DeviceFileMinor: 12\nDeviceFileMode: 292\nDeviceFileModify: 1\n"),
                     12);
    assert_int_equal(fatia_agent_cdi_cap_minor("DeviceFileMode: 292\nDeviceFileMinor: 3"), 3);
    assert_int_equal(fatia_agent_cdi_cap_minor("DeviceFileMode: 292\n"), -EINVAL);
    assert_int_equal(fatia_agent_cdi_cap_minor("DeviceFileMinor: x\n"), -EINVAL);
    assert_int_equal(fatia_agent_cdi_cap_minor("DeviceFileMinor: 12abc\n"), -EINVAL);
    assert_int_equal(fatia_agent_cdi_cap_minor("DeviceFileMinor: -1\n"), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_command), cmocka_unit_test(test_user),
        cmocka_unit_test(test_imguser),       cmocka_unit_test(test_spec),
        cmocka_unit_test(test_cdi),           cmocka_unit_test(test_cdi_proc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

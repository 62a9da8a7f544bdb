/*
 * tests/agent/test_cni.c: the rule that says whether a CNI lease's sandbox is live
 * (agent/cni_reclaim.c): a running fatia-shim (or its pause) of that pod uid, or a pinned network
 * namespace that a process is in. The host scan is run on a fake /proc for the command lines, and
 * on the real one for the namespaces. The FATIA-HOSTISOLATE allow rules read back from
 * `iptables -S` (the prune of a killed fatiad's rules deletes only what parses as one).
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/cni.h"

static void rule(void **state)
{
    char a[] = "uid-a", b[] = "uid-b";
    char *ids[] = {a, b};
    struct fatia_cni_ns ns[] = {{7, 100}, {7, 200}};
    struct fatia_cni_host h = {.shim_ids = ids, .n_shim_ids = 2, .netns = ns, .n_netns = 2};
    struct fatia_cni_ns held = {7, 200}, gone = {7, 300}, other_dev = {8, 100};

    (void)state;
    assert_true(fatia_cni_sandbox_live(&h, "uid-a", NULL));    /* its shim runs */
    assert_true(fatia_cni_sandbox_live(&h, "uid-c", &held));   /* its namespace is held */
    assert_false(fatia_cni_sandbox_live(&h, "uid-c", &gone));  /* neither */
    assert_false(fatia_cni_sandbox_live(&h, "uid-c", NULL));   /* no pin, no shim */
    assert_false(fatia_cni_sandbox_live(&h, "uid", NULL));     /* a prefix is not the id */
    assert_false(fatia_cni_sandbox_live(&h, "uid-a-x", NULL)); /* nor a longer one */
    assert_false(fatia_cni_sandbox_live(&h, "x", &other_dev)); /* inode of another device */
}

static void put(const char *root, const char *pid, const char *cmdline, size_t n)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", root, pid);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/%s/cmdline", root, pid);
    f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(cmdline, 1, n, f), n);
    fclose(f);
}

#define PUT(root, pid, lit) put(root, pid, lit, sizeof(lit) - 1)

static void scan_cmdlines(void **state)
{
    char root[] = "/tmp/test_cni.XXXXXX", cmd[600];
    struct fatia_cni_host h;

    (void)state;
    assert_non_null(mkdtemp(root));
    PUT(root, "10", "/usr/bin/fatia-shim\0/d/agent/pods/U1\0");     /* a shim */
    PUT(root, "11", "/usr/bin/fatia-shim\0/d/agent/pods/U1\0");     /* its pause */
    PUT(root, "12", "sleep\0/d/agent/pods/U2\0");                   /* not a shim */
    PUT(root, "13", "fatia-shim\0exec\0/d/agent/pods/U3/\0main\0"); /* exec helper */
    PUT(root, "14", "/x/fatia-shim-evil\0/d/agent/pods/U4\0");      /* another name */
    PUT(root, "self", "/usr/bin/fatia-shim\0/d/agent/pods/U5\0");   /* not a pid */
    assert_int_equal(fatia_cni_host_scan(&h, root), 0);
    assert_true(fatia_cni_sandbox_live(&h, "U1", NULL));
    assert_false(fatia_cni_sandbox_live(&h, "U2", NULL));
    assert_true(fatia_cni_sandbox_live(&h, "U3", NULL));
    assert_false(fatia_cni_sandbox_live(&h, "U4", NULL));
    assert_false(fatia_cni_sandbox_live(&h, "U5", NULL));
    fatia_cni_host_free(&h);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

static void pins(void **state)
{
    char dir[] = "/tmp/test_cni_pin.XXXXXX", cmd[600];
    struct fatia_cni_host h;
    struct fatia_cni_ns pin, mine;
    struct stat st;

    (void)state;
    assert_non_null(mkdtemp(dir));
    assert_int_equal(stat("/proc/self/ns/net", &st), 0);
    mine = (struct fatia_cni_ns){(uint64_t)st.st_dev, (uint64_t)st.st_ino};
    assert_int_equal(fatia_cni_pin_write(dir, "pod-1", "/proc/self/ns/net"), 0);
    assert_int_equal(fatia_cni_pin_read(dir, "pod-1", &pin), 0);
    assert_true(pin.dev == mine.dev && pin.ino == mine.ino);
    /* ids that are no file name are refused */
    assert_true(fatia_cni_pin_write(dir, "../evil", "/proc/self/ns/net") < 0);
    assert_true(fatia_cni_pin_write(dir, ".hidden", "/proc/self/ns/net") < 0);
    assert_true(fatia_cni_pin_write(dir, "", "/proc/self/ns/net") < 0);
    /* a namespace that no longer exists cannot be pinned */
    assert_true(fatia_cni_pin_write(dir, "pod-2", "/proc/0/ns/net") < 0);
    /* this process is in the pinned namespace: live on the real /proc, with no shim */
    assert_int_equal(fatia_cni_host_scan(&h, "/proc"), 0);
    assert_true(fatia_cni_sandbox_live(&h, "pod-1", &pin));
    pin.ino += 1u << 30; /* a namespace nobody is in */
    assert_false(fatia_cni_sandbox_live(&h, "pod-1", &pin));
    fatia_cni_host_free(&h);
    fatia_cni_pin_remove(dir, "pod-1");
    assert_true(fatia_cni_pin_read(dir, "pod-1", &pin) < 0);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void host_rule_parse(void **state)
{
    static const char *const other[] = {
        "-N FATIA-HOSTISOLATE",
        "-A FATIA-HOSTISOLATE -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN",
        "-A FATIA-HOSTISOLATE -j DROP",
        "-A FATIA-HOSTISOLATE -d 10.0.5.2/32 -i fbr5 -p tcp -m tcp --dport 80 -j RETURN",
        "-A FATIA-HOSTISOLATE -d 192.0.2.1/32 -i fbr5 -p tcp -m tcp --dport 80 -j RETURN",
        "-A FATIA-HOSTISOLATE -d 10.0.5.1/32 -i eth0 -p tcp -m tcp --dport 80 -j RETURN",
        "-A FATIA-HOSTISOLATE -d 10.0.5.1/32 -i fbr5 -p tcp -m tcp --dport 0 -j RETURN",
        "-A FATIA-HOSTISOLATE -d 10.0.5.1/32 -i fbr5 -p tcp -m tcp --dport 80 -j ACCEPT",
        "-A FATIA-HOSTISOLATE -d 10.0.5.1/32 -i fbr5 -p tcp -m tcp --dport 80 -j RETURNX",
        "-A FORWARD -d 10.0.5.1/32 -i fbr5 -p tcp -m tcp --dport 80 -j RETURN",
    };
    char br[32], gw[32];
    unsigned port = 0;

    (void)state;
    assert_int_equal(fatia_cni_host_rule_parse("-A FATIA-HOSTISOLATE -d 10.18.192.1/32 -i fbr4800 "
                                               "-p tcp -m tcp --dport 45403 -j RETURN",
                                               br, sizeof(br), gw, sizeof(gw), &port),
                     0);
    assert_string_equal(br, "fbr4800");
    assert_string_equal(gw, "10.18.192.1");
    assert_int_equal(port, 45403);
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
        if (fatia_cni_host_rule_parse(other[i], br, sizeof(br), gw, sizeof(gw), &port) == 0)
            fail_msg("'%s' parsed as an allow rule", other[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rule),
        cmocka_unit_test(scan_cmdlines),
        cmocka_unit_test(pins),
        cmocka_unit_test(host_rule_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

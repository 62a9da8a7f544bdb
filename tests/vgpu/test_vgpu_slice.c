/*
 * tests/vgpu/test_vgpu_slice.c: the agent's side of the interposer (agent/vgpu_slice.c), ending
 * with a process started the way the executor will start one: the slice prepared, the variables
 * from fatia_agent_vgpu_slice_env, the library preloaded, the (fake) driver reached as the runtime does.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <sys/wait.h>

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/vgpu_slice.h"
#include "vgpu/region.h"

#define MiB (UINT64_C(1) << 20)

static void test_default_cap(void **state)
{
    uint64_t h200 = UINT64_C(143771) * MiB;

    (void)state;
    /* DESIGN §7: (GPU memory - replicas x reserve) / replicas, here rounded to 2 MiB. */
    assert_int_equal(fatia_agent_vgpu_default_cap(h200, 4, 544 * MiB),
                     ((h200 - 4 * 544 * MiB) / 4) & ~(2 * MiB - 1));
    assert_int_equal(fatia_agent_vgpu_default_cap(h200, 1, 0), h200 & ~(2 * MiB - 1));
    assert_int_equal(fatia_agent_vgpu_default_cap(h200, 0, 544 * MiB), 0);
    assert_int_equal(fatia_agent_vgpu_default_cap(1000 * MiB, 4, 300 * MiB), 0);
    assert_int_equal(fatia_agent_vgpu_default_cap(h200, 4, 544 * MiB) % (2 * MiB), 0);
}

static char env_buf[4096];

static int put(void *ctx, const char *name, const char *value)
{
    size_t len = strlen(env_buf);

    (void)ctx;
    snprintf(env_buf + len, sizeof(env_buf) - len, "%s=%s\n", name, value);
    return 0;
}

static int put_fails(void *ctx, const char *name, const char *value)
{
    (void)ctx, (void)name, (void)value;
    return -ENOMEM;
}

static void test_env(void **state)
{
    struct fatia_vgpu_slice s = {
        .library = "/opt/fatia/lib/libfatia-vgpu.so",
        .accounting_file = "/run/fatia/slices/pod-1/gpu-0-ts1.acct",
        .n_devices = 2,
        .uuids = {"GPU-aaaa", "GPU-bbbb"},
        .cap = {12 * 1024 * MiB, FATIA_VGPU_NO_LIMIT},
        .log_level = "warning",
        .ld_preload = "/usr/lib/libtcmalloc.so",
    };

    (void)state;
    env_buf[0] = '\0';
    assert_int_equal(fatia_agent_vgpu_slice_env(&s, put, NULL), 0);
    assert_string_equal(env_buf,
                        "LD_PRELOAD=/opt/fatia/lib/libfatia-vgpu.so:/usr/lib/libtcmalloc.so\n"
                        "CUDA_VISIBLE_DEVICES=GPU-aaaa,GPU-bbbb\n"
                        "FATIA_VGPU_DEVICE_UUIDS=GPU-aaaa,GPU-bbbb\n"
                        "FATIA_VGPU_SHARED_FILE=/run/fatia/slices/pod-1/gpu-0-ts1.acct\n"
                        "FATIA_VGPU_MEMORY_LIMIT_0=12884901888\n"
                        "FATIA_VGPU_LOG=warning\n");
    assert_int_equal(fatia_agent_vgpu_slice_env(&s, put_fails, NULL), -ENOMEM);
    s.uuids[1] = "GPU-b,c";
    assert_int_equal(fatia_agent_vgpu_slice_env(&s, put, NULL), -EINVAL);
    s.uuids[1] = "GPU-bbbb";
    s.accounting_file = "relative.acct";
    assert_int_equal(fatia_agent_vgpu_slice_env(&s, put, NULL), -EINVAL);
    s.accounting_file = "/a";
    s.n_devices = 0;
    assert_int_equal(fatia_agent_vgpu_slice_env(&s, put, NULL), -EINVAL);
    s.n_devices = 1;
    s.library = "/a:/b";
    assert_int_equal(fatia_agent_vgpu_slice_env(&s, put, NULL), -EINVAL);
}

/* Prepares a slice, starts a worker with exactly the slice's variables, returns its output. */
static int run_in_slice(const struct fatia_vgpu_slice *s, const char *cmd, const char *arg,
                        char *out, size_t n)
{
    int fd[2], status;
    pid_t pid;
    ssize_t len;

    assert_int_equal(pipe(fd), 0);
    pid = fork();
    if (pid == 0) {
        char *line, *save = NULL;

        env_buf[0] = '\0';
        unsetenv("LD_PRELOAD");
        if (fatia_agent_vgpu_slice_env(s, put, NULL) < 0)
            _exit(100);
        for (line = strtok_r(env_buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            char *eq = strchr(line, '=');

            *eq = '\0';
            setenv(line, eq + 1, 1);
        }
        dup2(fd[1], 1);
        close(fd[0]);
        execl(getenv("VGPU_WORKER"), "vgpu_worker", cmd, arg, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    len = read(fd[0], out, n - 1);
    out[len > 0 ? len : 0] = '\0';
    close(fd[0]);
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_prepare_env_run(void **state)
{
    char dir[] = "/tmp/fatia-slice-test-XXXXXX", path[128], why[256], out[256];
    struct fatia_vgpu_slice s = {
        .library = getenv("VGPU_LIB"),
        .accounting_file = path,
        .n_devices = 1,
        .uuids = {"GPU-fake-0"},
        .cap = {48 * MiB},
    };
    uint64_t used = 1;

    (void)state;
    assert_non_null(s.library);
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/slice.acct", dir);
    assert_int_equal(fatia_agent_vgpu_slice_prepare(&s, why, sizeof(why)), 0);
    assert_int_equal(fatia_agent_vgpu_slice_usage(path, 0, &used), 0);
    assert_int_equal(used, 0);
    /* The process sees the slice: 48 MiB in all, and no more. */
    assert_int_equal(run_in_slice(&s, "info", NULL, out, sizeof(out)), 0);
    assert_string_equal(out, "free=50331648 total=50331648\n");
    assert_int_equal(run_in_slice(&s, "alloc", "50331649", out, sizeof(out)), 0);
    assert_string_equal(out, "rc=2\n");
    assert_int_equal(run_in_slice(&s, "alloc", "33554432", out, sizeof(out)), 0);
    assert_string_equal(out, "rc=0\n");
    /* The worker exited holding 32 MiB; reading the usage reclaims the dead process's share. */
    assert_int_equal(fatia_agent_vgpu_slice_usage(path, 0, &used), 0);
    assert_int_equal(used, 0);
    assert_int_equal(fatia_agent_vgpu_slice_usage(path, 16, &used), -EINVAL);
    assert_int_equal(fatia_agent_vgpu_slice_usage("/nonexistent/acct", 0, &used), -ENOENT);
    s.accounting_file = "relative";
    assert_int_equal(fatia_agent_vgpu_slice_prepare(&s, why, sizeof(why)), -EINVAL);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_cap),
        cmocka_unit_test(test_env),
        cmocka_unit_test(test_prepare_env_run),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

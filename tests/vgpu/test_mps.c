/*
 * tests/vgpu/test_mps.c: agent/mps.c against a fake nvidia-cuda-mps-control (fake-mps-control,
 * a script that daemonizes, writes the pid file and answers commands as the real one does).
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <sys/stat.h>

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/mps.h"
#include "base/error.h"
#include "base/log.h"

static char base[64];

static int setup(void **state)
{
    (void)state;
    fatia_log_set_level(FATIA_LOG_ERROR);
    snprintf(base, sizeof(base), "/tmp/fatia-mps-test-XXXXXX");
    return mkdtemp(base) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return rmdir(base);
}

static struct fatia_mps_config config(const char *name, const char *gpu)
{
    struct fatia_mps_config c = {
        .control_bin = FAKE_MPS_CONTROL,
        .base_dir = base,
        .name = name,
        .gpu = gpu,
        .active_thread_pct = 40,
        .pinned_mem_limit = UINT64_C(2) << 30,
        .timeout = 5 * FATIA_USEC_PER_SEC,
    };
    return c;
}

static void read_file(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    size_t len;

    assert_non_null(f);
    len = fread(buf, 1, n - 1, f);
    buf[len] = '\0';
    fclose(f);
}

static bool exists(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0;
}

/* Waits until pid is no longer a live process (a zombie counts as gone). */
static void wait_gone(struct fatia_mps_daemon *d)
{
    for (int i = 0; i < 500 && fatia_mps_alive(d); i++)
        usleep(10000);
    assert_false(fatia_mps_alive(d));
}

static void test_start_applies_defaults(void **state)
{
    struct fatia_mps_config c = config("gpu-0", "GPU-aaaa");
    struct fatia_mps_daemon *d = NULL;
    char path[256], buf[1024], reply[64];
    struct stat st;

    (void)state;
    assert_int_equal(fatia_mps_start(&c, &d), 0);
    assert_true(fatia_mps_alive(d));
    assert_true(fatia_mps_pid(d) > 0);
    snprintf(path, sizeof(path), "%s/gpu-0/pipe", base);
    assert_string_equal(fatia_mps_pipe_dir(d), path);
    assert_int_equal(stat(path, &st), 0);
    /* clients of other uids reach the pipes: the directory and its parent are open to them,
       and the daemon creates its pipes under umask 022 */
    assert_int_equal(st.st_mode & 0777, 0755);
    snprintf(path, sizeof(path), "%s/gpu-0", base);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0711);
    snprintf(path, sizeof(path), "%s/gpu-0/log/control.log", base);
    read_file(path, buf, sizeof(buf));
    assert_non_null(strstr(buf, "CUDA_VISIBLE_DEVICES=GPU-aaaa\n"));
    assert_non_null(strstr(buf, "UMASK=0022\n"));
    assert_non_null(strstr(buf, "set_default_active_thread_percentage 40\n"));
    assert_non_null(strstr(buf, "set_default_device_pinned_mem_limit 0 2048M\n"));
    assert_int_equal(
        fatia_mps_command(d, "get_default_active_thread_percentage", reply, sizeof(reply)), 0);
    assert_string_equal(reply, "40\n");
    assert_int_equal(fatia_mps_stop(d), 0);
    assert_false(fatia_mps_alive(d));
    snprintf(path, sizeof(path), "%s/gpu-0", base);
    assert_false(exists(path));
    /* Stopping twice is fine; a command to a stopped daemon fails. */
    assert_int_equal(fatia_mps_stop(d), 0);
    fatia_mps_free(d);
}

static int put(void *ctx, const char *name, const char *value)
{
    char *buf = ctx;
    size_t len = strlen(buf);

    snprintf(buf + len, 1024 - len, "%s=%s\n", name, value);
    return 0;
}

static void test_client_env(void **state)
{
    struct fatia_mps_config c = config("gpu-1", "1");
    struct fatia_mps_daemon *d = NULL;
    char env[1024] = "", want[1024];

    (void)state;
    assert_int_equal(fatia_mps_start(&c, &d), 0);
    assert_int_equal(fatia_mps_client_env(d, 25, UINT64_C(1) << 30, put, env), 0);
    snprintf(want, sizeof(want),
             "CUDA_MPS_PIPE_DIRECTORY=%s/gpu-1/pipe\nCUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25\n"
             "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1024M\n",
             base);
    assert_string_equal(env, want);
    env[0] = '\0';
    assert_int_equal(fatia_mps_client_env(d, 0, 0, put, env), 0);
    snprintf(want, sizeof(want), "CUDA_MPS_PIPE_DIRECTORY=%s/gpu-1/pipe\n", base);
    assert_string_equal(env, want);
    assert_int_equal(fatia_mps_client_env(d, 101, 0, put, env), -EINVAL);
    assert_int_equal(fatia_mps_client_env(d, 0, 1000, put, env), -EINVAL);
    fatia_mps_free(d);
}

static void test_dead_daemon_restarted(void **state)
{
    struct fatia_mps_config c = config("gpu-2", "2");
    struct fatia_mps_daemon *d = NULL;
    char path[256], buf[64];
    bool restarted = true;
    int first;

    (void)state;
    assert_int_equal(fatia_mps_start(&c, &d), 0);
    assert_int_equal(fatia_mps_ensure(d, &restarted), 0);
    assert_false(restarted);
    first = fatia_mps_pid(d);
    /* The daemon dies; its settings are lost with it. */
    assert_int_equal(kill(first, SIGKILL), 0);
    wait_gone(d);
    snprintf(path, sizeof(path), "%s/gpu-2/pipe/pct", base);
    unlink(path);
    assert_int_equal(fatia_mps_ensure(d, &restarted), 0);
    assert_true(restarted);
    assert_int_equal(fatia_mps_restarts(d), 1);
    assert_true(fatia_mps_alive(d));
    assert_int_not_equal(fatia_mps_pid(d), first);
    read_file(path, buf, sizeof(buf));
    assert_string_equal(buf, "40\n"); /* defaults applied again */
    fatia_mps_free(d);
}

static void test_daemons_per_gpu_apart(void **state)
{
    struct fatia_mps_config c0 = config("gpu-3", "3"), c1 = config("gpu-4", "4");
    struct fatia_mps_daemon *d0 = NULL, *d1 = NULL;

    (void)state;
    c1.active_thread_pct = 70;
    assert_int_equal(fatia_mps_start(&c0, &d0), 0);
    assert_int_equal(fatia_mps_start(&c1, &d1), 0);
    assert_int_not_equal(fatia_mps_pid(d0), fatia_mps_pid(d1));
    assert_int_equal(fatia_mps_stop(d0), 0);
    assert_false(fatia_mps_alive(d0));
    assert_true(fatia_mps_alive(d1));
    fatia_mps_free(d0);
    fatia_mps_free(d1);
}

static void test_adopted_after_agent_restart(void **state)
{
    struct fatia_mps_config c = config("gpu-5", "5");
    struct fatia_mps_daemon *d1 = NULL, *d2 = NULL;

    (void)state;
    assert_int_equal(fatia_mps_start(&c, &d1), 0);
    /* A new agent process starts the same daemon: it finds it running and keeps it. */
    assert_int_equal(fatia_mps_start(&c, &d2), 0);
    assert_int_equal(fatia_mps_pid(d2), fatia_mps_pid(d1));
    fatia_mps_free(d2);
    wait_gone(d1);
    fatia_mps_free(d1);
}

static void test_failures(void **state)
{
    struct fatia_mps_config c = config("gpu-6", "6");
    struct fatia_mps_daemon *d = NULL;
    char path[256];

    (void)state;
    setenv("FAKE_MPS_FAIL_START", "1", 1);
    assert_int_equal(fatia_mps_start(&c, &d), -FATIA_E_DRIVER);
    unsetenv("FAKE_MPS_FAIL_START");
    snprintf(path, sizeof(path), "%s/gpu-6", base);
    assert_false(exists(path)); /* nothing left behind */
    c.control_bin = "/nonexistent/nvidia-cuda-mps-control";
    assert_true(fatia_mps_start(&c, &d) < 0);
    assert_false(exists(path));
    c = config("gpu-6", "6");
    c.base_dir = "relative";
    assert_int_equal(fatia_mps_start(&c, &d), -EINVAL);
    c = config("../gpu", "6");
    assert_int_equal(fatia_mps_start(&c, &d), -EINVAL);
    c = config("gpu-6", "6 7");
    assert_int_equal(fatia_mps_start(&c, &d), -EINVAL);
    c = config("gpu-6", "6");
    c.active_thread_pct = 101;
    assert_int_equal(fatia_mps_start(&c, &d), -EINVAL);
    c = config("gpu-6", "6");
    c.pinned_mem_limit = 1000;
    assert_int_equal(fatia_mps_start(&c, &d), -EINVAL);
    fatia_mps_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start_applies_defaults),
        cmocka_unit_test(test_client_env),
        cmocka_unit_test(test_dead_daemon_restarted),
        cmocka_unit_test(test_daemons_per_gpu_apart),
        cmocka_unit_test(test_adopted_after_agent_restart),
        cmocka_unit_test(test_failures),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}

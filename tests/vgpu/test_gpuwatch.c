/*
 * tests/vgpu/test_gpuwatch.c: the GPU memory watchdog's parts (agent/gpuwatch.h): the verdict on
 * made-up samples (whose cgroup, which GPU, the reserve per process, uncapped GPUs, a cgroup
 * whose name only starts like a pod's), and the sampling against the fake NVML's per-process
 * lists (more processes than the first buffer holds, MPS clients, dead pids left out); the
 * per-pod utilisation on made-up samples (sum per GPU capped at 100, highest GPU, unknown never
 * idle) and per-process utilisation sampled from the fake (NOT_FOUND is 0, NOT_SUPPORTED is -1).
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/gpuwatch.h"

#define GiB (UINT64_C(1) << 30)
#define MiB (UINT64_C(1) << 20)

static struct fatia_gpuwatch_proc proc(pid_t pid, int gpu, uint64_t bytes, const char *cg)
{
    struct fatia_gpuwatch_proc p = {.pid = pid, .gpu = gpu, .bytes = bytes};

    snprintf(p.cgroup, sizeof(p.cgroup), "%s", cg);
    return p;
}

static void test_judge(void **state)
{
    const char *uuids[] = {"GPU-a", "GPU-b"};
    struct fatia_gpuwatch_pod pods[3] = {
        {.cgroup = "/fatia/pod-a", .n_gpus = 1, .uuid = {"GPU-a"}, .cap = {4 * GiB}},
        {.cgroup = "/fatia/pod-b",
         .n_gpus = 2,
         .uuid = {"GPU-a", "GPU-b"},
         .cap = {4 * GiB, UINT64_MAX}},
        {.cgroup = "/fatia/pod-c", .n_gpus = 1, .uuid = {"GPU-b"}, .cap = {1 * GiB}},
    };
    struct fatia_gpuwatch_proc v[8];
    size_t n = 0;

    (void)state;
    /* pod-a: two processes, 4 GiB + 2 x 512 MiB reserve allowed; 4.5 GiB held: fine */
    v[n++] = proc(10, 0, 3 * GiB, "/fatia/pod-a");
    v[n++] = proc(11, 0, 1536 * MiB, "/fatia/pod-a/ctr-main");
    /* pod-ab is another pod whose name starts like pod-a's: not pod-a's */
    v[n++] = proc(12, 0, 80 * GiB, "/fatia/pod-ab");
    /* pod-b: uncapped on GPU-b, whatever it holds there */
    v[n++] = proc(13, 1, 70 * GiB, "/fatia/pod-b");
    /* the MPS server and the host's processes belong to no pod */
    v[n++] = proc(14, 0, 2 * GiB, "/system.slice/nvidia-mps.service");
    v[n++] = proc(15, 1, 2 * GiB, "");
    assert_int_equal(fatia_gpuwatch_judge(pods, 3, v, n, uuids, 2, 512 * MiB), 0);
    assert_int_equal(pods[0].used[0], 4 * GiB + 512 * MiB);
    assert_int_equal(pods[0].procs[0], 2);
    assert_int_equal(pods[1].used[1], 70 * GiB);
    assert_int_equal(pods[0].over, -1);

    /* one byte more than cap + reserve x processes: over */
    v[1].bytes = 2 * GiB + 1;
    assert_int_equal(fatia_gpuwatch_judge(pods, 3, v, n, uuids, 2, 512 * MiB), 1);
    assert_int_equal(pods[0].over, 0);
    v[1].bytes = 2 * GiB;
    assert_int_equal(fatia_gpuwatch_judge(pods, 3, v, n, uuids, 2, 512 * MiB), 0);

    /* pod-c: an MPS client over its pinned cap on GPU-b */
    v[n++] = proc(16, 1, 2 * GiB, "/fatia/pod-c");
    v[n - 1].mps = true;
    assert_int_equal(fatia_gpuwatch_judge(pods, 3, v, n, uuids, 2, 512 * MiB), 1);
    assert_int_equal(pods[2].over, 0);
    assert_int_equal(pods[2].used[0], 2 * GiB);
    /* its process on a GPU it does not hold counts for nothing there */
    v[n - 1].gpu = 0;
    assert_int_equal(fatia_gpuwatch_judge(pods, 3, v, n, uuids, 2, 512 * MiB), 0);
    /* a sample naming a GPU index the watch does not know is ignored */
    v[n - 1].gpu = 7;
    assert_int_equal(fatia_gpuwatch_judge(pods, 3, v, n, uuids, 2, 512 * MiB), 0);
}

static void test_cgroup_rel(void **state)
{
    char cg[512], rel[512];

    (void)state;
    if (fatia_gpuwatch_pid_cgroup(getpid(), cg, sizeof(cg)) < 0)
        skip();
    assert_true(cg[0] == '/');
    assert_int_equal(fatia_gpuwatch_cgroup_rel("/no/such/mount", rel, sizeof(rel)), -ENOENT);
    assert_int_equal(fatia_gpuwatch_pid_cgroup(0x3fffffff, cg, sizeof(cg)), -ENOENT);
}

static void test_sample_fake_nvml(void **state)
{
    const char *lib = getenv("FAKE_NVML_LIB");
    char dir[] = "/tmp/fatia-gpuwatch-XXXXXX", path[600], why[256] = "", cg[512];
    const struct fatia_gpuwatch_proc *v;
    struct fatia_gpuwatch *w;
    pid_t kids[80];
    size_t n, mine = 0, mps = 0;
    FILE *f;

    (void)state;
    assert_non_null(lib);
    assert_non_null(mkdtemp(dir));
    setenv("FAKE_NVML_PROCS", dir, 1);
    assert_int_equal(fatia_gpuwatch_open(lib, &w, why, sizeof(why)), 0);
    assert_int_equal(fatia_gpuwatch_n_gpus(w), 2);
    assert_string_equal(fatia_gpuwatch_uuid(w, 1), "GPU-fake-1");
    for (int i = 0; i < 80; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            pause();
            _exit(0);
        }
        snprintf(path, sizeof(path), "%s/0.%d", dir, (int)kids[i]);
        f = fopen(path, "w");
        assert_non_null(f);
        fprintf(f, "%d\n", (i + 1) << 20);
        fclose(f);
    }
    /* an MPS client on GPU 1, and a dead pid NVML would no longer list */
    snprintf(path, sizeof(path), "%s/mps.1.%d", dir, (int)getpid());
    f = fopen(path, "w");
    fprintf(f, "%llu\n", (unsigned long long)(5 * GiB));
    fclose(f);
    snprintf(path, sizeof(path), "%s/1.%d", dir, 0x3ffffff0);
    f = fopen(path, "w");
    fprintf(f, "1\n");
    fclose(f);
    assert_int_equal(fatia_gpuwatch_sample(w, &v, &n), 0);
    /* the MPS client is in both of NVML's lists: one entry */
    assert_int_equal(n, 81);
    assert_int_equal(fatia_gpuwatch_pid_cgroup(getpid(), cg, sizeof(cg)), 0);
    for (size_t i = 0; i < n; i++) {
        if (v[i].mps) {
            mps++;
            assert_int_equal(v[i].pid, getpid());
            assert_int_equal(v[i].gpu, 1);
            assert_int_equal(v[i].bytes, 5 * GiB);
            assert_string_equal(v[i].cgroup, cg);
        } else {
            assert_int_equal(v[i].gpu, 0);
            for (int k = 0; k < 80; k++)
                if (v[i].pid == kids[k] && v[i].bytes == (uint64_t)(k + 1) << 20)
                    mine++;
        }
    }
    assert_int_equal(mine, 80);
    assert_int_equal(mps, 1);
    for (int i = 0; i < 80; i++) {
        kill(kids[i], SIGKILL);
        waitpid(kids[i], NULL, 0);
    }
    /* they are gone: NVML lists only the MPS client */
    assert_int_equal(fatia_gpuwatch_sample(w, &v, &n), 0);
    assert_int_equal(n, 1);
    fatia_gpuwatch_close(w);
    snprintf(path, sizeof(path), "rm -rf '%s'", dir);
    assert_int_equal(system(path), 0);
}

static void test_util(void **state)
{
    const char *uuids[] = {"GPU-a", "GPU-b"};
    bool ok[] = {true, true};
    struct fatia_gpuwatch_proc v[5];
    struct fatia_gpuwatch_pod pods[3] = {
        {.cgroup = "/fatia/pod-1", .n_gpus = 2, .uuid = {"GPU-a", "GPU-b"}},
        {.cgroup = "/fatia/pod-2", .n_gpus = 1, .uuid = {"GPU-a"}},
        {.cgroup = "/fatia/pod-3", .n_gpus = 1, .uuid = {"GPU-b"}},
    };

    (void)state;
    v[0] = proc(10, 0, 0, "/fatia/pod-1");
    v[0].sm = 70;
    v[1] = proc(11, 0, 0, "/fatia/pod-1/child");
    v[1].sm = 60; /* 70 + 60: capped at 100 */
    v[2] = proc(12, 1, 0, "/fatia/pod-1");
    v[2].sm = 20;
    v[3] = proc(13, 0, 0, "/fatia/pod-22"); /* only starts like pod-2's cgroup */
    v[3].sm = 90;
    v[4] = proc(14, 1, 0, "/fatia/pod-3");
    v[4].sm = -1;
    fatia_gpuwatch_util(pods, 3, v, 5, uuids, ok, 2);
    assert_int_equal(pods[0].util, 100);
    assert_int_equal(pods[1].util, 0);  /* no process of its own: idle */
    assert_int_equal(pods[2].util, -1); /* its process's utilisation unknown */
    /* a GPU that cannot tell makes every pod on it unknown, processes or not */
    ok[0] = false;
    fatia_gpuwatch_util(pods, 3, v, 5, uuids, ok, 2);
    assert_int_equal(pods[0].util, -1);
    assert_int_equal(pods[1].util, -1);
    /* a GPU the sample does not know */
    ok[0] = true;
    pods[1].uuid[0] = "GPU-z";
    fatia_gpuwatch_util(pods, 3, v, 5, uuids, ok, 2);
    assert_int_equal(pods[1].util, -1);
}

static void test_util_fake_nvml(void **state)
{
    const char *lib = getenv("FAKE_NVML_LIB");
    char dir[] = "/tmp/fatia-gpuutil-XXXXXX", path[600], why[256] = "";
    const struct fatia_gpuwatch_proc *v;
    struct fatia_gpuwatch *w;
    size_t n;
    FILE *f;

    (void)state;
    assert_non_null(lib);
    assert_non_null(mkdtemp(dir));
    setenv("FAKE_NVML_PROCS", dir, 1);
    unsetenv("FAKE_NVML_UTIL_FAIL");
    assert_int_equal(fatia_gpuwatch_open(lib, &w, why, sizeof(why)), 0);
    snprintf(path, sizeof(path), "%s/0.%d", dir, (int)getpid());
    f = fopen(path, "w");
    fprintf(f, "%llu\n", (unsigned long long)GiB);
    fclose(f);
    /* no utilisation sample: NVML's NOT_FOUND, the process used no SM */
    assert_int_equal(fatia_gpuwatch_sample(w, &v, &n), 0);
    assert_int_equal(n, 1);
    assert_true(fatia_gpuwatch_util_ok(w, 0));
    assert_int_equal(v[0].sm, 0);
    snprintf(path, sizeof(path), "%s/util.0.%d", dir, (int)getpid());
    f = fopen(path, "w");
    fprintf(f, "42\n");
    fclose(f);
    assert_int_equal(fatia_gpuwatch_sample(w, &v, &n), 0);
    assert_int_equal(v[0].sm, 42);
    /* per-process utilisation not supported: unknown */
    setenv("FAKE_NVML_UTIL_FAIL", "1", 1);
    assert_int_equal(fatia_gpuwatch_sample(w, &v, &n), 0);
    assert_false(fatia_gpuwatch_util_ok(w, 0));
    assert_int_equal(v[0].sm, -1);
    unsetenv("FAKE_NVML_UTIL_FAIL");
    fatia_gpuwatch_close(w);
    snprintf(path, sizeof(path), "rm -rf '%s'", dir);
    assert_int_equal(system(path), 0);
}

static void test_open_without_driver(void **state)
{
    struct fatia_gpuwatch *w = NULL;
    char why[256] = "";

    (void)state;
    assert_true(fatia_gpuwatch_open("/nonexistent/libnvidia-ml.so.1", &w, why, sizeof(why)) < 0);
    assert_null(w);
    assert_non_null(strstr(why, "cannot load"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_judge),
        cmocka_unit_test(test_cgroup_rel),
        cmocka_unit_test(test_sample_fake_nvml),
        cmocka_unit_test(test_open_without_driver),
        cmocka_unit_test(test_util),
        cmocka_unit_test(test_util_fake_nvml),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

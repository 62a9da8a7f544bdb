/*
 * tests/vgpu/test_vgpu_procs.c: several processes of one slice sharing one budget.
 *
 * Each test starts vgpu_worker processes (CTest gives them libfatia-vgpu.so in LD_PRELOAD and the
 * fake driver in LD_LIBRARY_PATH) that share one accounting file, and checks what the slice as a
 * whole may do: never pass the cap, even when every process races for the last bytes; get a
 * killed process's share back at once (also while it is a zombie, and when its pid is reused);
 * keep live processes' slots where they are; stay silent unless asked; fail closed on a bad
 * configuration. FAKE_CUDA_SHM makes the fake driver one GPU for all workers, so the peak it
 * records is what the slice really held at any instant.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <sys/mman.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vgpu/region.h"

#define MiB (UINT64_C(1) << 20)

struct worker {
    pid_t pid;
    int in;  /* its stdin: closing it ends a "hold" */
    int out; /* its stdout */
    int err; /* its stderr */
};

static char dir[256], acct_path[300], gpu[300];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/fatia-vgpu-test-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    DIR *d = opendir(dir);
    struct dirent *e;

    (void)state;
    while (d && (e = readdir(d))) {
        char path[600];

        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
    return 0;
}

/* Per test: a fresh accounting file and simulated GPU. */
static void fresh(const char *name)
{
    snprintf(acct_path, sizeof(acct_path), "%s/%s.acct_path", dir, name);
    snprintf(gpu, sizeof(gpu), "%s/%s.gpu", dir, name);
    unlink(acct_path);
    unlink(gpu);
}

/* Starts the worker with argv and the slice's environment plus extra "K=V" entries (an entry
 * "K=" without a value unsets K). */
static struct worker spawn(const char *const *args, const char *const *extra)
{
    int in[2], out[2], err[2];
    struct worker w;
    const char *worker = getenv("VGPU_WORKER");
    char *argv[16];
    int n = 0;

    assert_non_null(worker);
    /* Close-on-exec: a worker must not keep another worker's stdin open (its "hold" would never
     * see EOF). dup2 clears the flag on 0, 1 and 2. */
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    assert_int_equal(pipe2(err, O_CLOEXEC), 0);
    argv[n++] = (char *)worker;
    for (; args && *args && n < 15; args++)
        argv[n++] = (char *)*args;
    argv[n] = NULL;
    w.pid = fork();
    assert_true(w.pid >= 0);
    if (w.pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        dup2(err[1], 2);
        close(in[1]);
        close(out[0]);
        close(err[0]);
        setenv("FATIA_VGPU_SHARED_FILE", acct_path, 1);
        setenv("FATIA_VGPU_MEMORY_LIMIT", "64Mi", 1);
        setenv("FAKE_CUDA_SHM", gpu, 1);
        for (; extra && *extra; extra++) {
            const char *eq = strchr(*extra, '=');
            char name[128];

            snprintf(name, sizeof(name), "%.*s", (int)(eq - *extra), *extra);
            if (eq[1])
                setenv(name, eq + 1, 1);
            else
                unsetenv(name);
        }
        execv(worker, argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    w.in = in[1];
    w.out = out[0];
    w.err = err[0];
    return w;
}

/* Reads what fd gives until a newline or EOF, within 10 s. */
static void read_line(int fd, char *buf, size_t n)
{
    size_t len = 0;

    while (len + 1 < n) {
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t r;

        assert_true(poll(&p, 1, 10000) == 1);
        r = read(fd, buf + len, 1);
        if (r <= 0)
            break;
        if (buf[len++] == '\n')
            break;
    }
    buf[len] = '\0';
}

static void read_all(int fd, char *buf, size_t n)
{
    size_t len = 0;
    ssize_t r;

    while (len + 1 < n && (r = read(fd, buf + len, n - 1 - len)) > 0)
        len += (size_t)r;
    buf[len] = '\0';
}

static int finish(struct worker *w)
{
    int status;

    close(w->in);
    assert_int_equal(waitpid(w->pid, &status, 0), w->pid);
    close(w->out);
    close(w->err);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Runs a worker to the end: its exit status, and its first output line in line. */
static int run(const char *const *args, const char *const *extra, char *line, size_t n)
{
    struct worker w = spawn(args, extra);

    read_line(w.out, line, n);
    return finish(&w);
}

static struct worker hold(const char *bytes)
{
    const char *args[] = {"hold", bytes, NULL};
    struct worker w = spawn(args, NULL);
    char line[64];

    read_line(w.out, line, sizeof(line));
    assert_string_equal(line, "held rc=0\n");
    return w;
}

static uint64_t gpu_peak(void)
{
    int fd = open(gpu, O_RDONLY);
    uint64_t v[8] = {0};

    assert_true(fd >= 0);
    assert_true(read(fd, v, sizeof(v)) > 0);
    close(fd);
    return v[4]; /* struct shared_gpu: used[4], then peak[4] */
}

static void open_acct(struct fatia_vgpu_region *r, unsigned flags)
{
    char why[256];

    assert_int_equal(fatia_vgpu_region_open(r, acct_path, NULL, flags, why, sizeof(why)), 0);
}

static int slot_of(const struct fatia_vgpu_region *r, pid_t pid)
{
    for (int i = 0; i < FATIA_VGPU_MAX_SLOTS; i++) {
        uint64_t o = atomic_load(&r->slots[i].owner);

        if ((o >> 32) == FATIA_VGPU_SLOT_LIVE && (pid_t)(uint32_t)o == pid)
            return i;
    }
    return -1;
}

static void test_processes_share_one_cap(void **state)
{
    const char *args[] = {"hammer", "1500", "4", "8388608", NULL};
    struct worker w[16];
    struct fatia_vgpu_region r;
    char line[128];

    (void)state;
    fresh("share");
    for (int i = 0; i < 16; i++)
        w[i] = spawn(args, NULL);
    for (int i = 0; i < 16; i++) {
        read_line(w[i].out, line, sizeof(line));
        assert_true(strncmp(line, "ok ", 3) == 0);
        assert_non_null(strstr(line, " bad=0"));
        assert_int_equal(finish(&w[i]), 0);
    }
    /* 16 processes x 4 threads raced for 64 MiB: the GPU never held more. */
    assert_true(gpu_peak() > 32 * MiB);
    assert_true(gpu_peak() <= 64 * MiB);
    open_acct(&r, 0);
    assert_int_equal(fatia_vgpu_region_used(&r, 0), 0);
    assert_int_equal(r.limit[0], 64 * MiB);
    /* Workers reclaim each other's slots as they exit; what is left goes now. */
    fatia_vgpu_region_reclaim(&r);
    assert_int_equal(fatia_vgpu_region_live_slots(&r), 0);
    assert_int_equal(atomic_load(&r.hdr->high_water) <= 16, 1);
    fatia_vgpu_region_close(&r);
}

static void test_kill9_share_comes_back(void **state)
{
    const char *over[] = {"alloc", "33554432", NULL};
    const char *retry[] = {"retry", "33554432", "1000", NULL};
    struct worker a, c;
    char line[128];
    int ms = -1, rc = -1, status;

    (void)state;
    fresh("kill9");
    a = hold("50331648"); /* 48 MiB of 64 */
    assert_int_equal(run(over, NULL, line, sizeof(line)), 0);
    assert_string_equal(line, "rc=2\n");
    /* kill -9, and leave it a zombie: its memory is gone, its /proc entry is not. */
    assert_int_equal(kill(a.pid, SIGKILL), 0);
    for (int i = 0; i < 200; i++) {
        char path[64], buf[256];
        int fd;
        ssize_t n;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)a.pid);
        fd = open(path, O_RDONLY);
        assert_true(fd >= 0);
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        buf[n > 0 ? n : 0] = '\0';
        if (strstr(buf, ") Z "))
            break;
        usleep(5000);
    }
    c = spawn(retry, NULL);
    read_line(c.out, line, sizeof(line));
    assert_int_equal(sscanf(line, "rc=%d ms=%d", &rc, &ms), 2);
    assert_int_equal(rc, 0);
    assert_true(ms < 1000); /* within a second: at the first attempt, in fact */
    assert_int_equal(finish(&c), 0);
    assert_int_equal(waitpid(a.pid, &status, 0), a.pid);
    close(a.in);
    close(a.out);
    close(a.err);
}

static void test_pid_reuse_detected(void **state)
{
    const char *alloc32[] = {"alloc", "33554432", NULL};
    struct fatia_vgpu_region r;
    char line[64], st;
    uint64_t start;
    int me = (int)getpid();

    (void)state;
    fresh("reuse");
    assert_int_equal(fatia_vgpu_region_create(
                         acct_path,
                         (uint64_t[FATIA_VGPU_MAX_DEVICES]){64 * MiB, 64 * MiB, 64 * MiB, 64 * MiB,
                                                            64 * MiB, 64 * MiB, 64 * MiB, 64 * MiB,
                                                            64 * MiB, 64 * MiB, 64 * MiB, 64 * MiB,
                                                            64 * MiB, 64 * MiB, 64 * MiB, 64 * MiB},
                         NULL, 0),
                     0);
    open_acct(&r, 0);
    assert_int_equal(fatia_vgpu_proc_stat(me, &st, &start), 0);
    /* Slot 5 claims to belong to this (live) pid, but a process that started at another time: a
     * dead process whose pid was reused. */
    atomic_store(&r.slots[5].start_time, start + 12345);
    atomic_store(&r.slots[5].used[0], 60 * MiB);
    atomic_store(&r.slots[5].owner, ((uint64_t)FATIA_VGPU_SLOT_LIVE << 32) | (uint32_t)me);
    atomic_store(&r.hdr->high_water, 6);
    assert_int_equal(run(alloc32, NULL, line, sizeof(line)), 0);
    assert_string_equal(line, "rc=0\n");
    assert_int_equal(atomic_load(&r.slots[5].owner), 0);
    /* The same with the right start time: a live process; its 60 MiB stay. */
    atomic_store(&r.slots[5].start_time, start);
    atomic_store(&r.slots[5].used[0], 60 * MiB);
    atomic_store(&r.slots[5].owner, ((uint64_t)FATIA_VGPU_SLOT_LIVE << 32) | (uint32_t)me);
    assert_int_equal(run(alloc32, NULL, line, sizeof(line)), 0);
    assert_string_equal(line, "rc=2\n");
    assert_int_equal(atomic_load(&r.slots[5].used[0]), 60 * MiB);
    atomic_store(&r.slots[5].owner, 0);
    atomic_store(&r.slots[5].used[0], 0);
    fatia_vgpu_region_close(&r);
}

static void test_slots_stay_put(void **state)
{
    const char *alloc[] = {"alloc", "8388608", NULL};
    struct worker a, b, c;
    struct fatia_vgpu_region r;
    char line[64];
    int sa, sb, sc;

    (void)state;
    fresh("stable");
    a = hold("8388608");
    b = hold("8388608");
    c = hold("8388608");
    open_acct(&r, FATIA_VGPU_REGION_READ_ONLY);
    sa = slot_of(&r, a.pid);
    sc = slot_of(&r, c.pid);
    assert_true(sa >= 0 && sc >= 0);
    sb = slot_of(&r, b.pid);
    assert_true(sb >= 0);
    kill(b.pid, SIGKILL);
    finish(&b);
    /* The next process to join reclaims b's slot; nobody else's slot moves. */
    assert_int_equal(run(alloc, NULL, line, sizeof(line)), 0);
    assert_string_equal(line, "rc=0\n");
    assert_int_equal(slot_of(&r, b.pid), -1);
    assert_int_equal(fatia_vgpu_region_used(&r, 0), 24 * MiB); /* a, c, the new one: not b */
    assert_int_equal(slot_of(&r, a.pid), sa);
    assert_int_equal(slot_of(&r, c.pid), sc);
    assert_int_equal(atomic_load(&r.slots[sa].used[0]), 8 * MiB);
    assert_int_equal(atomic_load(&r.slots[sc].used[0]), 8 * MiB);
    /* a and c free what they hold; the alloc worker exited holding 8 MiB, which stays counted
     * until a live process reclaims its slot. */
    assert_int_equal(finish(&a), 0);
    assert_int_equal(finish(&c), 0);
    assert_int_equal(fatia_vgpu_region_used(&r, 0), 8 * MiB);
    fatia_vgpu_region_close(&r);
    open_acct(&r, 0);
    assert_int_equal(fatia_vgpu_region_reclaim(&r), 3);
    assert_int_equal(fatia_vgpu_region_used(&r, 0), 0);
    fatia_vgpu_region_close(&r);
}

static void test_many_processes(void **state)
{
    const char *one[] = {"alloc", "1048576", NULL};
    const char *all[] = {"alloc", "67108864", NULL};
    struct worker w[64];
    char line[64];

    (void)state;
    fresh("many");
    for (int i = 0; i < 64; i++)
        w[i] = hold("1048576");
    assert_int_equal(run(one, NULL, line, sizeof(line)), 0);
    assert_string_equal(line, "rc=2\n");
    for (int i = 0; i < 64; i++)
        kill(w[i].pid, SIGKILL);
    for (int i = 0; i < 64; i++)
        finish(&w[i]);
    assert_int_equal(run(all, NULL, line, sizeof(line)), 0);
    assert_string_equal(line, "rc=0\n");
}

static void test_silent_unless_asked(void **state)
{
    const char *over[] = {"alloc", "68157440", NULL};
    const char *logged[] = {"FATIA_VGPU_LOG=info", NULL};
    struct worker w;
    char out[256], err[1024];

    (void)state;
    fresh("quiet");
    w = spawn(over, NULL);
    read_all(w.out, out, sizeof(out));
    read_all(w.err, err, sizeof(err));
    assert_int_equal(finish(&w), 0);
    assert_string_equal(out, "rc=2\n");
    assert_string_equal(err, "");
    w = spawn(over, logged);
    read_all(w.out, out, sizeof(out));
    read_all(w.err, err, sizeof(err));
    assert_int_equal(finish(&w), 0);
    assert_string_equal(out, "rc=2\n");
    assert_non_null(strstr(err, "fatia-vgpu["));
    assert_non_null(strstr(err, "CUDA_ERROR_OUT_OF_MEMORY"));
}

static void test_bad_configuration_fails_closed(void **state)
{
    const char *one[] = {"alloc", "1", NULL};
    const char *bad_limit[] = {"FATIA_VGPU_MEMORY_LIMIT=12XB", NULL};
    const char *relative[] = {"FATIA_VGPU_SHARED_FILE=slice.acct_path", NULL};
    char missing[400];
    const char *no_dir[] = {missing, NULL};
    char line[64];

    (void)state;
    fresh("bad");
    assert_int_equal(run(one, bad_limit, line, sizeof(line)), 0);
    assert_string_equal(line, "rc=2\n");
    assert_int_equal(run(one, relative, line, sizeof(line)), 0);
    assert_string_equal(line, "rc=2\n");
    snprintf(missing, sizeof(missing), "FATIA_VGPU_SHARED_FILE=%s/no/such/dir/acct_path", dir);
    assert_int_equal(run(one, no_dir, line, sizeof(line)), 0);
    assert_string_equal(line, "rc=2\n");
}

static void test_agent_created_file_rules(void **state)
{
    const char *info[] = {"info", NULL};
    const char *alloc32[] = {"alloc", "33554432", NULL};
    uint64_t limit[FATIA_VGPU_MAX_DEVICES];
    char line[128], why[256];
    struct worker w;

    (void)state;
    fresh("agent");
    for (int i = 0; i < FATIA_VGPU_MAX_DEVICES; i++)
        limit[i] = 16 * MiB;
    assert_int_equal(fatia_vgpu_region_create(acct_path, limit, why, sizeof(why)), 0);
    /* The worker's environment says 64 MiB; the slice's file says 16 and wins. */
    assert_int_equal(run(info, NULL, line, sizeof(line)), 0);
    assert_string_equal(line, "free=16777216 total=16777216\n");
    assert_int_equal(run(alloc32, NULL, line, sizeof(line)), 0);
    assert_string_equal(line, "rc=2\n");
    /* While a process holds a slot, the agent cannot re-create the file under it. */
    w = hold("1048576");
    assert_int_equal(fatia_vgpu_region_create(acct_path, limit, why, sizeof(why)), -EBUSY);
    assert_int_equal(finish(&w), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_processes_share_one_cap),
        cmocka_unit_test(test_kill9_share_comes_back),
        cmocka_unit_test(test_pid_reuse_detected),
        cmocka_unit_test(test_slots_stay_put),
        cmocka_unit_test(test_many_processes),
        cmocka_unit_test(test_silent_unless_asked),
        cmocka_unit_test(test_bad_configuration_fails_closed),
        cmocka_unit_test(test_agent_created_file_rules),
    };

    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, setup, teardown);
}

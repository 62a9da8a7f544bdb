/*
 * tests/vgpu/test_vgpu_core.c: the interposer's parts that need no driver: the FATIA_VGPU_*
 * parser, the allocation map, and the shared accounting region within one process.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vgpu/config.h"
#include "vgpu/ptrmap.h"
#include "vgpu/region.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

/* ---- configuration ---------------------------------------------------------------------------- */

static void test_parse_size(void **state)
{
    static const struct {
        const char *in;
        int ret;
        uint64_t want;
    } cases[] = {
        {"0", 0, 0},
        {"1", 0, 1},
        {"12Gi", 0, 12 * GiB},
        {"512Mi", 0, 512 * MiB},
        {"4Ki", 0, 4096},
        {"1Ti", 0, UINT64_C(1) << 40},
        {"1Pi", 0, UINT64_C(1) << 50},
        {"24G", 0, UINT64_C(24000000000)},
        {"5k", 0, 5000},
        {"5K", 0, 5000},
        {"7M", 0, 7000000},
        {"2T", 0, UINT64_C(2000000000000)},
        {"3P", 0, UINT64_C(3000000000000000)},
        {"18446744073709551614", 0, UINT64_MAX - 1},
        {"18446744073709551615", -ERANGE, 0}, /* reserved for "no limit" */
        {"18446744073709551616", -ERANGE, 0},
        {"16384Pi", -ERANGE, 0},
        {"", -EINVAL, 0},
        {"Gi", -EINVAL, 0},
        {"-1", -EINVAL, 0},
        {"+1", -EINVAL, 0},
        {" 1", -EINVAL, 0},
        {"1 ", -EINVAL, 0},
        {"1.5Gi", -EINVAL, 0},
        {"1gi", -EINVAL, 0},
        {"1GiB", -EINVAL, 0},
        {"0x10", -EINVAL, 0},
        {"12m", -EINVAL, 0}, /* milli: not a byte count */
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t v = 77;
        int r = fatia_vgpu_parse_size(cases[i].in, &v);

        if (r != cases[i].ret)
            fail_msg("'%s': returned %d, want %d", cases[i].in, r, cases[i].ret);
        if (r == 0 && v != cases[i].want)
            fail_msg("'%s': %llu, want %llu", cases[i].in, (unsigned long long)v,
                     (unsigned long long)cases[i].want);
        if (r != 0)
            assert_int_equal(v, 77);
    }
    assert_int_equal(fatia_vgpu_parse_size(NULL, NULL), -EINVAL);
}

struct env {
    const char *pairs[24][2];
};

static const char *env_get(void *ctx, const char *name)
{
    struct env *e = ctx;

    for (int i = 0; i < 24 && e->pairs[i][0]; i++) {
        if (strcmp(e->pairs[i][0], name) == 0)
            return e->pairs[i][1];
    }
    return NULL;
}

static void test_config_defaults_pass_through(void **state)
{
    struct env e = {{{NULL, NULL}}};
    struct fatia_vgpu_config c;

    (void)state;
    fatia_vgpu_config_load(&c, env_get, &e);
    assert_false(c.any_limit);
    for (int i = 0; i < FATIA_VGPU_MAX_DEVICES; i++)
        assert_true(c.limit[i] == FATIA_VGPU_NO_LIMIT);
    assert_int_equal(c.log_level, FATIA_VGPU_LOG_OFF);
    assert_string_equal(c.shared_file, "");
    assert_int_equal(c.n_errors, 0);
    assert_int_equal(c.n_uuids, 0);
}

static void test_config_limits_and_overrides(void **state)
{
    struct env e = {{{"FATIA_VGPU_MEMORY_LIMIT", "12Gi"},
                     {"FATIA_VGPU_MEMORY_LIMIT_1", "24Gi"},
                     {"FATIA_VGPU_MEMORY_LIMIT_15", "1Mi"},
                     {"FATIA_VGPU_MEMORY_LIMIT_16", "1Mi"}, /* no such ordinal: ignored */
                     {"FATIA_VGPU_SHARED_FILE", "/run/fatia/slices/gpu-0-ts1/acct"},
                     {"FATIA_VGPU_DEVICE_UUIDS", "GPU-aaaa,GPU-bbbb"},
                     {"FATIA_VGPU_LOG", "debug"},
                     {"FATIA_VGPU_LOG_FILE", "/tmp/vgpu.log"},
                     {NULL, NULL}}};
    struct fatia_vgpu_config c;

    (void)state;
    fatia_vgpu_config_load(&c, env_get, &e);
    assert_true(c.any_limit);
    assert_int_equal(c.limit[0], 12 * GiB);
    assert_int_equal(c.limit[1], 24 * GiB);
    assert_int_equal(c.limit[2], 12 * GiB);
    assert_int_equal(c.limit[15], MiB);
    assert_string_equal(c.shared_file, "/run/fatia/slices/gpu-0-ts1/acct");
    assert_int_equal(c.n_uuids, 2);
    assert_string_equal(c.uuids[0], "GPU-aaaa");
    assert_string_equal(c.uuids[1], "GPU-bbbb");
    assert_int_equal(c.log_level, FATIA_VGPU_LOG_DEBUG);
    assert_string_equal(c.log_file, "/tmp/vgpu.log");
    assert_int_equal(c.n_errors, 0);
}

static void test_config_only_one_device(void **state)
{
    struct env e = {{{"FATIA_VGPU_MEMORY_LIMIT_0", "1Gi"}, {NULL, NULL}}};
    struct fatia_vgpu_config c;

    (void)state;
    fatia_vgpu_config_load(&c, env_get, &e);
    assert_true(c.any_limit);
    assert_int_equal(c.limit[0], GiB);
    assert_true(c.limit[1] == FATIA_VGPU_NO_LIMIT);
}

static void test_config_fails_closed(void **state)
{
    static const struct {
        const char *name, *value;
        int dev;      /* the device to check */
        uint64_t cap; /* its cap afterwards */
    } cases[] = {
        {"FATIA_VGPU_MEMORY_LIMIT", "12GB", 3, 0},
        {"FATIA_VGPU_MEMORY_LIMIT", "", 0, 0},
        {"FATIA_VGPU_MEMORY_LIMIT_2", "lots", 2, 0},
        {"FATIA_VGPU_SHARED_FILE", "relative/acct", 5, 0},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct env e = {{{cases[i].name, cases[i].value}, {NULL, NULL}}};
        struct fatia_vgpu_config c;

        fatia_vgpu_config_load(&c, env_get, &e);
        assert_int_equal(c.n_errors, 1);
        assert_non_null(strstr(c.first_error, cases[i].name));
        assert_true(c.any_limit);
        assert_int_equal(c.limit[cases[i].dev], cases[i].cap);
    }
}

static void test_config_bad_values_reported(void **state)
{
    char long_path[700];
    struct env e = {{{"FATIA_VGPU_LOG", "verbose"},
                     {"FATIA_VGPU_DEVICE_UUIDS", "GPU-a,,GPU-b"},
                     {"FATIA_VGPU_LOG_FILE", long_path},
                     {NULL, NULL}}};
    struct env e2 = {{{"FATIA_VGPU_DEVICE_UUIDS", "GPU-a,"}, {NULL, NULL}}};
    struct env e3 = {{{"FATIA_VGPU_DEVICE_UUIDS", "GPU a"}, {NULL, NULL}}};
    struct fatia_vgpu_config c;

    (void)state;
    memset(long_path, 'x', sizeof(long_path) - 1);
    long_path[0] = '/';
    long_path[sizeof(long_path) - 1] = '\0';
    fatia_vgpu_config_load(&c, env_get, &e);
    /* A misspelled level still shows warnings: someone asked for logging. */
    assert_int_equal(c.log_level, FATIA_VGPU_LOG_WARNING);
    assert_int_equal(c.n_errors, 3);
    assert_int_equal(c.n_uuids, 0);
    assert_string_equal(c.log_file, "");
    assert_false(c.any_limit);
    fatia_vgpu_config_load(&c, env_get, &e2);
    assert_int_equal(c.n_uuids, 0);
    assert_int_equal(c.n_errors, 1);
    fatia_vgpu_config_load(&c, env_get, &e3);
    assert_int_equal(c.n_uuids, 0);
    assert_int_equal(c.n_errors, 1);
}

static void test_log_levels(void **state)
{
    static const char *const names[] = {"off", "error", "warning", "info", "debug"};
    enum fatia_vgpu_log_level l;

    (void)state;
    for (int i = 0; i < 5; i++) {
        char digit[2] = {(char)('0' + i), 0};

        assert_int_equal(fatia_vgpu_parse_log_level(names[i], &l), 0);
        assert_int_equal(l, i);
        assert_int_equal(fatia_vgpu_parse_log_level(digit, &l), 0);
        assert_int_equal(l, i);
    }
    assert_int_equal(fatia_vgpu_parse_log_level("warn", &l), 0);
    assert_int_equal(l, FATIA_VGPU_LOG_WARNING);
    assert_int_equal(fatia_vgpu_parse_log_level("5", &l), -EINVAL);
    assert_int_equal(fatia_vgpu_parse_log_level("DEBUG", &l), -EINVAL);
    assert_int_equal(fatia_vgpu_parse_log_level(NULL, &l), -EINVAL);
}

/* ---- allocation map --------------------------------------------------------------------------- */

static void test_ptrmap_against_reference(void **state)
{
    enum {
        N = 20000
    };

    static uint64_t keys[N], sizes[N];
    static bool live[N];
    struct fatia_vgpu_ptrmap m;
    struct fatia_vgpu_entry e, old;
    unsigned seed = 42;
    uint64_t n_live = 0;

    (void)state;
    fatia_vgpu_ptrmap_init(&m);
    for (int i = 0; i < N; i++) {
        /* Device pointers share their high bits and are 2 MiB aligned: the worst case. */
        keys[i] = UINT64_C(0x7f0000000000) + (uint64_t)i * (2 * MiB);
        sizes[i] = (uint64_t)i + 1;
    }
    for (int step = 0; step < 200000; step++) {
        int i = rand_r(&seed) % N;

        if (live[i]) {
            assert_true(fatia_vgpu_ptrmap_take(&m, FATIA_VGPU_KIND_PTR, keys[i], &e));
            assert_int_equal(e.size, sizes[i]);
            assert_false(fatia_vgpu_ptrmap_get(&m, FATIA_VGPU_KIND_PTR, keys[i], &e));
            live[i] = false;
            n_live--;
        } else {
            struct fatia_vgpu_entry in = {keys[i], sizes[i], i % 4, FATIA_VGPU_KIND_PTR};

            assert_false(fatia_vgpu_ptrmap_take(&m, FATIA_VGPU_KIND_PTR, keys[i], &e));
            assert_int_equal(fatia_vgpu_ptrmap_put(&m, &in, &old), 0);
            live[i] = true;
            n_live++;
        }
        if (step % 10000 == 0) {
            assert_int_equal(fatia_vgpu_ptrmap_count(&m), n_live);
            for (int j = 0; j < N; j += 97)
                assert_int_equal(fatia_vgpu_ptrmap_get(&m, FATIA_VGPU_KIND_PTR, keys[j], &e),
                                 live[j]);
        }
    }
    /* The same number under another kind is another key. */
    {
        struct fatia_vgpu_entry h = {keys[0], 5, 0, FATIA_VGPU_KIND_HANDLE};

        assert_int_equal(fatia_vgpu_ptrmap_put(&m, &h, &old), 0);
        assert_true(fatia_vgpu_ptrmap_get(&m, FATIA_VGPU_KIND_HANDLE, keys[0], &e));
        assert_int_equal(e.size, 5);
        assert_int_equal(fatia_vgpu_ptrmap_get(&m, FATIA_VGPU_KIND_PTR, keys[0], &e), live[0]);
        /* A second put of a key returns the old entry. */
        h.size = 6;
        assert_int_equal(fatia_vgpu_ptrmap_put(&m, &h, &old), 1);
        assert_int_equal(old.size, 5);
    }
    /* In a fork child the map starts empty (the parent's tables are left behind, not freed). */
    {
        pid_t pid = fork();
        int status;

        if (pid == 0) {
            fatia_vgpu_ptrmap_after_fork(&m);
            _exit(fatia_vgpu_ptrmap_count(&m) == 0 ? 0 : 1);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    fatia_vgpu_ptrmap_release(&m);
}

/* ---- the accounting region --------------------------------------------------------------------- */

static void limits(uint64_t *l, uint64_t v)
{
    for (int i = 0; i < FATIA_VGPU_MAX_DEVICES; i++)
        l[i] = v;
}

static void test_region_private(void **state)
{
    struct fatia_vgpu_region r;
    uint64_t l[FATIA_VGPU_MAX_DEVICES];

    (void)state;
    limits(l, 100);
    l[3] = FATIA_VGPU_NO_LIMIT;
    assert_int_equal(fatia_vgpu_region_open(&r, NULL, l, 0, NULL, 0), 0);
    assert_int_equal(fatia_vgpu_region_reserve(&r, 0, 60), 0);
    assert_int_equal(fatia_vgpu_region_reserve(&r, 0, 40), 0);
    assert_int_equal(fatia_vgpu_region_reserve(&r, 0, 1), -ENOMEM);
    assert_int_equal(fatia_vgpu_region_used(&r, 0), 100);
    fatia_vgpu_region_release(&r, 0, 40);
    assert_int_equal(fatia_vgpu_region_reserve(&r, 0, 41), -ENOMEM);
    assert_int_equal(fatia_vgpu_region_reserve(&r, 0, 40), 0);
    assert_int_equal(fatia_vgpu_region_reserve(&r, 1, 101), -ENOMEM);
    assert_int_equal(fatia_vgpu_region_reserve(&r, 1, UINT64_MAX), -ENOMEM);
    /* An uncapped device is not accounted at all. */
    assert_int_equal(fatia_vgpu_region_reserve(&r, 3, UINT64_MAX - 1), 0);
    assert_int_equal(fatia_vgpu_region_used(&r, 3), 0);
    /* Out-of-range devices are not capped here (the hooks pass them through). */
    assert_int_equal(fatia_vgpu_region_reserve(&r, 16, 1000), 0);
    assert_int_equal(fatia_vgpu_region_reserve(&r, -1, 1000), 0);
    /* Releasing more than held never wraps. */
    fatia_vgpu_region_release(&r, 0, 1000);
    assert_int_equal(fatia_vgpu_region_used(&r, 0), 0);
    assert_int_equal(atomic_load(&r.hdr->n_refused), 4);
    assert_int_equal(fatia_vgpu_region_live_slots(&r), 1);
    fatia_vgpu_region_close(&r);
}

static char tmpdir[64];

static int region_setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/fatia-vgpu-core-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int region_teardown(void **state)
{
    char p[128];

    (void)state;
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof(p), "%s/f%d", tmpdir, i);
        unlink(p);
    }
    rmdir(tmpdir);
    return 0;
}

static void test_region_file_shared(void **state)
{
    struct fatia_vgpu_region a, b, ro;
    uint64_t l[FATIA_VGPU_MAX_DEVICES], other[FATIA_VGPU_MAX_DEVICES];
    char path[128], why[256];

    (void)state;
    snprintf(path, sizeof(path), "%s/f0", tmpdir);
    limits(l, 1000);
    limits(other, 5000);
    /* Read-only on a missing file fails; the first writer creates it with its caps. */
    assert_int_equal(
        fatia_vgpu_region_open(&ro, path, NULL, FATIA_VGPU_REGION_READ_ONLY, why, sizeof(why)),
        -ENOENT);
    assert_non_null(strstr(why, path));
    assert_int_equal(fatia_vgpu_region_open(&a, path, l, 0, why, sizeof(why)), 0);
    assert_false(a.limits_differ);
    /* A second attacher with other caps uses the file's, and says so. */
    assert_int_equal(fatia_vgpu_region_open(&b, path, other, 0, why, sizeof(why)), 0);
    assert_true(b.limits_differ);
    assert_int_equal(b.limit[0], 1000);
    assert_int_equal(fatia_vgpu_region_reserve(&a, 0, 700), 0);
    assert_int_equal(fatia_vgpu_region_reserve(&b, 0, 301), -ENOMEM);
    assert_int_equal(fatia_vgpu_region_reserve(&b, 0, 300), 0);
    assert_int_equal(
        fatia_vgpu_region_open(&ro, path, NULL, FATIA_VGPU_REGION_READ_ONLY, why, sizeof(why)), 0);
    assert_int_equal(fatia_vgpu_region_used(&ro, 0), 1000);
    assert_int_equal(fatia_vgpu_region_reserve(&ro, 0, 1), -ENOMEM);
    assert_int_equal(fatia_vgpu_region_live_slots(&ro), 2);
    /* The agent cannot re-create a file that live processes use. */
    assert_int_equal(fatia_vgpu_region_create(path, other, why, sizeof(why)), -EBUSY);
    fatia_vgpu_region_release(&a, 0, 700);
    assert_int_equal(fatia_vgpu_region_used(&ro, 0), 300);
    fatia_vgpu_region_close(&a);
    fatia_vgpu_region_close(&b);
    fatia_vgpu_region_close(&ro);
}

static void test_region_rejects_foreign_files(void **state)
{
    struct fatia_vgpu_region r;
    uint64_t l[FATIA_VGPU_MAX_DEVICES];
    char path[128], why[256];
    int fd;

    (void)state;
    limits(l, 1000);
    snprintf(path, sizeof(path), "%s/f1", tmpdir);
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "not an accounting file\n", 23), 23);
    close(fd);
    assert_int_equal(fatia_vgpu_region_open(&r, path, l, 0, why, sizeof(why)), -EPROTO);
    assert_non_null(strstr(why, "not a fatia-vgpu accounting file"));
    /* The right size but another magic. */
    fd = open(path, O_RDWR | O_TRUNC);
    assert_int_equal(ftruncate(fd, (off_t)FATIA_VGPU_REGION_SIZE), 0);
    assert_int_equal(pwrite(fd, "XXXXXXXX", 8, 0), 8);
    close(fd);
    assert_int_equal(fatia_vgpu_region_open(&r, path, l, 0, why, sizeof(why)), -EPROTO);
    /* The right magic, another version. */
    {
        uint64_t magic = FATIA_VGPU_REGION_MAGIC;
        uint32_t version = 99;

        fd = open(path, O_RDWR);
        assert_int_equal(pwrite(fd, &magic, 8, 0), 8);
        assert_int_equal(pwrite(fd, &version, 4, 8), 4);
        close(fd);
    }
    assert_int_equal(fatia_vgpu_region_open(&r, path, l, 0, why, sizeof(why)), -EPROTO);
    assert_non_null(strstr(why, "another layout"));
    /* A file whose writer died before the magic was written is initialized again. */
    fd = open(path, O_RDWR | O_TRUNC);
    assert_int_equal(ftruncate(fd, (off_t)FATIA_VGPU_REGION_SIZE), 0);
    close(fd);
    assert_int_equal(fatia_vgpu_region_open(&r, path, l, 0, why, sizeof(why)), 0);
    assert_int_equal(r.limit[0], 1000);
    fatia_vgpu_region_close(&r);
    /* The agent's path must be absolute. */
    assert_int_equal(fatia_vgpu_region_create("relative", l, why, sizeof(why)), -EINVAL);
}

static void test_region_reclaims_dead_and_zombies(void **state)
{
    struct fatia_vgpu_region r;
    uint64_t l[FATIA_VGPU_MAX_DEVICES];
    char path[128], st;
    uint64_t start;
    pid_t dead, zombie;
    int status;

    (void)state;
    limits(l, 1000);
    snprintf(path, sizeof(path), "%s/f2", tmpdir);
    assert_int_equal(fatia_vgpu_region_open(&r, path, l, 0, NULL, 0), 0);
    dead = fork();
    if (dead == 0)
        _exit(0);
    assert_int_equal(waitpid(dead, &status, 0), dead);
    zombie = fork();
    if (zombie == 0)
        _exit(0);
    /* Wait until it is a zombie, without reaping it. */
    for (int i = 0; i < 500; i++) {
        if (fatia_vgpu_proc_stat(zombie, &st, &start) == 0 && st == 'Z')
            break;
        usleep(2000);
    }
    assert_int_equal(st, 'Z');
    for (int i = 0; i < 2; i++) {
        pid_t pid = i ? zombie : dead;

        atomic_store(&r.slots[10 + i].used[0], 400);
        atomic_store(&r.slots[10 + i].owner,
                     ((uint64_t)FATIA_VGPU_SLOT_LIVE << 32) | (uint32_t)pid);
    }
    /* A reclaimer that died half-way leaves RECLAIMING with its pid: reclaimable too. */
    atomic_store(&r.slots[12].used[0], 100);
    atomic_store(&r.slots[12].owner, ((uint64_t)FATIA_VGPU_SLOT_RECLAIMING << 32) | (uint32_t)dead);
    atomic_store(&r.hdr->high_water, 13);
    assert_int_equal(fatia_vgpu_region_used(&r, 0), 900);
    assert_int_equal(fatia_vgpu_region_reserve(&r, 0, 500), 0); /* reclaims on the way */
    assert_int_equal(fatia_vgpu_region_used(&r, 0), 500);
    assert_int_equal(atomic_load(&r.hdr->n_reclaimed), 3);
    assert_int_equal(fatia_vgpu_region_reclaim(&r), 0);
    assert_int_equal(waitpid(zombie, &status, 0), zombie);
    fatia_vgpu_region_close(&r);
}

static void test_region_fork_private(void **state)
{
    struct fatia_vgpu_region r;
    uint64_t l[FATIA_VGPU_MAX_DEVICES];
    pid_t pid;
    int status;

    (void)state;
    limits(l, 1000);
    assert_int_equal(fatia_vgpu_region_open(&r, NULL, l, 0, NULL, 0), 0);
    assert_int_equal(fatia_vgpu_region_reserve(&r, 0, 600), 0);
    pid = fork();
    if (pid == 0) {
        fatia_vgpu_region_after_fork(&r);
        _exit(fatia_vgpu_region_used(&r, 0) == 0 && fatia_vgpu_region_reserve(&r, 0, 1000) == 0
                  ? 0
                  : 1);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(fatia_vgpu_region_used(&r, 0), 600);
    fatia_vgpu_region_close(&r);
}

struct racer {
    struct fatia_vgpu_region *r;
    pthread_barrier_t *go;
    int ret;
};

static void *race_first_reserve(void *arg)
{
    struct racer *x = arg;

    pthread_barrier_wait(x->go);
    x->ret = fatia_vgpu_region_reserve(x->r, 0, 10);
    return NULL;
}

/* Threads of one process allocating for the first time at once claim one slot between them. */
static void test_region_one_slot_per_process(void **state)
{
    struct fatia_vgpu_region r;
    uint64_t l[FATIA_VGPU_MAX_DEVICES];
    pthread_t t[16];
    struct racer x[16];
    pthread_barrier_t go;

    (void)state;
    limits(l, 1000);
    for (int round = 0; round < 50; round++) {
        assert_int_equal(fatia_vgpu_region_open(&r, NULL, l, 0, NULL, 0), 0);
        pthread_barrier_init(&go, NULL, 16);
        for (int i = 0; i < 16; i++) {
            x[i] = (struct racer){&r, &go, -1};
            pthread_create(&t[i], NULL, race_first_reserve, &x[i]);
        }
        for (int i = 0; i < 16; i++) {
            pthread_join(t[i], NULL);
            assert_int_equal(x[i].ret, 0);
        }
        pthread_barrier_destroy(&go);
        assert_int_equal(fatia_vgpu_region_live_slots(&r), 1);
        assert_int_equal(fatia_vgpu_region_used(&r, 0), 160);
        fatia_vgpu_region_release(&r, 0, 160);
        assert_int_equal(fatia_vgpu_region_used(&r, 0), 0);
        fatia_vgpu_region_close(&r);
    }
}

static void test_proc_stat(void **state)
{
    char st;
    uint64_t start, start2;

    (void)state;
    assert_int_equal(fatia_vgpu_proc_stat((int)getpid(), &st, &start), 0);
    assert_true(st == 'R' || st == 'S');
    assert_true(start > 0);
    assert_int_equal(fatia_vgpu_proc_stat((int)getpid(), &st, &start2), 0);
    assert_int_equal(start, start2);
    assert_int_equal(fatia_vgpu_proc_stat(0x3fffffff, &st, &start), -ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_config_defaults_pass_through),
        cmocka_unit_test(test_config_limits_and_overrides),
        cmocka_unit_test(test_config_only_one_device),
        cmocka_unit_test(test_config_fails_closed),
        cmocka_unit_test(test_config_bad_values_reported),
        cmocka_unit_test(test_log_levels),
        cmocka_unit_test(test_ptrmap_against_reference),
        cmocka_unit_test(test_region_private),
        cmocka_unit_test(test_region_file_shared),
        cmocka_unit_test(test_region_rejects_foreign_files),
        cmocka_unit_test(test_region_reclaims_dead_and_zombies),
        cmocka_unit_test(test_region_fork_private),
        cmocka_unit_test(test_region_one_slot_per_process),
        cmocka_unit_test(test_proc_stat),
    };

    return cmocka_run_group_tests(tests, region_setup, region_teardown);
}

/*
 * tests/vgpu/test_vgpu_conffile.c: the interposer's fixed configuration file (vgpu/conffile.h):
 * the pairs it accepts, the files it refuses (each caps every device at 0), the ordinals it does
 * not name, and the agent's writer producing a file the reader takes as written.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <sys/stat.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/vgpu_slice.h"
#include "vgpu/conffile.h"
#include "vgpu/config.h"

#define MiB (UINT64_C(1) << 20)

static char dir[] = "/tmp/fatia-conffile-XXXXXX";

static const char *put(const char *name, const char *text)
{
    static char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_good_file(void **state)
{
    struct fatia_vgpu_config c;
    const char *p = put("good", "# comment\n\nFATIA_VGPU_SHARED_FILE=/run/x.acct\n"
                                "FATIA_VGPU_DEVICE_UUIDS=GPU-a,GPU-b\n"
                                "FATIA_VGPU_MEMORY_LIMIT_0=64Mi\nFATIA_VGPU_MEMORY_LIMIT_1=16Mi\n");

    (void)state;
    assert_int_equal(fatia_vgpu_config_load_file(&c, p), 0);
    assert_true(c.from_file);
    assert_int_equal(c.n_errors, 0);
    assert_string_equal(c.shared_file, "/run/x.acct");
    assert_int_equal(c.n_uuids, 2);
    assert_int_equal(c.limit[0], 64 * MiB);
    assert_int_equal(c.limit[1], 16 * MiB);
    /* ordinals the file does not name get the smallest cap: renumbering finds nothing uncapped */
    for (int i = 2; i < FATIA_VGPU_MAX_DEVICES; i++)
        assert_int_equal(c.limit[i], 16 * MiB);
}

static void test_missing_file_is_enoent(void **state)
{
    struct fatia_vgpu_config c;
    char p[300];

    (void)state;
    snprintf(p, sizeof(p), "%s/none", dir);
    memset(&c, 0x5a, sizeof(c));
    assert_int_equal(fatia_vgpu_config_load_file(&c, p), -ENOENT);
    assert_int_equal(fatia_vgpu_config_load_file(&c, "/dev/null/x"), -ENOENT);
}

static void test_no_limit_is_pass_through(void **state)
{
    struct fatia_vgpu_config c;
    const char *p = put("nolimit", "FATIA_VGPU_LOG=info\n");

    (void)state;
    assert_int_equal(fatia_vgpu_config_load_file(&c, p), 0);
    assert_false(c.any_limit);
    assert_int_equal(c.limit[0], FATIA_VGPU_NO_LIMIT);
}

static void test_bad_files_fail_closed(void **state)
{
    static const struct {
        const char *text, *why;
    } cases[] = {
        {"FATIA_VGPU_MEMORY_LIMIT_0=1Gi\nLD_PRELOAD=/x.so\n", "line 2: unknown key"},
        {"FATIA_VGPU_MEMORY_LIMIT_0=1Gi\nFATIA_VGPU_MEMORY_LIMIT_0=80Gi\n", "key given twice"},
        {"FATIA_VGPU_MEMORY_LIMIT_0 1Gi\n", "expected KEY=VALUE"},
        {"FATIA_VGPU_MEMORY_LIMIT_16=1Gi\n", "unknown key"},
        {"FATIA_VGPU_MEMORY_LIMIT_=1Gi\n", "unknown key"},
        {" FATIA_VGPU_MEMORY_LIMIT=1Gi\n", "unknown key"},
    };
    struct fatia_vgpu_config c;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *p = put("bad", cases[i].text);

        assert_int_equal(fatia_vgpu_config_load_file(&c, p), -EINVAL);
        assert_true(c.any_limit);
        for (int d = 0; d < FATIA_VGPU_MAX_DEVICES; d++)
            assert_int_equal(c.limit[d], 0);
        assert_non_null(strstr(c.first_error, cases[i].why));
    }
    /* a value the shared parser refuses caps that device at 0, as in the environment */
    assert_int_equal(fatia_vgpu_config_load_file(&c, put("v", "FATIA_VGPU_MEMORY_LIMIT_0=lots\n")),
                     0);
    assert_int_equal(c.limit[0], 0);
    assert_int_equal(c.limit[5], 0);
}

static void test_unreadable_and_huge_fail_closed(void **state)
{
    struct fatia_vgpu_config c;
    char big[FATIA_VGPU_CONF_MAX_BYTES + 10];

    (void)state;
    /* a directory where the file should be: exists, cannot be read */
    assert_int_equal(fatia_vgpu_config_load_file(&c, dir), -EISDIR);
    assert_int_equal(c.limit[0], 0);
    memset(big, '#', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(fatia_vgpu_config_load_file(&c, put("big", big)), -EFBIG);
    assert_int_equal(c.limit[3], 0);
    assert_non_null(strstr(c.first_error, "8 KiB"));
}

static void test_agent_writes_what_the_library_reads(void **state)
{
    struct fatia_vgpu_slice s = {.library = "/usr/lib/fatia/libfatia-vgpu.so",
                                 .accounting_file = "/var/lib/fatia/p/x.acct",
                                 .n_devices = 1,
                                 .uuids = {"GPU-00000000-1111-2222-3333-444444444444"},
                                 .cap = {34 * (UINT64_C(1) << 30)}};
    struct fatia_vgpu_config c;
    char text[1024], path[300];
    struct stat st;

    (void)state;
    assert_int_equal(fatia_agent_vgpu_slice_conf(&s, "/run/fatia/x.acct", text, sizeof(text)), 0);
    snprintf(path, sizeof(path), "%s/vgpu.conf", dir);
    assert_int_equal(fatia_agent_vgpu_write_ro(path, text), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0444);
    assert_int_equal(fatia_vgpu_config_load_file(&c, path), 0);
    assert_int_equal(c.n_errors, 0);
    assert_string_equal(c.shared_file, "/run/fatia/x.acct");
    assert_string_equal(c.uuids[0], s.uuids[0]);
    assert_int_equal(c.limit[0], s.cap[0]);
    assert_int_equal(c.limit[7], s.cap[0]);
    /* replaced atomically, still read-only */
    s.cap[0] = 1;
    assert_int_equal(fatia_agent_vgpu_slice_conf(&s, NULL, text, sizeof(text)), 0);
    assert_int_equal(fatia_agent_vgpu_write_ro(path, text), 0);
    assert_int_equal(fatia_vgpu_config_load_file(&c, path), 0);
    assert_int_equal(c.limit[0], 1);
    assert_string_equal(c.shared_file, "/var/lib/fatia/p/x.acct");
    /* a path with a newline would add a line of the tenant's choosing */
    assert_int_equal(fatia_agent_vgpu_slice_conf(&s, "/run/x\nFATIA_VGPU_MEMORY_LIMIT_0=1Pi", text,
                                                 sizeof(text)),
                     -EINVAL);
    assert_int_equal(fatia_agent_vgpu_slice_conf(&s, NULL, text, 40), -ENAMETOOLONG);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[300];

    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_file),
        cmocka_unit_test(test_missing_file_is_enoent),
        cmocka_unit_test(test_no_limit_is_pass_through),
        cmocka_unit_test(test_bad_files_fail_closed),
        cmocka_unit_test(test_unreadable_and_huge_fail_closed),
        cmocka_unit_test(test_agent_writes_what_the_library_reads),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}

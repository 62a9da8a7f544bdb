/*
 * tests/unit/test_slice_id.c: the one slice-id rule (fatia_supply_slice_id, supply/plan.h) that
 * the planner's ids and placement's device ids both come from: whole GPUs, shares, MIG
 * instances, the profile name as the DRA driver spells it (dots dropped, lowercased, other
 * characters '-', leading and trailing '-' trimmed, long names cut), and buffers too small
 * (snprintf's contract: the full length back, the text cut and terminated).
 */
#include "base/compat.h"

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <string.h>

#include "supply/plan.h"

static void expect_id(uint32_t minor, const char *profile, int id, uint8_t start,
                      enum fatia_slice_kind kind, unsigned replica, const char *want)
{
    struct fatia_mig_profile prof = {.id = id};
    struct fatia_mig_placement pl = {.profile = &prof, .start = start};
    char buf[128];
    int len;

    if (profile)
        snprintf(prof.name, sizeof(prof.name), "%s", profile);
    len = fatia_supply_slice_id(minor, profile ? &pl : NULL, kind, replica, buf, sizeof(buf));
    if (strcmp(buf, want) || len != (int)strlen(want))
        fail_msg("profile %s: got \"%s\" (%d), want \"%s\"", profile ? profile : "(none)", buf, len,
                 want);
}

static void test_ids(void **state)
{
    (void)state;
    expect_id(3, NULL, 0, 0, FATIA_SLICE_WHOLE, 0, "gpu-3");
    expect_id(0, NULL, 0, 0, FATIA_SLICE_TIMESLICE, 1, "gpu-0-ts1");
    expect_id(2, NULL, 0, 0, FATIA_SLICE_MPS, 0, "gpu-2-mps0");
    expect_id(4294967295u, NULL, 0, 0, FATIA_SLICE_TIMESLICE, 65535, "gpu-4294967295-ts65535");
    expect_id(4, "3g.71gb", 9, 4, FATIA_SLICE_MIG, 0, "gpu-4-mig-3g71gb-9-4");
    expect_id(4, "3g.71gb", 9, 4, FATIA_SLICE_TIMESLICE, 2, "gpu-4-mig-3g71gb-9-4-ts2");
    expect_id(5, "1g.18gb+me", 19, 6, FATIA_SLICE_MIG, 0, "gpu-5-mig-1g18gb-me-19-6");
}

static void test_profile_spelling(void **state)
{
    (void)state;
    expect_id(0, "1G.10GB", 1, 0, FATIA_SLICE_MIG, 0, "gpu-0-mig-1g10gb-1-0");
    /* leading and trailing '-' (after the mapping) are trimmed: the rule placement used to miss */
    expect_id(0, "-1g.10gb", 1, 0, FATIA_SLICE_MIG, 0, "gpu-0-mig-1g10gb-1-0");
    expect_id(0, "+1g.10gb+", 1, 0, FATIA_SLICE_MIG, 0, "gpu-0-mig-1g10gb-1-0");
    expect_id(0, "--+x", 1, 0, FATIA_SLICE_MIG, 0, "gpu-0-mig-x-1-0");
    /* a hostile catalog entry: nothing left of the name */
    expect_id(0, "...", 1, 0, FATIA_SLICE_MIG, 0, "gpu-0-mig--1-0");
    expect_id(0, "+/ ", 1, 0, FATIA_SLICE_MIG, 0, "gpu-0-mig--1-0");
    /* '-' inside stays; "/" and " " become '-' */
    expect_id(0, "a b/c-d", 1, 0, FATIA_SLICE_MIG, 0, "gpu-0-mig-a-b-c-d-1-0");
    /* the longest catalog name (31 bytes) fits whole */
    expect_id(0, "abcdefghijklmnopqrstuvwxyz01234", 1, 0, FATIA_SLICE_MIG, 0,
              "gpu-0-mig-abcdefghijklmnopqrstuvwxyz01234-1-0");
}

static void test_small_buffers(void **state)
{
    struct fatia_mig_profile prof = {.name = "3g.71gb", .id = 9};
    struct fatia_mig_placement pl = {.profile = &prof, .start = 4};
    const char *want = "gpu-4-mig-3g71gb-9-4-ts2";
    char buf[32];
    (void)state;

    for (size_t n = 1; n <= strlen(want) + 1; n++) {
        int len;
        memset(buf, 'X', sizeof(buf));
        len = fatia_supply_slice_id(4, &pl, FATIA_SLICE_TIMESLICE, 2, buf, n);
        /* never past n, always terminated, a prefix of the id */
        assert_int_equal(buf[n], 'X');
        assert_true(memchr(buf, '\0', n) != NULL);
        assert_int_equal(strncmp(buf, want, strlen(buf)), 0);
        if (n > strlen(want)) {
            assert_int_equal(len, (int)strlen(want));
            assert_string_equal(buf, want);
        } else {
            assert_true(len >= (int)n); /* truncated: the caller can tell */
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids),
        cmocka_unit_test(test_profile_spelling),
        cmocka_unit_test(test_small_buffers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/unit/test_cron.c: model/cron.c, CronJob schedules.
 *
 * The activation and next-time tables are transcribed from github.com/robfig/cron's
 * spec_test.go (TestActivation, TestNext: the library the Kubernetes CronJob controller parses
 * schedules with), in its five-field form: the seconds field those tables carry ("0 0/15 * * *")
 * is dropped, and the cases that need seconds, time zones or daylight saving are left out. Each
 * time is given as upstream's text and its epoch seconds (UTC). Activation is upstream's test:
 * next(t - 1 s) == t. Then the parse errors kube-apiserver's validation reports.
 */
#include "base/compat.h"

#include <errno.h>
/* cmocka.h needs these before it; keep clang-format from sorting it first. */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "model/cron.h"

struct act_case {
    const char *text;
    int64_t t;
    const char *spec;
    bool fires;
};

struct next_case {
    const char *text;
    int64_t t;
    const char *spec;
    int64_t want; /* -1: never */
};

static const struct act_case act_cases[] = {
    {"Mon Jul 9 15:00 2012", 1341846000, "0/15 * * * *", true},
    {"Mon Jul 9 15:45 2012", 1341848700, "0/15 * * * *", true},
    {"Mon Jul 9 15:40 2012", 1341848400, "0/15 * * * *", false},
    {"Mon Jul 9 15:05 2012", 1341846300, "5/15 * * * *", true},
    {"Mon Jul 9 15:20 2012", 1341847200, "5/15 * * * *", true},
    {"Mon Jul 9 15:50 2012", 1341849000, "5/15 * * * *", true},
    {"Sun Jul 15 15:00 2012", 1342364400, "0/15 * * Jul *", true},
    {"Sun Jul 15 15:00 2012", 1342364400, "0/15 * * Jun *", false},
    {"Sun Jul 15 08:30 2012", 1342341000, "30 08 ? Jul Sun", true},
    {"Sun Jul 15 08:30 2012", 1342341000, "30 08 15 Jul ?", true},
    {"Mon Jul 16 08:30 2012", 1342427400, "30 08 ? Jul Sun", false},
    {"Mon Jul 16 08:30 2012", 1342427400, "30 08 15 Jul ?", false},
    {"Mon Jul 9 15:00 2012", 1341846000, "@hourly", true},
    {"Mon Jul 9 15:04 2012", 1341846240, "@hourly", false},
    {"Mon Jul 9 15:00 2012", 1341846000, "@daily", false},
    {"Mon Jul 9 00:00 2012", 1341792000, "@daily", true},
    {"Mon Jul 9 00:00 2012", 1341792000, "@weekly", false},
    {"Sun Jul 8 00:00 2012", 1341705600, "@weekly", true},
    {"Sun Jul 8 01:00 2012", 1341709200, "@weekly", false},
    {"Sun Jul 8 00:00 2012", 1341705600, "@monthly", false},
    {"Sun Jul 1 00:00 2012", 1341100800, "@monthly", true},
    {"Sun Jul 15 00:00 2012", 1342310400, "* * 1,15 * Sun", true},
    {"Fri Jun 15 00:00 2012", 1339718400, "* * 1,15 * Sun", true},
    {"Wed Aug 1 00:00 2012", 1343779200, "* * 1,15 * Sun", true},
    {"Sun Jul 15 00:00 2012", 1342310400, "* * * * Mon", false},
    {"Mon Jul 9 00:00 2012", 1341792000, "* * 1,15 * *", false},
    {"Sun Jul 15 00:00 2012", 1342310400, "* * 1,15 * *", true},
    {"Sun Jul 15 00:00 2012", 1342310400, "* * */2 * Sun", true},
};
static const struct next_case next_cases[] = {
    {"Mon Jul 9 14:45 2012", 1341845100, "0/15 * * * *", 1341846000},
    {"Mon Jul 9 14:59 2012", 1341845940, "0/15 * * * *", 1341846000},
    {"Mon Jul 9 14:59:59 2012", 1341845999, "0/15 * * * *", 1341846000},
    {"Mon Jul 9 15:45 2012", 1341848700, "20-35/15 * * * *", 1341850800},
    {"Mon Jul 9 23:46 2012", 1341877560, "*/15 * * * *", 1341878400},
    {"Mon Jul 9 23:45 2012", 1341877500, "20-35/15 * * * *", 1341879600},
    {"Mon Jul 9 23:35 2012", 1341876900, "0 0 9 Apr-Oct ?", 1344470400},
    {"Mon Jul 9 23:35 2012", 1341876900, "0 0 * Feb Mon", 1359936000},
    {"Mon Jul 9 23:35 2012", 1341876900, "0 0 * Feb Mon/2", 1359676800},
    {"Mon Dec 31 23:59:45 2012", 1356998385, "* * * * *", 1356998400},
    {"Mon Jul 9 23:35 2012", 1341876900, "0 0 29 Feb ?", 1456704000},
    {"Mon Jul 9 23:35 2012", 1341876900, "0 0 30 Feb ?", -1},
    {"Mon Jul 9 23:35 2012", 1341876900, "0 0 31 Apr ?", -1},
};

static void test_activation(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(act_cases) / sizeof(act_cases[0]); i++) {
        struct fatia_cron c;
        char why[200];
        const struct act_case *a = &act_cases[i];
        assert_int_equal(fatia_cron_parse(a->spec, &c, why, sizeof(why)), 0);
        bool fires = fatia_cron_next(&c, a->t - 1) == a->t;
        if (fires != a->fires)
            fail_msg("\"%s\" at %s: fires %d, want %d", a->spec, a->text, fires, a->fires);
    }
}

static void test_next(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(next_cases) / sizeof(next_cases[0]); i++) {
        struct fatia_cron c;
        char why[200];
        const struct next_case *n = &next_cases[i];
        assert_int_equal(fatia_cron_parse(n->spec, &c, why, sizeof(why)), 0);
        int64_t got = fatia_cron_next(&c, n->t);
        if (got != n->want)
            fail_msg("\"%s\" after %s: %lld, want %lld", n->spec, n->text, (long long)got,
                     (long long)n->want);
    }
}

static void test_errors(void **state)
{
    static const struct {
        const char *spec, *why;
    } bad[] = {
        {"61 * * * *", "end of range (61) above maximum (59)"},
        {"* * * *", "expected exactly 5 fields, found 4"},
        {"* * * * * *", "expected exactly 5 fields, found more"},
        {"* 24 * * *", "above maximum (23)"},
        {"* * 0 * *", "below minimum (1)"},
        {"* * * 13 *", "above maximum (12)"},
        {"x * * * *", "failed to parse int from x"},
        {"5-2 * * * *", "beginning of range (5) beyond end of range (2)"},
        {"*/0 * * * *", "step of range should be a positive number"},
        {"TZ=UTC * * * * *", "TZ and CRON_TZ are not supported"},
        {"CRON_TZ=UTC * * * * *", "TZ and CRON_TZ are not supported"},
        {"@fortnightly", "unrecognized descriptor"},
        {"", "expected exactly 5 fields, found 0"},
        {"1,,2 * * * *", "failed to parse int from"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct fatia_cron c;
        char why[200] = "";
        assert_int_equal(fatia_cron_parse(bad[i].spec, &c, why, sizeof(why)), -EINVAL);
        if (!strstr(why, bad[i].why))
            fail_msg("\"%s\": \"%s\", want \"%s\"", bad[i].spec, why, bad[i].why);
    }
}

/* names in any case, weekday 7 is Sunday, lists and ranges together */
static void test_names(void **state)
{
    struct fatia_cron a, b;
    char why[200];

    (void)state;
    assert_int_equal(fatia_cron_parse("0 0 * JAN-mar sun,WED", &a, why, sizeof(why)), 0);
    assert_int_equal(fatia_cron_parse("0 0 * 1-3 7,3", &b, why, sizeof(why)), 0);
    assert_int_equal(a.month, b.month);
    assert_int_equal(a.dow, b.dow);
    assert_int_equal(a.dow, (1u << 0) | (1u << 3));
}

/* kubernetes/kubernetes pkg/controller/cronjob/utils_test.go TestMostRecentScheduleTime: the
 * earliest time is given as upstream's expectedEarliestTime (the controller computes it from
 * lastScheduleTime, creationTimestamp and startingDeadlineSeconds). Upstream's "@every" case is
 * left out (no @every here), and "another complex schedule" differs on purpose: upstream
 * estimates the most recent time from the first two fire times' interval and answers nil for
 * "30 10,11,12 * * 1-5"; the exact answer, Friday 12:30, is what fatia gives. */
#define TOP 1463652000 /* 2016-05-19T10:00:00Z, a Thursday */

static void test_most_recent(void **state)
{
    static const struct {
        const char *name, *spec;
        int64_t earliest, now, want; /* want -1: none */
        int64_t missed;              /* -1: not checked */
    } t[] = {
        {"now before next schedule", "0 * * * *", TOP, TOP + 30, -1, 0},
        {"now just after next schedule", "0 * * * *", TOP, TOP + 61 * 60, TOP + 60 * 60, 1},
        {"missed 5 schedules", "0 * * * *", TOP + 10, TOP + 301 * 60, TOP + 300 * 60, 5},
        {"complex schedule", "30 6-16/4 * * 1-5", TOP + 30 * 60, TOP + 24 * 3600 + 31 * 60,
         TOP + 24 * 3600 + 30 * 60, 3},
        {"another complex schedule (exact)", "30 10,11,12 * * 1-5", TOP + 30 * 60,
         TOP + 30 * 3600 + 30 * 60, TOP + 26 * 3600 + 30 * 60, 5},
        {"longer diff between executions", "30 6-16/4 * * 1-5", TOP + 30 * 60,
         TOP + 96 * 3600 + 31 * 60, TOP + 96 * 3600 + 30 * 60, -1},
        {"shorter diff between executions", "30 6-16/4 * * 1-5", TOP, TOP + 24 * 3600 + 31 * 60,
         TOP + 24 * 3600 + 30 * 60, -1},
        {"rogue cronjob", "59 23 31 2 *", TOP + 10, TOP + 3600, -1, 0},
        {"earliest = creation = last schedule", "0 * * * *", TOP, TOP + 30, -1, 0},
        {"earliest = last schedule", "*/5 * * * *", TOP + 30 * 60, TOP + 31 * 60, -1, 0},
        {"outside startingDeadlineSeconds", "*/5 * * * *", TOP + 31 * 60, TOP + 32 * 60, -1, 0},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        struct fatia_cron c;
        char why[200];
        int64_t missed = 0;
        assert_int_equal(fatia_cron_parse(t[i].spec, &c, why, sizeof(why)), 0);
        int64_t got = fatia_cron_most_recent(&c, t[i].earliest, t[i].now, &missed);
        if (got != t[i].want || (t[i].missed >= 0 && missed != t[i].missed))
            fail_msg("%s: %lld (%lld missed), want %lld (%lld)", t[i].name, (long long)got,
                     (long long)missed, (long long)t[i].want, (long long)t[i].missed);
    }
    /* a minute schedule not run for a year: "too many missed", and still the latest minute */
    {
        struct fatia_cron c;
        char why[200];
        int64_t missed = 0;
        assert_int_equal(fatia_cron_parse("* * * * *", &c, why, sizeof(why)), 0);
        assert_int_equal(fatia_cron_most_recent(&c, TOP, TOP + 365 * 86400 + 90, &missed),
                         TOP + 365 * 86400 + 60);
        assert_true(missed > 100);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_activation),  cmocka_unit_test(test_next),
        cmocka_unit_test(test_errors),      cmocka_unit_test(test_names),
        cmocka_unit_test(test_most_recent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

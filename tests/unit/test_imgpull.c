/*
 * tests/unit/test_imgpull.c: the image puller's worker threads (agent/imgpull.h) against a real
 * event loop and an empty image store: readiness is read from the store (nothing stored, or a
 * policy Always, is never ready); a job ends on the loop's thread with the policy's error
 * (Never and not stored: -ENOENT, kubelet's ErrImageNeverPull message); one job per key at a
 * time; freeing the puller with jobs queued runs no callback afterwards.
 */
#include "base/compat.h"

#include <event2/event.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "agent/image.h"
#include "agent/imgpull.h"

struct fx {
    char dir[64];
    struct fatia_image_store s;
    struct event_base *base;
    unsigned calls;
    int r;
    char key[128], why[1024];
    pthread_t loop_thread;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    snprintf(f->dir, sizeof(f->dir), "/tmp/fatia-imgpull.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    assert_int_equal(fatia_image_store_open(&f->s, f->dir), 0);
    f->base = event_base_new();
    assert_non_null(f->base);
    f->loop_thread = pthread_self();
    *state = f;
    return 0;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(p) < 0 ? 0 : 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    event_base_free(f->base);
    (void)nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

static void done(void *arg, const char *key, int r, const char *why)
{
    struct fx *f = arg;

    assert_true(pthread_equal(pthread_self(), f->loop_thread)); /* on the loop, never the worker */
    f->calls++;
    f->r = r;
    snprintf(f->key, sizeof(f->key), "%s", key);
    snprintf(f->why, sizeof(f->why), "%s", why);
    event_base_loopbreak(f->base);
}

static void run_loop(struct fx *f, int secs)
{
    struct timeval tv = {secs, 0};
    event_base_loopexit(f->base, &tv);
    event_base_dispatch(f->base);
}

static json_t *items(const char *image, const char *policy)
{
    return json_pack("[{s:s,s:s,s:b}]", "image", image, "policy", policy, "insecure", 0);
}

static void test_ready(void **state)
{
    struct fx *f = *state;
    json_t *none = json_array(), *never = items("fatia.dev/absent:1", "Never"),
           *always = items("fatia.dev/absent:1", "Always");

    assert_true(fatia_image_puller_ready(&f->s, none, 65536));    /* nothing to wait for */
    assert_false(fatia_image_puller_ready(&f->s, never, 65536));  /* not stored */
    assert_false(fatia_image_puller_ready(&f->s, always, 65536)); /* Always pulls */
    assert_false(fatia_image_unpacked(&f->s, "fatia.dev/absent:1", 65536));
    json_decref(none);
    json_decref(never);
    json_decref(always);
}

static void test_never_missing(void **state)
{
    struct fx *f = *state;
    struct fatia_image_puller *q = NULL;
    json_t *it = items("fatia.dev/absent:1", "Never");

    assert_int_equal(fatia_image_puller_new(f->base, &f->s, done, f, &q), 0);
    assert_int_equal(fatia_image_puller_submit(q, "uid-1", it, NULL, 65536), 0);
    assert_true(fatia_image_puller_pending(q, "uid-1"));
    assert_false(fatia_image_puller_pending(q, "uid-2"));
    assert_int_equal(fatia_image_puller_submit(q, "uid-1", it, NULL, 65536), -EBUSY);
    run_loop(f, 10);
    assert_int_equal(f->calls, 1);
    assert_string_equal(f->key, "uid-1");
    assert_int_equal(f->r, -ENOENT);
    assert_non_null(strstr(f->why, "is not present with pull policy of Never"));
    assert_false(fatia_image_puller_pending(q, "uid-1"));
    assert_false(fatia_image_puller_busy(q));
    /* the key may come again once its job ended (a retry) */
    assert_int_equal(fatia_image_puller_submit(q, "uid-1", it, NULL, 65536), 0);
    run_loop(f, 10);
    assert_int_equal(f->calls, 2);
    fatia_image_puller_free(q);
    json_decref(it);
}

static void test_free_with_jobs(void **state)
{
    struct fx *f = *state;
    struct fatia_image_puller *q = NULL;
    json_t *it = items("fatia.dev/absent:1", "Never");
    char key[32];

    assert_int_equal(fatia_image_puller_new(f->base, &f->s, done, f, &q), 0);
    for (int i = 0; i < 50; i++) {
        snprintf(key, sizeof(key), "uid-%d", i);
        assert_int_equal(fatia_image_puller_submit(q, key, it, NULL, 65536), 0);
    }
    fatia_image_puller_free(q);
    usleep(200 * 1000); /* a job the thread had begun ends after the free: no callback, no fd */
    run_loop(f, 1);
    assert_int_equal(f->calls, 0);
    json_decref(it);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ready, setup, teardown),
        cmocka_unit_test_setup_teardown(test_never_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_with_jobs, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

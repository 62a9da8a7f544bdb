/*
 * tests/unit/test_etcd_watch.c: the etcd watch stream (store/etcd_watch.c) against a real etcd,
 * started here on loopback with its own data directory: events in revision order with etcd's
 * mod_revision, create_revision, version and prev_kv; the keys of one transaction in one
 * revision; nothing outside the prefix; history replayed from a start revision; a compacted
 * start revision gives one GONE and the stream ends; kill -9 of etcd during writes and a
 * restart: the stream reconnects and every revision comes once, none lost; a dead first
 * endpoint; a consumer that does not read holds the reader at queue_max; stop is prompt.
 */
#include "base/compat.h"

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <inttypes.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/error.h"
#include "store/etcd_client.h"
#include "store/etcd_watch.h"

#define ETCD "/usr/bin/etcd"

static char dir[64];
static pid_t etcd_pid;
static int client_port, peer_port;
static char etcd_url[64];
static struct fatia_store_etcdc *cli;

static int free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t n = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &n) < 0)
        return -1;
    port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* One gateway call; the reply's header revision (0 on failure). */
static uint64_t call(const char *path, const char *body)
{
    json_t *reply = NULL;
    bool unsure = false;
    uint64_t rev;

    if (fatia_store_etcdc_call(cli, path, body, strlen(body), &reply, &unsure) < 0)
        return 0;
    rev = fatia_store_etcdc_u64(json_object_get(reply, "header"), "revision");
    json_decref(reply);
    return rev;
}

static void b64(struct fatia_buf *b, const char *s)
{
    assert_int_equal(fatia_store_etcdc_b64(b, s, strlen(s)), 0);
}

static uint64_t put(const char *key, const char *val)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    uint64_t rev;

    fatia_buf_puts(&b, "{\"key\":\"");
    b64(&b, key);
    fatia_buf_puts(&b, "\",\"value\":\"");
    b64(&b, val);
    fatia_buf_puts(&b, "\"}");
    rev = call("/v3/kv/put", b.p);
    fatia_buf_release(&b);
    return rev;
}

static uint64_t del(const char *key)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    uint64_t rev;

    fatia_buf_puts(&b, "{\"key\":\"");
    b64(&b, key);
    fatia_buf_puts(&b, "\"}");
    rev = call("/v3/kv/deleterange", b.p);
    fatia_buf_release(&b);
    return rev;
}

/* One transaction putting k1 and k2. */
static uint64_t put2(const char *k1, const char *k2, const char *val)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    uint64_t rev;

    fatia_buf_puts(&b, "{\"success\":[{\"request_put\":{\"key\":\"");
    b64(&b, k1);
    fatia_buf_puts(&b, "\",\"value\":\"");
    b64(&b, val);
    fatia_buf_puts(&b, "\"}},{\"request_put\":{\"key\":\"");
    b64(&b, k2);
    fatia_buf_puts(&b, "\",\"value\":\"");
    b64(&b, val);
    fatia_buf_puts(&b, "\"}}]}");
    rev = call("/v3/kv/txn", b.p);
    fatia_buf_release(&b);
    return rev;
}

static pid_t spawn_etcd(void)
{
    char data[128], client[64], peer[64], cluster[96], log[128];
    pid_t pid;

    snprintf(data, sizeof(data), "%s/etcd", dir);
    snprintf(client, sizeof(client), "http://127.0.0.1:%d", client_port);
    snprintf(peer, sizeof(peer), "http://127.0.0.1:%d", peer_port);
    snprintf(cluster, sizeof(cluster), "default=%s", peer);
    snprintf(log, sizeof(log), "%s/etcd.log", dir);
    pid = fork();
    if (pid == 0) {
        FILE *f = freopen(log, "a", stderr);
        (void)f;
        execl(ETCD, ETCD, "--data-dir", data, "--listen-client-urls", client,
              "--advertise-client-urls", client, "--listen-peer-urls", peer,
              "--initial-advertise-peer-urls", peer, "--initial-cluster", cluster, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static int wait_serving(void)
{
    for (int i = 0; i < 200; i++) {
        if (call("/v3/maintenance/status", "{}"))
            return 0;
        usleep(50000);
    }
    return -1;
}

static int group_setup(void **state)
{
    struct fatia_store_etcdc_opts co = {0};

    (void)state;
    if (access(ETCD, X_OK) < 0) {
        fprintf(stderr, "etcd not installed (%s): scripts/setup installs etcd-server\n", ETCD);
        exit(77);
    }
    snprintf(dir, sizeof(dir), "/tmp/fatia-test-etcdw-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    client_port = free_port();
    peer_port = free_port();
    snprintf(etcd_url, sizeof(etcd_url), "http://127.0.0.1:%d", client_port);
    co.endpoints = etcd_url;
    co.timeout_ms = 3000;
    if (fatia_store_etcdc_new(&co, &cli, NULL, 0) < 0)
        return -1;
    etcd_pid = spawn_etcd();
    return etcd_pid > 0 ? wait_serving() : -1;
}

static int group_teardown(void **state)
{
    pid_t rm;
    int st = 1;

    (void)state;
    if (etcd_pid > 0) {
        kill(etcd_pid, SIGTERM);
        waitpid(etcd_pid, NULL, 0);
    }
    fatia_store_etcdc_free(cli);
    rm = fork();
    if (rm == 0) {
        execlp("rm", "rm", "-rf", dir, (char *)NULL);
        _exit(127);
    }
    if (rm > 0)
        waitpid(rm, &st, 0);
    return st == 0 ? 0 : -1;
}

static struct fatia_store_etcdw *watch(const char *prefix, uint64_t from, size_t queue_max)
{
    struct fatia_store_etcdw_opts o = {.endpoints = etcd_url,
                                       .key = prefix,
                                       .prefix = true,
                                       .start_revision = from,
                                       .prev_kv = true,
                                       .queue_max = queue_max};
    struct fatia_store_etcdw *w = NULL;
    char why[256] = "";

    assert_int_equal(fatia_store_etcdw_start(&o, &w, why, sizeof(why)), 0);
    return w;
}

/* The next event that is not a PROGRESS, within secs. */
static struct fatia_store_etcdw_event *next_change_in(struct fatia_store_etcdw *w, double secs)
{
    double until = now_s() + secs;

    while (now_s() < until) {
        struct fatia_store_etcdw_event *ev = fatia_store_etcdw_wait(w, 200);
        if (ev && ev->type != FATIA_STORE_ETCDW_PROGRESS)
            return ev;
        fatia_store_etcdw_event_free(ev);
    }
    return NULL;
}

static struct fatia_store_etcdw_event *next_change(struct fatia_store_etcdw *w)
{
    return next_change_in(w, 10);
}

/* Waits for the stream's creation (a watch "from now" sees only what comes after it). */
static void wait_created(struct fatia_store_etcdw *w)
{
    struct fatia_store_etcdw_event *ev = fatia_store_etcdw_wait(w, 10000);

    assert_non_null(ev);
    assert_int_equal(ev->type, FATIA_STORE_ETCDW_PROGRESS);
    assert_true(ev->revision > 0);
    fatia_store_etcdw_event_free(ev);
}

static void expect(struct fatia_store_etcdw *w, enum fatia_store_etcdw_type type, const char *key,
                   const char *value, uint64_t rev)
{
    struct fatia_store_etcdw_event *ev = next_change(w);

    assert_non_null(ev);
    assert_int_equal(ev->type, type);
    assert_string_equal(ev->key, key);
    if (value)
        assert_string_equal(ev->value, value);
    else
        assert_null(ev->value);
    assert_int_equal(ev->revision, rev);
    fatia_store_etcdw_event_free(ev);
}

static void test_order_and_revisions(void **state)
{
    struct fatia_store_etcdw *w = watch("/w1/", 0, 0);
    struct fatia_store_etcdw_event *ev;
    uint64_t ra, rb, ra2, rcd, rdel;

    (void)state;
    wait_created(w);
    ra = put("/w1/a", "1");
    rb = put("/w1/b", "2");
    assert_non_null(put("/w1x", "outside") ? "" : NULL); /* sorts after "/w1/", not in it */
    assert_non_null(put("/w0", "outside") ? "" : NULL);
    ra2 = put("/w1/a", "1b");
    rcd = put2("/w1/c", "/w1/d", "3");
    rdel = del("/w1/a");
    assert_true(ra && rb > ra && ra2 > rb && rcd > ra2 && rdel > rcd);

    ev = next_change(w);
    assert_non_null(ev);
    assert_int_equal(ev->type, FATIA_STORE_ETCDW_PUT);
    assert_string_equal(ev->key, "/w1/a");
    assert_string_equal(ev->value, "1");
    assert_int_equal(ev->revision, ra);
    assert_int_equal(ev->create_revision, ra);
    assert_int_equal(ev->version, 1);
    assert_null(ev->prev_value);
    fatia_store_etcdw_event_free(ev);
    expect(w, FATIA_STORE_ETCDW_PUT, "/w1/b", "2", rb);
    ev = next_change(w);
    assert_non_null(ev);
    assert_int_equal(ev->revision, ra2);
    assert_int_equal(ev->create_revision, ra);
    assert_int_equal(ev->version, 2);
    assert_string_equal(ev->prev_value, "1");
    assert_int_equal(ev->prev_mod_revision, ra);
    fatia_store_etcdw_event_free(ev);
    /* one transaction: one revision, both keys */
    expect(w, FATIA_STORE_ETCDW_PUT, "/w1/c", "3", rcd);
    expect(w, FATIA_STORE_ETCDW_PUT, "/w1/d", "3", rcd);
    ev = next_change(w);
    assert_non_null(ev);
    assert_int_equal(ev->type, FATIA_STORE_ETCDW_DELETE);
    assert_string_equal(ev->key, "/w1/a");
    assert_int_equal(ev->revision, rdel);
    assert_string_equal(ev->prev_value, "1b");
    assert_int_equal(ev->prev_mod_revision, ra2);
    fatia_store_etcdw_event_free(ev);
    /* and nothing else: the keys outside the prefix never came */
    assert_null(next_change_in(w, 1.5) ? (void *)1 : NULL);
    fatia_store_etcdw_stop(w);
}

static void test_history_replay(void **state)
{
    uint64_t r1 = put("/w2/k1", "a"), r2 = put("/w2/k2", "b"), r3 = del("/w2/k1");
    struct fatia_store_etcdw *w;

    (void)state;
    assert_true(r1 && r2 && r3);
    /* from r2: k1's creation is before it */
    w = watch("/w2/", r2, 0);
    expect(w, FATIA_STORE_ETCDW_PUT, "/w2/k2", "b", r2);
    expect(w, FATIA_STORE_ETCDW_DELETE, "/w2/k1", NULL, r3);
    fatia_store_etcdw_stop(w);
    w = watch("/w2/", r1, 0);
    expect(w, FATIA_STORE_ETCDW_PUT, "/w2/k1", "a", r1);
    fatia_store_etcdw_stop(w);
}

static void test_compacted_gone(void **state)
{
    uint64_t r1 = put("/w3/a", "1"), r2 = put("/w3/a", "2"), r3 = put("/w3/a", "3");
    struct fatia_store_etcdw_event *ev;
    struct fatia_store_etcdw *w;
    char body[64];

    (void)state;
    assert_true(r1 && r2 && r3);
    snprintf(body, sizeof(body), "{\"revision\":\"%" PRIu64 "\"}", r3);
    assert_true(call("/v3/kv/compaction", body) > 0);
    w = watch("/w3/", r1, 0);
    ev = next_change(w);
    assert_non_null(ev);
    assert_int_equal(ev->type, FATIA_STORE_ETCDW_GONE);
    assert_int_equal(ev->revision, r3);
    fatia_store_etcdw_event_free(ev);
    /* the stream is over: later writes do not come */
    assert_true(put("/w3/a", "4") > r3);
    assert_null(fatia_store_etcdw_wait(w, 1500));
    fatia_store_etcdw_stop(w);
    /* from the compact revision itself it works */
    w = watch("/w3/", r3, 0);
    expect(w, FATIA_STORE_ETCDW_PUT, "/w3/a", "3", r3);
    fatia_store_etcdw_stop(w);
}

/* kill -9 of etcd in the middle of 60 writes, a restart on the same data: every acknowledged
 * write comes once, in order; nothing twice. */
static void test_reconnect_no_gap(void **state)
{
    struct fatia_store_etcdw *w = watch("/w4/", 0, 0);
    uint64_t revs[60] = {0}, last = 0, streams = 0, events = 0;
    int seen[60] = {0};
    char key[32], val[32];

    (void)state;
    wait_created(w);
    for (int i = 0; i < 60; i++) {
        if (i == 30) {
            kill(etcd_pid, SIGKILL);
            waitpid(etcd_pid, NULL, 0);
            usleep(300000); /* the watcher sees the connection go and retries meanwhile */
            etcd_pid = spawn_etcd();
            assert_int_equal(wait_serving(), 0);
        }
        snprintf(key, sizeof(key), "/w4/k%02d", i);
        snprintf(val, sizeof(val), "v%d", i);
        for (int t = 0; t < 50 && !revs[i]; t++) {
            revs[i] = put(key, val);
            if (!revs[i])
                usleep(100000);
        }
        assert_true(revs[i] > 0);
    }
    for (int n = 0; n < 60; n++) {
        struct fatia_store_etcdw_event *ev = next_change(w);
        int i;
        assert_non_null(ev);
        assert_int_equal(ev->type, FATIA_STORE_ETCDW_PUT);
        assert_true(ev->revision > last);
        last = ev->revision;
        assert_int_equal(sscanf(ev->key, "/w4/k%d", &i), 1);
        assert_true(i >= 0 && i < 60);
        assert_int_equal(ev->revision, revs[i]);
        snprintf(val, sizeof(val), "v%d", i);
        assert_string_equal(ev->value, val);
        seen[i]++;
        fatia_store_etcdw_event_free(ev);
    }
    for (int i = 0; i < 60; i++)
        assert_int_equal(seen[i], 1);
    assert_null(next_change_in(w, 1.5) ? (void *)1 : NULL);
    fatia_store_etcdw_stats(w, &streams, &events);
    assert_true(streams >= 2); /* it did reconnect */
    fatia_store_etcdw_stop(w);
}

static void test_dead_first_endpoint(void **state)
{
    struct fatia_store_etcdw_opts o = {.key = "/w5/", .prefix = true};
    struct fatia_store_etcdw *w = NULL;
    char eps[160];
    uint64_t r;

    (void)state;
    snprintf(eps, sizeof(eps), "http://127.0.0.1:%d,%s", free_port(), etcd_url);
    o.endpoints = eps;
    assert_int_equal(fatia_store_etcdw_start(&o, &w, NULL, 0), 0);
    wait_created(w);
    r = put("/w5/x", "y");
    expect(w, FATIA_STORE_ETCDW_PUT, "/w5/x", "y", r);
    fatia_store_etcdw_stop(w);
    o.endpoints = "ftp://127.0.0.1:1";
    assert_int_equal(fatia_store_etcdw_start(&o, &w, eps, sizeof(eps)), -EINVAL);
    assert_non_null(strstr(eps, "not an http:// or https:// URL"));
}

/* A consumer that does not read: the reader stops at queue_max, then delivers the rest. */
static void test_queue_bound(void **state)
{
    struct fatia_store_etcdw *w = watch("/w6/", 0, 4);
    uint64_t streams, events, last = 0;
    char key[32];

    (void)state;
    wait_created(w);
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof(key), "/w6/k%02d", i);
        assert_true(put(key, "v") > 0);
    }
    usleep(1500000);
    fatia_store_etcdw_stats(w, &streams, &events);
    assert_true(events <= 5); /* 4 queued (+ the creation, taken) */
    for (int i = 0; i < 20; i++) {
        struct fatia_store_etcdw_event *ev = next_change(w);
        assert_non_null(ev);
        snprintf(key, sizeof(key), "/w6/k%02d", i);
        assert_string_equal(ev->key, key);
        assert_true(ev->revision > last);
        last = ev->revision;
        fatia_store_etcdw_event_free(ev);
    }
    fatia_store_etcdw_stop(w);
}

static void test_stop_prompt(void **state)
{
    struct fatia_store_etcdw *w = watch("/w7/", 0, 0);
    double t0;

    (void)state;
    wait_created(w);
    put("/w7/a", "1"); /* left in the queue: stop frees it */
    usleep(200000);
    t0 = now_s();
    fatia_store_etcdw_stop(w);
    assert_true(now_s() - t0 < 2.5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_revisions), cmocka_unit_test(test_history_replay),
        cmocka_unit_test(test_compacted_gone),      cmocka_unit_test(test_dead_first_endpoint),
        cmocka_unit_test(test_queue_bound),         cmocka_unit_test(test_stop_prompt),
        cmocka_unit_test(test_reconnect_no_gap),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

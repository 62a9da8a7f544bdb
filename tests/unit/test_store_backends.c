/*
 * tests/unit/test_store_backends.c: store.h's contract, run against both backends: SQLite (a
 * file) and etcd v3 (a real etcd, started here on loopback with its own data directory). Each
 * test runs once per backend: commits and reloads, the log, refused non-increasing rvs (nothing
 * written), group commit through the writer thread, several ops on one key in one batch, the
 * log's pruning; on etcd also the fence (a second store on the same prefix makes the first one's
 * commits fail, nothing written), kube-apiserver's key layout, prefixes that keep two
 * clusters apart, and (on an etcd of small request limits) a request too large for etcd failing
 * its batch with -EFBIG, never taken for the NOSPACE alarm.
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

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/error.h"
#include "store/store.h"

#define ETCD "/usr/bin/etcd"

static char dir[64];
static pid_t etcd_pid;
static char etcd_url[64];
static int prefix_seq;
/* an etcd of small limits (--max-request-bytes SMALL_BYTES, --max-txn-ops SMALL_OPS) */
#define SMALL_BYTES 65536
#define SMALL_OPS   16
static pid_t small_pid;
static char small_url[64];

struct backend {
    bool etcd, replica;
    bool over; /* tells the store limits above the small etcd's own */
    char path[128];
    char prefix[64];
};

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

/* Starts an etcd in dir/<name> with the given request limits; *pid and url (64 bytes) set. */
static int start_etcd_at(const char *name, const char *max_bytes, const char *max_ops, pid_t *pid,
                         char *url)
{
    char data[128], client[64], peer[64], cluster[96], log[128];
    int cp = free_port(), pp = free_port();

    if (cp < 0 || pp < 0)
        return -1;
    snprintf(data, sizeof(data), "%s/%s", dir, name);
    snprintf(client, sizeof(client), "http://127.0.0.1:%d", cp);
    snprintf(peer, sizeof(peer), "http://127.0.0.1:%d", pp);
    snprintf(cluster, sizeof(cluster), "default=%s", peer);
    snprintf(log, sizeof(log), "%s/%s.log", dir, name);
    snprintf(url, 64, "%s", client);
    *pid = fork();
    if (*pid < 0)
        return -1;
    if (*pid == 0) {
        FILE *f = freopen(log, "w", stderr);
        (void)f;
        execl(ETCD, ETCD, "--data-dir", data, "--listen-client-urls", client,
              "--advertise-client-urls", client, "--listen-peer-urls", peer,
              "--initial-advertise-peer-urls", peer, "--initial-cluster", cluster, "--max-txn-ops",
              max_ops, "--max-request-bytes", max_bytes, (char *)NULL);
        _exit(127);
    }
    /* serving once a store opens on it */
    for (int i = 0; i < 200; i++) {
        struct fatia_store_opts o = {.etcd_endpoints = url, .etcd_prefix = "/probe"};
        struct fatia_store *s;
        if (fatia_store_open("", &o, &s) == 0) {
            fatia_store_close(s);
            return 0;
        }
        usleep(50000);
    }
    return -1;
}

static void stop_etcd(pid_t *pid)
{
    if (*pid > 0) {
        kill(*pid, SIGTERM);
        waitpid(*pid, NULL, 0);
    }
    *pid = 0;
}

static int start_etcd(void)
{
    return start_etcd_at("etcd", "10485760", "10240", &etcd_pid, etcd_url);
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/fatia-test-backends-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    if (access(ETCD, X_OK) < 0) {
        fprintf(stderr, "etcd not installed (%s): scripts/setup installs etcd-server\n", ETCD);
        exit(77);
    }
    return start_etcd();
}

static int group_teardown(void **state)
{
    pid_t rm;
    int st = 1;

    (void)state;
    stop_etcd(&etcd_pid);
    stop_etcd(&small_pid);
    rm = fork();
    if (rm == 0) {
        execlp("rm", "rm", "-rf", dir, (char *)NULL);
        _exit(127);
    }
    if (rm > 0)
        waitpid(rm, &st, 0);
    return st == 0 ? 0 : -1;
}

/* A fresh, empty store of the backend for each test. */
static int setup_sqlite(void **state)
{
    static struct backend b;
    b = (struct backend){.etcd = false};
    snprintf(b.path, sizeof(b.path), "%s/s%d.db", dir, ++prefix_seq);
    *state = &b;
    return 0;
}

static int setup_etcd(void **state)
{
    static struct backend b;
    b = (struct backend){.etcd = true};
    snprintf(b.prefix, sizeof(b.prefix), "/t%d/registry", ++prefix_seq);
    *state = &b;
    return 0;
}

static struct fatia_store *open_b(const struct backend *b, uint64_t log_keep)
{
    struct fatia_store_opts o = {.log_keep = log_keep};
    struct fatia_store *s = NULL;

    if (b->etcd) {
        o.etcd_endpoints = etcd_url;
        o.etcd_prefix = b->prefix;
    }
    assert_int_equal(fatia_store_open(b->path, &o, &s), 0);
    return s;
}

static char json_buf[64][256];

static struct fatia_store_op op(uint64_t rv, enum fatia_store_event t, const char *kind,
                                const char *ns, const char *name)
{
    char *j = json_buf[rv % 64];
    snprintf(j, 256,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"resourceVersion\":\"%" PRIu64
             "\"},\"data\":{\"rv\":\"%" PRIu64 "\"}}",
             name, ns, rv, rv);
    return (struct fatia_store_op){.rv = rv,
                                   .type = t,
                                   .group = "",
                                   .kind = kind,
                                   .ns = ns,
                                   .name = name,
                                   .uid = "u",
                                   .json = j,
                                   .json_len = strlen(j)};
}

struct seen {
    int n;
    char names[64][64];
    uint64_t rvs[64];
    int types[64];
};

static int collect(void *arg, const struct fatia_store_row *row)
{
    struct seen *s = arg;
    if (s->n < 64) {
        snprintf(s->names[s->n], 64, "%s/%s/%s", row->kind, row->ns, row->name);
        s->rvs[s->n] = row->rv;
        s->types[s->n] = (int)row->type;
        /* the JSON is the one written, whole */
        assert_non_null(strstr(row->json, "\"data\""));
        assert_int_equal(strlen(row->json), row->json_len);
    }
    s->n++;
    return 0;
}

static void test_commit_load_reopen(void **state)
{
    const struct backend *b = *state;
    struct fatia_store *s = open_b(b, 0);
    struct fatia_store_op ops[3];
    struct seen seen = {0};

    assert_int_equal(fatia_store_rv(s), 0);
    ops[0] = op(1, FATIA_STORE_ADDED, "Pod", "default", "a");
    ops[1] = op(2, FATIA_STORE_ADDED, "Pod", "default", "b");
    ops[2] = op(3, FATIA_STORE_ADDED, "Namespace", "", "team-a");
    assert_int_equal(fatia_store_commit(s, ops, 3), 0);
    ops[0] = op(4, FATIA_STORE_MODIFIED, "Pod", "default", "a");
    ops[1] = op(5, FATIA_STORE_DELETED, "Pod", "default", "b");
    assert_int_equal(fatia_store_commit(s, ops, 2), 0);
    /* an rv that does not increase: refused, nothing written */
    ops[0] = op(6, FATIA_STORE_ADDED, "Pod", "default", "c");
    ops[1] = op(5, FATIA_STORE_ADDED, "Pod", "default", "d");
    assert_int_equal(fatia_store_commit(s, ops, 2), -EINVAL);
    assert_int_equal(fatia_store_rv(s), 5);
    fatia_store_close(s);

    s = open_b(b, 0);
    assert_int_equal(fatia_store_rv(s), 5);
    assert_int_equal(fatia_store_load(s, collect, &seen), 0);
    assert_int_equal(seen.n, 2);
    /* both orders (SQLite's by kind, etcd's by key) hold the same two objects */
    for (int i = 0; i < 2; i++) {
        if (!strcmp(seen.names[i], "Pod/default/a"))
            assert_int_equal(seen.rvs[i], 4);
        else {
            assert_string_equal(seen.names[i], "Namespace//team-a");
            assert_int_equal(seen.rvs[i], 3);
        }
    }
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(fatia_store_load_log(s, 2, collect, &seen), 0);
    assert_int_equal(seen.n, 3);
    assert_int_equal(seen.rvs[0], 3);
    assert_int_equal(seen.rvs[2], 5);
    assert_int_equal(seen.types[2], FATIA_STORE_DELETED);
    assert_string_equal(seen.names[2], "Pod/default/b");
    assert_int_equal(fatia_store_log_first(s), 1);
    assert_int_equal(fatia_store_check(s), 0);
    fatia_store_close(s);
}

/* The writer thread: batches submitted back to back commit in order, each acknowledged; the
 * same key several times in one group commit ends as its last op. */
static void test_group_commit(void **state)
{
    const struct backend *b = *state;
    struct fatia_store *s = open_b(b, 0);
    static struct fatia_store_op ops[200];
    static struct fatia_store_batch bs[100];
    struct fatia_store_batch *d;
    struct seen seen = {0};
    int reaped = 0;

    assert_int_equal(fatia_store_writer_start(s), 0);
    for (int i = 0; i < 100; i++) {
        /* each batch: create x, then update it: 100 batches on one key */
        ops[2 * i] = op((uint64_t)(2 * i + 1), i ? FATIA_STORE_MODIFIED : FATIA_STORE_ADDED, "Pod",
                        "default", "x");
        ops[2 * i + 1] = op((uint64_t)(2 * i + 2), FATIA_STORE_MODIFIED, "Pod", "default", "x");
        bs[i] = (struct fatia_store_batch){.ops = &ops[2 * i], .n = 2};
        assert_int_equal(fatia_store_submit(s, &bs[i]), 0);
    }
    while (reaped < 100) {
        usleep(1000);
        while ((d = fatia_store_reap(s))) {
            assert_int_equal(d->result, 0);
            assert_ptr_equal(d, &bs[reaped]);
            reaped++;
        }
    }
    fatia_store_close(s);
    s = open_b(b, 0);
    assert_int_equal(fatia_store_rv(s), 200);
    assert_int_equal(fatia_store_load(s, collect, &seen), 0);
    assert_int_equal(seen.n, 1);
    assert_int_equal(seen.rvs[0], 200);
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(fatia_store_load_log(s, 195, collect, &seen), 0);
    assert_int_equal(seen.n, 5);
    fatia_store_close(s);
}

/* The log keeps the newest log_keep rows (pruned every 1024 rvs): old rows go. */
static void test_log_pruned(void **state)
{
    const struct backend *b = *state;
    struct fatia_store *s = open_b(b, 100);
    struct fatia_store_op o;
    uint64_t first;

    for (uint64_t rv = 1; rv <= 1500; rv++) {
        o = op(rv, rv == 1 ? FATIA_STORE_ADDED : FATIA_STORE_MODIFIED, "Pod", "default", "p");
        assert_int_equal(fatia_store_commit(s, &o, 1), 0);
    }
    fatia_store_close(s);
    s = open_b(b, 100);
    first = fatia_store_log_first(s);
    assert_true(first > 100);
    assert_true(first <= 1500 - 100 + 1);
    fatia_store_close(s);
}

/* etcd: a second store on the same prefix fences the first: its commit fails and writes
 * nothing; another prefix is another cluster. */
static void test_etcd_fence_and_prefix(void **state)
{
    const struct backend *b = *state;
    struct backend other = *b;
    struct fatia_store *s1 = open_b(b, 0), *s2, *s3;
    struct fatia_store_op o;
    struct seen seen = {0};

    o = op(1, FATIA_STORE_ADDED, "Pod", "default", "one");
    assert_int_equal(fatia_store_commit(s1, &o, 1), 0);
    s2 = open_b(b, 0);
    assert_int_equal(fatia_store_rv(s2), 1);
    o = op(2, FATIA_STORE_ADDED, "Pod", "default", "two");
    assert_int_equal(fatia_store_commit(s2, &o, 1), 0);
    /* s1 believes rv 1 is the latest: its write is refused */
    o = op(2, FATIA_STORE_ADDED, "Pod", "default", "stale");
    assert_int_equal(fatia_store_commit(s1, &o, 1), -ESTALE);
    fatia_store_close(s1);
    fatia_store_close(s2);
    s1 = open_b(b, 0);
    assert_int_equal(fatia_store_rv(s1), 2);
    assert_int_equal(fatia_store_load(s1, collect, &seen), 0);
    assert_int_equal(seen.n, 2);
    for (int i = 0; i < seen.n; i++)
        assert_null(strstr(seen.names[i], "stale"));
    fatia_store_close(s1);

    snprintf(other.prefix, sizeof(other.prefix), "/other%d/registry", prefix_seq);
    s3 = open_b(&other, 0);
    assert_int_equal(fatia_store_rv(s3), 0);
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(fatia_store_load(s3, collect, &seen), 0);
    assert_int_equal(seen.n, 0);
    fatia_store_close(s3);
}

static struct fatia_store *open_replica(const struct backend *b)
{
    struct fatia_store_opts o = {
        .etcd_endpoints = etcd_url, .etcd_prefix = b->prefix, .etcd_replica = true};
    struct fatia_store *s = NULL;

    assert_int_equal(fatia_store_open("", &o, &s), 0);
    assert_true(fatia_store_changes_fd(s) >= 0);
    return s;
}

/* The next change within 10 s (the watch stream's delivery). */
static void next_change(struct fatia_store *s, struct fatia_store_change *c)
{
    for (int i = 0; i < 100; i++) {
        struct pollfd p = {.fd = fatia_store_changes_fd(s), .events = POLLIN};
        if (fatia_store_next_change(s, c) == 1)
            return;
        (void)poll(&p, 1, 100);
    }
    fail_msg("no change came within 10 s");
}

/* etcd, replica mode: two stores on one prefix both write; resourceVersion = etcd's
 * mod_revision; each sees the other's changes (and its own as a bare revision) through the
 * watch; a write built on a version another replica replaced, or a create of a name another
 * replica took, fails with a conflict and writes nothing; a third replica loads each object at
 * its mod_revision. */
static void test_etcd_replicas(void **state)
{
    const struct backend *b = *state;
    struct fatia_store *a = open_replica(b), *c2 = open_replica(b), *c3;
    struct fatia_store_change ch;
    struct fatia_store_op o;
    struct seen seen = {0};
    uint64_t r1, r2, r3;

    o = op(1, FATIA_STORE_ADDED, "Pod", "default", "p");
    assert_int_equal(fatia_store_commit(a, &o, 1), 0);
    r1 = o.rv;
    assert_true(r1 > 1); /* etcd's revision, not the 1 handed in */
    next_change(a, &ch);
    assert_int_equal(ch.type, 0); /* its own commit */
    assert_int_equal(ch.rv, r1);
    next_change(c2, &ch);
    assert_int_equal(ch.type, FATIA_STORE_ADDED);
    assert_int_equal(ch.rv, r1);
    assert_string_equal(ch.kind, "Pod");
    assert_string_equal(ch.ns, "default");
    assert_string_equal(ch.name, "p");
    assert_non_null(strstr(ch.json, "\"data\""));

    /* c2 updates p from r1; a, still on r1 too, loses */
    o = op(2, FATIA_STORE_MODIFIED, "Pod", "default", "p");
    o.expect_rv = r1;
    assert_int_equal(fatia_store_commit(c2, &o, 1), 0);
    r2 = o.rv;
    assert_true(r2 > r1);
    o = op(3, FATIA_STORE_MODIFIED, "Pod", "default", "p");
    o.expect_rv = r1;
    assert_int_equal(fatia_store_commit(a, &o, 1), -FATIA_E_CONFLICT);
    next_change(a, &ch);
    assert_int_equal(ch.type, FATIA_STORE_MODIFIED);
    assert_int_equal(ch.rv, r2);
    /* a create of a name that exists, and a batch where one of two ops conflicts: nothing;
     * the store names the op that conflicted (and every op on its object), not the other */
    {
        struct fatia_store_op two[3];
        two[0] = op(4, FATIA_STORE_ADDED, "Pod", "default", "fresh");
        two[1] = op(5, FATIA_STORE_ADDED, "Pod", "default", "p");
        assert_int_equal(fatia_store_commit(a, two, 2), -FATIA_E_CONFLICT);
        assert_false(two[0].conflict);
        assert_true(two[1].conflict);
        two[0] = op(4, FATIA_STORE_ADDED, "Pod", "default", "fresh");
        two[1] = op(5, FATIA_STORE_MODIFIED, "Pod", "default", "p");
        two[1].expect_rv = r1; /* stale */
        two[2] = op(6, FATIA_STORE_MODIFIED, "Pod", "default", "p");
        two[2].expect_rv = r1;
        two[0].conflict = true; /* cleared by the commit */
        assert_int_equal(fatia_store_commit(a, two, 3), -FATIA_E_CONFLICT);
        assert_false(two[0].conflict);
        assert_true(two[1].conflict);
        assert_true(two[2].conflict);
    }
    /* a builds on r2 now: accepted */
    o = op(6, FATIA_STORE_MODIFIED, "Pod", "default", "p");
    o.expect_rv = r2;
    assert_int_equal(fatia_store_commit(a, &o, 1), 0);
    r3 = o.rv;
    next_change(c2, &ch); /* c2 saw its own r2 first */
    assert_int_equal(ch.type, 0);
    assert_int_equal(ch.rv, r2);
    next_change(c2, &ch);
    assert_int_equal(ch.type, FATIA_STORE_MODIFIED);
    assert_int_equal(ch.rv, r3);
    assert_non_null(strstr(ch.json, "\"rv\":\"6\""));

    c3 = open_replica(b);
    assert_int_equal(fatia_store_rv(c3), r3);
    assert_int_equal(fatia_store_load(c3, collect, &seen), 0);
    assert_int_equal(seen.n, 1); /* "fresh" was never written */
    assert_string_equal(seen.names[0], "Pod/default/p");
    assert_int_equal(seen.rvs[0], r3);

    /* a delete: the others get its last state at the delete's revision */
    o = op(7, FATIA_STORE_DELETED, "Pod", "default", "p");
    o.expect_rv = r3;
    assert_int_equal(fatia_store_commit(c3, &o, 1), 0);
    next_change(c2, &ch);
    assert_int_equal(ch.type, FATIA_STORE_DELETED);
    assert_int_equal(ch.rv, o.rv);
    assert_non_null(strstr(ch.json, "\"rv\":\"6\""));
    fatia_store_close(a);
    fatia_store_close(c2);
    fatia_store_close(c3);
}

/* etcd: an endpoint list whose first member is down still works (the next one answers). */
static void test_etcd_endpoint_failover(void **state)
{
    const struct backend *b = *state;
    char eps[160];
    struct fatia_store_opts o = {.etcd_endpoints = eps, .etcd_prefix = b->prefix};
    struct fatia_store *s;
    struct fatia_store_op x;
    char why[200] = "";

    snprintf(eps, sizeof(eps), "http://127.0.0.1:%d,%s", free_port(), etcd_url);
    assert_int_equal(fatia_store_open("", &o, &s), 0);
    x = op(1, FATIA_STORE_ADDED, "Pod", "default", "f");
    assert_int_equal(fatia_store_commit(s, &x, 1), 0);
    fatia_store_close(s);
    /* nothing reachable: open fails, saying so */
    snprintf(eps, sizeof(eps), "http://127.0.0.1:%d", free_port());
    o.why = why;
    o.why_n = sizeof(why);
    assert_true(fatia_store_open("", &o, &s) < 0);
    assert_non_null(strstr(why, "etcd at"));
}

/* An etcd of small limits, started once for the tests that need it (stopped at the end). */
static int setup_small(void **state)
{
    static struct backend b;
    if (!small_pid && start_etcd_at("small", "65536", "16", &small_pid, small_url) < 0)
        return -1;
    b = (struct backend){.etcd = true};
    snprintf(b.prefix, sizeof(b.prefix), "/t%d/registry", ++prefix_seq);
    *state = &b;
    return 0;
}

static struct fatia_store *open_small(const struct backend *b)
{
    struct fatia_store_opts o = {
        .etcd_endpoints = small_url,
        .etcd_prefix = b->prefix,
        .etcd_max_request_bytes = b->over ? 10485760 : SMALL_BYTES,
        .etcd_max_txn_ops = b->over ? 10240 : SMALL_OPS,
        .etcd_replica = b->replica,
    };
    struct fatia_store *s = NULL;

    assert_int_equal(fatia_store_open("", &o, &s), 0);
    return s;
}

/* An op whose JSON is about size bytes (freed by the caller). */
static struct fatia_store_op big_op(uint64_t rv, const char *name, size_t size)
{
    struct fatia_store_op o = op(rv, FATIA_STORE_ADDED, "ConfigMap", "default", name);
    char *j = malloc(size + 160);
    int n;

    assert_non_null(j);
    n = snprintf(j, 160,
                 "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\","
                 "\"resourceVersion\":\"%" PRIu64 "\"},\"data\":\"",
                 name, rv);
    memset(j + n, 'x', size);
    memcpy(j + n + size, "\"}", 3);
    o.json = j;
    o.json_len = strlen(j);
    return o;
}

/* Submits b, waits for it, returns its result. */
static int commit_one(struct fatia_store *s, struct fatia_store_batch *b)
{
    struct fatia_store_batch *d;

    assert_int_equal(fatia_store_submit(s, b), 0);
    for (;;) {
        usleep(1000);
        if ((d = fatia_store_reap(s))) {
            assert_ptr_equal(d, b);
            return d->result;
        }
    }
}

/* etcd refuses a request over its --max-request-bytes: InvalidArgument ("request is too
 * large") up to the limit + 512 KiB, gRPC's ResourceExhausted ("received message larger than
 * max") above. Both are -EFBIG for that batch alone: neither is etcd's NOSPACE alarm, so the
 * store raises no alarm and the next write commits. */
static void test_etcd_too_large_not_nospace(void **state)
{
    const struct backend *b = *state;
    struct fatia_store *s = open_small(b);
    struct fatia_store_op o[3];
    struct fatia_store_batch bs[3];
    struct seen seen = {0};

    assert_int_equal(fatia_store_writer_start(s), 0);
    o[0] = big_op(1, "over", 100 * 1024);     /* > 64 KiB: "request is too large" */
    o[1] = big_op(2, "far-over", 700 * 1024); /* > 64 KiB + 512 KiB: gRPC's limit */
    o[2] = op(3, FATIA_STORE_ADDED, "Pod", "default", "small");
    for (int i = 0; i < 3; i++)
        bs[i] = (struct fatia_store_batch){.ops = &o[i], .n = 1};
    assert_int_equal(commit_one(s, &bs[0]), -EFBIG);
    assert_false(fatia_store_nospace(s));
    assert_int_equal(commit_one(s, &bs[1]), -EFBIG);
    assert_false(fatia_store_nospace(s));
    assert_int_equal(commit_one(s, &bs[2]), 0);
    fatia_store_close(s);
    free((char *)o[0].json);
    free((char *)o[1].json);
    s = open_small(b);
    assert_int_equal(fatia_store_rv(s), 3);
    assert_int_equal(fatia_store_load(s, collect, &seen), 0);
    assert_int_equal(seen.n, 1);
    assert_string_equal(seen.names[0], "Pod/default/small");
    fatia_store_close(s);
}

#define N_SPLIT 300

struct ordered {
    uint64_t last;
    int n;
};

/* Objects: counted, none of them the one too large. */
static int check_order_obj(void *arg, const struct fatia_store_row *row)
{
    struct ordered *o = arg;

    assert_true(row->json_len < 4096);
    o->n++;
    return 0;
}

static int check_order(void *arg, const struct fatia_store_row *row)
{
    struct ordered *o = arg;

    assert_true(row->rv > o->last);
    o->last = row->rv;
    o->n++;
    return 0;
}

/* Many batches queued at once, more bytes and more ops than one etcd request may hold: the
 * writer cuts them into several transactions, between batches, and all commit in order; one
 * batch too large by itself fails alone (-EFBIG), the ones beside it commit, and no NOSPACE
 * alarm. A batch of several ops (one API transaction) is never cut. Single writer and replica
 * mode (each transaction its own compares and marker write). */
static void split_commits(const struct backend *b)
{
    static struct fatia_store_op ops[N_SPLIT + 4];
    static struct fatia_store_batch bs[N_SPLIT];
    static char names[N_SPLIT + 4][32];
    struct fatia_store *s = open_small(b);
    struct fatia_store_stats st;
    struct fatia_store_batch *d;
    struct ordered ord = {0};
    uint64_t rv = 0, rev = 0;
    int big = N_SPLIT / 2, multi = N_SPLIT / 3, reaped = 0;
    size_t k = 0;

    assert_int_equal(fatia_store_writer_start(s), 0);
    for (int i = 0; i < N_SPLIT; i++) {
        size_t n = i == multi ? 5 : 1; /* one batch of 5 ops */
        for (size_t j = 0; j < n; j++) {
            snprintf(names[k + j], sizeof(names[0]), "cm-%d-%zu", i, j);
            ops[k + j] = big_op(++rv, names[k + j], i == big ? 100 * 1024 : 1000);
        }
        bs[i] = (struct fatia_store_batch){.ops = &ops[k], .n = n};
        k += n;
    }
    for (int i = 0; i < N_SPLIT; i++)
        assert_int_equal(fatia_store_submit(s, &bs[i]), 0);
    while (reaped < N_SPLIT) {
        usleep(1000);
        while ((d = fatia_store_reap(s))) {
            assert_ptr_equal(d, &bs[reaped]);
            assert_int_equal(d->result, reaped == big ? -EFBIG : 0);
            if (b->replica && reaped != big) {
                assert_true(d->revision >= rev); /* batches of one commit share a revision */
                rev = d->revision;
            }
            reaped++;
        }
    }
    assert_false(fatia_store_nospace(s));
    fatia_store_get_stats(s, &st);
    /* cut, by ops at least */
    assert_true(st.transactions > (N_SPLIT + 4) / (SMALL_OPS - 3) || b->over);
    fatia_store_close(s);
    for (size_t i = 0; i < k; i++)
        free((char *)ops[i].json);
    s = open_small(b);
    assert_int_equal(fatia_store_load(s, check_order_obj, &ord), 0);
    assert_int_equal(ord.n, N_SPLIT + 4 - 1); /* all but the one too large */
    if (!b->replica) {
        assert_int_equal(fatia_store_rv(s), rv);
        memset(&ord, 0, sizeof(ord));
        assert_int_equal(fatia_store_load_log(s, 0, check_order, &ord), 0);
        assert_int_equal(ord.n, N_SPLIT + 4 - 1);
    }
    fatia_store_close(s);
}

static void test_etcd_split_commits(void **state)
{
    struct backend b = *(const struct backend *)*state;

    split_commits(&b);
    b.replica = true;
    snprintf(b.prefix, sizeof(b.prefix), "/t%d/registry", ++prefix_seq);
    split_commits(&b);
}

/* The store told limits above etcd's: etcd refuses the large commits (-EFBIG, nothing written),
 * and the writer sends their batches again one at a time: the same outcome. */
static void test_etcd_split_limits_wrong(void **state)
{
    struct backend b = *(const struct backend *)*state;

    b.over = true;
    split_commits(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_commit_load_reopen, setup_sqlite),
        cmocka_unit_test_setup(test_commit_load_reopen, setup_etcd),
        cmocka_unit_test_setup(test_group_commit, setup_sqlite),
        cmocka_unit_test_setup(test_group_commit, setup_etcd),
        cmocka_unit_test_setup(test_log_pruned, setup_sqlite),
        cmocka_unit_test_setup(test_log_pruned, setup_etcd),
        cmocka_unit_test_setup(test_etcd_fence_and_prefix, setup_etcd),
        cmocka_unit_test_setup(test_etcd_endpoint_failover, setup_etcd),
        cmocka_unit_test_setup(test_etcd_replicas, setup_etcd),
        cmocka_unit_test_setup(test_etcd_too_large_not_nospace, setup_small),
        cmocka_unit_test_setup(test_etcd_split_commits, setup_small),
        cmocka_unit_test_setup(test_etcd_split_limits_wrong, setup_small),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

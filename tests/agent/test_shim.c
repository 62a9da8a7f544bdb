/*
 * tests/agent/test_shim.c: fatia-shim, the pod supervisor, run as the agent runs it (a new
 * session, a pod directory with spec.json), with real processes: exit codes and signals, start
 * errors, restart policies and back-off, SIGTERM then SIGKILL of the whole process group after
 * the grace period, active deadlines, init containers, CRI log files (partial lines, rotation),
 * the lock that keeps a second shim away, the refusal to run a pod twice, and the end of a pod
 * whose directory was removed (and only then: shim_dirwatch.c's rule, and the events that must
 * not stop a pod).
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/crilog.h"
#include "agent/proc.h"
#include "agent/shim_dirwatch.h"
#include "base/clock.h"

struct pod {
    char dir[128];    /* the test's directory */
    char pod[160];    /* POD_DIR */
    char logs[160];   /* logDir */
    char status[160]; /* statusFile */
    pid_t shim;
    pid_t pause; /* when a test knows it: killed by teardown, with what is left of its group */
    uint64_t pause_start;
};

/* The shim of the test that runs (a copy: the test's own struct is gone by teardown), stopped
 * by teardown whatever happened. */
static struct pod current;

static void pod_init(struct pod *p)
{
    p->shim = 0;
    p->pause = 0;
    snprintf(p->dir, sizeof(p->dir), "/tmp/fatia-shim-test-XXXXXX");
    assert_non_null(mkdtemp(p->dir));
    snprintf(p->pod, sizeof(p->pod), "%s/pod", p->dir);
    snprintf(p->logs, sizeof(p->logs), "%s/logs", p->dir);
    snprintf(p->status, sizeof(p->status), "%s/status.json", p->dir);
    assert_int_equal(mkdir(p->pod, 0700), 0);
    assert_int_equal(mkdir(p->logs, 0700), 0);
}

static void pod_release(struct pod *p)
{
    char cmd[300];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p->dir);
    assert_int_equal(WEXITSTATUS(system(cmd)), 0);
}

/* spec: the fields given in extra (a JSON object text without braces, may be empty) plus
 * containers, each "name|shell command". */
static void write_spec(struct pod *p, const char *extra, const char *const *inits,
                       const char *const *ctrs)
{
    json_t *spec = json_pack(
        "{s:i,s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:i,s:[],s:[]}", "version", 1, "namespace", "t", "name",
        "p", "uid", "u-1", "startTime", "2026-01-01T00:00:00Z", "logDir", p->logs, "statusFile",
        p->status, "backoffInitialMs", 100, "backoffMaxMs", 300, "initContainers", "containers");
    char path[300], buf[600];
    json_error_t je;

    if (extra && extra[0]) {
        snprintf(buf, sizeof(buf), "{%s}", extra);
        json_t *x = json_loads(buf, 0, &je);
        assert_non_null(x);
        json_object_update(spec, x);
        json_decref(x);
    }
    for (int k = 0; k < 2; k++) {
        const char *const *list = k ? ctrs : inits;
        json_t *arr = json_object_get(spec, k ? "containers" : "initContainers");
        for (; list && *list; list++) {
            const char *bar = strchr(*list, '|');
            char name[64];
            snprintf(name, sizeof(name), "%.*s", (int)(bar - *list), *list);
            json_array_append_new(
                arr, json_pack("{s:s,s:[s,s,s],s:[s,s],s:s}", "name", name, "argv", "/bin/sh", "-c",
                               bar + 1, "env", "PATH=/usr/bin:/bin", "T=1", "workingDir", p->dir));
        }
    }
    snprintf(path, sizeof(path), "%s/spec.json", p->pod);
    assert_int_equal(json_dump_file(spec, path, 0), 0);
    json_decref(spec);
}

static pid_t spawn_shim(struct pod *p)
{
    static char shim[] = FATIA_SHIM;
    char *argv[] = {shim, p->pod, NULL};
    posix_spawnattr_t at;
    pid_t pid;

    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID);
    assert_int_equal(posix_spawn(&pid, FATIA_SHIM, NULL, &at, argv, environ), 0);
    posix_spawnattr_destroy(&at);
    return pid;
}

static void start(struct pod *p)
{
    p->shim = spawn_shim(p);
    current = *p;
}

/* After a failed test: stop its shim (grace 0: SIGKILL to the pod's group) and reap it. */
static int teardown(void **state)
{
    struct pod *p = &current;
    char path[512]; /* more than the struct: gcc bounds %s by it */
    int status;
    FILE *f;

    (void)state;
    if (p->pause > 0 && fatia_proc_alive(p->pause, p->pause_start))
        kill(-p->pause, SIGKILL); /* a shim that failed its test left its pod */
    p->pause = 0;
    if (p->shim <= 0 || waitpid(p->shim, &status, WNOHANG) != 0) {
        p->shim = 0;
        return 0;
    }
    snprintf(path, sizeof(path), "%s/stop.json", p->pod);
    f = fopen(path, "w");
    if (f) {
        fputs("{\"gracePeriodSeconds\": 0}", f);
        fclose(f);
    }
    kill(p->shim, SIGTERM);
    for (int i = 0; i < 500 && waitpid(p->shim, &status, WNOHANG) == 0; i++)
        usleep(10000);
    kill(p->shim, SIGKILL);
    waitpid(p->shim, &status, 0);
    p->shim = 0;
    return 0;
}

/* Waits for the shim to exit; returns its exit status. */
static int wait_shim(struct pod *p, int timeout_s)
{
    fatia_usec_t end = fatia_now_mono_usec() + timeout_s * FATIA_USEC_PER_SEC;
    int status;

    while (fatia_now_mono_usec() < end) {
        pid_t r = waitpid(p->shim, &status, WNOHANG);
        if (r == p->shim)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        usleep(10000);
    }
    kill(p->shim, SIGKILL);
    waitpid(p->shim, &status, 0);
    fail_msg("fatia-shim did not end in %d s", timeout_s);
    return -1;
}

static json_t *status(struct pod *p)
{
    json_error_t je;
    json_t *s = json_load_file(p->status, 0, &je);

    assert_non_null(s);
    return s;
}

/* Waits until the status file's container name is in state kind. */
static json_t *wait_state(struct pod *p, const char *name, const char *kind, int timeout_s)
{
    fatia_usec_t end = fatia_now_mono_usec() + timeout_s * FATIA_USEC_PER_SEC;

    while (fatia_now_mono_usec() < end) {
        json_error_t je;
        json_t *s = json_load_file(p->status, 0, &je);
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(s, "containers"), i, c)
        {
            if (!strcmp(json_string_value(json_object_get(c, "name")), name) &&
                json_object_get(json_object_get(c, "state"), kind))
                return s;
        }
        json_decref(s);
        usleep(10000);
    }
    fail_msg("container %s never became %s", name, kind);
    return NULL;
}

static const json_t *ctr(const json_t *st, const char *list, const char *name)
{
    size_t i;
    json_t *c;

    json_array_foreach(json_object_get(st, list), i, c)
    {
        if (!strcmp(json_string_value(json_object_get(c, "name")), name))
            return c;
    }
    fail_msg("no container %s", name);
    return NULL;
}

static int64_t term_int(const json_t *c, const char *which, const char *key)
{
    return json_integer_value(
        json_object_get(json_object_get(json_object_get(c, which), "terminated"), key));
}

static const char *term_str(const json_t *c, const char *which, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(c, which), "terminated"), key));
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf;
    long n;

    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = calloc(1, (size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return buf;
}

/* ---- tests ---- */

static void test_exit_codes(void **state)
{
    struct pod p;
    const char *ctrs[] = {"ok|echo fine", "three|exit 3", "killed|kill -KILL $$", NULL};
    json_t *st;

    (void)state;
    pod_init(&p);
    write_spec(&p, "\"restartPolicy\": \"Never\"", NULL, ctrs);
    start(&p);
    assert_int_equal(wait_shim(&p, 10), 0);
    st = status(&p);
    assert_string_equal(json_string_value(json_object_get(st, "phase")), "Failed");
    assert_true(json_is_true(json_object_get(st, "done")));
    assert_int_equal(term_int(ctr(st, "containers", "ok"), "state", "exitCode"), 0);
    assert_string_equal(term_str(ctr(st, "containers", "ok"), "state", "reason"), "Completed");
    assert_int_equal(term_int(ctr(st, "containers", "three"), "state", "exitCode"), 3);
    assert_string_equal(term_str(ctr(st, "containers", "three"), "state", "reason"), "Error");
    assert_int_equal(term_int(ctr(st, "containers", "killed"), "state", "exitCode"), 137);
    assert_int_equal(term_int(ctr(st, "containers", "killed"), "state", "signal"), 9);
    json_decref(st);
    pod_release(&p);
}

static void test_succeeded(void **state)
{
    struct pod p;
    const char *ctrs[] = {"a|true", "b|sleep 0.2", NULL};
    json_t *st;

    (void)state;
    pod_init(&p);
    write_spec(&p, "\"restartPolicy\": \"OnFailure\"", NULL, ctrs);
    start(&p);
    assert_int_equal(wait_shim(&p, 10), 0);
    st = status(&p);
    assert_string_equal(json_string_value(json_object_get(st, "phase")), "Succeeded");
    json_decref(st);
    pod_release(&p);
}

static void test_start_error(void **state)
{
    struct pod p;
    json_t *spec, *st;
    char path[300];
    json_error_t je;
    const char *ctrs[] = {"x|true", NULL};

    (void)state;
    pod_init(&p);
    write_spec(&p, "\"restartPolicy\": \"Never\"", NULL, ctrs);
    snprintf(path, sizeof(path), "%s/spec.json", p.pod);
    spec = json_load_file(path, 0, &je);
    json_object_set_new(json_array_get(json_object_get(spec, "containers"), 0), "argv",
                        json_pack("[s]", "no-such-program-fatia"));
    json_array_append_new(json_object_get(spec, "containers"),
                          json_pack("{s:s,s:[s],s:[],s:s}", "name", "cwd", "argv", "/bin/true",
                                    "env", "workingDir", "/no/such/dir"));
    json_dump_file(spec, path, 0);
    json_decref(spec);
    start(&p);
    assert_int_equal(wait_shim(&p, 10), 0);
    st = status(&p);
    assert_int_equal(term_int(ctr(st, "containers", "x"), "state", "exitCode"), 128);
    assert_string_equal(term_str(ctr(st, "containers", "x"), "state", "reason"), "StartError");
    assert_non_null(strstr(term_str(ctr(st, "containers", "x"), "state", "message"),
                           "executable file not found in $PATH"));
    assert_non_null(strstr(term_str(ctr(st, "containers", "cwd"), "state", "message"),
                           "chdir to workingDir \"/no/such/dir\" failed"));
    assert_string_equal(json_string_value(json_object_get(st, "phase")), "Failed");
    json_decref(st);
    pod_release(&p);
}

static void test_restart_on_failure(void **state)
{
    struct pod p;
    char cmd[400];
    const char *ctrs[2] = {cmd, NULL};
    const json_t *c;
    json_t *st;
    char path[300], *log;

    (void)state;
    pod_init(&p);
    /* fails twice, then succeeds; each run says its number */
    snprintf(cmd, sizeof(cmd),
             "main|n=$(cat %s/n 2>/dev/null || echo 0); echo $((n+1)) > %s/n; echo run $n; "
             "[ $n -ge 2 ]",
             p.dir, p.dir);
    write_spec(&p, "\"restartPolicy\": \"OnFailure\"", NULL, ctrs);
    start(&p);
    assert_int_equal(wait_shim(&p, 15), 0);
    st = status(&p);
    c = ctr(st, "containers", "main");
    assert_string_equal(json_string_value(json_object_get(st, "phase")), "Succeeded");
    assert_int_equal(json_integer_value(json_object_get(c, "restartCount")), 2);
    assert_int_equal(term_int(c, "state", "exitCode"), 0);
    assert_int_equal(term_int(c, "lastState", "exitCode"), 1);
    /* the last two instances' logs are kept (current and previous), older ones go */
    snprintf(path, sizeof(path), "%s/main/2.log", p.logs);
    log = slurp(path);
    assert_non_null(log);
    assert_non_null(strstr(log, " stdout F run 2\n"));
    free(log);
    snprintf(path, sizeof(path), "%s/main/1.log", p.logs);
    log = slurp(path);
    assert_non_null(log);
    assert_non_null(strstr(log, " stdout F run 1\n"));
    free(log);
    snprintf(path, sizeof(path), "%s/main/0.log", p.logs);
    assert_int_equal(access(path, F_OK), -1);
    json_decref(st);
    pod_release(&p);
}

static void test_restart_always_backoff(void **state)
{
    struct pod p;
    const char *ctrs[] = {"main|exit 1", NULL};
    fatia_usec_t t0 = fatia_now_mono_usec();
    json_t *st = NULL;
    int64_t rc = 0;

    (void)state;
    pod_init(&p);
    write_spec(&p, "\"restartPolicy\": \"Always\"", NULL, ctrs);
    start(&p);
    /* restarts: at once, then after 100, 200, 300, 300 ms: 5 restarts take about 0.9 s */
    while (rc < 5 && fatia_now_mono_usec() - t0 < 10 * FATIA_USEC_PER_SEC) {
        json_error_t je;
        json_decref(st);
        st = json_load_file(p.status, 0, &je);
        if (st)
            rc = json_integer_value(json_object_get(ctr(st, "containers", "main"), "restartCount"));
        usleep(20000);
    }
    assert_true(rc >= 5);
    assert_true(fatia_now_mono_usec() - t0 >= 800 * FATIA_USEC_PER_MSEC);
    assert_string_equal(json_string_value(json_object_get(st, "phase")), "Running");
    kill(p.shim, SIGTERM);
    assert_int_equal(wait_shim(&p, 10), 0);
    json_decref(st);
    st = status(&p);
    assert_true(json_is_true(json_object_get(st, "done")));
    assert_string_equal(json_string_value(json_object_get(st, "phase")), "Failed");
    json_decref(st);
    pod_release(&p);
}

static void test_sigterm_grace(void **state)
{
    struct pod p;
    char cmd[300], path[300], *got;
    const char *ctrs[2] = {cmd, NULL};
    fatia_usec_t t0;
    json_t *st;

    (void)state;
    pod_init(&p);
    snprintf(cmd, sizeof(cmd),
             "main|trap 'echo TERM > %s/got; exit 0' TERM; while true; do sleep 0.05; done", p.dir);
    write_spec(&p, "\"terminationGracePeriodSeconds\": 10", NULL, ctrs);
    start(&p);
    json_decref(wait_state(&p, "main", "running", 5));
    usleep(100000);
    t0 = fatia_now_mono_usec();
    kill(p.shim, SIGTERM);
    assert_int_equal(wait_shim(&p, 10), 0);
    assert_true(fatia_now_mono_usec() - t0 < 3 * FATIA_USEC_PER_SEC);
    snprintf(path, sizeof(path), "%s/got", p.dir);
    got = slurp(path);
    assert_non_null(got);
    assert_string_equal(got, "TERM\n");
    free(got);
    st = status(&p);
    assert_int_equal(term_int(ctr(st, "containers", "main"), "state", "exitCode"), 0);
    assert_string_equal(json_string_value(json_object_get(st, "phase")), "Succeeded");
    json_decref(st);
    pod_release(&p);
}

/* A container that ignores SIGTERM, with a child in the background: both are SIGKILLed at the
 * end of the grace period (the child because it is in the pod's process group). */
static void test_grace_then_kill_group(void **state)
{
    struct pod p;
    char cmd[300], path[300], *pidtxt;
    const char *ctrs[2] = {cmd, NULL};
    fatia_usec_t t0, took;
    pid_t child;
    json_t *st;

    (void)state;
    pod_init(&p);
    snprintf(cmd, sizeof(cmd),
             "main|trap '' TERM; sh -c 'trap \"\" TERM; echo $$ > %s/child; exec sleep 100' & "
             "while true; do sleep 0.05; done",
             p.dir);
    write_spec(&p, "\"terminationGracePeriodSeconds\": 1", NULL, ctrs);
    start(&p);
    json_decref(wait_state(&p, "main", "running", 5));
    snprintf(path, sizeof(path), "%s/child", p.dir);
    for (int i = 0; i < 200 && access(path, F_OK) < 0; i++)
        usleep(10000);
    usleep(50000);
    pidtxt = slurp(path);
    assert_non_null(pidtxt);
    child = (pid_t)strtol(pidtxt, NULL, 10);
    free(pidtxt);
    assert_true(fatia_proc_alive(child, 0));
    t0 = fatia_now_mono_usec();
    kill(p.shim, SIGTERM);
    assert_int_equal(wait_shim(&p, 10), 0);
    took = fatia_now_mono_usec() - t0;
    assert_true(took >= 900 * FATIA_USEC_PER_MSEC);
    assert_true(took < 4 * FATIA_USEC_PER_SEC);
    assert_false(fatia_proc_alive(child, 0));
    st = status(&p);
    assert_int_equal(term_int(ctr(st, "containers", "main"), "state", "exitCode"), 137);
    json_decref(st);
    pod_release(&p);
}

/* stop.json sets the grace period (a deletion's) and the pod's reason. */
static void test_stop_file(void **state)
{
    struct pod p;
    const char *ctrs[] = {"main|trap '' TERM; while true; do sleep 0.05; done", NULL};
    char path[300];
    fatia_usec_t t0;
    json_t *st;
    FILE *f;

    (void)state;
    pod_init(&p);
    write_spec(&p, "\"terminationGracePeriodSeconds\": 30", NULL, ctrs);
    start(&p);
    json_decref(wait_state(&p, "main", "running", 5));
    snprintf(path, sizeof(path), "%s/stop.json", p.pod);
    f = fopen(path, "w");
    fputs("{\"gracePeriodSeconds\": 0, \"reason\": \"Evicted\", \"message\": \"test\"}", f);
    fclose(f);
    t0 = fatia_now_mono_usec();
    kill(p.shim, SIGTERM);
    assert_int_equal(wait_shim(&p, 10), 0);
    assert_true(fatia_now_mono_usec() - t0 < 2 * FATIA_USEC_PER_SEC);
    st = status(&p);
    assert_string_equal(json_string_value(json_object_get(st, "reason")), "Evicted");
    json_decref(st);
    pod_release(&p);
}

static void test_deadline(void **state)
{
    struct pod p;
    const char *ctrs[] = {"main|sleep 30", NULL};
    char extra[200], now[40];
    json_t *st;

    (void)state;
    pod_init(&p);
    fatia_time_format_rfc3339(fatia_now_real_usec(), false, now, sizeof(now));
    snprintf(extra, sizeof(extra),
             "\"activeDeadlineSeconds\": 1, \"terminationGracePeriodSeconds\": 5, "
             "\"startTime\": \"%s\"",
             now);
    write_spec(&p, extra, NULL, ctrs);
    start(&p);
    assert_int_equal(wait_shim(&p, 10), 0);
    st = status(&p);
    assert_string_equal(json_string_value(json_object_get(st, "phase")), "Failed");
    assert_string_equal(json_string_value(json_object_get(st, "reason")), "DeadlineExceeded");
    json_decref(st);
    pod_release(&p);
}

static void test_init_containers(void **state)
{
    struct pod p;
    char i1[200], i2[200], app[200], path[300], *order;
    const char *inits[] = {i1, i2, NULL}, *ctrs[] = {app, NULL};
    json_t *st;

    (void)state;
    pod_init(&p);
    snprintf(i1, sizeof(i1), "one|echo one >> %s/order", p.dir);
    snprintf(i2, sizeof(i2), "two|echo two >> %s/order", p.dir);
    snprintf(app, sizeof(app), "app|echo app >> %s/order", p.dir);
    write_spec(&p, "\"restartPolicy\": \"Never\"", inits, ctrs);
    start(&p);
    assert_int_equal(wait_shim(&p, 10), 0);
    snprintf(path, sizeof(path), "%s/order", p.dir);
    order = slurp(path);
    assert_string_equal(order, "one\ntwo\napp\n");
    free(order);
    st = status(&p);
    assert_string_equal(json_string_value(json_object_get(st, "phase")), "Succeeded");
    json_decref(st);
    pod_release(&p);

    /* a failing init container with restartPolicy Never fails the pod; the app never runs */
    pod_init(&p);
    snprintf(i1, sizeof(i1), "one|exit 2");
    snprintf(app, sizeof(app), "app|echo app >> %s/order", p.dir);
    inits[1] = NULL;
    write_spec(&p, "\"restartPolicy\": \"Never\"", inits, ctrs);
    start(&p);
    assert_int_equal(wait_shim(&p, 10), 0);
    snprintf(path, sizeof(path), "%s/order", p.dir);
    assert_int_equal(access(path, F_OK), -1);
    st = status(&p);
    assert_string_equal(json_string_value(json_object_get(st, "phase")), "Failed");
    assert_non_null(
        json_object_get(json_object_get(ctr(st, "containers", "app"), "state"), "waiting"));
    json_decref(st);
    pod_release(&p);
}

static void test_logs(void **state)
{
    struct pod p;
    const char *ctrs[] = {"main|echo out1; echo err1 >&2; head -c 40000 /dev/zero | tr '\\0' x; "
                          "echo; printf tail",
                          NULL};
    char path[300], *log, *line, *save = NULL;
    int entries = 0, partial = 0, out = 0, err = 0;
    size_t xs = 0;

    (void)state;
    pod_init(&p);
    write_spec(&p, "\"restartPolicy\": \"Never\"", NULL, ctrs);
    start(&p);
    assert_int_equal(wait_shim(&p, 10), 0);
    snprintf(path, sizeof(path), "%s/main/0.log", p.logs);
    log = slurp(path);
    assert_non_null(log);
    for (line = strtok_r(log, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        struct fatia_crilog_entry e;
        assert_int_equal(fatia_crilog_parse(line, strlen(line), &e), 0);
        entries++;
        partial += e.partial;
        out += !e.is_stderr;
        err += e.is_stderr;
        if (e.msg_len && e.msg[0] == 'x')
            xs += e.msg_len;
        if (e.msg_len == 4 && !memcmp(e.msg, "tail", 4))
            assert_true(e.partial); /* no newline at the end */
    }
    /* out1, err1, the 40000 x cut in 16 KiB parts (2 P + 1 F), "tail" (P) */
    assert_int_equal(xs, 40000);
    assert_int_equal(partial, 3);
    assert_int_equal(err, 1);
    assert_int_equal(entries, 6);
    assert_int_equal(out, 5);
    free(log);
    pod_release(&p);
}

static void test_log_rotation(void **state)
{
    struct pod p;
    const char *ctrs[] = {"main|i=0; while [ $i -lt 3000 ]; do echo line $i; i=$((i+1)); done",
                          NULL};
    char path[300];
    struct stat a, b;

    (void)state;
    pod_init(&p);
    write_spec(&p, "\"restartPolicy\": \"Never\", \"logMaxBytes\": 20000", NULL, ctrs);
    start(&p);
    assert_int_equal(wait_shim(&p, 10), 0);
    snprintf(path, sizeof(path), "%s/main/0.log", p.logs);
    assert_int_equal(stat(path, &a), 0);
    snprintf(path, sizeof(path), "%s/main/0.log.1", p.logs);
    assert_int_equal(stat(path, &b), 0);
    assert_true(a.st_size <= 20000);
    assert_true(b.st_size <= 20000 && b.st_size > 15000);
    pod_release(&p);
}

/* One shim per pod: a second one finds the lock taken; and a pod whose status file exists (it ran
 * before) is never run again. */
static void test_once(void **state)
{
    struct pod p, q;
    char cmd[300], path[300];
    const char *ctrs[2] = {cmd, NULL};
    char *runs;
    int status;

    (void)state;
    pod_init(&p);
    snprintf(cmd, sizeof(cmd), "main|echo run >> %s/runs; sleep 0.5", p.dir);
    write_spec(&p, "\"restartPolicy\": \"Never\"", NULL, ctrs);
    start(&p);
    json_decref(wait_state(&p, "main", "running", 5));
    q = p;
    q.shim = spawn_shim(&q);
    waitpid(q.shim, &status, 0);
    assert_int_equal(WEXITSTATUS(status), 3);
    assert_int_equal(wait_shim(&p, 10), 0);
    q.shim = spawn_shim(&q);
    waitpid(q.shim, &status, 0);
    assert_int_equal(WEXITSTATUS(status), 3);
    snprintf(path, sizeof(path), "%s/runs", p.dir);
    runs = slurp(path);
    assert_string_equal(runs, "run\n");
    free(runs);
    pod_release(&p);
}

/* ---- the pod directory removed ---- */

/* A running pod with a container that leaves a child behind; its shim's stderr in DIR/shim.log.
 * *ctr_pid, *child_pid, *pause_pid: its processes. */
static void start_watched(struct pod *p, pid_t *ctr_pid, pid_t *child_pid, pid_t *pause_pid)
{
    static char shim[] = FATIA_SHIM;
    char cmd[300], path[300], *txt;
    const char *ctrs[2] = {cmd, NULL};
    char *argv[] = {shim, p->pod, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    json_t *st;

    pod_init(p);
    snprintf(cmd, sizeof(cmd), "main|sleep 600 & echo $! > %s/child; exec sleep 600", p->dir);
    write_spec(p, "\"terminationGracePeriodSeconds\": 30", NULL, ctrs);
    snprintf(path, sizeof(path), "%s/shim.log", p->dir);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID);
    assert_int_equal(posix_spawn(&p->shim, FATIA_SHIM, &fa, &at, argv, environ), 0);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    current = *p;
    st = wait_state(p, "main", "running", 5);
    *ctr_pid = (pid_t)json_integer_value(json_object_get(ctr(st, "containers", "main"), "pid"));
    *pause_pid = (pid_t)json_integer_value(json_object_get(st, "pgid"));
    current.pause = *pause_pid;
    (void)fatia_proc_start_time(*pause_pid, &current.pause_start);
    json_decref(st);
    snprintf(path, sizeof(path), "%s/child", p->dir);
    for (int i = 0; i < 300 && !(txt = slurp(path), txt && txt[0]); i++) {
        free(txt);
        usleep(10000);
    }
    assert_non_null(txt);
    *child_pid = (pid_t)strtol(txt, NULL, 10);
    free(txt);
    assert_true(*ctr_pid > 1 && *child_pid > 1 && *pause_pid > 1);
    assert_true(fatia_proc_alive(*ctr_pid, 0) && fatia_proc_alive(*child_pid, 0) &&
                fatia_proc_alive(*pause_pid, 0));
}

static void rm_rf(const char *path)
{
    char cmd[400];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
    assert_int_equal(WEXITSTATUS(system(cmd)), 0);
}

/* Every process of the pod is gone (the shim reaped its own; the child was re-parented). */
static void assert_pod_gone(pid_t ctr_pid, pid_t child_pid, pid_t pause_pid)
{
    for (int i = 0; i < 200 && fatia_proc_alive(child_pid, 0); i++)
        usleep(10000);
    assert_false(fatia_proc_alive(ctr_pid, 0));
    assert_false(fatia_proc_alive(child_pid, 0));
    assert_false(fatia_proc_alive(pause_pid, 0));
}

/* rm -rf of the pod directory (what the tests' cleanup does to a data directory): the shim stops
 * the pod at once, whatever its grace period (30 s here), says why, and exits. */
static void test_dir_removed(void **state)
{
    struct pod p;
    pid_t cp, kid, pause;
    fatia_usec_t t0, took;
    char path[300], *log;
    json_t *st;

    (void)state;
    start_watched(&p, &cp, &kid, &pause);
    t0 = fatia_now_mono_usec();
    rm_rf(p.pod);
    assert_int_equal(wait_shim(&p, 5), 0);
    took = fatia_now_mono_usec() - t0;
    print_message("shim gone %lld ms after rm -rf of its pod directory\n",
                  (long long)(took / FATIA_USEC_PER_MSEC));
    assert_true(took < 2 * FATIA_USEC_PER_SEC); /* the event, not the 60 s timer */
    assert_pod_gone(cp, kid, pause);
    snprintf(path, sizeof(path), "%s/shim.log", p.dir);
    log = slurp(path);
    assert_non_null(log);
    assert_non_null(strstr(log, "the pod directory '"));
    assert_non_null(strstr(log, "/pod' was removed (it was deleted): stopping the pod"));
    free(log);
    st = status(&p); /* the status file is not in POD_DIR: it says how the pod ended */
    assert_true(json_is_true(json_object_get(st, "done")));
    assert_int_equal(term_int(ctr(st, "containers", "main"), "state", "exitCode"), 137);
    json_decref(st);
    pod_release(&p);
}

/* POD_DIR moved away and a new directory made in its place: the path names another directory. */
static void test_dir_replaced(void **state)
{
    struct pod p;
    pid_t cp, kid, pause;
    char old[300];

    (void)state;
    start_watched(&p, &cp, &kid, &pause);
    snprintf(old, sizeof(old), "%s.old", p.pod);
    assert_int_equal(rename(p.pod, old), 0);
    assert_int_equal(mkdir(p.pod, 0700), 0);
    assert_int_equal(wait_shim(&p, 5), 0);
    assert_pod_gone(cp, kid, pause);
    pod_release(&p);
}

/* What must not stop a pod: its neighbours' directories made, removed and renamed in the same
 * parent, files and directories made and removed inside POD_DIR, the parent's metadata changed,
 * and fatia-shim's own work. Then the pod directory goes and the pod with it (the shim was
 * watching all along). */
static void test_dir_kept(void **state)
{
    struct pod p;
    pid_t cp, kid, pause;
    char a[300], b[300], f[700];

    (void)state;
    start_watched(&p, &cp, &kid, &pause);
    for (int i = 0; i < 20; i++) {
        snprintf(a, sizeof(a), "%s/other-%d", p.dir, i);
        snprintf(b, sizeof(b), "%s/other-%d.moved", p.dir, i);
        assert_int_equal(mkdir(a, 0700), 0);
        assert_int_equal(rename(a, b), 0);
        rm_rf(b);
        snprintf(a, sizeof(a), "%s/sub-%d/deeper", p.pod, i);
        snprintf(f, sizeof(f), "mkdir -p '%s' && touch '%s/x'", a, a);
        assert_int_equal(WEXITSTATUS(system(f)), 0);
        snprintf(a, sizeof(a), "%s/sub-%d", p.pod, i);
        rm_rf(a);
    }
    /* a neighbour whose name begins as ours */
    snprintf(a, sizeof(a), "%s-x", p.pod);
    assert_int_equal(mkdir(a, 0700), 0);
    assert_int_equal(rmdir(a), 0);
    assert_int_equal(chmod(p.dir, 0755), 0);
    assert_int_equal(chmod(p.pod, 0750), 0);
    usleep(1500 * 1000);
    assert_int_equal(waitpid(p.shim, NULL, WNOHANG), 0);
    assert_true(fatia_proc_alive(cp, 0) && fatia_proc_alive(kid, 0) && fatia_proc_alive(pause, 0));
    rm_rf(p.pod);
    assert_int_equal(wait_shim(&p, 5), 0);
    assert_pod_gone(cp, kid, pause);
    pod_release(&p);
}

/* The rule: only the directory's own removal is "gone"; a failed check never is. */
static void test_dir_judge(void **state)
{
    struct stat here = {.st_dev = 7, .st_ino = 42, .st_nlink = 2};
    struct stat unlinked = here, other = here, other_dev = here;
    const int transient[] = {-EINTR, -ENOMEM, -EIO, -ESTALE, -EACCES, -ELOOP, -EOVERFLOW};
    const char *why = NULL;

    (void)state;
    unlinked.st_nlink = 0;
    other.st_ino = 43;
    other_dev.st_dev = 8;
    assert_int_equal(fatia_shim_dir_judge(7, 42, 0, &here, 0, &here, &why), FATIA_SHIM_DIR_HERE);
    assert_int_equal(fatia_shim_dir_judge(7, 42, 0, &unlinked, -ENOENT, NULL, &why),
                     FATIA_SHIM_DIR_GONE);
    assert_string_equal(why, "it was deleted");
    /* unlinked, even when the path check failed for another reason */
    assert_int_equal(fatia_shim_dir_judge(7, 42, 0, &unlinked, -EINTR, NULL, &why),
                     FATIA_SHIM_DIR_GONE);
    assert_int_equal(fatia_shim_dir_judge(7, 42, 0, &here, -ENOENT, NULL, &why),
                     FATIA_SHIM_DIR_GONE);
    assert_int_equal(fatia_shim_dir_judge(7, 42, 0, &here, -ENOTDIR, NULL, &why),
                     FATIA_SHIM_DIR_GONE);
    assert_int_equal(fatia_shim_dir_judge(7, 42, 0, &here, 0, &other, &why), FATIA_SHIM_DIR_GONE);
    assert_string_equal(why, "its path names another directory");
    assert_int_equal(fatia_shim_dir_judge(7, 42, 0, &here, 0, &other_dev, &why),
                     FATIA_SHIM_DIR_GONE);
    for (size_t i = 0; i < sizeof(transient) / sizeof(transient[0]); i++) {
        /* the path check failed: nothing known */
        assert_int_equal(fatia_shim_dir_judge(7, 42, 0, &here, transient[i], NULL, &why),
                         FATIA_SHIM_DIR_UNKNOWN);
        /* fstat failed (opened is garbage then), the path is fine or failed too */
        assert_int_equal(fatia_shim_dir_judge(7, 42, transient[i], &unlinked, 0, &here, &why),
                         FATIA_SHIM_DIR_UNKNOWN);
        assert_int_equal(
            fatia_shim_dir_judge(7, 42, transient[i], &unlinked, transient[i], NULL, &why),
            FATIA_SHIM_DIR_UNKNOWN);
    }
}

/* The pid-reuse guard: a process is signalled only if its start time matches. */
static void test_proc_guard(void **state)
{
    pid_t pid = fork();
    uint64_t start = 0;
    struct fatia_proc_stat st;
    int status;

    (void)state;
    if (pid == 0) {
        pause();
        _exit(0);
    }
    assert_int_equal(fatia_proc_start_time(pid, &start), 0);
    assert_int_equal(fatia_proc_stat(pid, &st), 0);
    assert_int_equal(st.ppid, getpid());
    assert_true(fatia_proc_alive(pid, start));
    assert_false(fatia_proc_alive(pid, start + 1));
    /* the wrong start time (a reused pid): no signal */
    assert_int_equal(fatia_proc_signal(pid, start + 1, SIGKILL), -ESRCH);
    usleep(20000);
    assert_int_equal(waitpid(pid, &status, WNOHANG), 0);
    assert_int_equal(fatia_proc_signal(pid, start, SIGKILL), 0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(fatia_proc_signal(pid, start, SIGKILL), -ESRCH);
    assert_false(fatia_proc_alive(pid, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_exit_codes, teardown),
        cmocka_unit_test_teardown(test_succeeded, teardown),
        cmocka_unit_test_teardown(test_start_error, teardown),
        cmocka_unit_test_teardown(test_restart_on_failure, teardown),
        cmocka_unit_test_teardown(test_restart_always_backoff, teardown),
        cmocka_unit_test_teardown(test_sigterm_grace, teardown),
        cmocka_unit_test_teardown(test_grace_then_kill_group, teardown),
        cmocka_unit_test_teardown(test_stop_file, teardown),
        cmocka_unit_test_teardown(test_deadline, teardown),
        cmocka_unit_test_teardown(test_init_containers, teardown),
        cmocka_unit_test_teardown(test_logs, teardown),
        cmocka_unit_test_teardown(test_log_rotation, teardown),
        cmocka_unit_test_teardown(test_once, teardown),
        cmocka_unit_test_teardown(test_proc_guard, teardown),
        cmocka_unit_test_teardown(test_dir_removed, teardown),
        cmocka_unit_test_teardown(test_dir_replaced, teardown),
        cmocka_unit_test_teardown(test_dir_kept, teardown),
        cmocka_unit_test(test_dir_judge),
    };

    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}

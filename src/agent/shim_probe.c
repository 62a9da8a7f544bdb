/*
 * agent/shim_probe.c: fatia-shim runs a container's probes (agent/probe.h decides what they
 * mean).
 *
 * Model: each run of a probe is one short-lived prober process forked by the shim, which does
 * the check with its own deadline (timeoutSeconds) and exits 0 (success) or 1 (failure), having
 * written kubelet's message for a failure into a pipe the shim reads when it reaps it. The shim
 * stays one thread with one poll loop: a prober that blocks (a command that hangs, a peer that
 * never answers) blocks only itself, and the shim SIGKILLs one still there two seconds past its
 * deadline (a failure, "probe timed out"). At most one run per probe kind is in flight.
 *
 *   exec       the runtime boundary's exec (runtime.h): in the process mode one more process of
 *              the pod, in containers `runc exec` into it; the output (stdout and stderr, the
 *              first 511 bytes) is the message; exit code 0 is success. Past the deadline the
 *              command is SIGKILLed ("command timed out").
 *   tcpSocket  a connect(2) to host:port within the deadline; success once it is established.
 *   httpGet    GET path over HTTP/1.1 with kubelet's User-Agent (kube-probe/1.33) and Accept (any),
 *              the probe's httpHeaders; a status 200..399 is success, as kubelet's
 *              (redirects are not followed: a 3xx is a success, as kubelet counts one to another
 *              host). HTTPS is refused when the spec is made (no TLS client in the agent).
 *
 * The host: the probe's host when set, else the pod's address (its CNI address in containers,
 * 127.0.0.1 in the process mode and with hostNetwork), so a probe reaches what the pod serves on
 * its own address and nothing of another pod's network.
 *
 * Rejected: probes run by fatiad's agent (they would stop while fatiad restarts, and a liveness
 * kill must go through the supervisor that restarts the container anyway); non-blocking sockets
 * and child pipes in the shim's own poll loop (three protocol state machines in the supervisor
 * for what a forked prober does in straight-line code).
 */
#include "base/compat.h"

#include "agent/shim_probe.h"

#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/json.h"

static const char *const spec_keys[] = {"startup", "liveness", "readiness"};

#define KILL_SLACK (2 * FATIA_USEC_PER_SEC)

bool fatia_shim_probes_load(struct fatia_shim_probes *sp, const json_t *ctr_spec)
{
    const json_t *probes = json_object_get(ctr_spec, "probes");

    *sp = (struct fatia_shim_probes){0};
    for (int k = 0; k < FATIA_PROBE_KINDS; k++) {
        const json_t *p = json_object_get(probes, spec_keys[k]);
        struct fatia_agent_probe_cfg cfg;
        sp->msg_fd[k] = -1;
        if (!p) {
            fatia_agent_probes_set(&sp->ps, (enum fatia_agent_probe_kind)k, NULL);
            continue;
        }
        if (!fatia_agent_probe_cfg_parse(p, &cfg))
            return false;
        sp->spec[k] = p;
        fatia_agent_probes_set(&sp->ps, (enum fatia_agent_probe_kind)k, &cfg);
    }
    return true;
}

bool fatia_shim_probes_any(const struct fatia_shim_probes *sp)
{
    for (int k = 0; k < FATIA_PROBE_KINDS; k++) {
        if (sp->spec[k])
            return true;
    }
    return false;
}

static void end_run(struct fatia_shim_probes *sp, int k, bool kill_it)
{
    if (sp->pid[k] > 0) {
        if (kill_it)
            (void)kill(sp->pid[k], SIGKILL);
        while (waitpid(sp->pid[k], NULL, 0) < 0 && errno == EINTR)
            ;
    }
    sp->pid[k] = 0;
    if (sp->msg_fd[k] >= 0)
        close(sp->msg_fd[k]);
    sp->msg_fd[k] = -1;
}

void fatia_shim_probes_start(struct fatia_shim_probes *sp, fatia_usec_t now)
{
    for (int k = 0; k < FATIA_PROBE_KINDS; k++) {
        end_run(sp, k, true);
        sp->failures[k] = 0;
        sp->msg[k][0] = '\0';
    }
    fatia_agent_probes_start(&sp->ps, now);
}

void fatia_shim_probes_stop(struct fatia_shim_probes *sp)
{
    for (int k = 0; k < FATIA_PROBE_KINDS; k++)
        end_run(sp, k, true);
    fatia_agent_probes_stop(&sp->ps);
}

/* ---- the prober process ---- */

static fatia_usec_t now_mono(void)
{
    return fatia_now_mono_usec();
}

static int remaining_ms(fatia_usec_t deadline)
{
    fatia_usec_t now = now_mono();

    return now >= deadline ? 0 : (int)((deadline - now + 999) / 1000);
}

static _Noreturn void say(int wfd, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static _Noreturn void say(int wfd, int code, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n > 0)
        (void)!write(wfd, buf, FATIA_MIN((size_t)n, sizeof(buf) - 1));
    _exit(code);
}

/* The prober is a child subreaper: what the command left behind (a process of a killed
 * `runc exec`, a background child) is re-parented to it, never to the shim (whose container
 * init, as its pid namespace's init, would wait in exit for such a zombie only the shim could
 * reap). Before it exits it kills and reaps all of them. */
static void reap_orphans(void)
{
    char path[64], buf[4096];

    snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
    for (int round = 0; round < 200; round++) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        bool any = false;
        if (fd >= 0)
            close(fd);
        if (n > 0) {
            char *save = NULL;
            buf[n] = '\0';
            for (char *t = strtok_r(buf, " \n", &save); t; t = strtok_r(NULL, " \n", &save)) {
                long v = strtol(t, NULL, 10);
                if (v > 1)
                    (void)kill((pid_t)v, SIGKILL);
                any = true;
            }
        }
        while (waitpid(-1, NULL, WNOHANG) > 0)
            any = true;
        if (!any && (n == 0 || fd < 0)) {
            if (waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD)
                return;
        }
        {
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
}

static _Noreturn void run_exec(const json_t *ex, struct fatia_rt_pod *pod,
                               const struct fatia_runtime *rt, const struct fatia_rt_ctr *c,
                               fatia_usec_t deadline, int wfd)
{
    const json_t *cmd = json_object_get(ex, "command");
    size_t n = json_array_size(cmd), got = 0;
    char **argv = calloc(n + 1, sizeof(char *)), why[512] = "", out[512];
    int p[2], status;
    pid_t pid;

    if (!argv || pipe2(p, O_CLOEXEC) < 0)
        say(wfd, 1, "cannot run the probe: %s", fatia_strerror(-errno));
    for (size_t i = 0; i < n; i++)
        argv[i] = (char *)json_string_value(json_array_get(cmd, i));
    {
        struct fatia_rt_stdio io = {.in = pod->null_fd, .out = p[1], .err = p[1]};
        if (rt->exec(pod, c, argv, &io, &pid, why, sizeof(why)) < 0)
            say(wfd, 1, "%s", why[0] ? why : "cannot run the probe's command");
    }
    close(p[1]);
    for (;;) {
        struct pollfd pf = {.fd = p[0], .events = POLLIN};
        int ms = remaining_ms(deadline), r;
        char buf[4096];
        ssize_t k;
        if (ms == 0)
            break;
        r = poll(&pf, 1, ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        k = read(p[0], buf, sizeof(buf));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        if (got < sizeof(out) - 1) {
            size_t m = FATIA_MIN((size_t)k, sizeof(out) - 1 - got);
            memcpy(out + got, buf, m);
            got += m;
        }
    }
    out[got] = '\0';
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            say(wfd, 1, "cannot wait for the probe's command");
        if (remaining_ms(deadline) == 0) {
            (void)kill(pid, SIGKILL);
            (void)waitpid(pid, &status, 0);
            reap_orphans();
            say(wfd, 1, "command timed out");
        }
        {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    reap_orphans();
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        _exit(0);
    say(wfd, 1, "%s", out);
}

/* A connected socket to host:port within the deadline, or an exit with kubelet's message. */
static int dial(const char *host, int64_t port, fatia_usec_t deadline, int wfd, const char *what)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    char ports[16];
    socklen_t len = sizeof(int);
    int fd, r, err = 0;

    snprintf(ports, sizeof(ports), "%lld", (long long)port);
    r = getaddrinfo(host, ports, &hints, &ai);
    if (r != 0 || !ai)
        say(wfd, 1, "%s: dial tcp: lookup %s: %s", what, host, gai_strerror(r));
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        say(wfd, 1, "%s: socket: %s", what, fatia_strerror(-errno));
    r = connect(fd, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    if (r < 0 && errno != EINPROGRESS)
        say(wfd, 1, "%s: dial tcp %s:%s: connect: %s", what, host, ports, fatia_strerror(-errno));
    if (r < 0) {
        struct pollfd pf = {.fd = fd, .events = POLLOUT};
        do
            r = poll(&pf, 1, remaining_ms(deadline));
        while (r < 0 && errno == EINTR);
        if (r == 0)
            say(wfd, 1, "%s: dial tcp %s:%s: i/o timeout", what, host, ports);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            err = errno;
        if (err)
            say(wfd, 1, "%s: dial tcp %s:%s: connect: %s", what, host, ports, fatia_strerror(-err));
    }
    return fd;
}

static _Noreturn void run_tcp(const json_t *ts, const char *host, fatia_usec_t deadline, int wfd)
{
    int64_t port = json_integer_value(json_object_get(ts, "port"));
    const char *h = fatia_json_str(ts, "host");

    close(dial(h && h[0] ? h : host, port, deadline, wfd, "tcp probe failed"));
    _exit(0);
}

static _Noreturn void run_http(const json_t *hg, const char *host, fatia_usec_t deadline, int wfd)
{
    int64_t port = json_integer_value(json_object_get(hg, "port"));
    const char *h = fatia_json_str(hg, "host"), *path = fatia_json_str(hg, "path");
    char req[8192], resp[1024], url[1200];
    bool have_host = false, have_ua = false, have_accept = false;
    size_t n = 0, got = 0, i;
    json_t *hd;
    int fd, code = 0;

    if (!h || !h[0])
        h = host;
    snprintf(url, sizeof(url), "http://%s:%lld%s", h, (long long)port, path ? path : "/");
    fd = dial(h, port, deadline, wfd, "HTTP probe failed");
    n += (size_t)snprintf(req + n, sizeof(req) - n, "GET %s HTTP/1.1\r\n", path ? path : "/");
    json_array_foreach(json_object_get(hg, "headers"), i, hd)
    {
        const char *name = json_string_value(json_array_get(hd, 0));
        const char *value = json_string_value(json_array_get(hd, 1));
        if (!name || n >= sizeof(req) - 64)
            continue;
        have_host |= !strcasecmp(name, "Host");
        have_ua |= !strcasecmp(name, "User-Agent");
        have_accept |= !strcasecmp(name, "Accept");
        n += (size_t)snprintf(req + n, sizeof(req) - n, "%s: %s\r\n", name, value ? value : "");
    }
    if (n < sizeof(req) - 200) {
        if (!have_host)
            n +=
                (size_t)snprintf(req + n, sizeof(req) - n, "Host: %s:%lld\r\n", h, (long long)port);
        if (!have_ua)
            n += (size_t)snprintf(req + n, sizeof(req) - n, "User-Agent: kube-probe/1.33\r\n");
        if (!have_accept)
            n += (size_t)snprintf(req + n, sizeof(req) - n, "Accept: */*\r\n");
        n += (size_t)snprintf(req + n, sizeof(req) - n, "Connection: close\r\n\r\n");
    }
    for (size_t off = 0; off < n;) {
        struct pollfd pf = {.fd = fd, .events = POLLOUT};
        ssize_t w;
        if (poll(&pf, 1, remaining_ms(deadline)) <= 0)
            say(wfd, 1, "Get \"%s\": context deadline exceeded", url);
        w = send(fd, req + off, n - off, MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (w <= 0)
            say(wfd, 1, "Get \"%s\": %s", url, fatia_strerror(-errno));
        off += (size_t)w;
    }
    while (got < sizeof(resp) - 1 && !memchr(resp, '\n', got)) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        ssize_t k;
        int r = poll(&pf, 1, remaining_ms(deadline));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            say(wfd, 1,
                "Get \"%s\": context deadline exceeded (Client.Timeout exceeded while "
                "awaiting headers)",
                url);
        k = recv(fd, resp + got, sizeof(resp) - 1 - got, 0);
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (k <= 0)
            say(wfd, 1, "Get \"%s\": EOF", url);
        got += (size_t)k;
    }
    resp[got] = '\0';
    close(fd);
    if (sscanf(resp, "HTTP/%*d.%*d %d", &code) != 1)
        say(wfd, 1, "Get \"%s\": malformed HTTP response", url);
    if (code >= 200 && code < 400)
        _exit(0);
    say(wfd, 1, "HTTP probe failed with statuscode: %d", code);
}

static _Noreturn void prober(const json_t *spec, struct fatia_rt_pod *pod,
                             const struct fatia_runtime *rt, const struct fatia_rt_ctr *c,
                             const char *host, fatia_usec_t deadline, int wfd)
{
    sigset_t none;
    const json_t *x;

    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    (void)prctl(PR_SET_CHILD_SUBREAPER, 1);
    signal(SIGCHLD, SIG_DFL);
    if ((x = json_object_get(spec, "exec")))
        run_exec(x, pod, rt, c, deadline, wfd);
    if ((x = json_object_get(spec, "tcpSocket")))
        run_tcp(x, host, deadline, wfd);
    if ((x = json_object_get(spec, "httpGet")))
        run_http(x, host, deadline, wfd);
    say(wfd, 1, "no probe handler");
}

/* ---- the shim's side ---- */

static bool record(struct fatia_shim_probes *sp, int k, bool ok, const char *msg)
{
    if (!ok) {
        sp->failures[k]++;
        snprintf(sp->msg[k], sizeof(sp->msg[k]), "%s", msg);
    }
    /* a failure is news even when the result stays (an Unhealthy Event per failed run) */
    return fatia_agent_probes_result(&sp->ps, (enum fatia_agent_probe_kind)k, ok) || !ok;
}

static void read_msg(struct fatia_shim_probes *sp, int k, char *buf, size_t n)
{
    ssize_t got = sp->msg_fd[k] >= 0 ? read(sp->msg_fd[k], buf, n - 1) : -1;

    buf[got > 0 ? got : 0] = '\0';
}

bool fatia_shim_probes_tick(struct fatia_shim_probes *sp, struct fatia_rt_pod *pod,
                            const struct fatia_runtime *rt, const struct fatia_rt_ctr *c,
                            const char *host, fatia_usec_t now, fatia_usec_t *next)
{
    bool changed = false;

    for (int k = 0; k < FATIA_PROBE_KINDS; k++) {
        enum fatia_agent_probe_kind kind = (enum fatia_agent_probe_kind)k;
        int p[2];
        pid_t pid;
        if (sp->pid[k] > 0) {
            if (now >= sp->deadline[k] + KILL_SLACK) {
                end_run(sp, k, true);
                changed |= record(sp, k, false, "probe timed out");
            } else {
                *next = FATIA_MIN(*next, sp->deadline[k] + KILL_SLACK);
            }
            continue;
        }
        if (!fatia_agent_probes_due(&sp->ps, kind, now))
            continue;
        fatia_agent_probes_ran(&sp->ps, kind, now);
        sp->deadline[k] = now + (fatia_usec_t)sp->ps.p[k].cfg.timeout_s * FATIA_USEC_PER_SEC;
        if (pipe2(p, O_CLOEXEC) < 0) {
            changed |= record(sp, k, false, "cannot run the probe: no pipe");
            continue;
        }
        pid = fork();
        if (pid == 0) {
            close(p[0]);
            prober(sp->spec[k], pod, rt, c, host, sp->deadline[k], p[1]);
        }
        close(p[1]);
        if (pid < 0) {
            close(p[0]);
            changed |= record(sp, k, false, "cannot run the probe: fork failed");
            continue;
        }
        (void)fcntl(p[0], F_SETFL, O_NONBLOCK);
        sp->pid[k] = pid;
        sp->msg_fd[k] = p[0];
        *next = FATIA_MIN(*next, sp->deadline[k] + KILL_SLACK);
    }
    *next = FATIA_MIN(*next, fatia_agent_probes_next(&sp->ps));
    return changed;
}

bool fatia_shim_probes_reap(struct fatia_shim_probes *sp)
{
    bool changed = false;

    for (int k = 0; k < FATIA_PROBE_KINDS; k++) {
        char msg[512];
        int status;
        pid_t w;
        if (sp->pid[k] <= 0)
            continue;
        w = waitpid(sp->pid[k], &status, WNOHANG);
        if (w != sp->pid[k])
            continue;
        read_msg(sp, k, msg, sizeof(msg));
        sp->pid[k] = 0;
        end_run(sp, k, false);
        changed |= record(sp, k, WIFEXITED(status) && WEXITSTATUS(status) == 0, msg);
    }
    return changed;
}

json_t *fatia_shim_probes_json(const struct fatia_shim_probes *sp)
{
    static const char *const results[] = {"Unknown", "Success", "Failure"};
    json_t *o;

    if (!fatia_shim_probes_any(sp))
        return NULL;
    o = json_object();
    for (int k = 0; k < FATIA_PROBE_KINDS; k++) {
        const struct fatia_agent_probe *p = &sp->ps.p[k];
        if (!sp->spec[k])
            continue;
        json_object_set_new(o, spec_keys[k],
                            json_pack("{s:s,s:i,s:s}", "result", results[p->result], "failures",
                                      (int)sp->failures[k], "message", sp->msg[k]));
    }
    return o;
}

/*
 * agent/shim.c: fatia-shim, one pod's supervisor (see shim.h for its files and processes).
 *
 * One thread, one poll() loop over a signalfd (SIGCHLD, SIGTERM, SIGINT, SIGHUP) and the stdout
 * and stderr pipes of the running containers; timers (restart back-off, the active deadline, the
 * end of a grace period) are the poll timeout. Being single-threaded, the shim may fork and then
 * prepare a container in the child (cgroup, uid, no_new_privs, working directory) before exec.
 *
 * A container's states, drawn as the Kubernetes API shows them:
 *
 *                 start_ctr                     reap (exit) or StartError
 *   waiting  -------------------> running  -------------------------------> terminated
 *   (ContainerCreating,             |                                          |
 *    PodInitializing)               |        will_restart(): restartPolicy,    |
 *      ^                            |        not terminating                   |
 *      |   back-off elapsed         v                                          |
 *      +------------------ waiting (CrashLoopBackOff, lastState = terminated) <+
 *
 * Init containers run one after the other, each to success, before any app container starts;
 * one that fails is restarted (OnFailure, Always) or fails the pod (Never).
 *
 * The pod, as the shim sees it:
 *
 *   starting --pause + first containers--> running --SIGTERM (stop.json) or deadline-->
 *   terminating (SIGTERM to group P; SIGKILL at the end of the grace period)
 *   running | terminating --no container runs and none will start--> finishing:
 *   SIGKILL to what is left of P (and cgroup.kill), reap the pause process, wait until no
 *   process of P is left, write the final status (done: true), exit 0.
 *   running --POD_DIR removed (shim_dirwatch.c)--> terminating with no grace period: the shim
 *   outlives fatiad (a restarted fatiad adopts it), never its pod directory.
 *   running --a disk emptyDir over its sizeLimit (shim_storage.c)--> terminating with no grace
 *   period, reason Evicted, as kubelet's eviction manager does.
 *
 * Invariants: the status file is written after every change, durably, before the shim acts on
 * the next event, so what it says happened did happen; the pause process is reaped last, so the
 * process group P exists (and its id is not reused) for as long as the shim signals it; every
 * descriptor is close-on-exec, so containers inherit only stdin (/dev/null, or a pipe the shim
 * writes attached clients' input to when the spec says stdin: true), stdout and stderr. Each
 * container also has an attach socket (shim_attach.c) whose clients get its output as the log
 * does.
 *
 * Rejected: one supervisor per container (conmon's shape). The pod's processes must share one
 * process group, and a group can only be joined from within its session, so one session leader
 * per pod is needed anyway: containerd's shim v2 is one per pod for the same reason. Also
 * rejected: PR_SET_PDEATHSIG on containers (a dying shim would take the pod down; instead the
 * agent notices a lost shim and stops what is left by pid plus start time).
 */
#include "base/compat.h"

#include "agent/shim.h"

#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <unistd.h>

#include "agent/crilog.h"
#include "agent/proc.h"
#include "agent/runtime.h"
#include "agent/shim_attach.h"
#include "agent/shim_dirwatch.h"
#include "agent/shim_probe.h"
#include "agent/shim_storage.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

enum cstate {
    C_WAITING,
    C_RUNNING,
    C_TERMINATED
};

enum policy {
    P_ALWAYS,
    P_ON_FAILURE,
    P_NEVER
};

struct ctr {
    const char *name;
    char **argv; /* NULL-terminated, borrowed from the spec */
    char **envp;
    const char *cwd;
    const json_t *spec; /* its entry in spec.json */
    bool init;
    unsigned restarts;      /* restartCount */
    unsigned backoff_steps; /* restarts since the container last ran long */
    bool ever_started;      /* an instance was started (or failed to start) */
    enum cstate st;
    char wait_reason[64];
    char wait_msg[512];
    pid_t pid;
    uint64_t pid_start;
    fatia_usec_t started_at, finished_at, started_mono;
    int exit_code, sig;
    char term_reason[64];
    char term_msg[512];
    json_t *last_state;      /* {"terminated": ...} of the previous instance, or NULL */
    fatia_usec_t restart_at; /* monotonic; 0: no restart pending */
    int out_fd, err_fd;
    int in_fd;                    /* stdin's write end (spec stdin: true), else -1 */
    bool want_stdin, stdin_once;  /* spec */
    bool tty;                     /* spec tty: out_fd is the container's pty master */
    struct fatia_shim_attach att; /* kubectl attach (shim_attach.c) */
    struct fatia_linebuf out_lb, err_lb;
    struct fatia_crilog log;
    uint64_t oom_before;
    struct fatia_shim_probes probes; /* shim_probe.c */
    fatia_usec_t probe_kill_at;      /* killed by a probe: SIGKILL then (monotonic); 0: none */
    char probe_killed[16];           /* "Liveness" / "Startup": this instance was killed by it */
};

struct shim {
    char dir[4096];
    json_t *spec;
    const char *ns, *name, *uid;
    struct fatia_rt_pod pod; /* the sandbox, for the runtime */
    const struct fatia_runtime *rt;
    const char *cgroup;
    enum policy policy;
    int64_t grace_s, deadline_s;
    fatia_usec_t start_time;
    int64_t backoff_init_ms, backoff_max_ms;
    const char *log_dir;
    uint64_t log_max;
    const char *status_path;
    int status_dir_fd;
    struct ctr *ctrs; /* init containers first, then app containers */
    size_t n_init, n_ctrs;
    size_t init_next; /* the init container running or next; n_init once all succeeded */
    bool init_failed;
    pid_t sid;
    int sfd, lock_fd, null_fd;
    uint64_t seq;
    bool terminating, deadline_exceeded, killed;
    fatia_usec_t kill_at; /* monotonic end of the grace period */
    char reason[64], message[512];
    char boot_id[64];
    struct fatia_shim_dirwatch dw; /* POD_DIR (shim_dirwatch.c) */
    fatia_usec_t dir_check_at;     /* monotonic: the next check of POD_DIR; 0: now */
    bool dir_gone;                 /* POD_DIR was removed: the pod is being torn down */
    const json_t *storage_limits;  /* spec emptyDirLimits (shim_storage.h), or NULL */
    int64_t storage_every_ms;
    fatia_usec_t storage_check_at; /* monotonic: the next measure of the limited emptyDirs */
};

/* ---- small helpers ---- */

static fatia_usec_t mono(void)
{
    return fatia_now_mono_usec();
}

static void fmt_time(fatia_usec_t t, char *buf, size_t n)
{
    fatia_time_format_rfc3339(t, false, buf, n);
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;

    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static uint64_t read_oom_kills(const char *cgroup)
{
    char path[4200], buf[2048], *p;
    uint64_t v = 0;
    ssize_t n;
    int fd;

    if (!cgroup)
        return 0;
    snprintf(path, sizeof(path), "%s/memory.events", cgroup);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    p = strstr(buf, "oom_kill ");
    if (p)
        v = strtoull(p + 9, NULL, 10);
    return v;
}

/* ---- the status file ---- */

static json_t *state_json(struct shim *s, struct ctr *c)
{
    char t1[40], t2[40], id[600];

    switch (c->st) {
    case C_WAITING: {
        json_t *w = json_pack("{s:s}", "reason", c->wait_reason);
        if (c->wait_msg[0])
            json_object_set_new(w, "message", json_string(c->wait_msg));
        return json_pack("{s:o}", "waiting", w);
    }
    case C_RUNNING:
        fmt_time(c->started_at, t1, sizeof(t1));
        return json_pack("{s:{s:s}}", "running", "startedAt", t1);
    case C_TERMINATED: {
        json_t *t;
        fmt_time(c->started_at ? c->started_at : c->finished_at, t1, sizeof(t1));
        fmt_time(c->finished_at, t2, sizeof(t2));
        snprintf(id, sizeof(id), "fatia://%s/%s/%u", s->uid, c->name, c->restarts);
        t = json_pack("{s:i,s:s,s:s,s:s,s:s}", "exitCode", c->exit_code, "reason", c->term_reason,
                      "startedAt", t1, "finishedAt", t2, "containerID", id);
        if (c->sig)
            json_object_set_new(t, "signal", json_integer(c->sig));
        if (c->term_msg[0])
            json_object_set_new(t, "message", json_string(c->term_msg));
        return json_pack("{s:o}", "terminated", t);
    }
    }
    return json_object();
}

static json_t *ctr_json(struct shim *s, struct ctr *c)
{
    json_t *o = json_pack(
        "{s:s,s:i,s:b,s:b,s:o}", "name", c->name, "restartCount", c->restarts, "started",
        c->st == C_RUNNING && fatia_agent_probes_started(&c->probes.ps), "ready",
        c->st == C_RUNNING && fatia_agent_probes_ready(&c->probes.ps), "state", state_json(s, c));
    json_t *pj = fatia_shim_probes_json(&c->probes);
    char id[600];

    if (pj)
        json_object_set_new(o, "probes", pj);
    if (c->probe_killed[0])
        json_object_set_new(o, "probeKilled", json_string(c->probe_killed));

    json_object_set_new(o, "lastState",
                        c->last_state ? json_deep_copy(c->last_state) : json_object());
    if (c->st == C_RUNNING) {
        json_object_set_new(o, "pid", json_integer(c->pid));
        json_object_set_new(o, "pidStart", json_integer((json_int_t)c->pid_start));
    }
    if (fatia_json_str(json_object_get(c->spec, "oci"), "imageID"))
        json_object_set_new(
            o, "imageID", json_string(fatia_json_str(json_object_get(c->spec, "oci"), "imageID")));
    if (c->ever_started) {
        snprintf(id, sizeof(id), "fatia://%s/%s/%u", s->uid, c->name, c->restarts);
        json_object_set_new(o, "containerID", json_string(id));
    }
    return o;
}

static bool will_restart(struct shim *s, struct ctr *c);

/* The pod phase, as kubelet computes it (pkg/kubelet/kubelet_pods.go getPhase). */
static const char *pod_phase(struct shim *s)
{
    size_t running = 0, waiting = 0, restarting = 0, succeeded = 0, failed = 0, n_app = 0;

    if (s->deadline_exceeded || !strcmp(s->reason, "Evicted") ||
        !strcmp(s->reason, "GPUMemoryLimitExceeded"))
        return "Failed"; /* kubelet: an evicted pod fails, whatever its exit codes */
    if (s->init_failed)
        return "Failed";
    if (s->init_next < s->n_init)
        return "Pending";
    for (size_t i = s->n_init; i < s->n_ctrs; i++) {
        struct ctr *c = &s->ctrs[i];
        n_app++;
        if (c->st == C_RUNNING)
            running++;
        else if (c->st == C_WAITING && c->last_state && !s->terminating)
            restarting++;
        else if (c->st == C_WAITING && c->last_state)
            failed++; /* stopped while waiting to restart: its last instance failed */
        else if (c->st == C_WAITING)
            waiting++;
        else if (c->exit_code == 0)
            succeeded++;
        else
            failed++;
    }
    if (waiting && !running && !restarting && !s->terminating)
        return "Pending";
    if (running || restarting)
        return "Running";
    if (waiting)
        return s->terminating ? "Failed" : "Pending";
    if (succeeded + failed == n_app)
        return failed ? "Failed" : "Succeeded";
    return "Pending";
}

static int write_status(struct shim *s, bool done)
{
    json_t *st, *inits = json_array(), *apps = json_array();
    char tmp[4200], t[40];
    uint64_t me = 0;
    char *text;
    int fd, r;

    for (size_t i = 0; i < s->n_ctrs; i++)
        json_array_append_new(i < s->n_init ? inits : apps, ctr_json(s, &s->ctrs[i]));
    fmt_time(s->start_time, t, sizeof(t));
    (void)fatia_proc_start_time(getpid(), &me);
    st = json_pack("{s:i,s:s,s:I,s:{s:i,s:I},s:s,s:i,s:I,s:s,s:s,s:b,s:b,s:o,s:o}", "version",
                   FATIA_SHIM_SPEC_VERSION, "uid", s->uid, "seq", (json_int_t)++s->seq, "shim",
                   "pid", (int)getpid(), "start", (json_int_t)me, "bootId", s->boot_id, "pgid",
                   (int)s->pod.sandbox_pid, "pauseStart", (json_int_t)s->pod.sandbox_start, "phase",
                   pod_phase(s), "startTime", t, "terminating", s->terminating, "done", done,
                   "initContainers", inits, "containers", apps);
    if (!st)
        return -ENOMEM;
    json_object_set_new(st, "sid", json_integer(s->sid));
    if (s->pod.ip[0])
        json_object_set_new(st, "podIP", json_string(s->pod.ip));
    if (s->rt)
        json_object_set_new(st, "runtime", json_string(s->rt->name));
    if (s->reason[0])
        json_object_set_new(st, "reason", json_string(s->reason));
    if (s->message[0])
        json_object_set_new(st, "message", json_string(s->message));
    text = json_dumps(st, JSON_COMPACT);
    json_decref(st);
    if (!text)
        return -ENOMEM;
    snprintf(tmp, sizeof(tmp), "%s.tmp", s->status_path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        r = -errno;
        free(text);
        if (s->dir_gone) /* the data directory went with the pod's: said once already */
            return r;
        return fatia_log_errno(FATIA_LOG_ERROR, r, "cannot write '%s'", tmp);
    }
    r = write_all(fd, text, strlen(text));
    free(text);
    if (r == 0 && fsync(fd) < 0)
        r = -errno;
    close(fd);
    if (r == 0 && rename(tmp, s->status_path) < 0)
        r = -errno;
    if (r == 0 && s->status_dir_fd >= 0)
        (void)fsync(s->status_dir_fd);
    if (r < 0 && !s->dir_gone)
        fatia_log_errno(FATIA_LOG_ERROR, r, "cannot write '%s'", s->status_path);
    return r;
}

/* ---- starting processes ---- */

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);

    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void remove_old_logs(struct shim *s, struct ctr *c)
{
    char path[4200];

    if (c->restarts < 2)
        return;
    /* keep this instance and the one before it (kubectl logs --previous) */
    snprintf(path, sizeof(path), "%s/%s/%u.log", s->log_dir, c->name, c->restarts - 2);
    (void)unlink(path);
    snprintf(path, sizeof(path), "%s/%s/%u.log.1", s->log_dir, c->name, c->restarts - 2);
    (void)unlink(path);
}

static void on_terminated(struct shim *s, struct ctr *c);

/* Starts an instance of c. A failure to start is recorded as a terminated instance (StartError,
 * exit code 128, as containerd reports it) and goes through the restart policy like an exit. */
static int tty_create(struct shim *s, struct ctr *c, int *ret_master, pid_t *ret_pid);

static void start_ctr(struct shim *s, struct ctr *c)
{
    int out[2] = {-1, -1}, err[2] = {-1, -1}, in[2] = {-1, -1}, slave = -1, master = -1;
    char path[4200];
    pid_t pid = 0;
    int r;

    if (c->ever_started)
        c->restarts++; /* on_terminated already made the last instance lastState */
    c->ever_started = true;
    c->restart_at = 0;
    c->term_msg[0] = '\0';
    c->sig = 0;
    c->started_at = fatia_now_real_usec();
    c->started_mono = mono();
    snprintf(path, sizeof(path), "%s/%s", s->log_dir, c->name);
    (void)mkdir(path, 0750);
    remove_old_logs(s, c);
    snprintf(path, sizeof(path), "%s/%s/%u.log", s->log_dir, c->name, c->restarts);
    r = fatia_crilog_open(&c->log, path, s->log_max);
    if (r < 0) {
        fatia_log_errno(FATIA_LOG_WARNING, r, "pod %s/%s: container '%s': cannot open log '%s'",
                        s->ns, s->name, c->name, path);
        c->log.fd = -1;
    }
    c->out_lb.len = c->err_lb.len = 0;
    if (c->att.lsock < 0) {
        int dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        r = dfd < 0 ? -errno : fatia_shim_attach_listen(&c->att, dfd, c->name);
        if (r < 0)
            fatia_log_errno(FATIA_LOG_WARNING, r, "pod %s/%s: container '%s': no attach socket",
                            s->ns, s->name, c->name);
        if (dfd >= 0)
            close(dfd);
    }
    if (c->tty) {
        /* tty: true (kubectl attach -t): a pty; the runtime may make its own (oci: runc's) */
        c->oom_before = read_oom_kills(s->cgroup);
        r = tty_create(s, c, &master, &pid);
        if (r < 0)
            goto fail;
        goto started;
    }
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
        (c->want_stdin && pipe2(in, O_CLOEXEC) < 0)) {
        snprintf(c->term_msg, sizeof(c->term_msg), "cannot make the output pipes: %s",
                 fatia_strerror(-errno));
        goto fail;
    }
    c->oom_before = read_oom_kills(s->cgroup);
    {
        struct fatia_rt_ctr rc = {.name = c->name,
                                  .argv = c->argv,
                                  .envp = c->envp,
                                  .cwd = c->cwd,
                                  .spec = c->spec,
                                  .instance = c->restarts};
        struct fatia_rt_stdio io = {
            .in = in[0] >= 0 ? in[0] : s->null_fd, .out = out[1], .err = err[1]};
        r = s->rt->create(&s->pod, &rc, &io, &pid, c->term_msg, sizeof(c->term_msg));
    }
    close(out[1]);
    close(err[1]);
    if (in[0] >= 0)
        close(in[0]);
    out[1] = err[1] = in[0] = -1;
    if (r < 0)
        goto fail;
    c->pid = pid;
    (void)fatia_proc_start_time(pid, &c->pid_start);
    c->out_fd = out[0];
    c->err_fd = err[0];
    c->in_fd = in[1];
    if (c->in_fd >= 0)
        set_nonblock(c->in_fd);
    set_nonblock(c->out_fd);
    set_nonblock(c->err_fd);
started:
    if (c->tty) {
        c->pid = pid;
        (void)fatia_proc_start_time(pid, &c->pid_start);
        c->out_fd = master; /* stdout and stderr are the terminal, as kubelet's */
        c->in_fd = c->want_stdin ? fcntl(master, F_DUPFD_CLOEXEC, 0) : -1;
        set_nonblock(c->out_fd);
    }
    c->st = C_RUNNING;
    c->probe_kill_at = 0;
    c->probe_killed[0] = '\0';
    fatia_shim_probes_start(&c->probes, c->started_mono);
    fatia_info("pod %s/%s: container '%s' started (pid %d, restart %u)", s->ns, s->name, c->name,
               (int)pid, c->restarts);
    (void)write_status(s, false);
    return;

fail:
    if (slave >= 0)
        close(slave);
    if (master >= 0)
        close(master);
    for (int i = 0; i < 2; i++) {
        if (out[i] >= 0)
            close(out[i]);
        if (err[i] >= 0)
            close(err[i]);
        if (in[i] >= 0)
            close(in[i]);
    }
    c->out_fd = c->err_fd = -1;
    if (c->log.fd >= 0) {
        fatia_usec_t now = fatia_now_real_usec();
        (void)fatia_crilog_write(&c->log, now, "stderr", c->term_msg, strlen(c->term_msg), false);
        fatia_crilog_close(&c->log);
    }
    c->pid = 0;
    c->exit_code = 128;
    snprintf(c->term_reason, sizeof(c->term_reason), "StartError");
    c->finished_at = fatia_now_real_usec();
    c->st = C_TERMINATED;
    fatia_warn("pod %s/%s: container '%s' did not start: %s", s->ns, s->name, c->name, c->term_msg);
    on_terminated(s, c);
}

/* A tty container's instance: the pty the process runtime is given (openpty here), or the one
 * the runtime made (oci: runc create's console socket); *ret_master: its master. */
static int tty_create(struct shim *s, struct ctr *c, int *ret_master, pid_t *ret_pid)
{
    struct fatia_rt_ctr rc = {.name = c->name,
                              .argv = c->argv,
                              .envp = c->envp,
                              .cwd = c->cwd,
                              .spec = c->spec,
                              .instance = c->restarts};
    struct winsize ws = {.ws_row = 24, .ws_col = 80}; /* until an attach -t sends its size */
    int m = -1, sl = -1, own = -1, r;

    if (openpty(&m, &sl, NULL, NULL, &ws) < 0) {
        r = -errno;
        snprintf(c->term_msg, sizeof(c->term_msg), "cannot make a terminal: %s", fatia_strerror(r));
        return r;
    }
    (void)fcntl(m, F_SETFD, FD_CLOEXEC);
    (void)fcntl(sl, F_SETFD, FD_CLOEXEC);
    {
        struct fatia_rt_stdio io = {
            .in = sl, .out = sl, .err = sl, .tty = true, .ret_master = &own};
        r = s->rt->create(&s->pod, &rc, &io, ret_pid, c->term_msg, sizeof(c->term_msg));
    }
    close(sl);
    if (own >= 0) { /* the runtime's own terminal: ours goes */
        close(m);
        m = own;
        (void)ioctl(m, TIOCSWINSZ, &ws);
    }
    if (r < 0) {
        close(m);
        return r;
    }
    *ret_master = m;
    return 0;
}

/* ---- output and exits ---- */

/* Reads what a pipe holds now. Returns false at end of file (or error). */
static bool pump(struct ctr *c, int fd, struct fatia_linebuf *lb, const char *stream)
{
    char buf[65536];

    for (int i = 0; i < 16; i++) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n > 0) {
            fatia_shim_attach_output(&c->att, stream[3] == 'o' ? 1 : 2, buf, (size_t)n);
            if (c->log.fd >= 0)
                (void)fatia_linebuf_feed(lb, &c->log, stream, fatia_now_real_usec(), buf,
                                         (size_t)n);
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return true;
        return false;
    }
    return true;
}

static void close_output(struct ctr *c)
{
    fatia_usec_t now = fatia_now_real_usec();

    if (c->out_fd >= 0)
        close(c->out_fd);
    if (c->err_fd >= 0)
        close(c->err_fd);
    c->out_fd = c->err_fd = -1;
    if (c->in_fd >= 0)
        close(c->in_fd);
    c->in_fd = -1;
    fatia_shim_attach_hangup(&c->att); /* the instance ended: so do its attaches */
    if (c->log.fd >= 0) {
        (void)fatia_linebuf_flush(&c->out_lb, &c->log, "stdout", now);
        (void)fatia_linebuf_flush(&c->err_lb, &c->log, "stderr", now);
        fatia_crilog_close(&c->log);
    }
}

static bool will_restart(struct shim *s, struct ctr *c)
{
    if (s->terminating || s->init_failed)
        return false;
    if (c->init)
        return c->exit_code != 0 && s->policy != P_NEVER;
    switch (s->policy) {
    case P_ALWAYS:
        return true;
    case P_ON_FAILURE:
        return c->exit_code != 0;
    case P_NEVER:
        return false;
    }
    return false;
}

static void start_next(struct shim *s);

/* After an instance terminated (exit or StartError): restart it, move on, or leave it. */
static void on_terminated(struct shim *s, struct ctr *c)
{
    if (will_restart(s, c)) {
        fatia_usec_t ran = mono() - c->started_mono, delay;
        int64_t max_ms = s->backoff_max_ms;

        if (ran >= 2 * max_ms * FATIA_USEC_PER_MSEC)
            c->backoff_steps = 0;
        if (c->backoff_steps == 0) {
            delay = 0;
        } else {
            int64_t ms = s->backoff_init_ms;
            for (unsigned i = 1; i < c->backoff_steps && ms < max_ms; i++)
                ms *= 2;
            delay = FATIA_MIN(ms, max_ms) * FATIA_USEC_PER_MSEC;
        }
        c->backoff_steps++;
        /* the terminated instance becomes lastState; the container waits to restart */
        json_decref(c->last_state);
        c->last_state = state_json(s, c);
        if (delay == 0) {
            start_ctr(s, c);
            return;
        }
        c->st = C_WAITING;
        snprintf(c->wait_reason, sizeof(c->wait_reason), "CrashLoopBackOff");
        snprintf(c->wait_msg, sizeof(c->wait_msg),
                 "back-off %" PRId64 "s restarting failed container=%s pod=%s_%s(%s)",
                 (int64_t)(delay / FATIA_USEC_PER_SEC), c->name, s->name, s->ns, s->uid);
        c->restart_at = mono() + delay;
        (void)write_status(s, false);
        return;
    }
    if (c->init) {
        if (c->exit_code == 0) {
            s->init_next++;
            (void)write_status(s, false);
            start_next(s);
        } else if (!s->terminating) {
            s->init_failed = true;
            (void)write_status(s, false);
        }
        return;
    }
    (void)write_status(s, false);
}

static void on_exit_status(struct shim *s, struct ctr *c, int status)
{
    c->finished_at = fatia_now_real_usec();
    close_output(c);
    fatia_shim_probes_stop(&c->probes);
    c->probe_kill_at = 0;
    c->pid = 0;
    if (WIFEXITED(status)) {
        c->exit_code = WEXITSTATUS(status);
        c->sig = 0;
    } else {
        c->sig = WTERMSIG(status);
        c->exit_code = 128 + c->sig;
    }
    if (c->exit_code == 0)
        snprintf(c->term_reason, sizeof(c->term_reason), "Completed");
    else if (c->sig == SIGKILL && read_oom_kills(s->cgroup) > c->oom_before)
        snprintf(c->term_reason, sizeof(c->term_reason), "OOMKilled");
    else
        snprintf(c->term_reason, sizeof(c->term_reason), "Error");
    c->st = C_TERMINATED;
    fatia_info("pod %s/%s: container '%s' exited with %d (%s)", s->ns, s->name, c->name,
               c->exit_code, c->term_reason);
    on_terminated(s, c);
}

static void ctr_cleanup(struct shim *s, struct ctr *c)
{
    struct fatia_rt_ctr rc = {.name = c->name,
                              .argv = c->argv,
                              .envp = c->envp,
                              .cwd = c->cwd,
                              .spec = c->spec,
                              .instance = c->restarts};

    s->rt->cleanup(&s->pod, &rc);
}

/* Reads a pipe to its current end, then the exit: every line the process wrote is in its log
 * before the status says it terminated. */
static void reap(struct shim *s)
{
    for (size_t i = 0; i < s->n_ctrs; i++) {
        struct ctr *c = &s->ctrs[i];
        int status;
        pid_t r;

        if (c->st != C_RUNNING || c->pid <= 0)
            continue;
        r = waitpid(c->pid, &status, WNOHANG);
        if (r != c->pid)
            continue;
        if (c->out_fd >= 0)
            (void)pump(c, c->out_fd, &c->out_lb, "stdout");
        if (c->err_fd >= 0)
            (void)pump(c, c->err_fd, &c->err_lb, "stderr");
        ctr_cleanup(s, c);
        on_exit_status(s, c, status);
    }
    for (size_t i = 0; i < s->n_ctrs; i++) {
        if (fatia_shim_probes_reap(&s->ctrs[i].probes))
            (void)write_status(s, false);
    }
}

/* Runs the probes due, and kills an instance whose liveness or startup probe failed (SIGTERM,
 * SIGKILL after the grace period: kubelet's killContainer); its exit then goes through the
 * restart policy as any other. Lowers *next to the next probe timer. */
static void probe_tick(struct shim *s, fatia_usec_t now, fatia_usec_t *next)
{
    const char *host = s->pod.ip[0] ? s->pod.ip : "127.0.0.1";

    for (size_t i = s->n_init; i < s->n_ctrs; i++) {
        struct ctr *c = &s->ctrs[i];
        struct fatia_rt_ctr rc = {.name = c->name,
                                  .argv = c->argv,
                                  .envp = c->envp,
                                  .cwd = c->cwd,
                                  .spec = c->spec,
                                  .instance = c->restarts};
        enum fatia_agent_probe_kind k;
        if (c->st != C_RUNNING || !fatia_shim_probes_any(&c->probes))
            continue;
        if (c->probe_kill_at) {
            if (now >= c->probe_kill_at) {
                (void)s->rt->kill(&s->pod, &rc, c->pid, SIGKILL);
                c->probe_kill_at = INT64_MAX; /* sent; wait for the exit */
            } else {
                *next = FATIA_MIN(*next, c->probe_kill_at);
            }
            continue;
        }
        if (!s->terminating &&
            fatia_shim_probes_tick(&c->probes, &s->pod, s->rt, &rc, host, now, next))
            (void)write_status(s, false);
        k = fatia_agent_probes_failed(&c->probes.ps);
        if (k == FATIA_PROBE_KINDS || s->terminating)
            continue;
        fatia_agent_probes_hold(&c->probes.ps, k);
        snprintf(c->probe_killed, sizeof(c->probe_killed), "%s", fatia_agent_probe_kind_name(k));
        fatia_info("pod %s/%s: container '%s' failed its %s probe (%s), killing it", s->ns, s->name,
                   c->name, fatia_agent_probe_field(k), c->probes.msg[k]);
        {
            /* the probe's terminationGracePeriodSeconds, else the pod's (kubelet's rule) */
            int64_t grace = s->grace_s;
            (void)fatia_json_int(c->probes.spec[k], "terminationGracePeriodSeconds", &grace);
            (void)s->rt->kill(&s->pod, &rc, c->pid, grace > 0 ? SIGTERM : SIGKILL);
            c->probe_kill_at =
                grace > 0 ? now + (fatia_usec_t)grace * FATIA_USEC_PER_SEC : INT64_MAX;
        }
        *next = FATIA_MIN(*next, c->probe_kill_at);
        (void)write_status(s, false);
    }
}

/* Starts what should run now: the next init container, or every app container not started. */
static void start_next(struct shim *s)
{
    if (s->terminating || s->init_failed)
        return;
    if (s->init_next < s->n_init) {
        struct ctr *c = &s->ctrs[s->init_next];
        if (c->st == C_WAITING && !c->ever_started)
            start_ctr(s, c);
        return;
    }
    for (size_t i = s->n_init; i < s->n_ctrs; i++) {
        struct ctr *c = &s->ctrs[i];
        if (c->st == C_WAITING && !c->ever_started) {
            snprintf(c->wait_reason, sizeof(c->wait_reason), "ContainerCreating");
            start_ctr(s, c);
        }
    }
}

/* ---- termination ---- */

/* Every process of the pod (the runtime knows where they are). */
static void kill_group(struct shim *s, int sig)
{
    for (size_t i = 0; i < s->n_ctrs; i++) {
        struct ctr *c = &s->ctrs[i];
        struct fatia_rt_ctr rc = {.name = c->name, .spec = c->spec, .instance = c->restarts};
        if (c->st == C_RUNNING && c->pid > 0)
            (void)s->rt->kill(&s->pod, &rc, c->pid, sig);
    }
    (void)s->rt->kill(&s->pod, NULL, 0, sig);
}

static void read_stop(struct shim *s, int64_t *grace)
{
    char path[4200];
    json_error_t je;
    json_t *j;
    int64_t g;
    const char *v;

    snprintf(path, sizeof(path), "%s/stop.json", s->dir);
    j = json_load_file(path, 0, &je);
    if (!j)
        return;
    if (fatia_json_int(j, "gracePeriodSeconds", &g) && g >= 0)
        *grace = g;
    if ((v = fatia_json_str(j, "reason")) && !s->reason[0])
        snprintf(s->reason, sizeof(s->reason), "%s", v);
    if ((v = fatia_json_str(j, "message")) && !s->message[0])
        snprintf(s->message, sizeof(s->message), "%s", v);
    json_decref(j);
}

static void terminate(struct shim *s, int64_t grace)
{
    fatia_usec_t at = mono() + grace * FATIA_USEC_PER_SEC;

    if (s->terminating) {
        if (at < s->kill_at)
            s->kill_at = at;
        return;
    }
    s->terminating = true;
    s->kill_at = at;
    for (size_t i = 0; i < s->n_ctrs; i++)
        s->ctrs[i].restart_at = 0;
    fatia_info("pod %s/%s: stopping (grace period %" PRId64 " s%s%s)", s->ns, s->name, grace,
               s->reason[0] ? ", " : "", s->reason);
    kill_group(s, grace > 0 ? SIGTERM : SIGKILL);
    if (grace <= 0)
        s->killed = true;
    (void)write_status(s, false);
}

static bool anything_running(struct shim *s)
{
    for (size_t i = 0; i < s->n_ctrs; i++) {
        if (s->ctrs[i].st == C_RUNNING)
            return true;
    }
    return false;
}

static bool anything_pending(struct shim *s)
{
    if (s->terminating || s->init_failed)
        return false;
    for (size_t i = 0; i < s->n_ctrs; i++) {
        struct ctr *c = &s->ctrs[i];
        if (c->restart_at)
            return true;
        /* app containers wait for the init containers */
        if (c->st == C_WAITING && !c->ever_started && (c->init || s->init_next >= s->n_init))
            return true;
    }
    return false;
}

static void finish(struct shim *s)
{
    s->rt->sandbox_stop(&s->pod);
    (void)write_status(s, true);
    fatia_info("pod %s/%s: every process is gone (%s)", s->ns, s->name, pod_phase(s));
}

/* ---- spec ---- */

static char **str_array(json_t *a, bool allow_empty)
{
    size_t n = json_array_size(a);
    char **v;

    if (!json_is_array(a) || (!allow_empty && n == 0))
        return NULL;
    v = fatia_calloc(n + 1, sizeof(char *));
    if (!v)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const char *x = json_string_value(json_array_get(a, i));
        if (!x) {
            fatia_free(v);
            return NULL;
        }
        v[i] = (char *)x;
    }
    return v;
}

static int load_ctrs(struct shim *s, json_t *arr, bool init, size_t *at)
{
    size_t i;
    json_t *c;

    json_array_foreach(arr, i, c)
    {
        struct ctr *x = &s->ctrs[(*at)++];
        x->name = fatia_json_str(c, "name");
        x->argv = str_array(json_object_get(c, "argv"), false);
        x->envp = str_array(json_object_get(c, "env"), true);
        x->cwd = fatia_json_str(c, "workingDir");
        x->spec = c;
        x->init = init;
        x->st = C_WAITING;
        x->out_fd = x->err_fd = x->in_fd = -1;
        x->att.lsock = -1;
        x->want_stdin = json_is_true(json_object_get(c, "stdin"));
        x->stdin_once = json_is_true(json_object_get(c, "stdinOnce"));
        x->tty = json_is_true(json_object_get(c, "tty"));
        x->log.fd = -1;
        snprintf(x->wait_reason, sizeof(x->wait_reason), "%s",
                 init ? "PodInitializing" : "ContainerCreating");
        if (!x->name || !x->argv || !x->envp || !fatia_shim_probes_load(&x->probes, c))
            return -EINVAL;
    }
    return 0;
}

static int load_spec(struct shim *s)
{
    char path[4200];
    json_error_t je;
    json_t *j, *inits, *apps, *user;
    const char *rp, *st;
    int64_t v;
    size_t at = 0;

    snprintf(path, sizeof(path), "%s/spec.json", s->dir);
    j = json_load_file(path, 0, &je);
    if (!j) {
        fatia_error("'%s': %s (line %d)", path, je.text, je.line);
        return -FATIA_E_PARSE;
    }
    s->spec = j;
    if (!fatia_json_int(j, "version", &v) || v != FATIA_SHIM_SPEC_VERSION) {
        fatia_error("'%s': unknown version", path);
        return -FATIA_E_PARSE;
    }
    s->ns = fatia_json_str(j, "namespace");
    s->name = fatia_json_str(j, "name");
    s->uid = fatia_json_str(j, "uid");
    s->cgroup = fatia_json_str(j, "cgroup");
    s->rt = fatia_runtime_get(fatia_json_str(j, "runtime"));
    if (!s->rt) {
        fatia_error("'%s': unknown runtime '%s'", path, fatia_json_str(j, "runtime"));
        return -FATIA_E_PARSE;
    }
    s->log_dir = fatia_json_str(j, "logDir");
    s->status_path = fatia_json_str(j, "statusFile");
    st = fatia_json_str(j, "startTime");
    if (!s->ns || !s->name || !s->uid || !s->log_dir || !s->status_path || !st ||
        fatia_time_parse_rfc3339(st, &s->start_time) < 0) {
        fatia_error("'%s': namespace, name, uid, logDir, statusFile and startTime are required",
                    path);
        return -FATIA_E_PARSE;
    }
    user = json_object_get(j, "user");
    if (user) {
        int64_t u, g;
        if (!fatia_json_int(user, "uid", &u) || !fatia_json_int(user, "gid", &g) || u < 0 ||
            g < 0) {
            fatia_error("'%s': user: uid and gid are required", path);
            return -FATIA_E_PARSE;
        }
        s->pod.switch_user = true;
        s->pod.uid_run = (uid_t)u;
        s->pod.gid_run = (gid_t)g;
    }
    rp = fatia_json_str(j, "restartPolicy");
    s->policy = !rp || !strcmp(rp, "Always") ? P_ALWAYS
                : !strcmp(rp, "OnFailure")   ? P_ON_FAILURE
                                             : P_NEVER;
    s->grace_s = fatia_json_int(j, "terminationGracePeriodSeconds", &v) && v >= 0 ? v : 30;
    s->deadline_s = fatia_json_int(j, "activeDeadlineSeconds", &v) && v > 0 ? v : -1;
    s->backoff_init_ms = fatia_json_int(j, "backoffInitialMs", &v) && v > 0 ? v : 10000;
    s->backoff_max_ms = fatia_json_int(j, "backoffMaxMs", &v) && v > 0 ? v : 300000;
    s->log_max = fatia_json_int(j, "logMaxBytes", &v) && v > 0 ? (uint64_t)v : 10u << 20;
    s->storage_limits = json_array_size(json_object_get(j, "emptyDirLimits"))
                            ? json_object_get(j, "emptyDirLimits")
                            : NULL;
    s->storage_every_ms = fatia_json_int(j, "storageCheckMs", &v) && v > 0 ? v : 10000;
    inits = json_object_get(j, "initContainers");
    apps = json_object_get(j, "containers");
    s->n_init = json_array_size(inits);
    s->n_ctrs = s->n_init + json_array_size(apps);
    if (json_array_size(apps) == 0) {
        fatia_error("'%s': no containers", path);
        return -FATIA_E_PARSE;
    }
    s->ctrs = fatia_calloc(s->n_ctrs, sizeof(*s->ctrs));
    if (!s->ctrs)
        return -ENOMEM;
    if (load_ctrs(s, inits, true, &at) < 0 || load_ctrs(s, apps, false, &at) < 0) {
        fatia_error("'%s': every container needs a name, a non-empty argv and env", path);
        return -FATIA_E_PARSE;
    }
    return 0;
}

/* ---- main ---- */

static int setup(struct shim *s)
{
    char path[4200], dir[4200];
    sigset_t set;
    char *slash;
    int r;

    snprintf(path, sizeof(path), "%s/lock", s->dir);
    s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (s->lock_fd < 0)
        return fatia_log_errno(FATIA_LOG_ERROR, -errno, "cannot open '%s'", path);
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        fatia_error("'%s' is locked: another fatia-shim runs this pod, exiting", path);
        return -EBUSY;
    }
    r = fatia_shim_dirwatch_open(&s->dw, s->dir);
    if (r < 0)
        return r;
    r = load_spec(s);
    if (r < 0)
        return r;
    snprintf(dir, sizeof(dir), "%s", s->status_path);
    slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        s->status_dir_fd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    if (access(s->status_path, F_OK) == 0) {
        /* Only a dead shim leaves a status file behind: the agent never starts a second one
         * for a pod, so a status file here means this pod ran before. Never run it twice. */
        fatia_error("'%s' exists: this pod was started before, refusing to start it again",
                    s->status_path);
        return -EEXIST;
    }
    s->null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (s->null_fd < 0)
        return -errno;
    (void)fatia_proc_boot_id(s->boot_id, sizeof(s->boot_id));
    s->sid = getsid(0);
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    s->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (s->sfd < 0)
        return -errno;
    s->pod = (struct fatia_rt_pod){.ns = s->ns,
                                   .name = s->name,
                                   .uid = s->uid,
                                   .dir = s->dir,
                                   .cgroup = s->cgroup,
                                   .switch_user = s->pod.switch_user,
                                   .uid_run = s->pod.uid_run,
                                   .gid_run = s->pod.gid_run,
                                   .spec = s->spec,
                                   .null_fd = s->null_fd};
    {
        char why[1024] = "";
        r = s->rt->sandbox_start(&s->pod, why, sizeof(why));
        if (r < 0) {
            fatia_error("pod %s/%s: cannot start the sandbox (%s runtime): %s", s->ns, s->name,
                        s->rt->name, why);
            /* said in the status (kubelet's reason), so the agent reports it rather than a
             * lost supervisor; nothing of the pod ran */
            snprintf(s->reason, sizeof(s->reason), "FailedCreatePodSandBox");
            snprintf(s->message, sizeof(s->message), "%.*s", (int)sizeof(s->message) - 1, why);
            s->init_failed = true;
            (void)write_status(s, true);
            return r;
        }
    }
    return write_status(s, false);
}

static void handle_signals(struct shim *s)
{
    struct signalfd_siginfo si;

    while (read(s->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGCHLD) {
            reap(s);
        } else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
            int64_t grace = s->grace_s;
            read_stop(s, &grace);
            terminate(s, grace);
        }
    }
}

/* Measures the pod's disk emptyDirs with a sizeLimit (shim_storage.h) and evicts the pod, as
 * kubelet does, with no grace period, when one holds more. Returns true when it did. */
static bool check_storage(struct shim *s, fatia_usec_t now)
{
    const json_t *l;
    size_t i;

    s->storage_check_at = now + s->storage_every_ms * FATIA_USEC_PER_MSEC;
    json_array_foreach(s->storage_limits, i, l)
    {
        struct fatia_shim_storage_use use;
        const char *path = fatia_json_str(l, "path"), *vol = fatia_json_str(l, "volume");
        const char *text = fatia_json_str(l, "sizeLimit");
        int64_t limit;
        char msg[sizeof(s->message)];

        if (!path || !vol || !text || !fatia_json_int(l, "bytes", &limit) || limit <= 0 ||
            fatia_shim_storage_measure(path, &use) < 0 ||
            !fatia_shim_storage_over(&use, (uint64_t)limit, vol, text, msg, sizeof(msg)))
            continue;
        fatia_warn("pod %s/%s: evicted: %s (%llu bytes in %llu entries)", s->ns, s->name, msg,
                   (unsigned long long)use.bytes, (unsigned long long)use.entries);
        snprintf(s->reason, sizeof(s->reason), "Evicted");
        snprintf(s->message, sizeof(s->message), "%s", msg);
        terminate(s, 0);
        return true;
    }
    return false;
}

/* Checks POD_DIR (shim_dirwatch.c) and, once it is gone, stops the pod as a SIGTERM would, but
 * with no grace period: its spec, logs and status went with the directory, nobody can adopt or
 * stop it any more, and what its containers would save on a SIGTERM (their emptyDirs) is gone
 * too. Returns true when the pod was just told to stop. */
static bool check_dir(struct shim *s, fatia_usec_t now)
{
    const char *why = "";
    enum fatia_shim_dir_verdict v;

    if (s->dir_gone)
        return false;
    v = fatia_shim_dirwatch_check(&s->dw, &why);
    if (v == FATIA_SHIM_DIR_UNKNOWN) {
        s->dir_check_at = now + FATIA_SHIM_DIRWATCH_RETRY_MS * FATIA_USEC_PER_MSEC;
        return false;
    }
    s->dir_check_at = now + fatia_shim_dirwatch_period_s(&s->dw) * FATIA_USEC_PER_SEC;
    if (v == FATIA_SHIM_DIR_HERE)
        return false;
    s->dir_gone = true;
    /* the log file may be gone with the directory: stderr still takes the line */
    fatia_warn("pod %s/%s: the pod directory '%s' was removed (%s): stopping the pod and exiting",
               s->ns, s->name, s->dir, why);
    terminate(s, 0);
    return true;
}

static void run(struct shim *s)
{
    struct pollfd *pfd = fatia_xcalloc(2 + (3 + FATIA_SHIM_ATTACH_MAX) * s->n_ctrs, sizeof(*pfd));

    start_next(s);
    for (;;) {
        fatia_usec_t now = mono(), next = now + 60 * FATIA_USEC_PER_SEC;
        size_t n = 0, first;
        int timeout, r;

        reap(s);
        if (!anything_running(s) && !anything_pending(s))
            break;
        if (!s->dir_gone && s->dir_check_at <= now && check_dir(s, now))
            continue;
        if (!s->dir_gone)
            next = FATIA_MIN(next, s->dir_check_at);
        /* timers */
        for (size_t i = 0; i < s->n_ctrs; i++) {
            struct ctr *c = &s->ctrs[i];
            if (c->restart_at && c->st == C_WAITING) {
                if (c->restart_at <= now)
                    start_ctr(s, c);
                else
                    next = FATIA_MIN(next, c->restart_at);
            }
        }
        if (s->storage_limits && !s->terminating) {
            if (s->storage_check_at <= now && check_storage(s, now))
                continue;
            next = FATIA_MIN(next, s->storage_check_at);
        }
        if (s->deadline_s > 0 && !s->terminating) {
            fatia_usec_t real = fatia_now_real_usec();
            fatia_usec_t end = s->start_time + s->deadline_s * FATIA_USEC_PER_SEC;
            if (real >= end) {
                s->deadline_exceeded = true;
                snprintf(s->reason, sizeof(s->reason), "DeadlineExceeded");
                snprintf(s->message, sizeof(s->message),
                         "Pod was active on the node longer than the specified deadline");
                terminate(s, s->grace_s);
                continue;
            }
            next = FATIA_MIN(next, now + (end - real));
        }
        probe_tick(s, now, &next);
        if (s->terminating && !s->killed) {
            if (s->kill_at <= now) {
                fatia_info("pod %s/%s: grace period over, killing", s->ns, s->name);
                kill_group(s, SIGKILL);
                s->killed = true;
            } else {
                next = FATIA_MIN(next, s->kill_at);
            }
        }
        pfd[n++] = (struct pollfd){.fd = s->sfd, .events = POLLIN};
        if (s->dw.ino_fd >= 0 && !s->dir_gone)
            pfd[n++] = (struct pollfd){.fd = s->dw.ino_fd, .events = POLLIN};
        first = n;
        for (size_t i = 0; i < s->n_ctrs; i++) {
            struct ctr *c = &s->ctrs[i];
            if (c->out_fd >= 0)
                pfd[n++] = (struct pollfd){.fd = c->out_fd, .events = POLLIN};
            if (c->err_fd >= 0)
                pfd[n++] = (struct pollfd){.fd = c->err_fd, .events = POLLIN};
            n += fatia_shim_attach_pollfds(&c->att, pfd + n);
        }
        timeout = (int)((next - now + 999) / 1000);
        r = poll(pfd, (nfds_t)n, timeout < 0 ? 0 : timeout);
        if (r < 0 && errno != EINTR)
            break;
        if (r <= 0)
            continue;
        if (pfd[0].revents)
            handle_signals(s);
        if (first == 2 && pfd[1].revents && fatia_shim_dirwatch_events(&s->dw))
            s->dir_check_at = 0; /* the event only says when to look */
        for (size_t i = 0; i < s->n_ctrs; i++) {
            struct ctr *c = &s->ctrs[i];
            for (size_t k = first; k < n; k++) {
                if (!pfd[k].revents)
                    continue;
                if (fatia_shim_attach_handle(&c->att, pfd[k].fd, pfd[k].revents, &c->in_fd,
                                             c->stdin_once && !c->tty, c->tty ? c->out_fd : -1))
                    continue;
                if (pfd[k].fd == c->out_fd && c->out_fd >= 0 &&
                    !pump(c, c->out_fd, &c->out_lb, "stdout")) {
                    close(c->out_fd);
                    c->out_fd = -1;
                } else if (pfd[k].fd == c->err_fd && c->err_fd >= 0 &&
                           !pump(c, c->err_fd, &c->err_lb, "stderr")) {
                    close(c->err_fd);
                    c->err_fd = -1;
                }
            }
        }
    }
    fatia_free(pfd);
}

static void shim_free(struct shim *s)
{
    for (size_t i = 0; s->ctrs && i < s->n_ctrs; i++) {
        fatia_shim_probes_stop(&s->ctrs[i].probes);
        fatia_free(s->ctrs[i].argv);
        fatia_free(s->ctrs[i].envp);
        json_decref(s->ctrs[i].last_state);
    }
    fatia_free(s->ctrs);
    json_decref(s->spec);
    fatia_shim_dirwatch_close(&s->dw);
}

/* `fatia-shim exec POD_DIR CONTAINER ARGV...`: the runtime's exec entry (runtime.h) with this
 * process's stdio, for the admin and the tests (kubectl exec goes through fatiad). */
static int exec_main(int argc, char **argv)
{
    struct fatia_rt_stdio io = {.in = 0, .out = 1, .err = 2, .tty = false};
    char why[1024] = "";
    pid_t pid;
    int status, r;

    if (argc < 5 || argv[2][0] != '/') {
        fprintf(stderr, "usage: fatia-shim exec POD_DIR CONTAINER COMMAND [ARG...]\n");
        return 2;
    }
    r = fatia_runtime_exec(argv[2], argv[3], argv + 4, &io, &pid, why, sizeof(why));
    if (r < 0) {
        fprintf(stderr, "fatia-shim exec: %s\n", why[0] ? why : fatia_strerror(r));
        return 126;
    }
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return 126;
    }
    return fatia_runtime_exit_code(status);
}

int fatia_shim_main(int argc, char **argv)
{
    struct shim s = {.sfd = -1,
                     .lock_fd = -1,
                     .null_fd = -1,
                     .status_dir_fd = -1,
                     .dw = {.dir_fd = -1, .ino_fd = -1}};
    int r;

    if (argc >= 2 && !strcmp(argv[1], "exec"))
        return exec_main(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "attach"))
        return fatia_shim_attach_relay_main(argc, argv);

    fatia_log_set_ident("fatia-shim");
    fatia_log_set_timestamps(true);
    fatia_log_set_level(FATIA_LOG_INFO);
    if (argc != 2 || argv[1][0] != '/') {
        fprintf(stderr, "usage: fatia-shim POD_DIR (absolute): started by fatiad's node agent\n");
        return 2;
    }
    snprintf(s.dir, sizeof(s.dir), "%s", argv[1]);
    r = setup(&s);
    if (r < 0) {
        if (s.pod.sandbox_pid > 0 && s.rt)
            s.rt->sandbox_stop(&s.pod);
        shim_free(&s);
        return r == -EBUSY || r == -EEXIST ? 3 : 1;
    }
    run(&s);
    finish(&s);
    shim_free(&s);
    return 0;
}

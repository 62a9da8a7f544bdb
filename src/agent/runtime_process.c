/*
 * agent/runtime_process.c: the process runtime (runtime.h): containers as host processes.
 *
 * Model. The sandbox is fatia-pause, which leads the pod's process group P and is never reaped
 * before sandbox_stop, so P exists (and its id is not reused) while the pod lives and kill(-P)
 * reaches exactly the pod's processes. An instance is a fork of the shim that joins P, the pod's
 * cgroup and its uid, sets no_new_privs, changes to its working directory and execs argv with the
 * container's PATH; a step that fails is reported through a close-on-exec pipe (so the parent
 * knows exec happened when the pipe closes empty) and becomes the message of a StartError.
 *
 * Invariants: the pause process holds no descriptor (above all not the shim's lock, whose holder
 * marks a live shim); every instance and exec shares P, so signals to the group reach them all.
 *
 * Rejected: per-container process groups (kill(-P) of the whole pod on deletion is the only
 * signal kubelet's semantics need here, and one group keeps a container's strays reachable).
 */
#include "base/compat.h"

#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <unistd.h>

#include "agent/proc.h"
#include "agent/runtime.h"
#include "agent/vgpu_ns.h"
#include "base/error.h"
#include "base/json.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* In the child, before exec: which step failed and how. */
struct child_err {
    int step;
    int err;
};

enum {
    STEP_PGID = 1,
    STEP_CGROUP,
    STEP_STDIO,
    STEP_USER,
    STEP_NNP,
    STEP_CHDIR,
    STEP_EXEC,
    STEP_NOTFOUND,
    STEP_TTY,
    STEP_VGPU,
    STEP_MPS,
};

FATIA_NORETURN static void child_fail(int fd, int step, int err)
{
    struct child_err ce = {step, err};

    if (fd >= 0)
        (void)!write(fd, &ce, sizeof(ce));
    _exit(127);
}

static void child_signals(void)
{
    sigset_t none;

    for (int sig = 1; sig < NSIG; sig++) {
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    }
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

static int join_cgroup(const char *cgroup)
{
    char path[4200];
    int fd, r = 0;

    if (!cgroup)
        return 0;
    snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
    fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (write(fd, "0", 1) < 0)
        r = -errno;
    close(fd);
    return r;
}

static int drop_privileges(const struct fatia_rt_pod *pod)
{
    if (!pod->switch_user)
        return 0;
    if (setgroups(0, NULL) < 0 || setgid(pod->gid_run) < 0 || setuid(pod->uid_run) < 0)
        return -errno;
    return 0;
}

static const char *env_get(char **envp, const char *name)
{
    size_t n = strlen(name);

    for (char **e = envp; e && *e; e++) {
        if (!strncmp(*e, name, n) && (*e)[n] == '=')
            return *e + n + 1;
    }
    return NULL;
}

/* execvp's search, with the container's PATH rather than the shim's. */
static int exec_search(const char *file, char *const *argv, char **envp)
{
    const char *path = env_get(envp, "PATH");
    char buf[4096];
    int err = ENOENT;
    bool eacces = false;

    if (strchr(file, '/')) {
        execve(file, argv, envp);
        return -errno;
    }
    if (!path)
        path = DEFAULT_PATH;
    for (const char *p = path;;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        int n = len ? snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, p, file)
                    : snprintf(buf, sizeof(buf), "%s", file);
        if (n > 0 && (size_t)n < sizeof(buf)) {
            execve(buf, argv, envp);
            if (errno == EACCES)
                eacces = true;
            else if (errno != ENOENT && errno != ENOTDIR)
                err = errno;
        }
        if (!colon)
            break;
        p = colon + 1;
    }
    if (eacces)
        err = EACCES;
    return -(err == ENOENT ? 0 : err); /* 0: not found anywhere */
}

static void describe(const struct fatia_rt_ctr *c, char *const *argv, const struct child_err *ce,
                     char *why, size_t why_n)
{
    const char *e = fatia_strerror(-ce->err);

    switch (ce->step) {
    case STEP_NOTFOUND:
        snprintf(why, why_n, "exec: \"%s\": executable file not found in $PATH", argv[0]);
        break;
    case STEP_EXEC:
        snprintf(why, why_n, "exec: \"%s\": %s", argv[0], e);
        break;
    case STEP_CHDIR:
        snprintf(why, why_n, "chdir to workingDir \"%s\" failed: %s", c->cwd ? c->cwd : "", e);
        break;
    case STEP_USER:
        snprintf(why, why_n, "cannot switch to the pod's user: %s", e);
        break;
    case STEP_CGROUP:
        snprintf(why, why_n, "cannot join the pod's cgroup: %s", e);
        break;
    case STEP_VGPU:
        snprintf(why, why_n, "cannot lay the memory cap's read-only /etc over the host's: %s", e);
        break;
    case STEP_MPS:
        snprintf(why, why_n, "cannot bind its MPS daemon's /dev/shm over the host's: %s", e);
        break;
    case STEP_TTY:
        snprintf(why, why_n, "cannot make the terminal the controlling one: %s", e);
        break;
    default:
        snprintf(why, why_n, "cannot start the process (step %d): %s", ce->step, e);
        break;
    }
}

static int proc_sandbox_start(struct fatia_rt_pod *pod, char *why, size_t why_n)
{
    pid_t pid = fork();

    if (pid < 0) {
        snprintf(why, why_n, "cannot fork: %s", fatia_strerror(-errno));
        return -errno;
    }
    if (pid == 0) {
        child_signals();
        (void)setpgid(0, 0);
        (void)join_cgroup(pod->cgroup);
        /* keep nothing open: above all not the lock, whose holder marks a live shim */
        for (int fd = 0; fd < 1024; fd++)
            close(fd);
        (void)drop_privileges(pod);
        (void)prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        (void)prctl(PR_SET_NAME, "fatia-pause", 0, 0, 0);
        for (;;)
            pause();
    }
    (void)setpgid(pid, pid);
    pod->sandbox_pid = pid;
    (void)fatia_proc_start_time(pid, &pod->sandbox_start);
    return 0;
}

/* Forks argv into the pod: P, cgroup, uid, no_new_privs, cwd. 0 with *ret_pid, or the failed
 * step described in why. */
static int spawn_in_pod(struct fatia_rt_pod *pod, const struct fatia_rt_ctr *c, char *const *argv,
                        const struct fatia_rt_stdio *io, bool join_group, pid_t *ret_pid, char *why,
                        size_t why_n)
{
    const char *layer = fatia_json_str(c->spec, "vgpuLayer");
    const char *mps_shm = fatia_json_str(c->spec, "mpsShm");
    struct child_err ce = {0};
    int ep[2];
    pid_t pid;
    ssize_t n;

    if (pipe2(ep, O_CLOEXEC) < 0) {
        ce = (struct child_err){STEP_STDIO, -errno};
        describe(c, argv, &ce, why, why_n);
        return ce.err;
    }
    pid = fork();
    if (pid < 0) {
        ce = (struct child_err){STEP_STDIO, -errno};
        close(ep[0]);
        close(ep[1]);
        describe(c, argv, &ce, why, why_n);
        return ce.err;
    }
    if (pid == 0) {
        int rc;

        child_signals();
        if (io->tty || !join_group) {
            /* a session of its own (still in the pod's cgroup and uid), with the terminal */
            if (setsid() < 0 || (io->tty && ioctl(io->in, TIOCSCTTY, 0) < 0))
                child_fail(ep[1], STEP_TTY, -errno);
        } else if (setpgid(0, pod->sandbox_pid) < 0) {
            child_fail(ep[1], STEP_PGID, -errno);
        }
        if ((rc = join_cgroup(pod->cgroup)) < 0)
            child_fail(ep[1], STEP_CGROUP, rc);
        if (dup2(io->in, 0) < 0 || dup2(io->out, 1) < 0 || dup2(io->err, 2) < 0)
            child_fail(ep[1], STEP_STDIO, -errno);
        /* a capped slice: the read-only /etc with its ld.so.preload and vgpu.conf (vgpu_ns.h),
         * for the container's processes and for every exec into it */
        if (layer && (rc = fatia_agent_vgpu_ns_enter(layer)) < 0)
            child_fail(ep[1], STEP_VGPU, rc);
        /* an MPS share of a daemon with its own /dev/shm (mps.h): that one, not the host's */
        if (mps_shm && (rc = fatia_agent_mps_shm_enter(mps_shm, layer != NULL)) < 0)
            child_fail(ep[1], STEP_MPS, rc);
        if ((rc = drop_privileges(pod)) < 0)
            child_fail(ep[1], STEP_USER, rc);
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
            child_fail(ep[1], STEP_NNP, -errno);
        if (c->cwd && c->cwd[0] && chdir(c->cwd) < 0)
            child_fail(ep[1], STEP_CHDIR, -errno);
        rc = exec_search(argv[0], argv, c->envp);
        child_fail(ep[1], rc == 0 ? STEP_NOTFOUND : STEP_EXEC, rc);
    }
    if (!io->tty && join_group)
        (void)setpgid(pid, pod->sandbox_pid);
    close(ep[1]);
    do {
        n = read(ep[0], &ce, sizeof(ce));
    } while (n < 0 && errno == EINTR);
    close(ep[0]);
    if (n == (ssize_t)sizeof(ce)) {
        int status;
        (void)waitpid(pid, &status, 0);
        describe(c, argv, &ce, why, why_n);
        return ce.err < 0 ? ce.err : -ENOENT;
    }
    *ret_pid = pid;
    return 0;
}

static int proc_create(struct fatia_rt_pod *pod, const struct fatia_rt_ctr *c,
                       const struct fatia_rt_stdio *io, pid_t *ret_pid, char *why, size_t why_n)
{
    return spawn_in_pod(pod, c, c->argv, io, true, ret_pid, why, why_n);
}

static int proc_kill(struct fatia_rt_pod *pod, const struct fatia_rt_ctr *c, pid_t pid, int sig)
{
    if (c && pid > 0)
        return kill(pid, sig) < 0 ? -errno : 0;
    if (pod->sandbox_pid > 0)
        return kill(-pod->sandbox_pid, sig) < 0 ? -errno : 0;
    return 0;
}

static void proc_cleanup(struct fatia_rt_pod *pod, const struct fatia_rt_ctr *c)
{
    (void)pod;
    (void)c;
}

static void proc_sandbox_stop(struct fatia_rt_pod *pod)
{
    char path[4200];
    pid_t sid = getsid(0);
    int status, fd;

    (void)proc_kill(pod, NULL, 0, SIGKILL);
    if (pod->cgroup) {
        snprintf(path, sizeof(path), "%s/cgroup.kill", pod->cgroup);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            (void)!write(fd, "1", 1);
            close(fd);
        }
    }
    if (pod->sandbox_pid > 0)
        (void)waitpid(pod->sandbox_pid, &status, 0);
    /* P may still hold processes that left their parents (they are dying of SIGKILL) */
    for (int i = 0; i < 200 && fatia_proc_group_alive(pod->sandbox_pid, sid, pod->sandbox_start);
         i++) {
        (void)fatia_proc_group_signal(pod->sandbox_pid, sid, pod->sandbox_start, SIGKILL);
        usleep(10000);
    }
}

static int proc_exec(struct fatia_rt_pod *pod, const struct fatia_rt_ctr *c, char *const *argv,
                     const struct fatia_rt_stdio *io, pid_t *ret_pid, char *why, size_t why_n)
{
    if (pod->sandbox_pid <= 0 || !fatia_proc_alive(pod->sandbox_pid, pod->sandbox_start)) {
        snprintf(why, why_n, "pod %s/%s is not running", pod->ns, pod->name);
        return -ENOENT;
    }
    /* the pod's process group is in the shim's session, which exec's caller is not in: the
     * exec'd process gets a session of its own (in the pod's cgroup, which the pod's end
     * kills where cgroup v2 has cgroup.kill) */
    return spawn_in_pod(pod, c, argv, io, false, ret_pid, why, why_n);
}

const struct fatia_runtime fatia_runtime_process = {
    .name = FATIA_RUNTIME_PROCESS,
    .sandbox_start = proc_sandbox_start,
    .create = proc_create,
    .kill = proc_kill,
    .cleanup = proc_cleanup,
    .sandbox_stop = proc_sandbox_stop,
    .exec = proc_exec,
};

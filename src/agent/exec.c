/*
 * agent/exec.c: `kubectl exec` in the process mode: argv run as one more process of a running
 * pod, as its containers are, with the descriptors the API server's stream gives.
 *
 * The process gets what a container process of the pod gets from the shim (spec.json, written
 * by the agent): the container's environment and working directory, the pod's uid and gid (no
 * supplementary groups), no_new_privs, the pod's cgroup (so its memory and GPU slice limits
 * hold, and the pod's deletion kills it with the rest), and the pod's process group (so the
 * shim's kill(-pgid) reaches it) unless it has a TTY, which needs a session of its own
 * (setsid + TIOCSCTTY: kubelet's exec with -t gets its own session too). argv[0] without a slash
 * is looked up in the container's PATH, not fatiad's.
 *
 * Invariants: fatiad is multi-threaded, so the child does only async-signal-safe calls between
 * fork and exec: every string (env, candidate paths, the cgroup file, the not-found message) is
 * made before the fork. The child closes every descriptor above 2 (close_range), so it inherits
 * only the three it is given. Only a pod this agent runs and whose container is running can be
 * entered (-EAGAIN otherwise); the API server authorized the caller (create on pods/exec in the
 * pod's namespace) before calling.
 *
 * A container of the OCI runtime, and a capped slice's process (whose exec must enter the
 * read-only /etc layer of vgpu_ns.h), go through the runtime boundary's exec instead
 * (agent/runtime.h, fatia_runtime_exec: runc exec, or the process runtime's spawn): same inputs
 * (the pod's directory, a container, argv, three descriptors and a tty flag) and the same
 * output (a child pid whose status is argv's).
 */
#include "base/compat.h"

#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/agent_int.h"
#include "agent/podspec.h"
#include "agent/runtime.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "client/plugin.h"

#define EXEC_MAX_PATHS 64

static const json_t *by_name(const json_t *arr, const char *name)
{
    size_t i;
    const json_t *c;

    json_array_foreach(arr, i, c)
    {
        const char *n = fatia_json_str(c, "name");
        if (n && !strcmp(n, name))
            return c;
    }
    return NULL;
}

/* kubectl attach: the shim's relay (`fatia-shim attach POD_DIR CONTAINER [-i] [-t]`,
 * shim_attach.c) with the stream's descriptors as 0, 1 and 2; it ends when the container's
 * output does. Run as the agent (root): the attach socket is root's, in the pod's directory. */
static int attach_relay(struct fatia_agent *a, const char *uid, const char *name,
                        const struct fatia_exec_req *req, int *ret_pid, char *why, size_t why_n)
{
    char dir[1400];
    static char attach_arg[] = "attach", in_arg[] = "-i", tty_arg[] = "-t";
    char *argv[7] = {a->shim, attach_arg, dir, (char *)name, NULL, NULL, NULL};
    static char path_env[] = "PATH=" FATIA_AGENT_DEFAULT_PATH;
    char *envp[] = {path_env, NULL};
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int r;

    snprintf(dir, sizeof(dir), "%s/%s", a->pods_dir, uid);
    if (req->attach_stdin)
        argv[4] = in_arg;
    if (req->tty) /* the stream's pty: the relay makes it its controlling terminal */
        argv[argv[4] ? 5 : 4] = tty_arg;
    if (posix_spawn_file_actions_init(&fa))
        return -ENOMEM;
    posix_spawn_file_actions_adddup2(&fa, req->in, 0);
    posix_spawn_file_actions_adddup2(&fa, req->out, 1);
    posix_spawn_file_actions_adddup2(&fa, req->err, 2);
    r = posix_spawn(&pid, a->shim, &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    if (r) {
        snprintf(why, why_n, "attach: cannot start %s: %s", a->shim, fatia_strerror(-r));
        return -r;
    }
    *ret_pid = (int)pid;
    return 0;
}

int fatia_agent_exec(void *agent, const struct fatia_exec_req *req, int *ret_pid, char *why,
                     size_t why_n)
{
    struct fatia_agent *a = agent;
    const char *uid = fatia_json_str(json_object_get(req->pod, "metadata"), "uid");
    const char *pname = fatia_json_str(json_object_get(req->pod, "metadata"), "name");
    const char *name = req->container;
    const json_t *spec_ctr, *st_ctr, *env;
    char path[1400], procs[4200], notfound[512];
    char *cands[EXEC_MAX_PATHS + 1] = {0};
    char **envp = NULL;
    const char *cwd = NULL, *search = FATIA_AGENT_DEFAULT_PATH;
    json_t *spec = NULL;
    int64_t run_uid = -1, run_gid = -1, pgid = 0;
    struct apod *p;
    size_t i, nc = 0;
    pid_t pid;
    int rc = 0;

    if (!name)
        name =
            fatia_json_str(json_array_get(fatia_json_path(req->pod, "spec.containers"), 0), "name");
    if (!name || !by_name(fatia_json_path(req->pod, "spec.containers"), name)) {
        snprintf(why, why_n, "container %s is not valid for pod %s", name ? name : "(none)",
                 pname ? pname : "");
        return -ENOENT;
    }
    p = uid ? fatia_agent_pod(a, uid) : NULL;
    if (!p || !p->shim || !p->local) {
        snprintf(why, why_n, "pod %s does not run on this node yet", pname ? pname : "");
        return -EAGAIN;
    }
    st_ctr = by_name(json_object_get(p->shim, "containers"), name);
    if (!st_ctr || !json_is_object(fatia_json_path(st_ctr, "state.running"))) {
        snprintf(why, why_n, "container %s of pod %s is not running", name, pname);
        return -EAGAIN;
    }
    if (req->attach)
        return attach_relay(a, uid, name, req, ret_pid, why, why_n);
    (void)fatia_json_int(p->shim, "pgid", &pgid);
    snprintf(path, sizeof(path), "%s/%s/spec.json", a->pods_dir, uid);
    spec = json_load_file(path, 0, NULL);
    spec_ctr = spec ? by_name(json_object_get(spec, "containers"), name) : NULL;
    if (!spec_ctr) {
        snprintf(why, why_n, "pod %s: cannot read its spec (%s)", pname, path);
        rc = -EIO;
        goto out;
    }
    if (json_object_get(spec_ctr, "oci") || fatia_json_str(spec_ctr, "vgpuLayer") ||
        fatia_json_str(spec_ctr, "mpsShm")) {
        /* a container (runc exec), or a process whose mount namespace (a capped slice's /etc
         * layer, an MPS daemon's /dev/shm) the exec must enter too: the runtime boundary's exec
         * (runtime.h), which does both */
        struct fatia_rt_stdio io = {
            .in = req->in, .out = req->out, .err = req->err, .tty = req->tty};
        pid_t rpid = -1;
        snprintf(path, sizeof(path), "%s/%s", a->pods_dir, uid);
        rc = fatia_runtime_exec(path, name, req->argv, &io, &rpid, why, why_n);
        if (rc == 0)
            *ret_pid = (int)rpid;
        goto out;
    }
    (void)fatia_json_int(json_object_get(spec, "user"), "uid", &run_uid);
    (void)fatia_json_int(json_object_get(spec, "user"), "gid", &run_gid);
    procs[0] = '\0';
    if (fatia_json_str(spec, "cgroup"))
        snprintf(procs, sizeof(procs), "%s/cgroup.procs", fatia_json_str(spec, "cgroup"));
    cwd = fatia_json_str(spec_ctr, "workingDir");

    /* the environment, and PATH from it */
    env = json_object_get(spec_ctr, "env");
    envp = fatia_calloc(json_array_size(env) + 1, sizeof(*envp));
    if (!envp) {
        rc = -ENOMEM;
        goto out;
    }
    for (i = 0; i < json_array_size(env); i++) {
        const char *kv = json_string_value(json_array_get(env, i));
        envp[i] = (char *)(kv ? kv : "");
        if (kv && !strncmp(kv, "PATH=", 5))
            search = kv + 5;
    }
    if (strchr(req->argv[0], '/')) {
        cands[nc++] = fatia_xstrdup(req->argv[0]);
    } else {
        const char *s = search;
        while (*s && nc < EXEC_MAX_PATHS) {
            const char *e = strchrnul(s, ':');
            char *c = NULL;
            if (asprintf(&c, "%.*s/%s", (int)(e - s), s, req->argv[0]) < 0) {
                rc = -ENOMEM;
                goto out;
            }
            cands[nc++] = c;
            s = *e ? e + 1 : e;
        }
    }
    snprintf(notfound, sizeof(notfound), "exec: \"%s\": executable file not found in $PATH\n",
             req->argv[0]);

    pid = fork();
    if (pid < 0) {
        rc = -errno;
        snprintf(why, why_n, "exec: fork: %s", fatia_strerror(rc));
        goto out;
    }
    if (pid == 0) {
        sigset_t none;
        int fd, err = ENOENT;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (int sig = 1; sig < NSIG; sig++)
            signal(sig, SIG_DFL);
        if (req->tty) {
            setsid();
            ioctl(req->in, TIOCSCTTY, 0);
        } else if (pgid > 0) {
            setpgid(0, (pid_t)pgid);
        }
        if (dup2(req->in, 0) < 0 || dup2(req->out, 1) < 0 || dup2(req->err, 2) < 0)
            _exit(126);
        syscall(SYS_close_range, 3u, ~0u, 0u);
        if (procs[0] && (fd = open(procs, O_WRONLY | O_CLOEXEC)) >= 0) {
            if (write(fd, "0", 1) != 1)
                _exit(126);
            close(fd);
        }
        if (run_gid >= 0 && (setgroups(0, NULL) < 0 || setgid((gid_t)run_gid) < 0))
            _exit(126);
        if (run_uid >= 0 && setuid((uid_t)run_uid) < 0)
            _exit(126);
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        if (cwd && *cwd && chdir(cwd) < 0)
            _exit(126);
        for (size_t k = 0; k < nc; k++) {
            execve(cands[k], req->argv, envp);
            if (errno != ENOENT && errno != ENOTDIR)
                err = errno;
        }
        if (err == ENOENT) {
            ssize_t w = write(2, notfound, strlen(notfound));
            (void)w;
            _exit(127);
        }
        _exit(126);
    }
    *ret_pid = pid;
    fatia_log(FATIA_LOG_INFO, "agent: exec in %s/%s container %s: pid %d", p->ns, p->name, name,
              (int)pid);
out:
    for (i = 0; i < nc; i++)
        fatia_free(cands[i]);
    fatia_free(envp);
    json_decref(spec);
    return rc;
}

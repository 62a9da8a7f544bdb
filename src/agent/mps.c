/*
 * agent/mps.c: MPS control daemons, one per GPU (see mps.h).
 *
 * Model. `nvidia-cuda-mps-control -d` forks a daemon and exits; the daemon writes its pid to
 * <pipe>/nvidia-cuda-mps-control.pid and listens on a named pipe in the same directory. Every
 * command is a new `nvidia-cuda-mps-control` process (no -d) that reads the command on stdin,
 * talks to the daemon through the pipe directory and prints the answer; it fails when no daemon
 * listens. So the agent keeps no connection: it knows a daemon by its directory and its pid.
 *
 *                 fatia_mps_start                    pid gone or zombie
 *     (stopped) -----------------> running (pid) -------------------------> dead
 *         ^                           |    ^                                  |
 *         | fatia_mps_stop: quit,     |    +---- fatia_mps_ensure: start -----+
 *         | then TERM, KILL; rm dirs  |          again, defaults again
 *         +---------------------------+
 *
 * The private /dev/shm (private_shm): a tmpfs mounted at <dir>/shm in the host's namespace (so
 * that runtimes can bind it into clients, and it survives an agent restart with the daemon), and
 * the daemon started by util-linux's `unshare --mount --propagation slave` with that tmpfs bound
 * over /dev/shm. Slave, not private: a mount the host removes later (a pod's rootfs, a memory
 * emptyDir) leaves the daemon's namespace too, instead of being held there for the daemon's life.
 * Unmounted (lazily) when the daemon is stopped or its start fails.
 *
 * Invariants: every program runs with an environment built here (pipe and log directory, the GPU)
 * and passed to posix_spawn, never with setenv in a forked child of a threaded agent; nothing is
 * left running when start fails; stop never follows a symbolic link when it removes the
 * directories.
 *
 * Rejected: `-f` (foreground) under the agent's own supervision. It would make the daemon a child
 * of the agent and its death a SIGCHLD, but the daemon would then die with an agent restart and
 * take every MPS client of the GPU with it; `-d` outlives the agent and is adopted on restart.
 */
#include "base/compat.h"

#include "agent/mps.h"

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "vgpu/region.h"

#define PID_FILE "nvidia-cuda-mps-control.pid"
/* The private /dev/shm's bound: what CUDA's MPS keeps there is small; the pages are charged to
 * the memory cgroup of the pod that writes them. */
#define FATIA_MPS_SHM_SIZE "1g"

struct fatia_mps_daemon {
    char control_bin[FATIA_MPS_PATH_MAX];
    char dir[FATIA_MPS_PATH_MAX];          /* <base_dir>/<name> */
    char pipe_dir[FATIA_MPS_PATH_MAX + 8]; /* <dir>/pipe */
    char log_dir[FATIA_MPS_PATH_MAX + 8];  /* <dir>/log */
    char shm_dir[FATIA_MPS_PATH_MAX + 8];  /* <dir>/shm, "" without private_shm */
    char gpu[128];
    int active_thread_pct;
    uint64_t pinned_mem_limit;
    fatia_usec_t timeout;
    int pid;
    unsigned restarts;
};

static bool valid_name(const char *s)
{
    if (!s || !*s || strcmp(s, ".") == 0 || strcmp(s, "..") == 0 || strlen(s) > 64)
        return false;
    for (; *s; s++) {
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '_' || *s == '.'))
            return false;
    }
    return true;
}

static bool valid_value(const char *s, size_t max)
{
    if (!s || !*s || strlen(s) >= max)
        return false;
    for (; *s; s++) {
        if (*s <= ' ' || *s == '=' || *s > '~')
            return false;
    }
    return true;
}

static int mkdir_p(const char *path)
{
    char tmp[FATIA_MPS_PATH_MAX];
    size_t len = strlen(path);

    if (len >= sizeof(tmp))
        return -ENAMETOOLONG;
    memcpy(tmp, path, len + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

/* Removes path and what it holds (no symbolic link is followed), at most depth levels down. */
static int remove_tree(int dirfd, const char *name, int depth)
{
    struct stat st;
    DIR *d;
    struct dirent *e;
    int fd, r = 0;

    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISDIR(st.st_mode))
        return unlinkat(dirfd, name, 0) < 0 ? -errno : 0;
    if (depth == 0)
        return -ELOOP;
    fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -errno;
    }
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (remove_tree(fd, e->d_name, depth - 1) < 0)
            r = -EIO;
    }
    closedir(d);
    if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && r == 0)
        r = -errno;
    return r;
}

/* The environment of the control program: the agent's, with the MPS variables replaced. */
static char **control_env(const struct fatia_mps_daemon *d)
{
    static const char *const ours[] = {
        "CUDA_MPS_PIPE_DIRECTORY=", "CUDA_MPS_LOG_DIRECTORY=", "CUDA_VISIBLE_DEVICES="};
    size_t n = 0, k = 0;
    char **env;

    while (environ && environ[n])
        n++;
    env = fatia_calloc(n + 4, sizeof(*env));
    if (!env)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        bool skip = false;

        for (size_t j = 0; j < FATIA_ARRAY_SIZE(ours); j++)
            skip |= strncmp(environ[i], ours[j], strlen(ours[j])) == 0;
        if (!skip)
            env[k++] = environ[i];
    }
    env[k] = fatia_malloc(FATIA_MPS_PATH_MAX + 48);
    env[k + 1] = fatia_malloc(FATIA_MPS_PATH_MAX + 48);
    env[k + 2] = fatia_malloc(sizeof(d->gpu) + 32);
    if (!env[k] || !env[k + 1] || !env[k + 2]) {
        fatia_free(env[k]);
        fatia_free(env[k + 1]);
        fatia_free(env[k + 2]);
        fatia_free(env);
        return NULL;
    }
    snprintf(env[k], FATIA_MPS_PATH_MAX + 48, "CUDA_MPS_PIPE_DIRECTORY=%s", d->pipe_dir);
    snprintf(env[k + 1], FATIA_MPS_PATH_MAX + 48, "CUDA_MPS_LOG_DIRECTORY=%s", d->log_dir);
    snprintf(env[k + 2], sizeof(d->gpu) + 32, "CUDA_VISIBLE_DEVICES=%s", d->gpu);
    env[k + 3] = NULL;
    return env;
}

static void free_env(char **env)
{
    size_t n = 0;

    if (!env)
        return;
    while (env[n])
        n++;
    /* The last three are ours; the rest are borrowed from environ. */
    for (size_t i = n >= 3 ? n - 3 : 0; i < n; i++)
        fatia_free(env[i]);
    fatia_free(env);
}

/* Waits for pid until deadline; kills it at the deadline. Its exit status, or -ETIMEDOUT. */
static int wait_until(pid_t pid, fatia_usec_t deadline)
{
    int status;

    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);

        if (r == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (r < 0 && errno != EINTR)
            return -errno;
        if (fatia_now_mono_usec() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -ETIMEDOUT;
        }
        usleep(5000);
    }
}

/*
 * Runs the control program with arg (NULL for none). With input, it is written to its stdin and
 * its stdout is read into out; without, stdin and stdout are /dev/null (a daemonizing program
 * would otherwise hold the pipe open for ever). Returns its exit status or -errno.
 */
static int run_control(struct fatia_mps_daemon *d, const char *arg, const char *input, char *out,
                       size_t n)
{
    posix_spawn_file_actions_t fa;
    char *argv[3] = {d->control_bin, (char *)arg, NULL};
    fatia_usec_t deadline = fatia_now_mono_usec() + d->timeout;
    int in[2] = {-1, -1}, outp[2] = {-1, -1};
    size_t len = 0;
    char **env;
    pid_t pid;
    int r;

    if (out && n)
        out[0] = '\0';
    env = control_env(d);
    if (!env)
        return -ENOMEM;
    posix_spawn_file_actions_init(&fa);
    if (input) {
        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(outp, O_CLOEXEC) < 0) {
            r = -errno;
            goto out_close;
        }
        posix_spawn_file_actions_adddup2(&fa, in[0], 0);
        posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
    } else {
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    }
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    if (!input) {
        /* the daemon (and the servers it starts) create the pipes clients of other uids open:
         * umask 022, whatever the caller's; posix_spawn has no umask attribute, so a shell
         * sets it and execs the control program with the same arguments */
        static char shell[] = "/bin/sh", dash_c[] = "-c",
                    script[] = "umask 022 && exec \"$0\" \"$@\"",
                    /* $0 the program, $1 its argument, $2 the tmpfs for /dev/shm */
            private_script[] = "umask 022 && exec unshare --mount --propagation slave /bin/sh -c "
                               "'mount --bind \"$1\" /dev/shm && exec \"$2\" \"$3\"' "
                               "sh \"$2\" \"$0\" \"$1\"";
        char *sh[] = {shell, dash_c, script, d->control_bin, (char *)arg, NULL, NULL};
        if (d->shm_dir[0]) {
            sh[2] = private_script;
            sh[5] = d->shm_dir;
        }
        r = posix_spawn(&pid, sh[0], &fa, NULL, sh, env);
    } else {
        r = strchr(d->control_bin, '/') ? posix_spawn(&pid, d->control_bin, &fa, NULL, argv, env)
                                        : posix_spawnp(&pid, d->control_bin, &fa, NULL, argv, env);
    }
    if (r != 0) {
        r = -r;
        goto out_close;
    }
    if (input) {
        close(in[0]);
        in[0] = -1;
        close(outp[1]);
        outp[1] = -1;
        (void)!write(in[1], input, strlen(input));
        (void)!write(in[1], "\n", 1);
        close(in[1]);
        in[1] = -1;
        for (;;) {
            struct pollfd p = {outp[0], POLLIN, 0};
            fatia_usec_t left = deadline - fatia_now_mono_usec();
            char buf[256];
            ssize_t got;

            if (left <= 0 || poll(&p, 1, (int)(left / 1000) + 1) <= 0)
                break;
            got = read(outp[0], buf, sizeof(buf));
            if (got <= 0)
                break;
            if (out && len + 1 < n) {
                size_t take = FATIA_MIN((size_t)got, n - 1 - len);

                memcpy(out + len, buf, take);
                len += take;
                out[len] = '\0';
            }
        }
    }
    r = wait_until(pid, deadline);
out_close:
    for (int i = 0; i < 2; i++) {
        if (in[i] >= 0)
            close(in[i]);
        if (outp[i] >= 0)
            close(outp[i]);
    }
    posix_spawn_file_actions_destroy(&fa);
    free_env(env);
    return r;
}

static int read_pid(const struct fatia_mps_daemon *d)
{
    char path[FATIA_MPS_PATH_MAX + 48], buf[32];
    int fd, pid = 0;
    ssize_t n;

    snprintf(path, sizeof(path), "%s/%s", d->pipe_dir, PID_FILE);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    for (char *p = buf; *p >= '0' && *p <= '9' && pid < 10000000; p++)
        pid = pid * 10 + (*p - '0');
    return pid;
}

static bool pid_alive(int pid)
{
    char state;
    uint64_t start;

    if (pid <= 0)
        return false;
    if (fatia_vgpu_proc_stat(pid, &state, &start) < 0)
        return kill(pid, 0) == 0;
    return state != 'Z' && state != 'X';
}

bool fatia_mps_alive(struct fatia_mps_daemon *d)
{
    int pid = read_pid(d);

    if (pid > 0)
        d->pid = pid;
    return pid_alive(d->pid);
}

int fatia_mps_command(struct fatia_mps_daemon *d, const char *cmd, char *reply, size_t n)
{
    int r = run_control(d, NULL, cmd, reply, n);

    if (r < 0)
        return r;
    return r == 0 ? 0 : -FATIA_E_DRIVER;
}

static int apply_defaults(struct fatia_mps_daemon *d)
{
    char cmd[128], reply[256];
    int r;

    if (d->active_thread_pct > 0) {
        snprintf(cmd, sizeof(cmd), "set_default_active_thread_percentage %d", d->active_thread_pct);
        r = fatia_mps_command(d, cmd, reply, sizeof(reply));
        if (r < 0)
            return fatia_log_errno(FATIA_LOG_ERROR, r, "mps '%s': '%s' failed", d->dir, cmd);
    }
    if (d->pinned_mem_limit) {
        /* The control daemon takes a size with a unit; whole MiB keep it exact. */
        snprintf(cmd, sizeof(cmd), "set_default_device_pinned_mem_limit 0 %" PRIu64 "M",
                 d->pinned_mem_limit >> 20);
        r = fatia_mps_command(d, cmd, reply, sizeof(reply));
        if (r < 0)
            return fatia_log_errno(FATIA_LOG_ERROR, r, "mps '%s': '%s' failed", d->dir, cmd);
    }
    return 0;
}

/* Whether the private /dev/shm's tmpfs is mounted (another device than its parent's). */
static bool shm_mounted(const struct fatia_mps_daemon *d)
{
    struct stat a, b;

    return d->shm_dir[0] && stat(d->shm_dir, &a) == 0 && stat(d->dir, &b) == 0 &&
           a.st_dev != b.st_dev;
}

/* The private /dev/shm: a tmpfs every client may write (sticky, as /dev/shm is), bounded. */
static int shm_mount(struct fatia_mps_daemon *d)
{
    if (!d->shm_dir[0] || shm_mounted(d))
        return 0;
    if (mkdir(d->shm_dir, 0755) < 0 && errno != EEXIST)
        return -errno;
    if (mount("fatia-mps-shm", d->shm_dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "mode=1777,size=" FATIA_MPS_SHM_SIZE) < 0)
        return -errno;
    return 0;
}

static void shm_unmount(struct fatia_mps_daemon *d)
{
    if (shm_mounted(d) && umount2(d->shm_dir, MNT_DETACH) < 0)
        fatia_warn("mps '%s': cannot unmount its /dev/shm: %s", d->dir, fatia_strerror(-errno));
}

/* Kills whatever pid the directory names and removes the directory. */
static void kill_and_clean(struct fatia_mps_daemon *d)
{
    int pid = read_pid(d);

    if (pid_alive(pid))
        kill(pid, SIGKILL);
    shm_unmount(d);
    (void)remove_tree(AT_FDCWD, d->dir, 4);
}

static int launch(struct fatia_mps_daemon *d)
{
    fatia_usec_t deadline;
    int r;

    if (fatia_mps_alive(d)) {
        char reply[256];

        if (fatia_mps_command(d, "get_server_list", reply, sizeof(reply)) == 0) {
            fatia_info("mps '%s': adopting the running daemon (pid %d)", d->dir, d->pid);
            return apply_defaults(d);
        }
        /* A pid file naming a live process that does not answer: a reused pid, or a wedged
         * daemon. Never kill what may not be ours; start afresh beside it. */
        fatia_warn("mps '%s': pid %d does not answer, starting a new daemon", d->dir, d->pid);
        d->pid = 0;
    }
    /* Leftovers of a daemon that died: its pipes would confuse the new one. */
    (void)remove_tree(AT_FDCWD, d->pipe_dir, 2);
    r = mkdir_p(d->pipe_dir);
    if (r == 0)
        r = mkdir_p(d->log_dir);
    /* Clients run under their pod's uid: the pipe directory must be reachable by them (the
     * caller's umask, 077 in fatiad, would close it). A client that cannot reach it does not
     * fail: CUDA runs it without MPS, with no thread or memory limit (seen on the H200). */
    if (r == 0 && (chmod(d->dir, 0711) < 0 || chmod(d->pipe_dir, 0755) < 0))
        r = -errno;
    if (r == 0)
        r = shm_mount(d);
    if (r < 0)
        return fatia_log_errno(FATIA_LOG_ERROR, r, "mps '%s': cannot create directories", d->dir);
    r = run_control(d, "-d", NULL, NULL, 0);
    if (r != 0) {
        fatia_error("mps '%s': '%s -d' failed (%s)", d->dir, d->control_bin,
                    r < 0 ? fatia_strerror(r) : "non-zero exit");
        kill_and_clean(d);
        return r < 0 ? r : -FATIA_E_DRIVER;
    }
    /* The daemon writes its pid file once it listens. */
    deadline = fatia_now_mono_usec() + d->timeout;
    while (!fatia_mps_alive(d)) {
        if (fatia_now_mono_usec() >= deadline) {
            fatia_error("mps '%s': the daemon did not come up", d->dir);
            kill_and_clean(d);
            return -ETIMEDOUT;
        }
        usleep(10000);
    }
    r = apply_defaults(d);
    if (r < 0) {
        kill_and_clean(d);
        return r;
    }
    fatia_info("mps '%s': daemon running (pid %d, gpu '%s')", d->dir, d->pid, d->gpu);
    return 0;
}

int fatia_mps_start(const struct fatia_mps_config *cfg, struct fatia_mps_daemon **ret)
{
    struct fatia_mps_daemon *d;
    const char *bin = cfg->control_bin ? cfg->control_bin : "nvidia-cuda-mps-control";
    int r;

    if (!cfg->base_dir || cfg->base_dir[0] != '/' || !valid_name(cfg->name) ||
        !valid_value(cfg->gpu, 128) || cfg->active_thread_pct < 0 || cfg->active_thread_pct > 100 ||
        (cfg->pinned_mem_limit && cfg->pinned_mem_limit >> 20 == 0) ||
        strlen(bin) >= FATIA_MPS_PATH_MAX ||
        strlen(cfg->base_dir) + strlen(cfg->name) + 8 >= FATIA_MPS_PATH_MAX)
        return -EINVAL;
    d = fatia_calloc(1, sizeof(*d));
    if (!d)
        return -ENOMEM;
    snprintf(d->control_bin, sizeof(d->control_bin), "%s", bin);
    snprintf(d->dir, sizeof(d->dir), "%s/%s", cfg->base_dir, cfg->name);
    snprintf(d->pipe_dir, sizeof(d->pipe_dir), "%s/pipe", d->dir);
    snprintf(d->log_dir, sizeof(d->log_dir), "%s/log", d->dir);
    if (cfg->private_shm)
        snprintf(d->shm_dir, sizeof(d->shm_dir), "%s/shm", d->dir);
    snprintf(d->gpu, sizeof(d->gpu), "%s", cfg->gpu);
    d->active_thread_pct = cfg->active_thread_pct;
    d->pinned_mem_limit = cfg->pinned_mem_limit;
    d->timeout = cfg->timeout > 0 ? cfg->timeout : 10 * FATIA_USEC_PER_SEC;
    r = launch(d);
    if (r < 0) {
        fatia_free(d);
        return r;
    }
    *ret = d;
    return 0;
}

int fatia_mps_ensure(struct fatia_mps_daemon *d, bool *ret_restarted)
{
    int r;

    if (fatia_mps_alive(d)) {
        *ret_restarted = false;
        return 0;
    }
    fatia_warn("mps '%s': daemon (pid %d) is gone, restarting", d->dir, d->pid);
    d->pid = 0;
    r = launch(d);
    if (r < 0)
        return r;
    d->restarts++;
    *ret_restarted = true;
    return 0;
}

int fatia_mps_stop(struct fatia_mps_daemon *d)
{
    fatia_usec_t deadline;
    char reply[128];
    int sig = SIGTERM;

    if (fatia_mps_alive(d)) {
        (void)fatia_mps_command(d, "quit", reply, sizeof(reply));
        deadline = fatia_now_mono_usec() + d->timeout;
        while (pid_alive(d->pid)) {
            if (fatia_now_mono_usec() >= deadline) {
                fatia_warn("mps '%s': daemon (pid %d) ignored quit, sending %s", d->dir, d->pid,
                           sig == SIGTERM ? "SIGTERM" : "SIGKILL");
                kill(d->pid, sig);
                if (sig == SIGKILL)
                    break;
                sig = SIGKILL;
                deadline = fatia_now_mono_usec() + 2 * FATIA_USEC_PER_SEC;
            }
            usleep(10000);
        }
    }
    /* the daemon may be our child (it does not always detach): reap it, or it stays a zombie
       for as long as fatiad runs; a daemon that is not ours gives ECHILD */
    if (d->pid > 0)
        (void)waitpid(d->pid, NULL, WNOHANG);
    d->pid = 0;
    shm_unmount(d);
    return remove_tree(AT_FDCWD, d->dir, 4);
}

void fatia_mps_free(struct fatia_mps_daemon *d)
{
    if (!d)
        return;
    (void)fatia_mps_stop(d);
    fatia_free(d);
}

void fatia_mps_forget(struct fatia_mps_daemon *d)
{
    fatia_free(d);
}

int fatia_mps_client_env(const struct fatia_mps_daemon *d, int active_thread_pct,
                         uint64_t pinned_mem_limit, fatia_env_put_fn put, void *ctx)
{
    char v[64];
    int r;

    if (active_thread_pct < 0 || active_thread_pct > 100)
        return -EINVAL;
    r = put(ctx, "CUDA_MPS_PIPE_DIRECTORY", d->pipe_dir);
    if (r < 0)
        return r;
    if (active_thread_pct > 0) {
        snprintf(v, sizeof(v), "%d", active_thread_pct);
        r = put(ctx, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", v);
        if (r < 0)
            return r;
    }
    if (pinned_mem_limit) {
        if (pinned_mem_limit >> 20 == 0)
            return -EINVAL;
        snprintf(v, sizeof(v), "0=%" PRIu64 "M", pinned_mem_limit >> 20);
        r = put(ctx, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", v);
        if (r < 0)
            return r;
    }
    return 0;
}

int fatia_mps_pid(const struct fatia_mps_daemon *d)
{
    return d->pid;
}

const char *fatia_mps_pipe_dir(const struct fatia_mps_daemon *d)
{
    return d->pipe_dir;
}

const char *fatia_mps_shm_dir(const struct fatia_mps_daemon *d)
{
    return d->shm_dir[0] ? d->shm_dir : NULL;
}

unsigned fatia_mps_restarts(const struct fatia_mps_daemon *d)
{
    return d->restarts;
}

/*
 * agent/oci.c: the OCI runtime (runtime.h): a pod's containers run by runc.
 *
 * Model. The sandbox is fatia-pause in the pod's own user namespace (0..65535 mapped onto its
 * Kubernetes namespace's host range, as kubelet's hostUsers: false gives a pod 65536 ids) and, made
 * inside it so that it owns them, new network, IPC and UTS namespaces (CRI-O's pinns in one
 * process), with the pod's name as hostname and lo up. Each container instance is a runc
 * container `<pod uid>-<name>` whose config.json is the agent's template (oci_spec.c,
 * POD_DIR/ctr/<name>/config.json.in) with the sandbox's user, network, IPC and UTS namespace
 * paths filled in, and its CNI address where the spec had FATIA_OCI_POD_IP_MARK (a fieldRef to
 * status.podIP in args or env: Kubernetes' `--host $(POD_IP)`); it gets its own pid, mount and cgroup namespaces. Its rootfs is an overlay:
 * the image's unpacked rootfs (owned by that range, shared and never written) below, a fresh
 * upper directory per instance (a restarted container starts from the image, as in Kubernetes).
 *
 * Lifecycle of an instance, as conmon drives runc: `runc create` (stdio passed straight to the
 * container: terminal false), read its pid file, `runc start`; runc then exits and the
 * container's init is re-parented to the shim, a child subreaper, which waitpid()s it and gets
 * the container's own exit status. cleanup: `runc delete --force`, unmount, remove the upper
 * directory. sandbox_stop: the same for every container, then the pause process.
 *
 * Invariants: runc's state lives under DATA/agent/runc (--root), never /run/runc, so fatia's
 * containers and another runc user's never meet; a create that fails leaves no runc container
 * and no mount behind; exec never changes the container (runc exec joins it).
 *
 * Rejected: `runc run` in the foreground (runc would stay between the shim and the container for
 * its whole life, and a SIGKILL of the pod would hit runc, not the container); a sandbox
 * container with its own rootfs (needs a pause binary inside every image's reach; the bare
 * process holds the namespaces as well); a user namespace per container (the sandbox's network
 * and IPC namespaces would then belong to the host's user namespace, which runc exec, joining
 * the user namespace first, can no longer enter: EPERM).
 */
#include "base/compat.h"

#include "agent/oci.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include "agent/cni.h"
#include "agent/proc.h"
#include "agent/runtime.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"

static const char *runc_path(const struct fatia_rt_pod *pod)
{
    const char *p = fatia_json_str(json_object_get(pod->spec, "oci"), "runc");
    return p ? p : "runc";
}

static const char *runc_root(const struct fatia_rt_pod *pod)
{
    const char *p = fatia_json_str(json_object_get(pod->spec, "oci"), "root");
    return p ? p : "/run/fatia-runc";
}

void fatia_oci_ctr_id(const char *pod_uid, const char *name, char *buf, size_t n)
{
    snprintf(buf, n, "%s-%s", pod_uid, name);
}

static void reset_signals(void)
{
    sigset_t none;

    for (int sig = 1; sig < NSIG; sig++) {
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    }
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Runs runc with args (NULL-terminated, after the global options), stdio as given (-1:
 * /dev/null). wait: waits and returns the exit code (or -errno); else *ret_pid. */
static int run_runc(const struct fatia_rt_pod *pod, const char *const *args, int in, int out,
                    int err, bool tty, bool wait, pid_t *ret_pid)
{
    const char *argv[32];
    size_t n = 0;
    pid_t pid;
    int status;

    argv[n++] = runc_path(pod);
    argv[n++] = "--root";
    argv[n++] = runc_root(pod);
    for (size_t i = 0; args[i] && n < FATIA_ARRAY_SIZE(argv) - 1; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0) {
        int nul = open("/dev/null", O_RDWR);
        reset_signals();
        /* runc makes the mount points an image lacks with its own umask: fatiad's 077 would give
         * a container's non-root user a /usr/lib/fatia or /etc/fatia it cannot enter, and ld.so
         * would skip a capped slice's interposer without a word (tests/cli/containers-vgpu.sh) */
        (void)umask(022);
        if (tty) {
            (void)setsid();
            (void)ioctl(in, TIOCSCTTY, 0);
        }
        if (dup2(in >= 0 ? in : nul, 0) < 0 || dup2(out >= 0 ? out : nul, 1) < 0 ||
            dup2(err >= 0 ? err : nul, 2) < 0)
            _exit(127);
        static const char *const envp[] = {
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL};
        execve(argv[0], (char *const *)argv, (char *const *)envp);
        _exit(127);
    }
    if (!wait) {
        *ret_pid = pid;
        return 0;
    }
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return -errno;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The last "msg" of runc's JSON log, or its last line. */
static void runc_log_msg(const char *log, char *buf, size_t n)
{
    FILE *f = fopen(log, "re");
    char line[4096];

    buf[0] = '\0';
    if (!f)
        return;
    while (fgets(line, sizeof(line), f)) {
        json_t *j = json_loads(line, 0, NULL);
        const char *m = j ? fatia_json_str(j, "msg") : NULL;
        const char *lvl = j ? fatia_json_str(j, "level") : NULL;
        if (m && (!lvl || !strcmp(lvl, "error") || !strcmp(lvl, "fatal")))
            snprintf(buf, n, "%s", m);
        json_decref(j);
    }
    fclose(f);
}

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    size_t len = strlen(text);
    int r = 0;

    if (fd < 0)
        return -errno;
    if (write(fd, text, len) != (ssize_t)len)
        r = -EIO;
    close(fd);
    return r;
}

static int write_file_existing(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    size_t len = strlen(text);
    int r = 0;

    if (fd < 0)
        return -errno;
    if (write(fd, text, len) != (ssize_t)len)
        r = errno ? -errno : -EIO;
    close(fd);
    return r;
}

/* ---- the pod's cgroup: the parent of its containers' (runc's cgroupsPath
 * /fatia-pods/pod-<uid>/<name>), holding the pod's pids.max ---- */

#define CG_ROOT "/sys/fs/cgroup"

static int pod_cgroup(const struct fatia_rt_pod *pod, int64_t pids_max, char *why, size_t why_n)
{
    char dir[600], f[700], v[32];
    bool v1 = access(CG_ROOT "/pids/cgroup.procs", F_OK) == 0;
    int r;

    if (pids_max <= 0)
        return 0;
    if (v1) {
        (void)mkdir(CG_ROOT "/pids/fatia-pods", 0755);
        snprintf(dir, sizeof(dir), CG_ROOT "/pids/fatia-pods/pod-%.128s", pod->uid);
    } else {
        (void)mkdir(CG_ROOT "/fatia-pods", 0755);
        (void)write_file_existing(CG_ROOT "/cgroup.subtree_control", "+pids");
        (void)write_file_existing(CG_ROOT "/fatia-pods/cgroup.subtree_control", "+pids");
        snprintf(dir, sizeof(dir), CG_ROOT "/fatia-pods/pod-%.128s", pod->uid);
    }
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
        r = -errno;
        snprintf(why, why_n, "cannot create the pod's cgroup '%s': %s", dir, fatia_strerror(r));
        return r;
    }
    snprintf(f, sizeof(f), "%s/pids.max", dir);
    snprintf(v, sizeof(v), "%lld", (long long)pids_max);
    r = write_file_existing(f, v);
    if (r < 0)
        snprintf(why, why_n, "cannot write '%s': %s", f, fatia_strerror(r));
    return r;
}

/* The pod's cgroup in every hierarchy (runc removes its containers' own). */
/* rmdir of a pod's cgroup directory, after its containers' (runc delete removes those, unless
 * runc's state went with the data directory: shim_dirwatch.c); one holding a process stays */
static void cgroup_rmdir(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    char p[1000];

    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.' || e->d_type != DT_DIR)
            continue;
        snprintf(p, sizeof(p), "%.700s/%.200s", path, e->d_name);
        (void)rmdir(p);
    }
    if (d)
        closedir(d);
    (void)rmdir(path);
}

static void pod_cgroup_remove(const struct fatia_rt_pod *pod)
{
    DIR *d = opendir(CG_ROOT);
    struct dirent *e;
    char p[700];

    snprintf(p, sizeof(p), CG_ROOT "/fatia-pods/pod-%.128s", pod->uid);
    cgroup_rmdir(p);
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof(p), CG_ROOT "/%.64s/fatia-pods/pod-%.128s", e->d_name, pod->uid);
        cgroup_rmdir(p);
    }
    if (d)
        closedir(d);
}

/* ---- the sandbox ---- */

static int lo_up(void)
{
    struct ifreq ifr = {0};
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r = 0;

    if (fd < 0)
        return -errno;
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
    if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
        r = -errno;
    ifr.ifr_flags |= IFF_UP;
    if (r == 0 && ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
        r = -errno;
    close(fd);
    return r;
}

/* The pod's user namespace maps 0..65535 onto its namespace's host range. */
static int write_maps(pid_t pid, uint32_t base)
{
    static const char *const files[] = {"uid_map", "gid_map"};
    char path[64], line[64];

    snprintf(line, sizeof(line), "0 %u %u\n", base, FATIA_OCI_IDS);
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(files); i++) {
        snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, files[i]);
        int r = write_file_existing(path, line);
        if (r < 0)
            return r;
    }
    return 0;
}

/* hostPort: the shim binds each mapping's host address and port (no SO_REUSEADDR, no listen)
 * and holds the socket while the sandbox lives, as kubelet's hostport manager did: a second pod
 * asking for a port another pod holds, of this fatiad or another one, or a port a host process
 * has bound, fails here with EADDRINUSE before portmap's DNAT could take the port over; and
 * nothing on the host can bind it while the pod publishes it. */
static int hostports_hold(struct fatia_rt_pod *pod, const json_t *ports, char *why, size_t why_n)
{
    size_t i;
    json_t *m;

    json_array_foreach(ports, i, m)
    {
        const char *proto = fatia_json_str(m, "protocol"), *hip = fatia_json_str(m, "hostIP");
        const char *field = fatia_json_str(m, "field");
        bool udp = proto && !strcmp(proto, "udp");
        struct sockaddr_in at = {.sin_family = AF_INET};
        int64_t hp = 0;
        int fd, e;

        if (!fatia_json_int(m, "hostPort", &hp) || hp <= 0 || hp > 65535 ||
            pod->n_hostport_fds >= FATIA_ARRAY_SIZE(pod->hostport_fds) ||
            (hip && hip[0] && inet_pton(AF_INET, hip, &at.sin_addr) != 1)) {
            snprintf(why, why_n, "%s: a host port the shim cannot publish",
                     field ? field : "oci.cni.portMappings");
            return -EINVAL;
        }
        at.sin_port = htons((uint16_t)hp);
        fd = socket(AF_INET, (udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return -errno;
        if (bind(fd, (struct sockaddr *)&at, sizeof(at)) < 0) {
            e = -errno;
            close(fd);
            snprintf(why, why_n, "%s: host port %lld/%s on %s is %s", field ? field : "hostPort",
                     (long long)hp, udp ? "UDP" : "TCP", hip && hip[0] ? hip : "0.0.0.0",
                     e == -EADDRINUSE ? "already in use on the node (by another pod or a host "
                                        "process)"
                                      : fatia_strerror(e));
            return e;
        }
        pod->hostport_fds[pod->n_hostport_fds++] = fd;
    }
    return 0;
}

static void hostports_release(struct fatia_rt_pod *pod)
{
    while (pod->n_hostport_fds > 0)
        close(pod->hostport_fds[--pod->n_hostport_fds]);
}

/* The pod's network through CNI (spec "oci.cni": {"index", "state", "portMappings"}; absent: lo
 * only). */
static int cni_add(struct fatia_rt_pod *pod, char *why, size_t why_n)
{
    const json_t *cni = json_object_get(json_object_get(pod->spec, "oci"), "cni");
    char netns[64], result[4200], ip[64] = "", ipf[4200];
    int64_t k;
    int r;

    if (!cni || !fatia_json_int(cni, "index", &k) || !fatia_json_str(cni, "state"))
        return 0;
    snprintf(netns, sizeof(netns), "/proc/%d/ns/net", (int)pod->sandbox_pid);
    snprintf(result, sizeof(result), "%.4000s/cni.json", pod->dir);
    r = hostports_hold(pod, json_object_get(cni, "portMappings"), why, why_n);
    if (r < 0)
        return r;
    r = fatia_cni_add(FATIA_CNI_PLUGIN_DIR, fatia_json_str(cni, "state"), (uint32_t)k, pod->uid,
                      netns, json_object_get(cni, "portMappings"), result, ip, sizeof(ip), why,
                      why_n);
    if (r < 0)
        hostports_release(pod);
    if (r == 0) {
        snprintf(ipf, sizeof(ipf), "%.4000s/pod-ip", pod->dir);
        (void)write_file(ipf, ip);
        snprintf(pod->ip, sizeof(pod->ip), "%s", ip);
    }
    return r;
}

static void cni_del(struct fatia_rt_pod *pod)
{
    const json_t *cni = json_object_get(json_object_get(pod->spec, "oci"), "cni");
    char netns[64], result[4200];
    int64_t k;

    if (!cni || !fatia_json_int(cni, "index", &k) || !fatia_json_str(cni, "state"))
        return;
    snprintf(netns, sizeof(netns), "/proc/%d/ns/net", (int)pod->sandbox_pid);
    snprintf(result, sizeof(result), "%.4000s/cni.json", pod->dir);
    fatia_cni_del(FATIA_CNI_PLUGIN_DIR, fatia_json_str(cni, "state"), (uint32_t)k, pod->uid, netns,
                  json_object_get(cni, "portMappings"), result);
    hostports_release(pod);
}

static int oci_sandbox_start(struct fatia_rt_pod *pod, char *why, size_t why_n)
{
    bool host_net = fatia_json_bool(json_object_get(pod->spec, "oci"), "hostNetwork", false);
    int64_t base = 0;
    int sync[2], go[2];
    pid_t pid;
    int err = 0;
    ssize_t n;

    size_t i;
    json_t *t;

    /* medium: Memory emptyDirs: one tmpfs each, shared by the pod's containers */
    json_array_foreach(json_object_get(json_object_get(pod->spec, "oci"), "tmpfs"), i, t)
    {
        const char *path = fatia_json_str(t, "path"), *size = fatia_json_str(t, "size");
        int64_t owner = 0;
        char opts[256];
        (void)fatia_json_int(t, "uid", &owner);
        snprintf(opts, sizeof(opts), "mode=1777,uid=%lld,gid=%lld%s%s", (long long)owner,
                 (long long)owner, size && size[0] ? ",size=" : "", size ? size : "");
        if (!path || mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0) {
            err = -errno;
            snprintf(why, why_n, "cannot mount the memory emptyDir '%.300s' (%s): %s",
                     path ? path : "", opts, fatia_strerror(err));
            return err;
        }
    }
    if (!fatia_json_int(json_object_get(pod->spec, "oci"), "hostBase", &base) || base <= 0) {
        snprintf(why, why_n, "the pod's spec has no host id range (oci.hostBase)");
        return -EINVAL;
    }
    {
        int64_t pids = 0;
        (void)fatia_json_int(json_object_get(pod->spec, "oci"), "podPidsMax", &pids);
        err = pod_cgroup(pod, pids, why, why_n);
        if (err < 0)
            return err;
    }
    /* a container's init, once runc has exited, becomes our child: we reap it */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
        snprintf(why, why_n, "cannot become a child subreaper: %s", fatia_strerror(-errno));
        return -errno;
    }
    if (pipe2(sync, O_CLOEXEC) < 0)
        return -errno;
    if (pipe2(go, O_CLOEXEC) < 0) {
        close(sync[0]);
        close(sync[1]);
        return -errno;
    }
    pid = fork();
    if (pid < 0) {
        err = -errno;
        close(sync[0]);
        close(sync[1]);
        close(go[0]);
        close(go[1]);
        snprintf(why, why_n, "cannot fork: %s", fatia_strerror(err));
        return err;
    }
    if (pid == 0) {
        int flags = CLONE_NEWIPC | CLONE_NEWUTS | (host_net ? 0 : CLONE_NEWNET), e = 0;
        const char *host = pod->name;
        char b;
        reset_signals();
        (void)setpgid(0, 0);
        /* the pod's user namespace first, so that it owns the others: a container (and runc
         * exec) joins them all from inside it */
        if (unshare(CLONE_NEWUSER) < 0)
            e = -errno;
        (void)!write(sync[1], &e, sizeof(e));
        if (e < 0 || read(go[0], &b, 1) != 1)
            _exit(1);
        if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
            e = -errno;
        if (e == 0 && unshare(flags) < 0)
            e = -errno;
        if (e == 0 && sethostname(host, strlen(host) > 63 ? 63 : strlen(host)) < 0)
            e = -errno;
        if (e == 0 && !host_net)
            e = lo_up();
        (void)!write(sync[1], &e, sizeof(e));
        if (e < 0)
            _exit(1);
        for (int fd = 0; fd < 1024; fd++)
            close(fd);
        (void)prctl(PR_SET_NAME, "fatia-pause", 0, 0, 0);
        for (;;)
            pause();
    }
    close(sync[1]);
    close(go[0]);
    do {
        n = read(sync[0], &err, sizeof(err));
    } while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof(err) && err == 0)
        err = write_maps(pid, (uint32_t)base);
    if (n == (ssize_t)sizeof(err) && err == 0) {
        (void)!write(go[1], "g", 1);
        do {
            n = read(sync[0], &err, sizeof(err));
        } while (n < 0 && errno == EINTR);
    }
    close(go[1]);
    close(sync[0]);
    if (n != (ssize_t)sizeof(err) || err < 0) {
        if (n != (ssize_t)sizeof(err))
            err = -EIO;
        (void)waitpid(pid, NULL, 0);
        snprintf(why, why_n, "cannot make the pod's namespaces: %s", fatia_strerror(err));
        return err;
    }
    (void)setpgid(pid, pid);
    pod->sandbox_pid = pid;
    (void)fatia_proc_start_time(pid, &pod->sandbox_start);
    return cni_add(pod, why, why_n);
}

/* ---- instances ---- */

static void inst_paths(const struct fatia_rt_pod *pod, const char *name, char *bundle, size_t bn)
{
    snprintf(bundle, bn, "%.2000s/ctr/%.500s", pod->dir, name);
}

/* RUN_DIR/ctr/<name>: the instance's rootfs, upper and work directories. */
static void rootfs_dir(const struct fatia_rt_ctr *c, char *buf, size_t n)
{
    const char *d = fatia_json_str(json_object_get(c->spec, "oci"), "dir");
    snprintf(buf, n, "%.3000s", d ? d : "/nonexistent");
}

static void unmount_rootfs(const char *dir)
{
    char p[4400];

    snprintf(p, sizeof(p), "%s/rootfs", dir);
    (void)umount2(p, MNT_DETACH);
}

static int rm_rf_at(int dfd, const char *name)
{
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

    if (fd >= 0) {
        DIR *d = fdopendir(fd);
        struct dirent *e;
        if (!d) {
            close(fd);
            return -errno;
        }
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            (void)rm_rf_at(dirfd(d), e->d_name);
        }
        closedir(d);
        return unlinkat(dfd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
    }
    return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
}

static void remove_upper(const char *bundle)
{
    int dfd = open(bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (dfd < 0)
        return;
    (void)rm_rf_at(dfd, "upper");
    (void)rm_rf_at(dfd, "work");
    close(dfd);
}

/* The instance's config.json: the template with the sandbox's namespaces. */
/* Every FATIA_OCI_POD_IP_MARK in the strings of arr replaced with ip (oci.h). */
static int fill_pod_ip(json_t *arr, const char *ip)
{
    const size_t ml = strlen(FATIA_OCI_POD_IP_MARK), il = strlen(ip);
    size_t i;
    json_t *s;

    json_array_foreach(arr, i, s)
    {
        const char *v = json_string_value(s), *at, *p;
        size_t n = 0, o = 0;
        char *out;

        if (!v || !strstr(v, FATIA_OCI_POD_IP_MARK))
            continue;
        for (at = v; (at = strstr(at, FATIA_OCI_POD_IP_MARK)); at += ml)
            n++;
        out = malloc(strlen(v) + n * il + 1);
        if (!out)
            return -ENOMEM;
        for (p = v; (at = strstr(p, FATIA_OCI_POD_IP_MARK)); p = at + ml) {
            memcpy(out + o, p, (size_t)(at - p));
            o += (size_t)(at - p);
            memcpy(out + o, ip, il);
            o += il;
        }
        memcpy(out + o, p, strlen(p) + 1);
        json_array_set_new(arr, i, json_string(out));
        free(out);
    }
    return 0;
}

static int write_config(const struct fatia_rt_pod *pod, const char *bundle, char *why, size_t why_n)
{
    char tmpl[4400], path[4400], nsp[64];
    json_error_t je;
    json_t *j, *nss, *ns;
    size_t i;
    char *text;
    int r;

    snprintf(tmpl, sizeof(tmpl), "%s/config.json.in", bundle);
    j = json_load_file(tmpl, 0, &je);
    if (!j) {
        snprintf(why, why_n, "cannot read '%.300s': %s", tmpl, je.text);
        return -FATIA_E_PARSE;
    }
    nss = json_object_get(json_object_get(j, "linux"), "namespaces");
    json_array_foreach(nss, i, ns)
    {
        const char *t = fatia_json_str(ns, "type");
        const char *f = !t                      ? NULL
                        : !strcmp(t, "network") ? "net"
                        : !strcmp(t, "ipc")     ? "ipc"
                        : !strcmp(t, "uts")     ? "uts"
                        : !strcmp(t, "user")    ? "user"
                                                : NULL;
        if (f && fatia_json_bool(ns, "fatiaSandbox", false)) {
            snprintf(nsp, sizeof(nsp), "/proc/%d/ns/%s", (int)pod->sandbox_pid, f);
            json_object_del(ns, "fatiaSandbox");
            json_object_set_new(ns, "path", json_string(nsp));
        }
    }
    {
        /* the sandbox's address, known now (CNI ran), where the spec asked for status.podIP */
        json_t *proc = json_object_get(j, "process");
        const char *ip = pod->ip[0] ? pod->ip : "127.0.0.1";
        if (fill_pod_ip(json_object_get(proc, "args"), ip) < 0 ||
            fill_pod_ip(json_object_get(proc, "env"), ip) < 0) {
            json_decref(j);
            return -ENOMEM;
        }
    }
    text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (!text)
        return -ENOMEM;
    snprintf(path, sizeof(path), "%s/config.json", bundle);
    r = write_file(path, text);
    free(text);
    if (r < 0)
        snprintf(why, why_n, "cannot write '%.300s': %s", path, fatia_strerror(r));
    return r;
}

/* The overlay rootfs of a fresh instance. */
static int mount_rootfs(const struct fatia_rt_pod *pod, const struct fatia_rt_ctr *c,
                        const char *bundle, char *why, size_t why_n)
{
    const json_t *o = json_object_get(c->spec, "oci");
    const char *lower = fatia_json_str(o, "lowerdir");
    char upper[4400], work[4400], root[4400], opts[14000];
    int64_t ruid = 0, rgid = 0;

    (void)pod;
    if (!lower) {
        snprintf(why, why_n, "container %s has no image rootfs", c->name);
        return -EINVAL;
    }
    (void)fatia_json_int(o, "rootUid", &ruid);
    (void)fatia_json_int(o, "rootGid", &rgid);
    unmount_rootfs(bundle);
    remove_upper(bundle);
    snprintf(upper, sizeof(upper), "%s/upper", bundle);
    snprintf(work, sizeof(work), "%s/work", bundle);
    snprintf(root, sizeof(root), "%s/rootfs", bundle);
    if ((mkdir(upper, 0755) < 0 && errno != EEXIST) || (mkdir(work, 0700) < 0 && errno != EEXIST) ||
        (mkdir(root, 0755) < 0 && errno != EEXIST) || chown(upper, (uid_t)ruid, (gid_t)rgid) < 0 ||
        chmod(upper, 0755) < 0 || chmod(root, 0755) < 0) {
        snprintf(why, why_n, "cannot make the rootfs directories in '%.300s': %s", bundle,
                 fatia_strerror(-errno));
        return -errno;
    }
    snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work);
    if (mount("overlay", root, "overlay", MS_NODEV, opts) < 0) {
        int e = -errno;
        snprintf(why, why_n, "cannot mount the container's rootfs (overlay on '%.300s'): %s", root,
                 fatia_strerror(e));
        return e;
    }
    return 0;
}

static int oci_create(struct fatia_rt_pod *pod, const struct fatia_rt_ctr *c,
                      const struct fatia_rt_stdio *io, pid_t *ret_pid, char *why, size_t why_n)
{
    char bundle[4000], rdir[4000], id[512], pidf[4500], log[4500], buf[64], msg[1024];
    int r, fd;
    ssize_t n;

    inst_paths(pod, c->name, bundle, sizeof(bundle));
    fatia_oci_ctr_id(pod->uid, c->name, id, sizeof(id));
    snprintf(pidf, sizeof(pidf), "%s/pid", bundle);
    snprintf(log, sizeof(log), "%s/runc.log", bundle);
    /* a former instance of this container: gone for good before the new one */
    (void)run_runc(pod, (const char *const[]){"delete", "--force", id, NULL}, -1, -1, -1, false,
                   true, NULL);
    (void)unlink(pidf);
    (void)unlink(log);
    rootfs_dir(c, rdir, sizeof(rdir));
    r = write_config(pod, bundle, why, why_n);
    if (r == 0)
        r = mount_rootfs(pod, c, rdir, why, why_n);
    if (r < 0)
        return r;
    if (io->tty && io->ret_master) {
        /* terminal: true (attach -t): the container's pty is runc's, its master ours */
        struct fatia_oci_console cs = {0};
        r = fatia_oci_console_listen(&cs);
        if (r < 0) {
            snprintf(why, why_n, "cannot make a console socket: %s", fatia_strerror(r));
            goto fail;
        }
        r = run_runc(pod,
                     (const char *const[]){"--log", log, "--log-format", "json", "create",
                                           "--bundle", bundle, "--console-socket", cs.sock,
                                           "--pid-file", pidf, id, NULL},
                     -1, -1, -1, false, true, NULL);
        if (r == 0) {
            int m = fatia_oci_console_take(&cs);
            if (m < 0) {
                fatia_oci_console_close(&cs);
                snprintf(why, why_n, "runc create sent no terminal: %s", fatia_strerror(m));
                goto fail;
            }
            *io->ret_master = m;
        }
        fatia_oci_console_close(&cs);
    } else {
        r = run_runc(pod,
                     (const char *const[]){"--log", log, "--log-format", "json", "create",
                                           "--bundle", bundle, "--pid-file", pidf, id, NULL},
                     io->in, io->out, io->err, false, true, NULL);
    }
    if (r != 0) {
        runc_log_msg(log, msg, sizeof(msg));
        snprintf(why, why_n, "%s", msg[0] ? msg : "runc create failed");
        goto fail;
    }
    fd = open(pidf, O_RDONLY | O_CLOEXEC);
    n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0) {
        snprintf(why, why_n, "runc create wrote no pid file");
        goto fail;
    }
    buf[n] = '\0';
    *ret_pid = (pid_t)strtol(buf, NULL, 10);
    r = run_runc(pod,
                 (const char *const[]){"--log", log, "--log-format", "json", "start", id, NULL}, -1,
                 -1, -1, false, true, NULL);
    if (r != 0) {
        runc_log_msg(log, msg, sizeof(msg));
        snprintf(why, why_n, "%s", msg[0] ? msg : "runc start failed");
        goto fail;
    }
    return 0;
fail:
    (void)run_runc(pod, (const char *const[]){"delete", "--force", id, NULL}, -1, -1, -1, false,
                   true, NULL);
    unmount_rootfs(rdir);
    remove_upper(rdir);
    return -EIO;
}

static int oci_kill(struct fatia_rt_pod *pod, const struct fatia_rt_ctr *c, pid_t pid, int sig)
{
    (void)pod;
    /* the container's init in our pid namespace; SIGKILL of it ends its whole pid namespace */
    if (c && pid > 0)
        return kill(pid, sig) < 0 ? -errno : 0;
    return 0;
}

static void oci_cleanup(struct fatia_rt_pod *pod, const struct fatia_rt_ctr *c)
{
    char rdir[4000], id[512];
    struct stat st;

    rootfs_dir(c, rdir, sizeof(rdir));
    fatia_oci_ctr_id(pod->uid, c->name, id, sizeof(id));
    /* runc makes its --root (and the parents) on any command, delete included: none once that
     * directory is gone (with the data directory: shim_dirwatch.c), which holds no container
     * then, and whose removal must stay done */
    if (stat(runc_root(pod), &st) == 0 || errno != ENOENT)
        (void)run_runc(pod, (const char *const[]){"delete", "--force", id, NULL}, -1, -1, -1, false,
                       true, NULL);
    unmount_rootfs(rdir);
    remove_upper(rdir);
}

static void oci_sandbox_stop(struct fatia_rt_pod *pod)
{
    static const char *const lists[] = {"initContainers", "containers"};

    for (size_t l = 0; l < FATIA_ARRAY_SIZE(lists); l++) {
        size_t i;
        json_t *cj;
        json_array_foreach(json_object_get(pod->spec, lists[l]), i, cj)
        {
            struct fatia_rt_ctr c = {.name = fatia_json_str(cj, "name"), .spec = cj};
            if (c.name)
                oci_cleanup(pod, &c);
        }
    }
    if (pod->sandbox_pid > 0) {
        cni_del(pod); /* while the network namespace still exists */
        (void)kill(pod->sandbox_pid, SIGKILL);
        (void)waitpid(pod->sandbox_pid, NULL, 0);
    }
    {
        size_t i;
        json_t *t;
        json_array_foreach(json_object_get(json_object_get(pod->spec, "oci"), "tmpfs"), i, t)
        {
            const char *path = fatia_json_str(t, "path");
            if (path)
                (void)umount2(path, MNT_DETACH);
        }
    }
    pod_cgroup_remove(pod);
    /* anything else re-parented to us (a container's init that we did not know) */
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int fatia_runtime_oci_release(const char *pod_dir)
{
    static const char *const lists[] = {"initContainers", "containers"};
    char path[4200];
    json_t *spec;
    struct fatia_rt_pod pod = {0};
    size_t i;
    json_t *t;

    snprintf(path, sizeof(path), "%.4000s/spec.json", pod_dir);
    spec = json_load_file(path, 0, NULL);
    if (!spec)
        return -ENOENT;
    if (!fatia_json_str(spec, "runtime") || strcmp(fatia_json_str(spec, "runtime"), "oci")) {
        json_decref(spec);
        return 0; /* a process pod: nothing outside its processes */
    }
    pod.spec = spec;
    pod.dir = pod_dir;
    pod.uid = fatia_json_str(spec, "uid");
    pod.ns = fatia_json_str(spec, "namespace");
    pod.name = fatia_json_str(spec, "name");
    if (!pod.uid) {
        json_decref(spec);
        return -EINVAL;
    }
    for (size_t l = 0; l < FATIA_ARRAY_SIZE(lists); l++) {
        json_t *cj;
        json_array_foreach(json_object_get(spec, lists[l]), i, cj)
        {
            struct fatia_rt_ctr c = {.name = fatia_json_str(cj, "name"), .spec = cj};
            if (c.name)
                oci_cleanup(&pod, &c);
        }
    }
    json_array_foreach(json_object_get(json_object_get(spec, "oci"), "tmpfs"), i, t)
    {
        const char *p = fatia_json_str(t, "path");
        if (p)
            (void)umount2(p, MNT_DETACH);
    }
    {
        /* the network namespace went with the pause process: DEL releases the address */
        const json_t *cni = json_object_get(json_object_get(spec, "oci"), "cni");
        char result[4200];
        int64_t k;
        if (cni && fatia_json_int(cni, "index", &k) && fatia_json_str(cni, "state")) {
            snprintf(result, sizeof(result), "%.4000s/cni.json", pod_dir);
            fatia_cni_del(FATIA_CNI_PLUGIN_DIR, fatia_json_str(cni, "state"), (uint32_t)k, pod.uid,
                          "", json_object_get(cni, "portMappings"), result);
        }
    }
    pod_cgroup_remove(&pod);
    json_decref(spec);
    return 0;
}

static int oci_exec(struct fatia_rt_pod *pod, const struct fatia_rt_ctr *c, char *const *argv,
                    const struct fatia_rt_stdio *io, pid_t *ret_pid, char *why, size_t why_n)
{
    const char *args[24];
    char id[512];
    size_t n = 0, na = 0;
    int r;

    for (; argv[na]; na++) {
    }
    fatia_oci_ctr_id(pod->uid, c->name, id, sizeof(id));
    if (na > FATIA_ARRAY_SIZE(args) - 5) {
        snprintf(why, why_n, "at most %zu arguments", FATIA_ARRAY_SIZE(args) - 5);
        return -E2BIG;
    }
    if (io->tty) {
        /* the container's own pty, over runc's console socket (oci_console.c) */
        const char *prefix[] = {runc_path(pod), "--root", runc_root(pod), "exec", NULL};
        return fatia_oci_console_exec(prefix, id, argv, io->in, ret_pid, why, why_n);
    }
    args[n++] = "exec";
    args[n++] = id;
    for (size_t i = 0; i < na; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    r = run_runc(pod, args, io->in, io->out, io->err, false, false, ret_pid);
    if (r < 0)
        snprintf(why, why_n, "cannot run runc exec: %s", fatia_strerror(r));
    return r;
}

const struct fatia_runtime fatia_runtime_oci = {
    .name = FATIA_RUNTIME_OCI,
    .sandbox_start = oci_sandbox_start,
    .create = oci_create,
    .kill = oci_kill,
    .cleanup = oci_cleanup,
    .sandbox_stop = oci_sandbox_stop,
    .exec = oci_exec,
};

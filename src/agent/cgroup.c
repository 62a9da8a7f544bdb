/*
 * agent/cgroup.c: pod cgroups on cgroup v2 (see cgroup.h).
 *
 * Where the pods' cgroups go: a directory "fatia" beside fatiad's own cgroup when fatiad sits in
 * the root of the hierarchy (a container with its own cgroup namespace, a hybrid host's unified
 * mount), else "fatia-pods" under fatiad's cgroup. cgroup v2 allows controllers in a child only
 * when the parent has no processes of its own ("no internal processes"), so in the second case
 * fatiad first moves itself into a leaf "fatiad" of its cgroup, as container runtimes do when a
 * systemd unit delegates them a subtree.
 *
 * Rejected: cgroup v1. A hybrid host (this project's CI machines among them) has memory and cpu
 * only in v1 hierarchies; supporting both doubles the code for a layout that distributions have
 * left. There the pods still get a v2 cgroup (grouping, cgroup.kill, the device filter), and the
 * log says that memory and cpu limits are not enforced.
 */
#include "base/compat.h"

#include "agent/cgroup.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    int r = 0;

    if (fd < 0)
        return -errno;
    if (write(fd, text, strlen(text)) < 0)
        r = -errno;
    close(fd);
    return r;
}

static int read_file(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t len;

    if (fd < 0)
        return -errno;
    len = read(fd, buf, n - 1);
    close(fd);
    if (len < 0)
        return -errno;
    buf[len] = '\0';
    return 0;
}

static bool has_word(const char *list, const char *word)
{
    size_t n = strlen(word);

    for (const char *p = list; (p = strstr(p, word)); p += n) {
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
            return true;
    }
    return false;
}

/* The cgroup2 mount point, from /proc/self/mountinfo. */
static int find_mount(char *buf, size_t n)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[4096];
    int found = -ENOENT;

    if (!f)
        return -errno;
    while (fgets(line, sizeof(line), f)) {
        char *sep = strstr(line, " - "), *mp, *end;
        if (!sep || strncmp(sep + 3, "cgroup2 ", 8))
            continue;
        /* id parent major:minor root mountpoint ... */
        mp = line;
        for (int i = 0; i < 4 && mp; i++) {
            mp = strchr(mp, ' ');
            if (mp)
                mp++;
        }
        if (!mp)
            continue;
        end = strchr(mp, ' ');
        if (!end)
            continue;
        *end = '\0';
        if (found < 0 || !strcmp(mp, "/sys/fs/cgroup")) {
            snprintf(buf, n, "%s", mp);
            found = 0;
        }
    }
    fclose(f);
    return found;
}

/* fatiad's own cgroup in the v2 hierarchy ("0::/path"). */
static int own_cgroup(char *buf, size_t n)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    char line[2048];
    int r = -ENOENT;

    if (!f)
        return -errno;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "0::", 3))
            continue;
        line[strcspn(line, "\n")] = '\0';
        snprintf(buf, n, "%.2000s", line + 3);
        r = 0;
    }
    fclose(f);
    return r;
}

/* Enables what it can of memory and cpu in dir's children. */
static void enable(const char *dir, bool *mem, bool *cpu)
{
    char path[4200], avail[512] = "", on[512] = "";

    snprintf(path, sizeof(path), "%s/cgroup.controllers", dir);
    (void)read_file(path, avail, sizeof(avail));
    snprintf(path, sizeof(path), "%s/cgroup.subtree_control", dir);
    if (*mem && has_word(avail, "memory"))
        (void)write_file(path, "+memory");
    if (*cpu && has_word(avail, "cpu"))
        (void)write_file(path, "+cpu");
    (void)write_file(path, "+pids");
    (void)read_file(path, on, sizeof(on));
    *mem = *mem && has_word(on, "memory");
    *cpu = *cpu && has_word(on, "cpu");
}

void fatia_cgroups_init(struct fatia_cgroups *cg, const char *want)
{
    char mount[1024], own[2048], base[3100], path[3300], avail[512] = "";
    bool mem = true, cpu = true;
    int r;

    *cg = (struct fatia_cgroups){0};
    if (want && !strcmp(want, "off")) {
        snprintf(cg->why, sizeof(cg->why), "pod cgroups are off (--agent cgroup=off)");
        return;
    }
    if (find_mount(mount, sizeof(mount)) < 0) {
        snprintf(cg->why, sizeof(cg->why), "no cgroup v2 hierarchy is mounted");
        return;
    }
    if (want && strcmp(want, "auto")) {
        snprintf(cg->parent, sizeof(cg->parent), "%s", want);
        snprintf(base, sizeof(base), "%s", want);
        char *slash = strrchr(base, '/');
        if (slash && slash != base)
            *slash = '\0';
    } else {
        if (own_cgroup(own, sizeof(own)) < 0) {
            snprintf(cg->why, sizeof(cg->why), "fatiad's cgroup v2 path is unknown");
            return;
        }
        if (!strcmp(own, "/")) {
            snprintf(base, sizeof(base), "%s", mount);
            snprintf(cg->parent, sizeof(cg->parent), "%s/fatia", mount);
        } else {
            snprintf(base, sizeof(base), "%s%s", mount, own);
            snprintf(cg->parent, sizeof(cg->parent), "%s%s/fatia-pods", mount, own);
        }
    }
    if (access(base, W_OK) < 0) {
        snprintf(cg->why, sizeof(cg->why), "cgroup '%.300s' is not writable by this user (%s)",
                 base, fatia_strerror(-errno));
        cg->parent[0] = '\0';
        return;
    }
    snprintf(path, sizeof(path), "%s/cgroup.controllers", base);
    (void)read_file(path, avail, sizeof(avail));
    enable(base, &mem, &cpu);
    if ((has_word(avail, "memory") && !mem) || (has_word(avail, "cpu") && !cpu)) {
        /* "no internal processes": leave base for a leaf, then try again */
        char leaf[3200];
        snprintf(leaf, sizeof(leaf), "%s/fatiad", base);
        if (strcmp(base, mount) && (mkdir(leaf, 0755) == 0 || errno == EEXIST)) {
            snprintf(path, sizeof(path), "%s/cgroup.procs", leaf);
            if (write_file(path, "0") == 0) {
                fatia_info("agent: moved fatiad into cgroup '%s' so that pods' cgroups can have "
                           "controllers",
                           leaf);
                mem = cpu = true;
                enable(base, &mem, &cpu);
            }
        }
    }
    r = mkdir(cg->parent, 0755);
    if (r < 0 && errno != EEXIST) {
        snprintf(cg->why, sizeof(cg->why), "cannot create cgroup '%.300s': %s", cg->parent,
                 fatia_strerror(-errno));
        cg->parent[0] = '\0';
        return;
    }
    enable(cg->parent, &mem, &cpu);
    cg->enabled = true;
    cg->memory = mem;
    cg->cpu = cpu;
    if (!mem || !cpu)
        snprintf(
            cg->why, sizeof(cg->why),
            "pod cgroups under '%.200s' without the %s%s%s controller%s (not available in this "
            "cgroup v2 hierarchy%s): %s%s%s not enforced",
            cg->parent, mem ? "" : "memory", !mem && !cpu ? " and " : "", cpu ? "" : "cpu",
            !mem && !cpu ? "s" : "",
            strstr(mount, "unified") ? "; a hybrid host keeps them in cgroup v1" : "",
            mem ? "" : "memory limits", !mem && !cpu ? " and " : "", cpu ? "" : "cpu limits");
}

unsigned fatia_cgroup_cpu_weight(int64_t request_milli)
{
    uint64_t shares = request_milli > 0 ? (uint64_t)request_milli * 1024 / 1000 : 2;

    if (shares < 2)
        shares = 2;
    if (shares > 262144)
        shares = 262144;
    return (unsigned)(1 + ((shares - 2) * 9999) / 262142);
}

int fatia_cgroup_pod_create(const struct fatia_cgroups *cg, const char *pod_uid,
                            const struct fatia_pod_limits *lim, char *path, size_t path_n,
                            char *why, size_t why_n)
{
    char f[4300], v[64];
    int r;

    if (!cg->enabled)
        return -ENOTSUP;
    if ((size_t)snprintf(path, path_n, "%s/pod-%s", cg->parent, pod_uid) >= path_n)
        return -ENAMETOOLONG;
    if (mkdir(path, 0755) < 0 && errno != EEXIST) {
        r = -errno;
        snprintf(why, why_n, "cannot create cgroup '%.300s': %s", path, fatia_strerror(r));
        return r;
    }
    if (cg->memory && lim->memory_limit > 0) {
        snprintf(f, sizeof(f), "%s/memory.max", path);
        snprintf(v, sizeof(v), "%" PRId64, lim->memory_limit);
        if ((r = write_file(f, v)) < 0) {
            snprintf(why, why_n, "cannot set '%.300s' to %s: %s", f, v, fatia_strerror(r));
            return r;
        }
        snprintf(f, sizeof(f), "%s/memory.swap.max", path);
        (void)write_file(f, "0");
    }
    if (cg->cpu) {
        if (lim->cpu_limit_milli > 0) {
            /* kubelet: quota = milli * period / 1000, period 100 ms, at least 1 ms */
            int64_t quota = FATIA_MAX(lim->cpu_limit_milli * 100, (int64_t)1000);
            snprintf(f, sizeof(f), "%s/cpu.max", path);
            snprintf(v, sizeof(v), "%" PRId64 " 100000", quota);
            if ((r = write_file(f, v)) < 0) {
                snprintf(why, why_n, "cannot set '%.300s' to %s: %s", f, v, fatia_strerror(r));
                return r;
            }
        }
        snprintf(f, sizeof(f), "%s/cpu.weight", path);
        snprintf(v, sizeof(v), "%u", fatia_cgroup_cpu_weight(lim->cpu_request_milli));
        (void)write_file(f, v);
    }
    return 0;
}

void fatia_cgroup_kill(const char *path)
{
    char f[4300];
    FILE *procs;
    long pid;

    snprintf(f, sizeof(f), "%s/cgroup.kill", path);
    if (write_file(f, "1") == 0)
        return;
    snprintf(f, sizeof(f), "%s/cgroup.procs", path);
    procs = fopen(f, "re");
    if (!procs)
        return;
    while (fscanf(procs, "%ld", &pid) == 1) {
        if (pid > 1)
            (void)kill((pid_t)pid, SIGKILL);
    }
    fclose(procs);
}

bool fatia_cgroup_populated(const char *path)
{
    char f[4300], buf[512];

    snprintf(f, sizeof(f), "%s/cgroup.events", path);
    if (read_file(f, buf, sizeof(buf)) < 0)
        return false;
    return strstr(buf, "populated 1") != NULL;
}

int fatia_cgroup_remove(const char *path)
{
    if (rmdir(path) < 0 && errno != ENOENT)
        return -errno;
    return 0;
}

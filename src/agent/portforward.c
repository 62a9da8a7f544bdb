/*
 * agent/portforward.c: `kubectl port-forward` in the process mode: a TCP connection to a port
 * one of the pod's own processes listens on.
 *
 * Pods run in the host's network (docs/agent.md), so "the pod's port 8080" is the host's: a bare
 * connect to 127.0.0.1:8080 could reach another tenant's pod or fatiad's own listener. The
 * provider therefore connects only when a listening socket on that port belongs to a process of
 * the pod: the LISTEN entries of /proc/net/tcp and tcp6 give the sockets' inodes, and the pod's
 * processes (its cgroup's cgroup.procs, else every process of its process group) must hold one
 * of them (their /proc/PID/fd links, "socket:[INODE]"). fatiad runs as root here, so it can
 * read every pod's descriptors; the check and the connect race only with the pod itself
 * (a pod that closes its listener and lets another pod bind the port in between: the window
 * is one connect on loopback).
 *
 * The connection goes to the listener's address family on loopback (127.0.0.1 or ::1), as
 * kubelet's port-forward connects to localhost inside the pod's network namespace.
 *
 * A pod with a network namespace of its own (the OCI runtime with CNI: its sandbox holder,
 * fatia-pause, the status file's pgid, holds it): every listener of that namespace is the
 * pod's, so its /proc/PID/net/tcp{,6} is the check, and the connection is made inside it, on its
 * loopback: a short-lived thread setns()es into the namespace, makes the socket (a socket stays
 * in the namespace it was made in) and connects. The holder's start time is checked against the
 * status file's, so a reused pid is never entered.
 */
#include "base/compat.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/agent_int.h"
#include "agent/proc.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "client/plugin.h"

#define PF_MAX_INODES 64

struct listeners {
    unsigned long inode[PF_MAX_INODES];
    bool v6[PF_MAX_INODES];
    size_t n;
};

static void scan_net(const char *path, int port, bool v6, struct listeners *l)
{
    FILE *f = fopen(path, "re");
    char line[512];

    if (!f)
        return;
    if (!fgets(line, sizeof(line), f)) { /* the header */
        fclose(f);
        return;
    }
    while (fgets(line, sizeof(line), f) && l->n < PF_MAX_INODES) {
        char local[64], remote[64];
        unsigned st, lport;
        unsigned long inode;
        char *colon;
        /* sl local rem st tx:rx tr:tm retrnsmt uid timeout inode */
        if (sscanf(line, "%*s %63s %63s %x %*s %*s %*s %*s %*s %lu", local, remote, &st, &inode) !=
            4)
            continue;
        colon = strrchr(local, ':');
        if (!colon || st != 0x0A || sscanf(colon + 1, "%x", &lport) != 1 || (int)lport != port)
            continue;
        l->v6[l->n] = v6;
        l->inode[l->n++] = inode;
    }
    fclose(f);
}

/* Whether pid holds one of the sockets; sets *v6 to its family. */
static bool holds(pid_t pid, const struct listeners *l, bool *v6)
{
    char dir[64], link[128], target[64];
    struct dirent *d;
    DIR *dp;
    bool found = false;

    snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
    dp = opendir(dir);
    if (!dp)
        return false;
    while (!found && (d = readdir(dp))) {
        ssize_t n;
        unsigned long inode;
        if (d->d_name[0] == '.')
            continue;
        snprintf(link, sizeof(link), "%s/%.20s", dir, d->d_name);
        n = readlink(link, target, sizeof(target) - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        if (sscanf(target, "socket:[%lu]", &inode) != 1)
            continue;
        for (size_t i = 0; i < l->n; i++)
            if (l->inode[i] == inode) {
                *v6 = l->v6[i];
                found = true;
            }
    }
    closedir(dp);
    return found;
}

/* The pod's processes: its cgroup's, else its process group's. */
static bool pod_holds(const char *cgroup, int64_t pgid, const struct listeners *l, bool *v6)
{
    char path[4200];
    FILE *f = NULL;
    int pid;

    if (cgroup) {
        snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
        f = fopen(path, "re");
    }
    if (f) {
        bool found = false;
        while (!found && fscanf(f, "%d", &pid) == 1)
            found = holds(pid, l, v6);
        fclose(f);
        return found;
    }
    if (pgid > 0) {
        DIR *dp = opendir("/proc");
        struct dirent *d;
        bool found = false;
        while (dp && !found && (d = readdir(dp))) {
            char stat[4096];
            long grp = 0;
            FILE *sf;
            char *rp;
            pid = (int)strtol(d->d_name, NULL, 10);
            if (pid <= 0)
                continue;
            snprintf(path, sizeof(path), "/proc/%d/stat", pid);
            sf = fopen(path, "re");
            if (!sf)
                continue;
            rp = fgets(stat, sizeof(stat), sf) ? strrchr(stat, ')') : NULL;
            fclose(sf);
            /* ") S PPID PGRP" */
            if (rp && sscanf(rp + 2, "%*c %*d %ld", &grp) == 1 && grp == pgid)
                found = holds(pid, l, v6);
        }
        if (dp)
            closedir(dp);
        return found;
    }
    return false;
}

/* Connects to port on loopback (v6: ::1) in the calling thread's network namespace. */
static int connect_loopback(int port, bool v6, int *ret_fd)
{
    int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool ok;

    if (fd < 0)
        return -errno;
    if (v6) {
        struct sockaddr_in6 sa = {.sin6_family = AF_INET6,
                                  .sin6_port = htons((uint16_t)port),
                                  .sin6_addr = IN6ADDR_LOOPBACK_INIT};
        ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    } else {
        struct sockaddr_in sa = {.sin_family = AF_INET,
                                 .sin_port = htons((uint16_t)port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    }
    if (!ok) {
        int e = -errno;
        close(fd);
        return e;
    }
    *ret_fd = fd;
    return 0;
}

struct netns_connect {
    int nsfd, port, fd, rc;
    bool v6;
};

static void *netns_thread(void *arg)
{
    struct netns_connect *c = arg;

    c->rc = setns(c->nsfd, CLONE_NEWNET) < 0 ? -errno : connect_loopback(c->port, c->v6, &c->fd);
    return NULL;
}

/* The pod's own network namespace (its sandbox holder's, when not the agent's): an open
 * descriptor of it, or -1 (the host's network, or no holder we can trust). */
static int pod_netns(const json_t *shim, char *proc_dir, size_t n)
{
    struct stat mine, theirs;
    int64_t pid = 0, start = 0;
    uint64_t now = 0;
    char path[96];
    int fd;

    if (!fatia_json_int(shim, "pgid", &pid) || pid <= 0 ||
        !fatia_json_int(shim, "pauseStart", &start) || start <= 0 ||
        fatia_proc_start_time((pid_t)pid, &now) < 0 || now != (uint64_t)start)
        return -1;
    snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
    if (stat("/proc/self/ns/net", &mine) < 0 || stat(path, &theirs) < 0 ||
        (mine.st_ino == theirs.st_ino && mine.st_dev == theirs.st_dev))
        return -1;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    snprintf(proc_dir, n, "/proc/%d/net", (int)pid);
    return fd;
}

int fatia_agent_portforward(void *agent, const json_t *pod, int port, int *ret_fd, char *why,
                            size_t why_n)
{
    struct fatia_agent *a = agent;
    const char *uid = fatia_json_str(json_object_get(pod, "metadata"), "uid");
    const char *name = fatia_json_str(json_object_get(pod, "metadata"), "name");
    struct listeners l = {0};
    char path[1400];
    json_t *spec;
    int64_t pgid = 0;
    bool v6 = false, ok;
    struct apod *p = uid ? fatia_agent_pod(a, uid) : NULL;
    int fd;

    if (!p || !p->shim || !p->local) {
        snprintf(why, why_n, "pod %s does not run on this node yet", name ? name : "");
        return -EAGAIN;
    }
    (void)fatia_json_int(p->shim, "pgid", &pgid);
    {
        char net[64];
        int nsfd = pod_netns(p->shim, net, sizeof(net));
        if (nsfd >= 0) {
            struct netns_connect c = {.nsfd = nsfd, .port = port, .fd = -1, .rc = -EIO};
            pthread_t th;
            char tcp[96];
            snprintf(tcp, sizeof(tcp), "%s/tcp", net);
            scan_net(tcp, port, false, &l);
            snprintf(tcp, sizeof(tcp), "%s/tcp6", net);
            scan_net(tcp, port, true, &l);
            if (!l.n) {
                close(nsfd);
                snprintf(why, why_n, "pod %s does not listen on port %d", name ? name : "", port);
                return -ENOENT;
            }
            c.v6 = l.v6[0];
            if (pthread_create(&th, NULL, netns_thread, &c) != 0) {
                close(nsfd);
                return -EAGAIN;
            }
            pthread_join(th, NULL);
            close(nsfd);
            if (c.rc < 0) {
                snprintf(why, why_n, "connecting to port %d of pod %s: %s", port, name ? name : "",
                         fatia_strerror(c.rc));
                return c.rc;
            }
            *ret_fd = c.fd;
            return 0;
        }
    }
    snprintf(path, sizeof(path), "%s/%s/spec.json", a->pods_dir, uid);
    spec = json_load_file(path, 0, NULL);
    scan_net("/proc/net/tcp", port, false, &l);
    scan_net("/proc/net/tcp6", port, true, &l);
    ok = l.n && pod_holds(fatia_json_str(spec, "cgroup"), pgid, &l, &v6);
    json_decref(spec);
    if (!ok) {
        snprintf(why, why_n, "pod %s does not listen on port %d", name ? name : "", port);
        return -ENOENT;
    }
    {
        int e = connect_loopback(port, v6, &fd);
        if (e < 0) {
            snprintf(why, why_n, "connecting to port %d of pod %s: %s", port, name ? name : "",
                     fatia_strerror(e));
            return e;
        }
    }
    *ret_fd = fd;
    return 0;
}

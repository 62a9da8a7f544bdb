/*
 * agent/cni_reclaim.c: the CNI leases whose sandbox is gone, found and given back (cni.h).
 *
 * Model. host-local keeps one file per address under /var/lib/cni/networks/fatia-<k>/ (the
 * address as its name; the CNI container id, which is the pod's uid, then the interface name
 * inside). A pod's network namespace is pinned by no file: the sandbox's fatia-pause process
 * holds it (and, while they run, its containers, which joined it). fatia-pause is a fork of the
 * pod's fatia-shim without an exec, so both carry the command line `fatia-shim POD_DIR`, and
 * POD_DIR's last component is the pod's uid. Before every ADD the shim writes a pin,
 * /run/fatia-cni/<uid>, holding the device and inode of the sandbox's network namespace (what
 * stat(2) of /proc/PID/ns/net gives); DEL removes it.
 *
 * The rule, which needs nothing from any other fatiad: a lease of container id U is live when
 *   (a) a process on the host runs `fatia-shim ... .../U` (the shim or its pause: an ADD in
 *       flight, a running pod of any fatiad, old or new), or
 *   (b) the pin of U names a network namespace that some process is in, or that a nsfs mount
 *       holds (a container that outlived its pause keeps the namespace, and so its address).
 * Otherwise it is stale: no process can use the address any more (a SIGKILLed shim and its
 * pause, a node that crashed: /run is a tmpfs, so after a reboot no pin and no namespace exist).
 * A stale lease is given back by CNI DEL for U without a namespace (portmap's first, which drops
 * the host ports U published, so that no DNAT keeps pointing at an address given to another
 * pod; the bridge plugin then only runs host-local's DEL, which releases U's addresses under its
 * lock); if the file is still there
 * after that, it is removed under host-local's own lock (flock of the directory's `lock`), after
 * reading it again (it must still name U). Pins of ids that are not live go too.
 *
 * When: at the agent's start, before it adopts its shims, over every fatia-<k> network; and when
 * an ADD fails because the range is exhausted (the shim reclaims that network, then retries once).
 *
 * Invariants: a lease of a live sandbox is never removed, whichever fatiad runs it: the leases
 * are listed before the processes are scanned, and a sandbox's shim exists before its ADD and
 * until after its DEL, so a listed lease whose sandbox lives has a shim the scan sees (or a
 * pinned namespace still held); DEL is by container id, and the fallback removal re-reads the
 * file under the lock, so an address given to another id meanwhile is never touched. Only files
 * named by an IPv4 address are touched; one info line per reclaimed lease.
 * The host-side veths need nothing: a veth pair dies with the network namespace of its peer, so
 * once a sandbox is gone its veth is gone too (measured: tests/cli/containers-cni-reclaim.sh
 * counts the bridge's ports after the SIGKILL).
 *
 * Rejected: a bind-mounted nsfs file per sandbox as the pin (it would keep a dead pod's namespace
 * and veth alive after a SIGKILL: the leak this file ends); asking each fatiad which pods it has
 * (fatiads on one host do not know each other, and a dead one cannot answer); the lease's address
 * answering ARP or ping (an ADD in flight has the lease before the address is configured, and a
 * pod may drop ICMP); a lease's age (a pod lives for as long as it likes); killing an orphan
 * shim whose POD_DIR is gone: a process of somebody else's fatiad, which no agent may end on a
 * guess. The shim ends itself instead (shim_dirwatch.c): it notices its POD_DIR removed, stops
 * its pod and runs DEL.
 */
#include "base/compat.h"

#include <arpa/inet.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "agent/cni.h"
#include "base/alloc.h"
#include "base/log.h"

/* ---- the rule (pure) ---- */

bool fatia_cni_sandbox_live(const struct fatia_cni_host *h, const char *id,
                            const struct fatia_cni_ns *pin)
{
    for (size_t i = 0; i < h->n_shim_ids; i++) {
        if (!strcmp(h->shim_ids[i], id))
            return true;
    }
    if (!pin)
        return false;
    for (size_t i = 0; i < h->n_netns; i++) {
        if (h->netns[i].dev == pin->dev && h->netns[i].ino == pin->ino)
            return true;
    }
    return false;
}

/* ---- what the host shows ---- */

static int add_ns(struct fatia_cni_host *h, const struct stat *st)
{
    for (size_t i = 0; i < h->n_netns; i++) {
        if (h->netns[i].dev == (uint64_t)st->st_dev && h->netns[i].ino == (uint64_t)st->st_ino)
            return 0;
    }
    if (h->n_netns == h->cap_netns) {
        size_t cap = h->cap_netns ? h->cap_netns * 2 : 64;
        struct fatia_cni_ns *v = fatia_realloc(h->netns, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        h->netns = v;
        h->cap_netns = cap;
    }
    h->netns[h->n_netns++] = (struct fatia_cni_ns){(uint64_t)st->st_dev, (uint64_t)st->st_ino};
    return 0;
}

static int add_id(struct fatia_cni_host *h, const char *arg)
{
    char buf[FATIA_CNI_ID_MAX];
    size_t n;
    const char *base;
    char **v;

    snprintf(buf, sizeof(buf), "%s", arg);
    n = strlen(buf);
    while (n > 1 && buf[n - 1] == '/')
        buf[--n] = '\0';
    base = strrchr(buf, '/');
    base = base ? base + 1 : buf;
    if (!base[0])
        return 0;
    if (h->n_shim_ids == h->cap_shim_ids) {
        size_t cap = h->cap_shim_ids ? h->cap_shim_ids * 2 : 32;
        v = fatia_realloc(h->shim_ids, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        h->shim_ids = v;
        h->cap_shim_ids = cap;
    }
    h->shim_ids[h->n_shim_ids] = fatia_strdup(base);
    if (!h->shim_ids[h->n_shim_ids])
        return -ENOMEM;
    h->n_shim_ids++;
    return 0;
}

/* /proc/PID/cmdline of a fatia-shim (or of its pause, a fork): every argument's last component */
static int scan_cmdline(struct fatia_cni_host *h, const char *proc, const char *pid)
{
    char path[600], buf[8192];
    const char *a0, *b;
    ssize_t n;
    int fd, r = 0;

    snprintf(path, sizeof(path), "%.500s/%.40s/cmdline", proc, pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0; /* gone meanwhile */
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    a0 = buf;
    b = strrchr(a0, '/');
    b = b ? b + 1 : a0;
    if (strcmp(b, "fatia-shim"))
        return 0;
    for (const char *p = a0 + strlen(a0) + 1; p < buf + n && r == 0; p += strlen(p) + 1)
        r = add_id(h, p);
    return r;
}

/* nsfs mounts (ip netns add, or any other pin) hold a namespace too */
static int scan_mounts(struct fatia_cni_host *h, const char *proc)
{
    char path[600], line[4200];
    FILE *f;
    int r = 0;

    snprintf(path, sizeof(path), "%.500s/self/mountinfo", proc);
    f = fopen(path, "re");
    if (!f)
        return 0;
    while (r == 0 && fgets(line, sizeof(line), f)) {
        char mp[4200];
        struct stat st;
        if (!strstr(line, " - nsfs ") || sscanf(line, "%*s %*s %*s %*s %4199s", mp) != 1)
            continue;
        if (stat(mp, &st) == 0)
            r = add_ns(h, &st);
    }
    fclose(f);
    return r;
}

int fatia_cni_host_scan(struct fatia_cni_host *h, const char *proc)
{
    DIR *d = opendir(proc);
    struct dirent *e;
    int r = 0;

    memset(h, 0, sizeof(*h));
    if (!d)
        return -errno;
    while (r == 0 && (e = readdir(d))) {
        char path[600];
        struct stat st;
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        r = scan_cmdline(h, proc, e->d_name);
        snprintf(path, sizeof(path), "%.500s/%.40s/ns/net", proc, e->d_name);
        if (r == 0 && stat(path, &st) == 0)
            r = add_ns(h, &st);
    }
    closedir(d);
    if (r == 0)
        r = scan_mounts(h, proc);
    if (r < 0)
        fatia_cni_host_free(h);
    return r;
}

void fatia_cni_host_free(struct fatia_cni_host *h)
{
    for (size_t i = 0; i < h->n_shim_ids; i++)
        free(h->shim_ids[i]);
    free(h->shim_ids);
    free(h->netns);
    memset(h, 0, sizeof(*h));
}

/* ---- pins ---- */

bool fatia_cni_id_ok(const char *id)
{
    size_t n = strlen(id);
    return n > 0 && n < FATIA_CNI_ID_MAX && !strchr(id, '/') && id[0] != '.';
}

int fatia_cni_pin_read(const char *pin_dir, const char *id, struct fatia_cni_ns *ret)
{
    char path[600];
    unsigned long long dev, ino;
    FILE *f;
    int n;

    snprintf(path, sizeof(path), "%.300s/%.250s", pin_dir, id);
    f = fopen(path, "re");
    if (!f)
        return -errno;
    n = fscanf(f, "%llu %llu", &dev, &ino);
    fclose(f);
    if (n != 2)
        return -EINVAL;
    ret->dev = dev;
    ret->ino = ino;
    return 0;
}

int fatia_cni_pin_write(const char *pin_dir, const char *id, const char *netns)
{
    char path[600], tmp[620], text[64];
    struct stat st;
    int fd, n, r = 0;

    if (!fatia_cni_id_ok(id))
        return -EINVAL;
    if (stat(netns, &st) < 0)
        return -errno;
    if (mkdir(pin_dir, 0700) < 0 && errno != EEXIST)
        return -errno;
    snprintf(path, sizeof(path), "%.300s/%.250s", pin_dir, id);
    snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
    n = snprintf(text, sizeof(text), "%llu %llu\n", (unsigned long long)st.st_dev,
                 (unsigned long long)st.st_ino);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    if (write(fd, text, (size_t)n) != n)
        r = -EIO;
    close(fd);
    if (r == 0 && rename(tmp, path) < 0)
        r = -errno;
    if (r < 0)
        (void)unlink(tmp);
    return r;
}

void fatia_cni_pin_remove(const char *pin_dir, const char *id)
{
    char path[600];

    if (!fatia_cni_id_ok(id))
        return;
    snprintf(path, sizeof(path), "%.300s/%.250s", pin_dir, id);
    (void)unlink(path);
}

/* ---- reclaim ---- */

/* The lease file's container id and interface name ("ID\r\nIFNAME", or "ID" alone). */
static int read_lease(int dfd, const char *name, char *id, size_t id_n, char *ifname, size_t if_n)
{
    char buf[600];
    ssize_t n;
    char *cr;
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

    if (fd < 0)
        return -errno;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -EINVAL;
    buf[n] = '\0';
    cr = strpbrk(buf, "\r\n");
    snprintf(ifname, if_n, "eth0");
    if (cr) {
        char *rest = cr + strspn(cr, "\r\n"), *end;
        *cr = '\0';
        end = strpbrk(rest, "\r\n");
        if (end)
            *end = '\0';
        if (rest[0])
            snprintf(ifname, if_n, "%s", rest);
    }
    if (!buf[0] || strlen(buf) >= id_n)
        return -EINVAL;
    snprintf(id, id_n, "%s", buf);
    return 0;
}

/* The file, if it still names id, removed under host-local's lock. */
static void remove_locked(int dfd, const char *name, const char *id)
{
    char now[FATIA_CNI_ID_MAX], ifname[64];
    int lk = openat(dfd, "lock", O_RDONLY | O_CREAT | O_CLOEXEC, 0644);

    if (lk < 0 || flock(lk, LOCK_EX) < 0) {
        if (lk >= 0)
            close(lk);
        return;
    }
    if (read_lease(dfd, name, now, sizeof(now), ifname, sizeof(ifname)) == 0 && !strcmp(now, id))
        (void)unlinkat(dfd, name, 0);
    close(lk);
}

struct lease {
    uint32_t k;
    char name[INET_ADDRSTRLEN];
    char id[FATIA_CNI_ID_MAX];
    char ifname[64];
};

struct leases {
    struct lease *v;
    size_t n, cap;
};

/* The leases of network k as they are now. */
static int list_net(struct leases *ls, const char *lease_dir, uint32_t k)
{
    char dir[600];
    struct dirent *e;
    DIR *d;

    snprintf(dir, sizeof(dir), "%.500s/fatia-%u", lease_dir, k);
    d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : -errno;
    while ((e = readdir(d))) {
        struct in_addr a;
        struct lease l = {.k = k};

        if (inet_pton(AF_INET, e->d_name, &a) != 1)
            continue; /* lock, last_reserved_ip.0 */
        if (read_lease(dirfd(d), e->d_name, l.id, sizeof(l.id), l.ifname, sizeof(l.ifname)) < 0)
            continue;
        if (strlen(e->d_name) >= sizeof(l.name))
            continue;
        memcpy(l.name, e->d_name, strlen(e->d_name) + 1);
        if (ls->n == ls->cap) {
            size_t cap = ls->cap ? ls->cap * 2 : 64;
            struct lease *v = fatia_realloc(ls->v, cap * sizeof(*v));
            if (!v) {
                closedir(d);
                return -ENOMEM;
            }
            ls->v = v;
            ls->cap = cap;
        }
        ls->v[ls->n++] = l;
    }
    closedir(d);
    return 0;
}

static bool reclaim_one(const struct lease *l, const char *plugin_dir, const char *lease_dir,
                        const char *pin_dir)
{
    char dir[600], again[FATIA_CNI_ID_MAX], ifname[64];
    int dfd;
    bool gone;

    fatia_cni_del_lease(plugin_dir, l->k, l->id, l->ifname);
    snprintf(dir, sizeof(dir), "%.500s/fatia-%u", lease_dir, l->k);
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return false;
    if (read_lease(dfd, l->name, again, sizeof(again), ifname, sizeof(ifname)) == 0 &&
        !strcmp(again, l->id))
        remove_locked(dfd, l->name, l->id); /* DEL could not run */
    gone = !(read_lease(dfd, l->name, again, sizeof(again), ifname, sizeof(ifname)) == 0 &&
             !strcmp(again, l->id));
    close(dfd);
    if (!gone) {
        fatia_warn("cni: cannot reclaim %s of %s in fatia-%u", l->name, l->id, l->k);
        return false;
    }
    fatia_info("cni: reclaimed %s of %s (its sandbox is gone)", l->name, l->id);
    fatia_cni_pin_remove(pin_dir, l->id);
    return true;
}

/* The pins now (their ids in ls->v[].id, k unused), to be pruned after the scan. */
static int list_pins(struct leases *ls, const char *pin_dir)
{
    DIR *d = opendir(pin_dir);
    struct dirent *e;

    if (!d)
        return 0;
    while ((e = readdir(d))) {
        if (!fatia_cni_id_ok(e->d_name) || strstr(e->d_name, ".tmp"))
            continue;
        if (ls->n == ls->cap) {
            size_t cap = ls->cap ? ls->cap * 2 : 64;
            struct lease *v = fatia_realloc(ls->v, cap * sizeof(*v));
            if (!v) {
                closedir(d);
                return -ENOMEM;
            }
            ls->v = v;
            ls->cap = cap;
        }
        memset(&ls->v[ls->n], 0, sizeof(ls->v[0]));
        snprintf(ls->v[ls->n++].id, sizeof(ls->v[0].id), "%s", e->d_name);
    }
    closedir(d);
    return 0;
}

/* Pins whose id is not live (a pod that was never given an address, or whose lease went). */
static void prune_pins(const struct fatia_cni_host *h, const struct leases *pins,
                       const char *pin_dir)
{
    for (size_t i = 0; i < pins->n; i++) {
        struct fatia_cni_ns pin;
        if (fatia_cni_pin_read(pin_dir, pins->v[i].id, &pin) == 0 &&
            !fatia_cni_sandbox_live(h, pins->v[i].id, &pin))
            fatia_cni_pin_remove(pin_dir, pins->v[i].id);
    }
}

int fatia_cni_reclaim(const char *plugin_dir, const char *lease_dir, const char *pin_dir, int64_t k)
{
    struct leases ls = {0}, pins = {0};
    struct fatia_cni_host h;
    int r = 0, n = 0;

    /* the leases first, the processes after: a lease that exists before the scan belongs to a
     * sandbox whose shim the scan sees, if it lives (a shim starts before its ADD) */
    if (k >= 0) {
        r = list_net(&ls, lease_dir, (uint32_t)k);
    } else {
        DIR *d = opendir(lease_dir);
        struct dirent *e;
        while (r == 0 && d && (e = readdir(d))) {
            unsigned int kk;
            char rest;
            if (sscanf(e->d_name, "fatia-%u%c", &kk, &rest) == 1)
                r = list_net(&ls, lease_dir, kk);
        }
        if (d)
            closedir(d);
    }
    if (r == 0 && k < 0)
        r = list_pins(&pins, pin_dir);
    if (r == 0)
        r = fatia_cni_host_scan(&h, "/proc");
    if (r < 0) {
        free(ls.v);
        free(pins.v);
        return r;
    }
    for (size_t i = 0; i < ls.n; i++) {
        struct fatia_cni_ns pin;
        bool have_pin =
            fatia_cni_id_ok(ls.v[i].id) && fatia_cni_pin_read(pin_dir, ls.v[i].id, &pin) == 0;
        if (!fatia_cni_sandbox_live(&h, ls.v[i].id, have_pin ? &pin : NULL) &&
            reclaim_one(&ls.v[i], plugin_dir, lease_dir, pin_dir))
            n++;
    }
    prune_pins(&h, &pins, pin_dir);
    fatia_cni_host_free(&h);
    free(ls.v);
    free(pins.v);
    return n;
}

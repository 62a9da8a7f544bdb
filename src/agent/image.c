/*
 * agent/image.c: the node's image store (image.h).
 *
 * Model. One OCI image layout (index.json + blobs/sha256) that skopeo writes and umoci reads;
 * a name is an index entry's org.opencontainers.image.ref.name. A rootfs is unpacked by umoci
 * (`raw unpack --uid-map 0:BASE:65536`, whiteouts honoured by umoci) into a temporary directory
 * and renamed into place, so a rootfs that exists is complete; it is shared read-only by every
 * container of that image and range (each gets an overlay upper of its own).
 *
 * Invariants: fatia never reads a layer itself (umoci and skopeo do); a name resolves to one
 * manifest digest at a time (skopeo replaces the index entry of a name it writes again).
 *
 * Rejected: unpacking per container (seconds per start for a large image), and a store of our
 * own format (skopeo, umoci and podman all read OCI layouts).
 */
#include "base/compat.h"

#include "agent/image.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "agent/oci.h"
#include "base/error.h"
#include "base/json.h"

#define REF_ANN "org.opencontainers.image.ref.name"

static int mkdir_p1(const char *p, mode_t m)
{
    return mkdir(p, m) < 0 && errno != EEXIST ? -errno : 0;
}

static void find_tool(const char *name, char *buf, size_t n)
{
    static const char *const dirs[] = {"/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin"};
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(dirs); i++) {
        snprintf(buf, n, "%s/%s", dirs[i], name);
        if (access(buf, X_OK) == 0)
            return;
    }
    snprintf(buf, n, "%s", name);
}

int fatia_image_store_open(struct fatia_image_store *s, const char *pod_dir)
{
    int r;

    snprintf(s->dir, sizeof(s->dir), "%s/images", pod_dir);
    snprintf(s->layout, sizeof(s->layout), "%s/oci", s->dir);
    find_tool("umoci", s->umoci, sizeof(s->umoci));
    find_tool("skopeo", s->skopeo, sizeof(s->skopeo));
    {
        /* the pod directory and what is above it, when fatiad has not made them yet */
        char p[1200];
        snprintf(p, sizeof(p), "%s", pod_dir);
        for (char *sl = strchr(p + 1, '/');; sl = strchr(sl + 1, '/')) {
            if (sl)
                *sl = '\0';
            r = mkdir_p1(p, 0711);
            if (!sl || r < 0)
                break;
            *sl = '/';
        }
        if (r < 0)
            return r;
    }
    r = mkdir_p1(s->dir, 0711);
    if (r == 0) {
        char p[1400];
        snprintf(p, sizeof(p), "%s/rootfs", s->dir);
        r = mkdir_p1(p, 0711);
    }
    return r;
}

void fatia_image_ref_normalize(const char *ref, char *buf, size_t n)
{
    const char *slash = strrchr(ref, '/');
    const char *last = slash ? slash + 1 : ref;

    if (strchr(ref, '@') || strchr(last, ':'))
        snprintf(buf, n, "%s", ref);
    else
        snprintf(buf, n, "%s:latest", ref);
}

/* Runs argv (tools only: absolute paths) and waits; stderr into err (its end). */
static int run_tool(const char *const *argv, char *err, size_t err_n)
{
    int p[2];
    pid_t pid;
    int status;
    size_t len = 0;

    if (err_n)
        err[0] = '\0';
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return -errno;
    }
    if (pid == 0) {
        int nul = open("/dev/null", O_RDWR);
        dup2(nul, 0);
        dup2(nul, 1);
        dup2(p[1], 2);
        static const char *const envp[] = {
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root",
            NULL};
        execve(argv[0], (char *const *)argv, (char *const *)envp);
        _exit(127);
    }
    close(p[1]);
    for (;;) {
        char buf[1024];
        ssize_t r = read(p[0], buf, sizeof(buf));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        for (ssize_t i = 0; i < r && err_n; i++) {
            if (len + 1 >= err_n) {
                memmove(err, err + err_n / 2, len - err_n / 2);
                len -= err_n / 2;
            }
            err[len++] = buf[i] == '\n' ? ' ' : buf[i];
        }
    }
    close(p[0]);
    if (err_n)
        err[len] = '\0';
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return -errno;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -FATIA_E_DRIVER;
}

static json_t *load_blob(const struct fatia_image_store *s, const char *digest)
{
    char p[1600];

    if (strncmp(digest, "sha256:", 7) || strchr(digest, '/'))
        return NULL;
    snprintf(p, sizeof(p), "%s/blobs/sha256/%s", s->layout, digest + 7);
    return json_load_file(p, 0, NULL);
}

static json_t *load_index(const struct fatia_image_store *s)
{
    char p[1400];

    snprintf(p, sizeof(p), "%s/index.json", s->layout);
    return json_load_file(p, 0, NULL);
}

int fatia_image_get(const struct fatia_image_store *s, const char *ref, uint32_t host_base,
                    char *ret_digest, size_t digest_n, json_t **ret_config, char *ret_rootfs,
                    size_t rootfs_n, char *why, size_t why_n)
{
    char name[600], rootfs[1600], tmp[1700], img[2000], map[64], err[1024];
    json_t *idx = load_index(s), *m, *man = NULL, *cfg = NULL;
    const char *digest = NULL, *cdigest;
    struct stat st;
    size_t i;
    int r = 0;

    fatia_image_ref_normalize(ref, name, sizeof(name));
    json_array_foreach(json_object_get(idx, "manifests"), i, m)
    {
        const char *n = fatia_json_str(json_object_get(m, "annotations"), REF_ANN);
        if (n && !strcmp(n, name))
            digest = fatia_json_str(m, "digest");
    }
    if (!digest) {
        snprintf(why, why_n, "image %s is not in the node's image store", name);
        r = -ENOENT;
        goto out;
    }
    man = load_blob(s, digest);
    cdigest = fatia_json_str(json_object_get(man, "config"), "digest");
    cfg = cdigest ? load_blob(s, cdigest) : NULL;
    if (!man || !cfg) {
        snprintf(why, why_n, "image %s: its manifest or config in '%.300s' cannot be read", name,
                 s->layout);
        r = -FATIA_E_PARSE;
        goto out;
    }
    snprintf(ret_digest, digest_n, "%s", digest);
    if (host_base != UINT32_MAX) {
        snprintf(rootfs, sizeof(rootfs), "%s/rootfs/%s-%u", s->dir, digest + 7, host_base);
        if (stat(rootfs, &st) < 0) {
            /* its own name: the agent's two lanes (imgpull.c) may unpack the same at once */
            static _Atomic unsigned seq;
            snprintf(tmp, sizeof(tmp), "%s.tmp%d.%u", rootfs, (int)getpid(), seq++);
            snprintf(img, sizeof(img), "%s:%s", s->layout, name);
            snprintf(map, sizeof(map), "0:%u:%u", host_base, FATIA_OCI_IDS);
            const char *argv[] = {s->umoci, "raw",     "unpack", "--uid-map", map, "--gid-map",
                                  map,      "--image", img,      tmp,         NULL};
            r = run_tool(argv, err, sizeof(err));
            if (r == 0 && rename(tmp, rootfs) < 0) {
                r = -errno;
                if ((r == -ENOTEMPTY || r == -EEXIST) && stat(rootfs, &st) == 0) {
                    /* another unpack of the same finished first: use its rootfs */
                    const char *rm[] = {"/bin/rm", "-rf", tmp, NULL};
                    (void)run_tool(rm, NULL, 0);
                    r = 0;
                }
            }
            if (r < 0) {
                const char *rm[] = {"/bin/rm", "-rf", tmp, NULL};
                (void)run_tool(rm, NULL, 0);
                snprintf(why, why_n, "image %s: unpacking failed: %s", name,
                         err[0] ? err : fatia_strerror(r));
                goto out;
            }
        }
        snprintf(ret_rootfs, rootfs_n, "%s", rootfs);
        (void)utimensat(AT_FDCWD, rootfs, NULL, 0); /* last used: for the GC's order */
    }
    {
        json_t *c = json_object_get(cfg, "config");
        *ret_config = c ? json_incref(c) : json_object();
    }
out:
    json_decref(cfg);
    json_decref(man);
    json_decref(idx);
    return r;
}

bool fatia_image_unpacked(const struct fatia_image_store *s, const char *ref, uint32_t host_base)
{
    char name[600], rootfs[1600];
    json_t *idx = load_index(s), *m;
    const char *digest = NULL;
    struct stat st;
    bool ok;
    size_t i;

    fatia_image_ref_normalize(ref, name, sizeof(name));
    json_array_foreach(json_object_get(idx, "manifests"), i, m)
    {
        const char *n = fatia_json_str(json_object_get(m, "annotations"), REF_ANN);
        if (n && !strcmp(n, name))
            digest = fatia_json_str(m, "digest");
    }
    ok = digest && !strncmp(digest, "sha256:", 7) && !strchr(digest, '/');
    if (ok) {
        snprintf(rootfs, sizeof(rootfs), "%s/rootfs/%s-%u", s->dir, digest + 7, host_base);
        ok = stat(rootfs, &st) == 0 && S_ISDIR(st.st_mode);
    }
    json_decref(idx);
    return ok;
}

int fatia_image_load(const struct fatia_image_store *s, const char *file, const char *name,
                     char *why, size_t why_n)
{
    static const char *const transports[] = {"oci-archive", "docker-archive"};
    char src[1200], dst[2000], norm[600], err[1024] = "";
    int r = -EINVAL;

    if (access(file, R_OK) < 0) {
        snprintf(why, why_n, "cannot read '%.300s': %s", file, fatia_strerror(-errno));
        return -errno;
    }
    if (!name || !name[0]) {
        snprintf(why, why_n, "--name is required: the image's name in the node's store");
        return -EINVAL;
    }
    fatia_image_ref_normalize(name, norm, sizeof(norm));
    snprintf(dst, sizeof(dst), "oci:%s:%s", s->layout, norm);
    /* skopeo tells the formats apart by their content: an oci-archive first, then docker's */
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(transports) && r < 0; i++) {
        snprintf(src, sizeof(src), "%s:%s", transports[i], file);
        const char *argv[] = {s->skopeo, "--insecure-policy", "copy", "-q", src, dst, NULL};
        r = run_tool(argv, err, sizeof(err));
    }
    if (r < 0)
        snprintf(why, why_n,
                 "'%.300s' is neither an oci-archive nor a docker-archive skopeo can read: %s",
                 file, err);
    return r;
}

int fatia_image_pull(const struct fatia_image_store *s, const char *ref, const char *auth_file,
                     bool insecure, char *why, size_t why_n)
{
    char src[700], dst[2000], norm[600], err[1024] = "", auth[1100];
    const char *argv[12];
    size_t n = 0;
    int r;

    if (!ref || !ref[0] || ref[0] == '-' || strchr(ref, ' ')) {
        snprintf(why, why_n, "invalid image reference '%.200s'", ref ? ref : "");
        return -EINVAL;
    }
    fatia_image_ref_normalize(ref, norm, sizeof(norm));
    snprintf(src, sizeof(src), "docker://%s", norm);
    snprintf(dst, sizeof(dst), "oci:%s:%s", s->layout, norm);
    argv[n++] = s->skopeo;
    argv[n++] = "--insecure-policy";
    argv[n++] = "copy";
    argv[n++] = "-q";
    if (insecure)
        argv[n++] = "--src-tls-verify=false";
    if (auth_file && auth_file[0]) {
        snprintf(auth, sizeof(auth), "--src-authfile=%s", auth_file);
        argv[n++] = auth;
    }
    argv[n++] = src;
    argv[n++] = dst;
    argv[n] = NULL;
    r = run_tool(argv, err, sizeof(err));
    if (r < 0) {
        snprintf(why, why_n, "failed to pull and unpack image \"%s\": %s", norm,
                 err[0] ? err : "skopeo failed");
        return -EIO;
    }
    return 0;
}

static uint64_t du_at(int dfd, const char *name, int depth)
{
    struct stat st;
    uint64_t n = 0;

    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return 0;
    n = (uint64_t)st.st_blocks * 512;
    if (S_ISDIR(st.st_mode) && depth < 64) {
        int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *e;
        if (!d && fd >= 0)
            close(fd);
        while (d && (e = readdir(d))) {
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                n += du_at(dirfd(d), e->d_name, depth + 1);
        }
        if (d)
            closedir(d);
    }
    return n;
}

uint64_t fatia_image_store_bytes(const struct fatia_image_store *s)
{
    return du_at(AT_FDCWD, s->dir, 0);
}

static unsigned fs_used_pct(const char *dir)
{
    struct statvfs v;

    if (statvfs(dir, &v) < 0 || v.f_blocks == 0)
        return 0;
    return (unsigned)(100 - (100 * (uint64_t)v.f_bavail) / v.f_blocks);
}

/* Removes every unpacked rootfs of the manifest hex (all host ranges). */
static void remove_rootfs_of(const struct fatia_image_store *s, const char *hex)
{
    char dir[1400];
    DIR *d;
    struct dirent *e;

    snprintf(dir, sizeof(dir), "%s/rootfs", s->dir);
    d = opendir(dir);
    while (d && (e = readdir(d))) {
        size_t l = strlen(hex);
        if (!strncmp(e->d_name, hex, l) && e->d_name[l] == '-') {
            char p[1700];
            snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
            const char *rm[] = {"/bin/rm", "-rf", p, NULL};
            (void)run_tool(rm, NULL, 0);
        }
    }
    if (d)
        closedir(d);
}

/* The last use of a digest: the newest mtime of its rootfs copies (0: never unpacked). */
static int64_t last_used(const struct fatia_image_store *s, const char *hex)
{
    char dir[1400];
    int64_t t = 0;
    DIR *d;
    struct dirent *e;

    snprintf(dir, sizeof(dir), "%s/rootfs", s->dir);
    d = opendir(dir);
    while (d && (e = readdir(d))) {
        struct stat st;
        size_t l = strlen(hex);
        if (!strncmp(e->d_name, hex, l) && e->d_name[l] == '-' &&
            fstatat(dirfd(d), e->d_name, &st, 0) == 0 && st.st_mtime > t)
            t = st.st_mtime;
    }
    if (d)
        closedir(d);
    return t;
}

static bool digest_in(const json_t *list, const char *digest)
{
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x)
    {
        if (json_string_value(x) && !strcmp(json_string_value(x), digest))
            return true;
    }
    return false;
}

int fatia_image_gc(const struct fatia_image_store *s, uint64_t max_bytes, unsigned high_pct,
                   unsigned low_pct, const json_t *in_use, unsigned *ret_removed)
{
    bool over_size = max_bytes && fatia_image_store_bytes(s) > max_bytes;
    bool over_fs = high_pct && fs_used_pct(s->dir) > high_pct;
    json_t *list = NULL;
    unsigned removed = 0;

    *ret_removed = 0;
    if (!over_size && !over_fs)
        return 0;
    (void)fatia_image_list(s, &list);
    for (;;) {
        const char *victim = NULL, *vd = NULL;
        int64_t oldest = INT64_MAX;
        size_t i;
        json_t *e;
        char why[512];

        json_array_foreach(list, i, e)
        {
            const char *d = fatia_json_str(e, "digest"), *n = fatia_json_str(e, "name");
            int64_t t;
            if (!d || !n || digest_in(in_use, d) || strlen(d) < 8)
                continue;
            t = last_used(s, d + 7);
            if (t < oldest) {
                oldest = t;
                victim = n;
                vd = d;
            }
        }
        if (!victim)
            break;
        (void)vd;
        if (fatia_image_remove(s, victim, why, sizeof(why)) < 0)
            break;
        removed++;
        json_decref(list);
        list = NULL;
        (void)fatia_image_list(s, &list);
        if ((!max_bytes || fatia_image_store_bytes(s) <= max_bytes) &&
            (!over_fs || fs_used_pct(s->dir) <= low_pct))
            break;
    }
    json_decref(list);
    *ret_removed = removed;
    return 0;
}

int fatia_image_list(const struct fatia_image_store *s, json_t **ret)
{
    json_t *idx = load_index(s), *out = json_array(), *m;
    size_t i;

    json_array_foreach(json_object_get(idx, "manifests"), i, m)
    {
        const char *n = fatia_json_str(json_object_get(m, "annotations"), REF_ANN);
        const char *d = fatia_json_str(m, "digest");
        json_t *man = d ? load_blob(s, d) : NULL, *l;
        json_int_t size = 0;
        size_t k;
        json_array_foreach(json_object_get(man, "layers"), k, l) size +=
            json_integer_value(json_object_get(l, "size"));
        json_decref(man);
        if (n && d)
            json_array_append_new(out,
                                  json_pack("{s:s,s:s,s:I}", "name", n, "digest", d, "size", size));
    }
    json_decref(idx);
    *ret = out;
    return 0;
}

int fatia_image_remove(const struct fatia_image_store *s, const char *ref, char *why, size_t why_n)
{
    char name[600], img[2000], err[1024], hex[80] = "";
    json_t *list = NULL, *e;
    unsigned names = 0;
    size_t i;
    int r;

    fatia_image_ref_normalize(ref, name, sizeof(name));
    (void)fatia_image_list(s, &list);
    json_array_foreach(list, i, e)
    {
        const char *n = fatia_json_str(e, "name"), *d = fatia_json_str(e, "digest");
        if (n && d && !strcmp(n, name) && strlen(d) > 7)
            snprintf(hex, sizeof(hex), "%s", d + 7);
    }
    json_array_foreach(list, i, e)
    {
        const char *d = fatia_json_str(e, "digest");
        if (hex[0] && d && strlen(d) > 7 && !strcmp(d + 7, hex))
            names++;
    }
    json_decref(list);
    snprintf(img, sizeof(img), "%s:%s", s->layout, name);
    {
        const char *argv[] = {s->umoci, "rm", "--image", img, NULL};
        r = run_tool(argv, err, sizeof(err));
    }
    if (r < 0) {
        snprintf(why, why_n, "image %s: %s", name, err[0] ? err : "cannot remove");
        return -ENOENT;
    }
    {
        const char *argv[] = {s->umoci, "gc", "--layout", s->layout, NULL};
        (void)run_tool(argv, err, sizeof(err));
    }
    /* the last name of a digest: its unpacked copies go too */
    if (hex[0] && names <= 1)
        remove_rootfs_of(s, hex);
    return 0;
}

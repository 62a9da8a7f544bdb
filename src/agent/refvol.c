/*
 * agent/refvol.c: configMap, secret and projected volumes (see refvol.h).
 *
 * Model: as kubelet's volume plugins (pkg/volume/configmap, secret, projected) and its atomic
 * writer (pkg/volume/util/atomic_writer.go). A volume's directory RUN_DIR/volumes/<name> holds
 *     ..<n>/          the current payload, files and subdirectories (n counts up)
 *     ..data -> ..<n> swapped by rename(2) of a fresh symlink, so the swap is atomic
 *     <top> -> ..data/<top>  one link per first path component, made once
 * and the container gets the directory bound read-only. An update writes a whole new ..<n+1>,
 * swaps ..data, then removes ..<n> and the links no longer in the payload: a process that opens
 * ..data/<key> (or <key>) sees the old set or the new one, never half of each.
 *
 * The payload: without items every key of the ConfigMap (data and binaryData) or Secret (data,
 * decoded); with items only those keys, at their path and mode (kubelet: a missing key is an
 * error unless optional). defaultMode 0644. A projected volume's sources are merged in order;
 * besides configMap and secret they may be serviceAccountToken (the token the agent keeps for
 * the pod, refs->token: the TokenRequest bound to the pod, renewed at 80 % of its life by the
 * agent's tick, which rewrites the volume then; none yet: -ESRCH, the pod waits) and
 * downwardAPI (metadata.name, .namespace, .uid of refs->pod): the kube-api-access volume of
 * apiserver/saadmit.c is one such.
 * Paths are relative, without '..' components (upstream's validation refuses them too: checked
 * again here because the agent trusts no stored object).
 *
 * Invariants: the objects come only through struct fatia_podrefs, the pod's namespace; values
 * never reach why. The set is compared with what ..data holds before anything is written, so an
 * unchanged object costs reads only.
 *
 * Rejected: writing files in place (a reader could see a half-written set); inotify on the
 * store (the agent's tick compares resourceVersions, as kubelet's periodic sync does).
 */
#include "base/compat.h"

#include "agent/refvol.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "agent/podrefs.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"

bool fatia_pod_vol_is_ref(const json_t *vol)
{
    return json_object_get(vol, "configMap") || json_object_get(vol, "secret") ||
           json_object_get(vol, "projected");
}

static bool path_ok(const char *p)
{
    const char *s = p;

    if (!p || !p[0] || p[0] == '/' || strlen(p) > 1000)
        return false;
    while (*s) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 0 || (n == 2 && !strncmp(s, "..", 2)) || (n == 1 && s[0] == '.') ||
            !strncmp(s, "..", 2))
            return false; /* "..x" would collide with the writer's own entries */
        if (!e)
            break;
        s = e + 1;
    }
    return true;
}

static int add_file(json_t *files, const char *path, const char *data, size_t n, int mode)
{
    json_t *d = json_stringn(data, n);

    if (!d)
        return -ENOMEM;
    return json_object_set_new(files, path, json_pack("{s:o,s:i}", "data", d, "mode", mode)) < 0
               ? -ENOMEM
               : 0;
}

/* One configMap or secret source: src has name, items, optional, defaultMode (volume only). */
static int source_files(const json_t *src, bool secret, int def_mode, const char *where,
                        const struct fatia_podrefs *refs, json_t *files, char *why, size_t why_n)
{
    const char *name = fatia_json_str(src, secret ? "secretName" : "name");
    const json_t *items = json_object_get(src, "items"), *obj;
    bool optional = fatia_json_bool(src, "optional", false);
    const char *kind = secret ? "secret" : "configmap";
    size_t i;
    json_t *it;
    int r;

    if (!name && secret)
        name = fatia_json_str(src, "name"); /* projected's secret source */
    obj = name && name[0] && refs ? refs->get(refs->ctx, secret, name) : NULL;
    if (!obj) {
        if (optional)
            return 0;
        snprintf(why, why_n, "MountVolume.SetUp failed for volume \"%s\" : %s \"%s\" not found",
                 where, kind, name ? name : "");
        return -ESRCH;
    }
    if (json_array_size(items) == 0) {
        const char *maps[2] = {"data", secret ? NULL : "binaryData"};
        for (int m = 0; m < 2 && maps[m]; m++) {
            const char *key;
            json_t *v;
            json_object_foreach(json_object_get(obj, maps[m]), key, v)
            {
                char *val;
                size_t n;
                if (!path_ok(key))
                    continue;
                r = fatia_pod_ref_value(obj, secret, key, &val, &n);
                if (r < 0)
                    goto bad;
                r = add_file(files, key, val, n, def_mode);
                fatia_free(val);
                if (r < 0)
                    return r;
            }
        }
        return 0;
    }
    json_array_foreach(items, i, it)
    {
        const char *key = fatia_json_str(it, "key"), *path = fatia_json_str(it, "path");
        const json_t *mj = json_object_get(it, "mode");
        int mode = json_is_integer(mj) ? (int)json_integer_value(mj) : def_mode;
        char *val;
        size_t n;
        if (!path_ok(path) || mode < 0 || mode > 0777) {
            snprintf(why, why_n,
                     "volume \"%s\": items[%zu]: expected a relative path without "
                     "'..' and a mode from 0 to 0777",
                     where, i);
            return -FATIA_E_INVALID;
        }
        r = fatia_pod_ref_value(obj, secret, key ? key : "", &val, &n);
        if (r == -ENODATA) {
            if (optional)
                continue;
            snprintf(why, why_n,
                     "MountVolume.SetUp failed for volume \"%s\" : %s references non-existent "
                     "%s key: %s",
                     where, kind, secret ? "secret" : "config", key ? key : "");
            return -ESRCH;
        }
        if (r < 0)
            goto bad;
        r = add_file(files, path, val, n, mode);
        fatia_free(val);
        if (r < 0)
            return r;
    }
    return 0;
bad:
    if (r == -FATIA_E_INVALID)
        snprintf(why, why_n, "volume \"%s\": %s %s/%s: illegal base64 data", where, kind,
                 refs->ns ? refs->ns : "", name);
    return r;
}

/* A projected volume's serviceAccountToken source. */
static int token_file(const json_t *src, int def_mode, const char *where,
                      const struct fatia_podrefs *refs, json_t *files, char *why, size_t why_n)
{
    const char *path = fatia_json_str(src, "path"), *aud = fatia_json_str(src, "audience");
    const json_t *e = json_object_get(src, "expirationSeconds");
    int64_t exp_s = json_is_integer(e) ? (int64_t)json_integer_value(e) : 3600;
    const char *tok;

    if (!path_ok(path) || exp_s < 600) {
        snprintf(why, why_n,
                 "volume \"%s\": serviceAccountToken: expected a relative path without '..' and "
                 "expirationSeconds of at least 600",
                 where);
        return -FATIA_E_INVALID;
    }
    tok = refs && refs->token ? refs->token(refs->ctx, aud && *aud ? aud : NULL, exp_s) : NULL;
    if (!tok) {
        snprintf(why, why_n, "MountVolume.SetUp failed for volume \"%s\" : %s", where,
                 refs && refs->token ? "waiting for the service account token"
                                     : "serviceAccountToken sources are not served here");
        return refs && refs->token ? -ESRCH : -FATIA_E_INVALID;
    }
    return add_file(files, path, tok, strlen(tok), def_mode);
}

/* A projected volume's downwardAPI source: metadata.name, .namespace and .uid. */
static int downward_file(const json_t *src, int def_mode, const char *where,
                         const struct fatia_podrefs *refs, json_t *files, char *why, size_t why_n)
{
    const json_t *meta = json_object_get(refs ? refs->pod : NULL, "metadata"), *it;
    size_t i;
    int r;

    json_array_foreach(json_object_get(src, "items"), i, it)
    {
        const char *path = fatia_json_str(it, "path");
        const char *fp = fatia_json_str(json_object_get(it, "fieldRef"), "fieldPath");
        const char *v = NULL;
        const json_t *mj = json_object_get(it, "mode");
        int mode = json_is_integer(mj) ? (int)json_integer_value(mj) : def_mode;
        if (fp && !strcmp(fp, "metadata.name"))
            v = fatia_json_str(meta, "name");
        else if (fp && !strcmp(fp, "metadata.namespace"))
            v = fatia_json_str(meta, "namespace");
        else if (fp && !strcmp(fp, "metadata.uid"))
            v = fatia_json_str(meta, "uid");
        if (!path_ok(path) || !v || mode < 0 || mode > 0777) {
            snprintf(why, why_n,
                     "volume \"%s\": downwardAPI.items[%zu]: expected a relative path and a "
                     "fieldRef of metadata.name, metadata.namespace or metadata.uid",
                     where, i);
            return -FATIA_E_INVALID;
        }
        r = add_file(files, path, v, strlen(v), mode);
        if (r < 0)
            return r;
    }
    return 0;
}

static int mode_of(const json_t *o, char *why, size_t why_n, const char *where, int *ret)
{
    const json_t *m = json_object_get(o, "defaultMode");

    *ret = 0644;
    if (!m)
        return 0;
    if (!json_is_integer(m) || json_integer_value(m) < 0 || json_integer_value(m) > 0777) {
        snprintf(why, why_n, "volume \"%s\": defaultMode: expected 0 to 0777", where);
        return -FATIA_E_INVALID;
    }
    *ret = (int)json_integer_value(m);
    return 0;
}

int fatia_pod_vol_files(const json_t *vol, size_t vi, const struct fatia_podrefs *refs,
                        json_t **ret, char *why, size_t why_n)
{
    const char *vn = fatia_json_str(vol, "name");
    const json_t *cm = json_object_get(vol, "configMap"), *sec = json_object_get(vol, "secret");
    const json_t *pj = json_object_get(vol, "projected");
    json_t *files = json_object(), *s;
    char where[300];
    size_t i;
    int mode, r;

    (void)vi;
    snprintf(where, sizeof(where), "%.250s", vn ? vn : "");
    if (!files)
        return -ENOMEM;
    if (cm || sec) {
        r = mode_of(cm ? cm : sec, why, why_n, where, &mode);
        if (r == 0)
            r = source_files(cm ? cm : sec, sec != NULL, mode, where, refs, files, why, why_n);
    } else {
        r = mode_of(pj, why, why_n, where, &mode);
        json_array_foreach(json_object_get(pj, "sources"), i, s)
        {
            const json_t *c = json_object_get(s, "configMap"), *x = json_object_get(s, "secret");
            const json_t *t = json_object_get(s, "serviceAccountToken");
            const json_t *d = json_object_get(s, "downwardAPI");
            if (r < 0)
                break;
            if (t)
                r = token_file(t, mode, where, refs, files, why, why_n);
            else if (d)
                r = downward_file(d, mode, where, refs, files, why, why_n);
            else if (!c && !x) {
                snprintf(why, why_n,
                         "volume \"%s\": projected.sources[%zu]: only configMap, secret, "
                         "serviceAccountToken and downwardAPI sources are served",
                         where, i);
                r = -FATIA_E_INVALID;
                break;
            } else
                r = source_files(c ? c : x, x != NULL, mode, where, refs, files, why, why_n);
        }
    }
    if (r < 0) {
        json_decref(files);
        return r;
    }
    *ret = files;
    return 0;
}

/* ---- the atomic writer ---- */

static int read_all(int dfd, const char *path, char **ret, size_t *ret_n)
{
    int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    char *b;
    ssize_t n;

    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > (1 << 21)) {
        close(fd);
        return -EINVAL;
    }
    b = fatia_malloc((size_t)st.st_size + 1);
    if (!b) {
        close(fd);
        return -ENOMEM;
    }
    n = read(fd, b, (size_t)st.st_size + 1);
    close(fd);
    if (n != st.st_size) {
        fatia_free(b);
        return -EIO;
    }
    *ret = b;
    *ret_n = (size_t)n;
    return 0;
}

/* Whether dir/..data holds exactly files (same paths, bytes, modes). */
static bool unchanged(const char *dir, const json_t *files)
{
    char p[4600];
    const char *path;
    json_t *f;
    int dfd;
    bool same = true;
    size_t count = 0;

    snprintf(p, sizeof(p), "%s/..data", dir);
    dfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return false;
    json_object_foreach((json_t *)files, path, f)
    {
        char *b = NULL;
        size_t n = 0;
        struct stat st;
        const json_t *d = json_object_get(f, "data");
        if (read_all(dfd, path, &b, &n) < 0 || n != json_string_length(d) ||
            memcmp(b, json_string_value(d), n) ||
            fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            (int)(st.st_mode & 0777) != (int)json_integer_value(json_object_get(f, "mode")))
            same = false;
        fatia_free(b);
        if (!same)
            break;
        count++;
    }
    if (same) {
        /* no extra top-level entry either (a key that went away) */
        DIR *dp = fdopendir(dfd);
        struct dirent *de;
        size_t top = 0;
        json_t *tops = json_object();
        json_object_foreach((json_t *)files, path, f)
        {
            char t[1100];
            const char *sl = strchr(path, '/');
            snprintf(t, sizeof(t), "%.*s", sl ? (int)(sl - path) : 1000, path);
            json_object_set_new(tops, t, json_true());
        }
        while (dp && (de = readdir(dp))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                continue;
            top++;
            if (!json_object_get(tops, de->d_name))
                same = false;
        }
        if (top != json_object_size(tops))
            same = false;
        json_decref(tops);
        if (dp)
            closedir(dp);
        else
            close(dfd);
        return same;
    }
    close(dfd);
    return false;
}

static void rm_tree_at(int dfd, const char *name, int depth)
{
    int fd;
    DIR *d;
    struct dirent *de;

    if (unlinkat(dfd, name, 0) == 0 || errno != EISDIR || depth > 32)
        return;
    fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || !(d = fdopendir(fd))) {
        if (fd >= 0)
            close(fd);
        return;
    }
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            rm_tree_at(dirfd(d), de->d_name, depth + 1);
    closedir(d);
    (void)unlinkat(dfd, name, AT_REMOVEDIR);
}

static int mkdirs_at(int dfd, const char *path, uid_t uid, gid_t gid)
{
    char b[1100];

    snprintf(b, sizeof(b), "%s", path);
    for (char *s = strchr(b, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        if (mkdirat(dfd, b, 0755) < 0 && errno != EEXIST)
            return -errno;
        if (fchownat(dfd, b, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
            return -errno;
        *s = '/';
    }
    return 0;
}

static int write_payload(int dfd, const json_t *files, uid_t uid, gid_t gid)
{
    const char *path;
    json_t *f;

    json_object_foreach((json_t *)files, path, f)
    {
        const json_t *d = json_object_get(f, "data");
        mode_t mode = (mode_t)json_integer_value(json_object_get(f, "mode"));
        size_t n = json_string_length(d);
        int fd, r = mkdirs_at(dfd, path, uid, gid);
        if (r < 0)
            return r;
        fd = openat(dfd, path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
            return -errno;
        if (write(fd, json_string_value(d), n) != (ssize_t)n)
            r = -EIO;
        if (r == 0 && (fchown(fd, uid, gid) < 0 || fchmod(fd, mode) < 0))
            r = -errno;
        if (r == 0 && fsync(fd) < 0)
            r = -errno;
        close(fd);
        if (r < 0)
            return r;
    }
    return 0;
}

int fatia_pod_vol_sync(const char *dir, const json_t *files, uid_t uid, gid_t gid,
                       bool *ret_changed, char *why, size_t why_n)
{
    char old[300] = "", cur[64];
    int dfd = -1, pfd = -1, r = 0;
    unsigned long gen = 0;
    ssize_t ln;
    DIR *dp;
    struct dirent *de;
    const char *path;
    json_t *f;

    *ret_changed = false;
    if (unchanged(dir, files))
        return 0;
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
        r = -errno;
        goto io;
    }
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (dfd < 0) {
        r = -errno;
        goto io;
    }
    if (fchown(dfd, uid, gid) < 0) {
        r = -errno;
        goto io;
    }
    ln = readlinkat(dfd, "..data", old, sizeof(old) - 1);
    if (ln > 0) {
        old[ln] = '\0';
        if (sscanf(old, "..%lu", &gen) != 1)
            gen = 0;
    } else {
        old[0] = '\0';
    }
    snprintf(cur, sizeof(cur), "..%lu", gen + 1);
    rm_tree_at(dfd, cur, 0); /* a leftover of an interrupted write */
    if (mkdirat(dfd, cur, 0755) < 0 || fchownat(dfd, cur, uid, gid, AT_SYMLINK_NOFOLLOW) < 0) {
        r = -errno;
        goto io;
    }
    pfd = openat(dfd, cur, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (pfd < 0 || (r = write_payload(pfd, files, uid, gid)) < 0) {
        r = r ? r : -errno;
        goto io;
    }
    (void)unlinkat(dfd, "..data_tmp", 0);
    if (symlinkat(cur, dfd, "..data_tmp") < 0 || renameat(dfd, "..data_tmp", dfd, "..data") < 0) {
        r = -errno;
        goto io;
    }
    /* the top-level links, then whatever is no longer in the payload */
    json_object_foreach((json_t *)files, path, f)
    {
        char top[1100], target[1200];
        const char *sl = strchr(path, '/');
        snprintf(top, sizeof(top), "%.*s", sl ? (int)(sl - path) : 1000, path);
        snprintf(target, sizeof(target), "..data/%s", top);
        if (symlinkat(target, dfd, top) < 0 && errno != EEXIST) {
            r = -errno;
            goto io;
        }
    }
    dp = fdopendir(dup(dfd));
    while (dp && (de = readdir(dp))) {
        const char *n = de->d_name;
        char top[1100];
        bool keep = !strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, "..data") || !strcmp(n, cur);
        if (!keep && strncmp(n, "..", 2)) {
            json_object_foreach((json_t *)files, path, f)
            {
                const char *sl = strchr(path, '/');
                snprintf(top, sizeof(top), "%.*s", sl ? (int)(sl - path) : 1000, path);
                if (!strcmp(top, n))
                    keep = true;
            }
        }
        if (!keep)
            rm_tree_at(dfd, n, 0);
    }
    if (dp)
        closedir(dp);
    *ret_changed = true;
    goto out;
io:
    snprintf(why, why_n, "cannot write the volume '%.300s': %s", dir, fatia_strerror(r));
out:
    if (pfd >= 0)
        close(pfd);
    if (dfd >= 0)
        close(dfd);
    return r;
}

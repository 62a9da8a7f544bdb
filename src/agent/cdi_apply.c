/*
 * agent/cdi_apply.c: CDI specs read and applied generically (cdi_apply.h).
 *
 * Model. A spec file is {cdiVersion, kind, devices: [{name, containerEdits}], containerEdits};
 * the edits a container gets are the union, in the order asked, of its devices' edits (and of
 * each contributing spec's top-level edits, once). Applying them is what the CDI library's
 * container-edits.go does: env "K=V" (later wins), device nodes into linux.devices plus an
 * allow rule each (the device cgroup starts from deny-all in oci_spec.c, so a container can use
 * exactly its devices and runc's fixed defaults), bind mounts, OCI hooks by hook name,
 * additional gids.
 *
 * Invariants: a device asked for and found in no spec fails the container (no silent GPU-less
 * start); a malformed spec names its file and field; a device node's path must be absolute and
 * under /dev.
 *
 * Rejected: YAML specs (the agent's writer and nvidia-ctk --format json produce JSON), and the
 * CDI Go library's spec-directory priorities beyond "later file wins" (one directory here).
 */
#include "base/compat.h"

#include "agent/cdi_apply.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <dirent.h>
#include <errno.h>

#include "base/error.h"
#include "base/json.h"

static void append_all(json_t *acc, const char *key, const json_t *edits)
{
    const json_t *src = json_object_get(edits, key);
    json_t *dst = json_object_get(acc, key);
    size_t i;
    json_t *x;

    if (!json_is_array(src))
        return;
    if (!dst) {
        dst = json_array();
        json_object_set_new(acc, key, dst);
    }
    json_array_foreach(src, i, x) json_array_append(dst, x);
}

void fatia_cdi_merge(json_t **acc, const json_t *edits)
{
    static const char *const keys[] = {"env", "deviceNodes", "mounts", "hooks", "additionalGIDs"};

    if (!edits)
        return;
    if (!*acc)
        *acc = json_object();
    for (size_t k = 0; k < FATIA_ARRAY_SIZE(keys); k++)
        append_all(*acc, keys[k], edits);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int fatia_cdi_edits(const char *dir, const char *kind, const char *const *names, size_t n,
                    json_t **ret, char *why, size_t why_n)
{
    json_t **found = NULL, *acc = NULL, *tops = json_array();
    char **files = NULL;
    size_t nf = 0, cap = 0;
    DIR *d = n ? opendir(dir) : NULL;
    struct dirent *e;
    int r = 0;

    *ret = NULL;
    if (n == 0) {
        json_decref(tops);
        return 0;
    }
    found = calloc(n, sizeof(*found));
    while (d && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".json") || e->d_name[0] == '.')
            continue;
        if (nf == cap) {
            cap = cap ? 2 * cap : 8;
            files = realloc(files, cap * sizeof(*files));
        }
        files[nf++] = strdup(e->d_name);
    }
    if (d)
        closedir(d);
    if (nf)
        qsort(files, nf, sizeof(*files), cmp_names);
    for (size_t f = 0; f < nf && r == 0; f++) {
        char path[4400];
        json_error_t je;
        json_t *spec, *dev;
        const char *sk;
        bool used = false;
        size_t i;

        snprintf(path, sizeof(path), "%.3000s/%s", dir, files[f]);
        spec = json_load_file(path, 0, &je);
        if (!spec) {
            snprintf(why, why_n, "CDI spec '%.300s': %s (line %d)", path, je.text, je.line);
            r = -FATIA_E_PARSE;
            break;
        }
        sk = fatia_json_str(spec, "kind");
        if (!fatia_json_str(spec, "cdiVersion") || !sk) {
            snprintf(why, why_n, "CDI spec '%.300s': cdiVersion and kind are required", path);
            json_decref(spec);
            r = -FATIA_E_PARSE;
            break;
        }
        if (strcmp(sk, kind)) {
            json_decref(spec);
            continue;
        }
        json_array_foreach(json_object_get(spec, "devices"), i, dev)
        {
            const char *dn = fatia_json_str(dev, "name");
            if (!dn) {
                snprintf(why, why_n, "CDI spec '%.300s': devices[%zu].name is required", path, i);
                r = -FATIA_E_PARSE;
                break;
            }
            for (size_t k = 0; k < n; k++) {
                if (!strcmp(dn, names[k])) {
                    json_decref(found[k]);
                    found[k] = json_incref(json_object_get(dev, "containerEdits"));
                    if (!found[k])
                        found[k] = json_object();
                    used = true;
                }
            }
        }
        if (used && json_object_get(spec, "containerEdits"))
            json_array_append(tops, json_object_get(spec, "containerEdits"));
        json_decref(spec);
    }
    for (size_t k = 0; k < n && r == 0; k++) {
        if (!found[k]) {
            snprintf(why, why_n, "CDI device %s=%s: no spec in '%.300s' has it", kind, names[k],
                     dir);
            r = -ENOENT;
        }
    }
    if (r == 0) {
        size_t i;
        json_t *t;
        json_array_foreach(tops, i, t) fatia_cdi_merge(&acc, t);
        for (size_t k = 0; k < n; k++)
            fatia_cdi_merge(&acc, found[k]);
        *ret = acc ? acc : json_object();
        acc = NULL;
    }
    for (size_t k = 0; k < n; k++)
        json_decref(found[k]);
    free(found);
    for (size_t f = 0; f < nf; f++)
        free(files[f]);
    free(files);
    json_decref(tops);
    json_decref(acc);
    return r;
}

static json_t *ensure(json_t *o, const char *k, bool array)
{
    json_t *v = json_object_get(o, k);
    if (!v) {
        v = array ? json_array() : json_object();
        json_object_set_new(o, k, v);
    }
    return v;
}

static void env_set(json_t *env, const char *kv)
{
    const char *eq = strchr(kv, '=');
    size_t nl = eq ? (size_t)(eq - kv) : strlen(kv);
    size_t i;
    json_t *x;

    json_array_foreach(env, i, x)
    {
        const char *s = json_string_value(x);
        if (s && !strncmp(s, kv, nl) && (s[nl] == '=' || s[nl] == '\0')) {
            json_array_set_new(env, i, json_string(kv));
            return;
        }
    }
    json_array_append_new(env, json_string(kv));
}

static int apply_node(json_t *lin, const json_t *dn, size_t i, char *why, size_t why_n)
{
    const char *path = fatia_json_str(dn, "path"), *host = fatia_json_str(dn, "hostPath");
    const char *type = fatia_json_str(dn, "type"), *perm = fatia_json_str(dn, "permissions");
    int64_t major = -1, minor = -1, mode = -1, v;
    json_t *node;

    if (!path || strncmp(path, "/dev/", 5) || strstr(path, "..")) {
        snprintf(why, why_n, "CDI deviceNodes[%zu].path: expected a path under /dev", i);
        return -EINVAL;
    }
    if (!host)
        host = path;
    (void)fatia_json_int(dn, "major", &major);
    (void)fatia_json_int(dn, "minor", &minor);
    if (fatia_json_int(dn, "fileMode", &v))
        mode = v;
    if (major < 0 || minor < 0 || !type) {
        struct stat st;
        if (stat(host, &st) < 0 || (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))) {
            snprintf(why, why_n, "CDI device node '%.300s' (deviceNodes[%zu]): %s", host, i,
                     errno ? fatia_strerror(-errno) : "not a device");
            return -ENOENT;
        }
        if (major < 0 || minor < 0) {
            major = major(st.st_rdev);
            minor = minor(st.st_rdev);
        }
        if (!type)
            type = S_ISBLK(st.st_mode) ? "b" : "c";
        if (mode < 0)
            mode = st.st_mode & 07777;
    }
    if (strcmp(type, "c") && strcmp(type, "b")) {
        snprintf(why, why_n, "CDI deviceNodes[%zu].type: expected c or b", i);
        return -EINVAL;
    }
    node = json_pack("{s:s,s:s,s:I,s:I}", "path", path, "type", type, "major", (json_int_t)major,
                     "minor", (json_int_t)minor);
    if (mode >= 0)
        json_object_set_new(node, "fileMode", json_integer(mode));
    if (fatia_json_int(dn, "uid", &v))
        json_object_set_new(node, "uid", json_integer(v));
    if (fatia_json_int(dn, "gid", &v))
        json_object_set_new(node, "gid", json_integer(v));
    if (strcmp(host, path)) {
        /* runc 1.1.5 makes (or, in a user namespace, bind-mounts) linux.devices from the same
         * path on the host: a node of another host path is bind-mounted instead */
        json_decref(node);
        json_array_append_new(ensure(lin, "fatiaDeviceMounts", true),
                              json_pack("{s:s,s:s,s:s,s:[s,s]}", "destination", path, "source",
                                        host, "type", "bind", "options", "bind", "nosuid"));
    } else {
        json_array_append_new(ensure(lin, "devices", true), node);
    }
    json_array_append_new(ensure(ensure(lin, "resources", false), "devices", true),
                          json_pack("{s:b,s:s,s:I,s:I,s:s}", "allow", 1, "type", type, "major",
                                    (json_int_t)major, "minor", (json_int_t)minor, "access",
                                    perm && perm[0] ? perm : "rwm"));
    return 0;
}

int fatia_cdi_apply(json_t *config, const json_t *edits, char *why, size_t why_n)
{
    json_t *proc = ensure(config, "process", false), *lin = ensure(config, "linux", false);
    size_t i;
    json_t *x;
    int r;

    json_array_foreach(json_object_get(edits, "env"), i, x)
    {
        if (!json_is_string(x) || !strchr(json_string_value(x), '=')) {
            snprintf(why, why_n, "CDI env[%zu]: expected \"NAME=value\"", i);
            return -EINVAL;
        }
        env_set(ensure(proc, "env", true), json_string_value(x));
    }
    json_array_foreach(json_object_get(edits, "deviceNodes"), i, x)
    {
        r = apply_node(lin, x, i, why, why_n);
        if (r < 0)
            return r;
    }
    {
        json_t *dm = json_object_get(lin, "fatiaDeviceMounts");
        json_array_foreach(dm, i, x) json_array_append(ensure(config, "mounts", true), x);
        json_object_del(lin, "fatiaDeviceMounts");
    }
    json_array_foreach(json_object_get(edits, "mounts"), i, x)
    {
        const char *hp = fatia_json_str(x, "hostPath"), *cp = fatia_json_str(x, "containerPath");
        const char *type = fatia_json_str(x, "type");
        const json_t *opts = json_object_get(x, "options");
        if (!hp || hp[0] != '/' || !cp || cp[0] != '/' || strstr(cp, "..")) {
            snprintf(why, why_n, "CDI mounts[%zu]: hostPath and containerPath must be absolute", i);
            return -EINVAL;
        }
        json_array_append_new(
            ensure(config, "mounts", true),
            json_pack("{s:s,s:s,s:s,s:o}", "destination", cp, "source", hp, "type",
                      type ? type : "bind", "options",
                      opts ? json_deep_copy(opts)
                           : json_pack("[s,s,s,s]", "rbind", "ro", "nosuid", "nodev")));
    }
    json_array_foreach(json_object_get(edits, "hooks"), i, x)
    {
        const char *hn = fatia_json_str(x, "hookName"), *path = fatia_json_str(x, "path");
        json_t *h;
        if (!hn || !path || path[0] != '/') {
            snprintf(why, why_n, "CDI hooks[%zu]: hookName and an absolute path are required", i);
            return -EINVAL;
        }
        h = json_pack("{s:s}", "path", path);
        if (json_object_get(x, "args"))
            json_object_set(h, "args", json_object_get(x, "args"));
        if (json_object_get(x, "env"))
            json_object_set(h, "env", json_object_get(x, "env"));
        if (json_object_get(x, "timeout"))
            json_object_set(h, "timeout", json_object_get(x, "timeout"));
        json_array_append_new(ensure(ensure(config, "hooks", false), hn, true), h);
    }
    json_array_foreach(json_object_get(edits, "additionalGIDs"), i, x)
    {
        if (!json_is_integer(x)) {
            snprintf(why, why_n, "CDI additionalGIDs[%zu]: expected an integer", i);
            return -EINVAL;
        }
        json_array_append(ensure(ensure(proc, "user", false), "additionalGids", true), x);
    }
    return 0;
}

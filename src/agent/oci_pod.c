/*
 * agent/oci_pod.c: the agent's side of the OCI runtime: a pod's bundles, before its shim starts.
 *
 * Model. For every container: the image from the node's store (image.h; unpacked for the
 * namespace's host id range when first used), the command line by Kubernetes' rule over the
 * image's Entrypoint/Cmd, the environment (the image's Env, then what the agent computed for the
 * container: the pod's env, the downward API, the devices' variables; the pod wins), the
 * config.json template (oci_spec.c) in POD_DIR/ctr/<name>/config.json.in, and the entry's "oci"
 * object in spec.json (the rootfs below the overlay, the owner of its upper directory). Per pod:
 * RUN_DIR/etc/{hosts (with the API's kubernetes.default.svc names), hostname, resolv.conf} and RUN_DIR/volumes/<name> for emptyDir (owned by the
 * range's root, mode 1777 as kubelet's are world-writable), downwardAPI (files written now) and
 * configMap, secret and projected (refvol.c: kubelet's ..data layout, updated by the agent's
 * tick while the pod runs).
 *
 * Invariants: a hostPath volume is refused unless the namespace is in the admin's list
 * (--agent host-path-namespaces); a container's root is host_base, never host root; what the
 * pod names reaches the filesystem only through paths checked in oci_spec.c or here.
 *
 * The image's User is resolved against the image's own /etc/passwd and /etc/group (imguser.h),
 * read inside the unpacked rootfs with openat2(RESOLVE_IN_ROOT): a link in the image (an absolute
 * /etc/passwd -> /etc/passwd, or ../../..) resolves within the rootfs, never to the host's files.
 *
 * Rejected: pulling here (the pull belongs to the image store and its policy; a missing image is
 * ErrImageNeverPull / ErrImagePull before anything is written). The agent's worker (imgpull.c)
 * pulls and unpacks before the start (op->prefetched); the pull here is only for a caller that
 * did not, and it blocks its thread.
 */
#include "base/compat.h"

#include "agent/oci_pod.h"

#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "agent/cdi_apply.h"
#include "agent/image.h"
#include "agent/oci.h"
#include "agent/podspec.h"
#include "agent/refvol.h"
#include "base/error.h"
#include "base/json.h"
#include "model/quantity.h"

static int write_text(const char *path, const char *text, uid_t uid, gid_t gid, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
    size_t len = strlen(text);
    int r = 0;

    if (fd < 0)
        return -errno;
    if (write(fd, text, len) != (ssize_t)len)
        r = -EIO;
    if (r == 0 && (fchown(fd, uid, gid) < 0 || fchmod(fd, mode) < 0))
        r = -errno;
    close(fd);
    return r;
}

static int mkdir_own(const char *path, mode_t mode, uid_t uid, gid_t gid)
{
    if (mkdir(path, mode) < 0 && errno != EEXIST)
        return -errno;
    if (chown(path, uid, gid) < 0 || chmod(path, mode) < 0)
        return -errno;
    return 0;
}

bool fatia_oci_ns_listed(const char *list, const char *ns)
{
    size_t n = strlen(ns);

    for (const char *p = list; p && *p;) {
        const char *c = strchr(p, ',');
        size_t l = c ? (size_t)(c - p) : strlen(p);
        if ((l == n && !strncmp(p, ns, n)) || (l == 1 && *p == '*'))
            return true;
        if (!c)
            break;
        p = c + 1;
    }
    return false;
}

/* A downwardAPI volume's files: each item's fieldRef, read as the env's downward API reads it. */
static int downward_files(const json_t *pod, const json_t *vol, size_t vi, const char *dir,
                          uid_t uid, gid_t gid, char *why, size_t why_n)
{
    const json_t *items = json_object_get(json_object_get(vol, "downwardAPI"), "items");
    size_t i;
    json_t *it;

    json_array_foreach(items, i, it)
    {
        const char *path = fatia_json_str(it, "path");
        json_t *fake;
        struct fatia_env env = {0};
        char file[4600];
        int r;

        if (!path || !path[0] || path[0] == '/' || strstr(path, "..") || strchr(path, '/')) {
            snprintf(why, why_n,
                     "spec.volumes[%zu].downwardAPI.items[%zu].path: expected a file name", vi, i);
            return -FATIA_E_INVALID;
        }
        fake = json_pack(
            "{s:s,s:[{s:s,s:O}]}", "name", "downward", "env", "name", "V", "valueFrom",
            json_object_get(it, "fieldRef")
                ? json_pack("{s:O}", "fieldRef", json_object_get(it, "fieldRef"))
                : json_pack("{s:O}", "resourceFieldRef", json_object_get(it, "resourceFieldRef")));
        r = fake ? fatia_podspec_env(pod, fake, "/", &env, why, why_n) : -ENOMEM;
        json_decref(fake);
        if (r == 0) {
            const char *v = fatia_env_get(&env, "V");
            snprintf(file, sizeof(file), "%.4000s/%.500s", dir, path);
            r = write_text(file, v ? v : "", uid, gid, 0644);
            if (r < 0)
                snprintf(why, why_n, "cannot write '%.300s': %s", file, fatia_strerror(r));
        } else {
            size_t l = strlen(why);
            snprintf(why + l, why_n - l, " (spec.volumes[%zu].downwardAPI.items[%zu])", vi, i);
        }
        fatia_env_release(&env);
        if (r < 0)
            return r;
    }
    return 0;
}

int fatia_oci_pod_disk_limits(const json_t *pod, const char *run_dir, json_t **ret, char *why,
                              size_t why_n)
{
    json_t *out = json_array(), *v;
    size_t i;

    json_array_foreach(json_object_get(json_object_get(pod, "spec"), "volumes"), i, v)
    {
        const json_t *ed = json_object_get(v, "emptyDir");
        const char *vn = fatia_json_str(v, "name"), *medium = fatia_json_str(ed, "medium");
        const char *sl = fatia_json_str(ed, "sizeLimit");
        uint64_t bytes = 0;
        char p[4600];

        if (!ed || !sl || (medium && !strcmp(medium, "Memory")))
            continue;
        if (!vn || !vn[0] || strchr(vn, '/') || fatia_quantity_parse_bytes(sl, &bytes) < 0 ||
            bytes == 0) {
            snprintf(why, why_n,
                     "spec.volumes[%zu].emptyDir.sizeLimit: expected a positive quantity, got "
                     "'%.40s'",
                     i, sl);
            json_decref(out);
            return -FATIA_E_INVALID;
        }
        snprintf(p, sizeof(p), "%s/volumes/%s", run_dir, vn);
        json_array_append_new(out, json_pack("{s:s,s:s,s:I,s:s}", "volume", vn, "path", p, "bytes",
                                             (json_int_t)bytes, "sizeLimit", sl));
    }
    *ret = out;
    return 0;
}

int fatia_oci_pod_prepare(const struct fatia_oci_pod *op, json_t **ret_tmpfs, char *why,
                          size_t why_n)
{
    const json_t *spec = json_object_get(op->pod, "spec");
    const char *name = fatia_json_str(json_object_get(op->pod, "metadata"), "name");
    uid_t root = op->host_base;
    char p[4600], text[1400];
    json_t *tmpfs = json_array(), *v;
    size_t i;
    int r;

    snprintf(p, sizeof(p), "%s/etc", op->run_dir);
    if ((r = mkdir_own(p, 0755, 0, 0)) < 0)
        goto io;
    snprintf(p, sizeof(p), "%s/etc/hostname", op->run_dir);
    snprintf(text, sizeof(text), "%s\n", name);
    if ((r = write_text(p, text, 0, 0, 0644)) < 0)
        goto io;
    snprintf(p, sizeof(p), "%s/etc/hosts", op->run_dir);
    {
        /* the API's in-cluster names: the pod network's gateway, where the agent's proxy
         * listens (apiproxy.c), or loopback on the host's network */
        uint32_t k = op->host_base / FATIA_OCI_IDS;
        char gw[32];
        if (op->host_network)
            snprintf(gw, sizeof(gw), "127.0.0.1");
        else
            snprintf(gw, sizeof(gw), "10.%u.%u.1", (k / 256) & 255, k % 256);
        snprintf(text, sizeof(text),
                 "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n127.0.1.1\t%s\n"
                 "%s\tkubernetes kubernetes.default kubernetes.default.svc "
                 "kubernetes.default.svc.cluster.local\n",
                 name, gw);
    }
    if ((r = write_text(p, text, 0, 0, 0644)) < 0)
        goto io;
    snprintf(p, sizeof(p), "%s/etc/resolv.conf", op->run_dir);
    {
        /* the host's, as kubelet's dnsPolicy Default gives it */
        FILE *f = fopen("/etc/resolv.conf", "re");
        size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
        if (f)
            fclose(f);
        text[n] = '\0';
        if ((r = write_text(p, text, 0, 0, 0644)) < 0)
            goto io;
    }
    snprintf(p, sizeof(p), "%s/volumes", op->run_dir);
    if ((r = mkdir_own(p, 0711, 0, 0)) < 0)
        goto io;
    json_array_foreach(json_object_get(spec, "volumes"), i, v)
    {
        const char *vn = fatia_json_str(v, "name");
        const json_t *ed = json_object_get(v, "emptyDir");
        if (!vn || !vn[0] || strchr(vn, '/') || !strcmp(vn, "..") || !strcmp(vn, ".")) {
            snprintf(why, why_n, "spec.volumes[%zu].name: expected a name", i);
            json_decref(tmpfs);
            return -FATIA_E_INVALID;
        }
        snprintf(p, sizeof(p), "%s/volumes/%s", op->run_dir, vn);
        if (json_object_get(v, "hostPath") &&
            !fatia_oci_ns_listed(op->host_path_namespaces, op->ns)) {
            snprintf(why, why_n,
                     "spec.volumes[%zu].hostPath: hostPath volumes are not allowed in namespace "
                     "%s (the node's admin lists the namespaces that may: --agent "
                     "host-path-namespaces)",
                     i, op->ns);
            json_decref(tmpfs);
            return -FATIA_E_INVALID;
        }
        if (ed) {
            const char *medium = fatia_json_str(ed, "medium");
            if ((r = mkdir_own(p, 01777, root, root)) < 0)
                goto io;
            if (medium && !strcmp(medium, "Memory")) {
                const char *sl = fatia_json_str(ed, "sizeLimit");
                uint64_t bytes = 0;
                char size[32] = "";
                if (sl && (fatia_quantity_parse_bytes(sl, &bytes) < 0 || bytes == 0)) {
                    snprintf(why, why_n,
                             "spec.volumes[%zu].emptyDir.sizeLimit: expected a positive "
                             "quantity, got '%.40s'",
                             i, sl);
                    json_decref(tmpfs);
                    return -FATIA_E_INVALID;
                }
                if (sl)
                    snprintf(size, sizeof(size), "%llu", (unsigned long long)bytes);
                json_array_append_new(tmpfs, json_pack("{s:s,s:s,s:I}", "path", p, "size", size,
                                                       "uid", (json_int_t)root));
            }
        } else if (fatia_pod_vol_is_ref(v)) {
            /* kubelet's atomic writer layout, kept current by the agent's tick (refvol.h) */
            json_t *files = NULL;
            bool changed;
            r = fatia_pod_vol_files(v, i, op->refs, &files, why, why_n);
            if (r == 0)
                r = fatia_pod_vol_sync(p, files, root, root, &changed, why, why_n);
            json_decref(files);
            if (r < 0) {
                json_decref(tmpfs);
                return r;
            }
        } else if (json_object_get(v, "persistentVolumeClaim")) {
            /* the claim's directory, linked here: the bind mount follows the link */
            const char *cn =
                fatia_json_str(json_object_get(v, "persistentVolumeClaim"), "claimName");
            char dir[1400];
            r = op->claim_path && cn
                    ? op->claim_path(op->claim_arg, cn, dir, sizeof(dir), why, why_n)
                    : -FATIA_E_INVALID;
            if (r == -FATIA_E_INVALID && !cn)
                snprintf(why, why_n,
                         "spec.volumes[%zu].persistentVolumeClaim.claimName: Required "
                         "value",
                         i);
            if (r < 0) {
                json_decref(tmpfs);
                return r;
            }
            (void)unlink(p);
            if (symlink(dir, p) < 0) {
                r = -errno;
                goto io;
            }
        } else if (json_object_get(v, "downwardAPI")) {
            if ((r = mkdir_own(p, 0755, root, root)) < 0)
                goto io;
            r = downward_files(op->pod, v, i, p, root, root, why, why_n);
            if (r < 0) {
                json_decref(tmpfs);
                return r;
            }
        }
    }
    *ret_tmpfs = tmpfs;
    return 0;
io:
    snprintf(why, why_n, "cannot prepare '%.300s': %s", p, fatia_strerror(r));
    json_decref(tmpfs);
    return r;
}

/* The image's Env below the agent's: the pod's own values win; PATH from the image unless the
 * pod's env sets it; HOME from the pod or the image, else the user's passwd entry in the image
 * (as runc sets it), else /root for uid 0 and / otherwise. */
static json_t *merge_env(const json_t *ctr, const json_t *icfg, const struct fatia_env *agent,
                         uint32_t uid, const char *pw_home)
{
    struct fatia_env e = {0};
    bool pod_path = false, image_home = false;
    size_t i;
    json_t *x, *out;

    json_array_foreach(json_object_get(ctr, "env"), i, x)
    {
        const char *n = fatia_json_str(x, "name");
        if (n && !strcmp(n, "PATH"))
            pod_path = true;
    }
    json_array_foreach(json_object_get(icfg, "Env"), i, x)
    {
        const char *kv = json_string_value(x), *eq = kv ? strchr(kv, '=') : NULL;
        char k[256];
        if (!eq || (size_t)(eq - kv) >= sizeof(k))
            continue;
        snprintf(k, sizeof(k), "%.*s", (int)(eq - kv), kv);
        if (!strcmp(k, "HOME"))
            image_home = true;
        (void)fatia_env_set(&e, k, eq + 1);
    }
    for (size_t k = 0; k < agent->n; k++) {
        const char *kv = agent->v[k], *eq = strchr(kv, '=');
        char n[256];
        if (!eq || (size_t)(eq - kv) >= sizeof(n))
            continue;
        snprintf(n, sizeof(n), "%.*s", (int)(eq - kv), kv);
        if (!strcmp(n, "PATH") && !pod_path && fatia_env_get(&e, "PATH"))
            continue;
        if (!strcmp(n, "HOME"))
            continue;
        (void)fatia_env_set(&e, n, eq + 1);
    }
    if (!image_home)
        (void)fatia_env_set(&e, "HOME", pw_home && pw_home[0] ? pw_home : uid == 0 ? "/root" : "/");
    out = json_array();
    for (size_t k = 0; k < e.n; k++)
        json_array_append_new(out, json_string(e.v[k]));
    fatia_env_release(&e);
    return out;
}

/* A workbench's home (nbhome.c) bound at the container's HOME, its working directory when the
 * image gives none; not over a mount the pod asked for at that path (its own claim is the home
 * then), nor at "/" (no HOME of the image's: the home is not mounted). */
static void bind_home(json_t *cfg, const char *home, const json_t *env)
{
    const char *dst = NULL;
    json_t *mounts = json_object_get(cfg, "mounts"), *m, *proc = json_object_get(cfg, "process");
    const char *cwd = fatia_json_str(proc, "cwd");
    size_t i;

    json_array_foreach(env, i, m)
    {
        const char *kv = json_string_value(m);
        if (kv && !strncmp(kv, "HOME=", 5))
            dst = kv + 5;
    }
    if (!dst || dst[0] != '/' || !dst[1] || !json_is_array(mounts))
        return;
    json_array_foreach(mounts, i, m)
    {
        const char *d = fatia_json_str(m, "destination");
        if (d && !strcmp(d, dst))
            return;
    }
    json_array_append_new(mounts,
                          json_pack("{s:s,s:s,s:s,s:[s,s,s]}", "destination", dst, "type", "bind",
                                    "source", home, "options", "rbind", "nosuid", "nodev"));
    if (proc && cwd && !strcmp(cwd, "/"))
        json_object_set_new(proc, "cwd", json_string(dst));
}

/* Drops from edits the mounts whose containerPath a mount of over also has. */
static void drop_overridden(json_t *edits, const json_t *over)
{
    json_t *m = json_object_get(edits, "mounts");
    size_t i = json_array_size(m);

    while (i-- > 0) {
        const char *cp = fatia_json_str(json_array_get(m, i), "containerPath");
        size_t k;
        json_t *x;

        json_array_foreach(json_object_get(over, "mounts"), k, x)
        {
            const char *ocp = fatia_json_str(x, "containerPath");
            if (cp && ocp && !strcmp(cp, ocp)) {
                json_array_remove(m, i);
                break;
            }
        }
    }
}

/* Drops each mount that a later one of the same destination hides whole (the container's own
 * /dev/shm under an MPS daemon's): runc would mount both, the first for nothing. */
static void drop_shadowed(json_t *cfg)
{
    json_t *m = json_object_get(cfg, "mounts");
    size_t i = json_array_size(m);

    while (i-- > 0) {
        const char *d = fatia_json_str(json_array_get(m, i), "destination");
        for (size_t k = i + 1; d && k < json_array_size(m); k++) {
            const char *later = fatia_json_str(json_array_get(m, k), "destination");
            if (later && !strcmp(d, later)) {
                json_array_remove(m, i);
                break;
            }
        }
    }
}

/* The container's slices through CDI (kind fatia.dev/gpu, one device per slice id: from the
 * admin's specs when they name them all, else from the agent's spec of the node), then the slice side's own edits for it (POD_DIR's vgpu/<container>.edits.json,
 * when written): where both mount one container path (a capped slice's vgpu.conf and accounting
 * file), the container's own wins, since its caps and accounting file are the pod's. */
static int apply_devices(const struct fatia_oci_pod *op, const char *cname, json_t *cfg, char *why,
                         size_t why_n)
{
    const char *names[64];
    json_t *edits = NULL, *extra;
    char path[4600];
    size_t n = 0;
    int r;

    for (size_t k = 0; op->devs && k < op->devs->n && n < FATIA_ARRAY_SIZE(names); k++) {
        if (!strcmp(op->devs->v[k].container, cname))
            names[n++] = op->devs->v[k].slice;
    }
    snprintf(path, sizeof(path), "%.3000s/vgpu/%.300s.edits.json", op->pod_dir, cname);
    extra = json_load_file(path, 0, NULL);
    /* the admin's specs first (all of the container's devices there), else the node's */
    r = fatia_cdi_edits(op->cdi_dir, FATIA_CDI_KIND, names, n, &edits, why, why_n);
    if (r == -ENOENT && op->cdi_node_dir)
        r = fatia_cdi_edits(op->cdi_node_dir, FATIA_CDI_KIND, names, n, &edits, why, why_n);
    if (r == 0 && edits && extra)
        drop_overridden(edits, extra);
    if (r == 0 && edits)
        r = fatia_cdi_apply(cfg, edits, why, why_n);
    json_decref(edits);
    if (r == 0 && extra)
        r = fatia_cdi_apply(cfg, extra, why, why_n);
    json_decref(extra);
    /* an MPS share's pipe directory and its daemon's /dev/shm (mps_files.h) */
    snprintf(path, sizeof(path), "%.3000s/vgpu/%.300s.mps.json", op->pod_dir, cname);
    extra = r == 0 ? json_load_file(path, 0, NULL) : NULL;
    if (extra)
        r = fatia_cdi_apply(cfg, extra, why, why_n);
    json_decref(extra);
    if (r == 0)
        drop_shadowed(cfg);
    return r == -ENOENT ? -EIO : r;
}

/* The container's whole device list (the agent's CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES)
 * over the CDI devices' env, in which each device names only itself and the last would win. */
static void keep_device_list(json_t *cfg, const struct fatia_env *env)
{
    static const char *const keys[] = {"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"};
    json_t *penv = json_object_get(json_object_get(cfg, "process"), "env");

    for (size_t k = 0; json_is_array(penv) && k < FATIA_ARRAY_SIZE(keys); k++) {
        const char *v = fatia_env_get(env, keys[k]);
        size_t kl = strlen(keys[k]), i;
        char kv[8192];
        json_t *x;

        if (!v)
            continue;
        snprintf(kv, sizeof(kv), "%s=%s", keys[k], v);
        json_array_foreach(penv, i, x)
        {
            const char *s = json_string_value(x);
            if (s && !strncmp(s, keys[k], kl) && s[kl] == '=')
                json_array_set_new(penv, i, json_string(kv));
        }
    }
}

/* kubelet's imagePullPolicy: as set, else Always for ":latest" or no tag, IfNotPresent for
 * another tag or a digest. */
const char *fatia_oci_pull_policy(const json_t *ctr, const char *image)
{
    const char *p = fatia_json_str(ctr, "imagePullPolicy");
    const char *slash = strrchr(image, '/'), *last = slash ? slash + 1 : image;
    const char *colon = strchr(last, ':');

    if (p && p[0])
        return p;
    if (strchr(image, '@'))
        return "IfNotPresent";
    return !colon || !strcmp(colon, ":latest") ? "Always" : "IfNotPresent";
}

bool fatia_oci_insecure(const char *list, const char *image)
{
    const char *slash = strchr(image, '/');
    char host[256];

    if (!slash || (size_t)(slash - image) >= sizeof(host))
        return false;
    snprintf(host, sizeof(host), "%.*s", (int)(slash - image), image);
    return fatia_oci_ns_listed(list, host);
}

/* The image in the store by the container's pull policy: Never: there or ErrImageNeverPull
 * (-ENOENT); IfNotPresent: pulled when missing; Always: pulled (resolving the tag at the
 * registry; stored blobs are reused). A failed pull: -EIO, kubelet's ErrImagePull. */
static int ensure_image(const struct fatia_oci_pod *op, const json_t *ctr, const char *image,
                        char *why, size_t why_n)
{
    const char *policy = fatia_oci_pull_policy(ctr, image);
    char digest[128], auth[1100] = "";
    json_t *cfg = NULL;
    bool have = fatia_image_get(op->images, image, UINT32_MAX, digest, sizeof(digest), &cfg, NULL,
                                0, why, why_n) == 0;
    int r;

    json_decref(cfg);
    if (op->prefetched) /* imgpull.c ran the policy for this start: what is stored is used */
        return 0;
    if (!strcmp(policy, "Never")) {
        if (have)
            return 0;
        snprintf(why, why_n,
                 "Container image \"%s\" is not present with pull policy of Never (fatia image "
                 "load puts images on the node)",
                 image);
        return -ENOENT;
    }
    if (have && strcmp(policy, "Always"))
        return 0;
    if (op->pull_secrets_auth) {
        r = op->pull_secrets_auth(op->pull_secrets_arg, op->pod, auth, sizeof(auth));
        if (r < 0) {
            snprintf(why, why_n, "imagePullSecrets: %s", fatia_strerror(r));
            return -EIO;
        }
    }
    return fatia_image_pull(op->images, image, auth[0] ? auth : op->auth_file,
                            fatia_oci_insecure(op->insecure_registries, image), why, why_n);
}

/* The text of rootfs/<rel> (at most 1 MiB), every link resolved inside rootfs: a new string,
 * NULL when absent, unreadable or too large (the image then has no such file). */
static char *read_in_root(const char *rootfs, const char *rel)
{
    struct open_how how = {.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
                           .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
    int root = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC), fd;
    struct stat st;
    char *buf = NULL;
    ssize_t len;

    if (root < 0)
        return NULL;
    fd = (int)syscall(SYS_openat2, root, rel, &how, sizeof(how));
    close(root);
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= (1 << 20) &&
        (buf = malloc((size_t)st.st_size + 1)) != NULL) {
        len = read(fd, buf, (size_t)st.st_size);
        if (len < 0) {
            free(buf);
            buf = NULL;
        } else {
            buf[len] = '\0';
        }
    }
    close(fd);
    return buf;
}

int fatia_oci_ctr_prepare(const struct fatia_oci_pod *op, const json_t *ctr,
                          const struct fatia_env *env, json_t **ret_argv, json_t **ret_oci,
                          char *why, size_t why_n)
{
    const char *cname = fatia_json_str(ctr, "name"), *image = fatia_json_str(ctr, "image");
    char digest[128], rootfs[1600], dir[4600], path[4700], rootdir[4600];
    json_t *icfg = NULL, *merged = NULL, *argv = NULL, *fenv = NULL, *cfg = NULL;
    struct fatia_oci_in in = {0};
    char cgpath[400];
    struct fatia_imguser ids;
    char *text, *passwd = NULL, *group = NULL;
    int r;

    if (!image || !image[0]) {
        snprintf(why, why_n, "container %s: image: required in a container", cname);
        return -FATIA_E_INVALID;
    }
    r = ensure_image(op, ctr, image, why, why_n);
    if (r < 0)
        return r;
    r = fatia_image_get(op->images, image, op->host_base, digest, sizeof(digest), &icfg, rootfs,
                        sizeof(rootfs), why, why_n);
    if (r < 0)
        return r == -ENOENT ? -EIO : r;
    merged = fatia_oci_merge_command(ctr, icfg);
    r = merged ? fatia_podspec_argv(merged, env, &argv, why, why_n) : -ENOMEM;
    if (r < 0) {
        if (r == -EINVAL)
            snprintf(why, why_n,
                     "container %s: no command: neither the pod nor the image %s "
                     "gives one",
                     cname, image);
        r = r == -ENOMEM ? r : -FATIA_E_INVALID;
        goto out;
    }
    passwd = read_in_root(rootfs, "etc/passwd");
    group = read_in_root(rootfs, "etc/group");
    r = fatia_oci_user(op->pod, ctr, icfg, &(struct fatia_imguser_files){passwd, group}, &ids, why,
                       why_n);
    if (r == -EINVAL || r == -ERANGE)
        r = -EIO; /* the image's User or files, not the pod: CreateContainerError, as kubelet's */
    if (r < 0)
        goto out;
    fenv = merge_env(ctr, icfg, env, ids.uid, ids.home);
    /* under the pod's cgroup (oci.c makes it, with the pod's pids.max) */
    snprintf(cgpath, sizeof(cgpath), "/fatia-pods/pod-%.128s/%.200s",
             fatia_json_str(json_object_get(op->pod, "metadata"), "uid"), cname);
    in = (struct fatia_oci_in){.pod = op->pod,
                               .ctr = ctr,
                               .image_config = icfg,
                               .argv = argv,
                               .env = fenv,
                               .host_base = op->host_base,
                               .run_dir = op->run_dir,
                               .cgroups_path = cgpath,
                               .host_network = op->host_network,
                               .etc = {passwd, group}};
    r = fatia_oci_spec_build(&in, &cfg, why, why_n);
    if (r < 0)
        goto out;
    r = apply_devices(op, cname, cfg, why, why_n);
    if (r < 0)
        goto out;
    keep_device_list(cfg, env);
    if (op->nb_home)
        bind_home(cfg, op->nb_home, fenv);
    snprintf(dir, sizeof(dir), "%s/ctr", op->pod_dir);
    (void)mkdir(dir, 0700);
    snprintf(dir, sizeof(dir), "%s/ctr/%s", op->pod_dir, cname);
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        r = -errno;
        snprintf(why, why_n, "cannot create '%.300s': %s", dir, fatia_strerror(r));
        goto out;
    }
    {
        /* the rootfs where the range's root can reach it (runc mounts it inside the user
         * namespace): RUN_DIR/ctr/<name>/{rootfs,upper,work}, RUN_DIR owned by that root */
        char rd[4600];
        snprintf(rd, sizeof(rd), "%.2000s/ctr", op->run_dir);
        (void)mkdir(rd, 0711);
        (void)chmod(rd, 0711); /* fatiad's umask is 077 */
        snprintf(rd, sizeof(rd), "%.2000s/ctr/%.300s", op->run_dir, cname);
        if ((mkdir(rd, 0711) < 0 && errno != EEXIST) || chmod(rd, 0711) < 0) {
            r = -errno;
            snprintf(why, why_n, "cannot create '%.300s': %s", rd, fatia_strerror(r));
            goto out;
        }
        snprintf(path, sizeof(path), "%s/rootfs", rd);
        json_object_set_new(json_object_get(cfg, "root"), "path", json_string(path));
        snprintf(rootdir, sizeof(rootdir), "%s", rd);
    }
    snprintf(path, sizeof(path), "%s/config.json.in", dir);
    text = json_dumps(cfg, JSON_INDENT(1));
    r = text ? write_text(path, text, 0, 0, 0600) : -ENOMEM;
    free(text);
    if (r < 0) {
        snprintf(why, why_n, "cannot write '%.300s': %s", path, fatia_strerror(r));
        goto out;
    }
    *ret_oci = json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:I}", "image", image, "imageID", digest,
                         "lowerdir", rootfs, "dir", rootdir, "rootUid", (json_int_t)op->host_base,
                         "rootGid", (json_int_t)op->host_base, "hostUid",
                         (json_int_t)op->host_base + ids.uid, "hostGid",
                         (json_int_t)op->host_base + ids.gid);
    *ret_argv = argv;
    argv = NULL;
out:
    json_decref(cfg);
    json_decref(fenv);
    json_decref(argv);
    json_decref(merged);
    json_decref(icfg);
    free(passwd);
    free(group);
    return r;
}

/*
 * agent/cdi.c: the node's CDI spec (see cdi.h).
 *
 * Model: discovery looks at fixed places (nvidia-ctk's: /dev, the distribution's library
 * directories and /usr/local/nvidia, PATH-like bin directories) and keeps what exists; the spec
 * is built from the ResourceSlice's devices, so it names exactly the slices placement can give,
 * by the same ids, of the GPUs whose /dev/nvidia<minor> the host has (a real GPU gone has none:
 * a container of its slice fails with "no spec", not with runc's missing mount source); the
 * slice's minor comes from its id (gpu-<minor>...), as trust_devices reads it. A simulated node
 * (fatia_cdi_host.simulated) has no driver: its slices are devices of env and a capped slice's
 * interposer mounts only, so the walkthrough's GPU pods run in containers here as they would on
 * a GPU host, capped by the same read-only vgpu.conf; no host device node is ever named.
 *
 * A MIG slice (type "mig") also needs the /dev/nvidia-caps/nvidia-cap<M> nodes of its GPU
 * instance and compute instance, as nvidia-ctk emits them: M is the "DeviceFileMinor" of
 * /proc/driver/nvidia/capabilities/gpu<parent minor>/mig/gi<g>/access and .../gi<g>/ci<c>/access,
 * the major /proc/devices' "nvidia-caps"; g and c are the slice's fatia.dev/gpuInstance and
 * fatia.dev/computeInstance attributes (NVML's ids, supply/render.c). A MIG slice whose caps
 * cannot be found (no such attributes, no access file, no nvidia-caps major, no node) is left out
 * of the spec like a GPU gone: without them CUDA sees no device in the container, and "no spec"
 * says why where an empty device list would not. Under cdi-root the /proc files are the fake
 * host's too.
 *
 * Invariants: every device name is a slice id and unique; every path in the spec is absolute;
 * the spec is written whole and renamed into place; the capped slices' files are root's and
 * read-only but the accounting file (the slice's processes reserve in it).
 *
 * The driver's soname links (libcuda.so.1 -> libcuda.so.580.159.04) are mounts too, of the file
 * they name, at the link's path: an image without an ld.so cache entry for the driver (most)
 * finds libcuda.so.1 in the usual directory with no hook at all.
 *
 * Rejected: nvidia-ctk's hooks (nvidia-cdi-hook is not on Debian hosts), and a createContainer
 * hook running the host's /sbin/ldconfig: runc runs it in the container's mount namespace before
 * pivot_root, so it rewrites the host's /etc/ld.so.cache (a user-namespaced container is refused,
 * seen on the H200: "Can't create temporary cache file /etc/ld.so.cache~"), never the
 * container's; one spec file per slice (a runtime reads one kind from one
 * file, and a slice added or removed is then one rename).
 */
#include "base/compat.h"

#include "agent/cdi.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "agent/vgpu_slice.h"
#include "base/json.h"
#include "model/quantity.h"
#include "vgpu/conffile.h"
#include "vgpu/region.h"

static const char *const lib_dirs[] = {
    "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
    "/usr/local/nvidia/lib64",   "/usr/local/nvidia/lib"};
static const char *const bin_dirs[] = {"/usr/bin", "/usr/local/nvidia/bin", "/usr/local/bin"};
static const char *const bins[] = {"nvidia-smi", "nvidia-cuda-mps-control",
                                   "nvidia-cuda-mps-server", "nvidia-debugdump"};
static const char *const ctl_nodes[] = {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools",
                                        "nvidia-modeset"};

/* lib<name>.so.<digits and dots>, of the driver's family (libcuda, libnvidia-*, libnvcuvid);
 * soname: also the soname link (libcuda.so.1). */
static bool driver_lib(const char *n, bool soname)
{
    const char *so = strstr(n, ".so.");

    if (!so || (strncmp(n, "libcuda.", 8) && strncmp(n, "libnvidia-", 10) &&
                strncmp(n, "libnvcuvid.", 11) && strncmp(n, "libcudadebugger.", 16)))
        return false;
    for (const char *p = so + 4; *p; p++) {
        if ((*p < '0' || *p > '9') && *p != '.')
            return false;
    }
    /* the full version (580.159.04), or the soname link (libcuda.so.1) */
    return so[4] && (soname || strchr(so + 4, '.') != NULL);
}

static void add_file(struct fatia_cdi_host *h, const char *path)
{
    for (size_t i = 0; i < h->n_files; i++) {
        if (!strcmp(h->files[i], path))
            return;
    }
    if (h->n_files < FATIA_CDI_MAX && strlen(path) < sizeof(h->files[0]))
        snprintf(h->files[h->n_files++], sizeof(h->files[0]), "%s", path);
}

/* The start of a small file (a /proc entry) as a string; its length, or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t len;

    if (fd < 0)
        return -errno;
    len = read(fd, buf, n - 1);
    if (len < 0)
        len = -errno;
    close(fd);
    buf[len < 0 ? 0 : len] = '\0';
    return len;
}

int fatia_agent_cdi_proc_major(const char *text, const char *name)
{
    const char *p = strstr(text, "Character devices:");
    size_t nl = strlen(name);

    if (!p)
        return -ENOENT;
    for (p = strchr(p, '\n'); p && p[1] && p[1] != '\n'; p = strchr(p + 1, '\n')) {
        char *end;
        long v = strtol(p + 1, &end, 10);

        if (end == p + 1 || v < 0 || v > 4095)
            continue;
        while (*end == ' ')
            end++;
        if (!strncmp(end, name, nl) && (end[nl] == '\n' || end[nl] == '\0'))
            return (int)v;
    }
    return -ENOENT;
}

int fatia_agent_cdi_cap_minor(const char *text)
{
    const char *p = text;

    for (; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        char *end;
        long v;

        if (strncmp(p, "DeviceFileMinor:", 16))
            continue;
        v = strtol(p + 16, &end, 10);
        if (end == p + 16 || v < 0 || v > 1048575 || (*end != '\n' && *end != '\0'))
            return -EINVAL;
        return (int)v;
    }
    return -EINVAL;
}

void fatia_agent_cdi_discover(const char *root, struct fatia_cdi_host *h)
{
    char path[1024], text[8192];
    struct stat st;
    int r;

    memset(h, 0, sizeof(*h));
    h->gpu_major = 195;
    snprintf(path, sizeof(path), "%s/proc/devices", root);
    if (read_small(path, text, sizeof(text)) > 0 &&
        (r = fatia_agent_cdi_proc_major(text, "nvidia-caps")) > 0)
        h->caps_major = (unsigned)r;
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(ctl_nodes); i++) {
        snprintf(path, sizeof(path), "%s/dev/%s", root, ctl_nodes[i]);
        if (stat(path, &st) < 0 || !S_ISCHR(st.st_mode))
            continue;
        snprintf(h->nodes[h->n_nodes], sizeof(h->nodes[0]), "/dev/%s", ctl_nodes[i]);
        h->node_major[h->n_nodes] = major(st.st_rdev);
        h->node_minor[h->n_nodes] = minor(st.st_rdev);
        if (!strcmp(ctl_nodes[i], "nvidiactl"))
            h->gpu_major = major(st.st_rdev); /* nvidiactl is 195:255, the GPUs 195:<minor> */
        h->n_nodes++;
    }
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(lib_dirs); i++) {
        struct dirent *e;
        DIR *d;

        snprintf(path, sizeof(path), "%s%s", root, lib_dirs[i]);
        d = opendir(path);
        if (!d)
            continue;
        while ((e = readdir(d))) {
            char full[1024], host[2100];
            struct stat ls, ts;

            if (!driver_lib(e->d_name, true))
                continue;
            snprintf(full, sizeof(full), "%s/%s", lib_dirs[i], e->d_name);
            snprintf(host, sizeof(host), "%s/%s", path, e->d_name);
            if (lstat(host, &ls) < 0)
                continue;
            /* a soname link: only one that names a regular file (mounted at the link's path) */
            if (S_ISLNK(ls.st_mode) ? stat(host, &ts) < 0 || !S_ISREG(ts.st_mode)
                                    : !driver_lib(e->d_name, false))
                continue;
            add_file(h, full);
        }
        closedir(d);
    }
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(bins); i++) {
        for (size_t k = 0; k < FATIA_ARRAY_SIZE(bin_dirs); k++) {
            char full[600];

            snprintf(full, sizeof(full), "%s/%s", bin_dirs[k], bins[i]);
            snprintf(path, sizeof(path), "%s%s", root, full);
            if (access(path, X_OK) == 0) {
                add_file(h, full);
                break;
            }
        }
    }
}

static json_t *ro_mount(const char *host, const char *ctr, const char *type)
{
    return json_pack("{s:s,s:s,s:s,s:[s,s,s,s]}", "hostPath", host, "containerPath", ctr, "type",
                     type, "options", "ro", "nosuid", "nodev", "rbind");
}

static bool node_exists(const char *root, const char *path)
{
    char host[1100];
    struct stat st;

    snprintf(host, sizeof(host), "%s%s", root ? root : "", path);
    return stat(host, &st) == 0 && S_ISCHR(st.st_mode);
}

/* A device node of the host at root (a fake host in the tests): hostPath says where it is. */
static json_t *dev_node(const char *root, const char *path, unsigned major, unsigned minor)
{
    json_t *n = json_pack("{s:s,s:s,s:i,s:i,s:s}", "path", path, "type", "c", "major", (int)major,
                          "minor", (int)minor, "permissions", "rw");
    char host[1100];

    if (n && root && root[0]) {
        snprintf(host, sizeof(host), "%s%s", root, path);
        json_object_set_new(n, "hostPath", json_string(host));
    }
    return n;
}

static const char *attr(const json_t *dev, const char *name)
{
    return fatia_json_str(json_object_get(json_object_get(dev, "attributes"), name), "string");
}

static int minor_of(const char *slice)
{
    int v = 0, digits = 0;

    if (strncmp(slice, "gpu-", 4))
        return -1;
    for (const char *q = slice + 4; *q >= '0' && *q <= '9' && digits < 6; q++, digits++)
        v = v * 10 + (*q - '0');
    return digits ? v : -1;
}

/* The capped slice's memory cap (a timeslice or fraction with a memory capacity), or 0. */
static uint64_t cap_of(const json_t *dev)
{
    const char *type = attr(dev, "type"), *mem;
    uint64_t b = 0;

    if (!type || (strcmp(type, "timeslice") && strcmp(type, "fraction")))
        return 0;
    mem = fatia_json_str(json_object_get(json_object_get(dev, "capacity"), "memory"), "value");
    if (!mem || fatia_quantity_parse_bytes(mem, &b) < 0)
        return 0;
    return b;
}

/* The nvidia-caps node of one MIG capability (sub: "gi3" or "gi3/ci0") of the GPU of minor
 * gpu, or NULL when the host lacks it. */
static json_t *cap_node(const struct fatia_cdi_host *h, const char *root, int gpu, const char *sub)
{
    char path[1100], text[512], node[64];
    int m;

    snprintf(path, sizeof(path), "%s/proc/driver/nvidia/capabilities/gpu%d/mig/%s/access",
             root ? root : "", gpu, sub);
    if (!h->caps_major || read_small(path, text, sizeof(text)) <= 0 ||
        (m = fatia_agent_cdi_cap_minor(text)) < 0)
        return NULL;
    snprintf(node, sizeof(node), "/dev/nvidia-caps/nvidia-cap%d", m);
    if (!node_exists(root, node))
        return NULL;
    return dev_node(root, node, h->caps_major, (unsigned)m);
}

/* Appends a MIG slice's GPU and compute instance caps to nodes; false when one is missing. */
static bool mig_caps(const struct fatia_cdi_host *h, const char *root, const json_t *dev, int gpu,
                     json_t *nodes)
{
    const json_t *at = json_object_get(dev, "attributes");
    int64_t gi, ci;
    char sub[64];
    json_t *n;

    if (!fatia_json_int(json_object_get(at, "fatia.dev/gpuInstance"), "int", &gi) ||
        !fatia_json_int(json_object_get(at, "fatia.dev/computeInstance"), "int", &ci) || gi < 0 ||
        ci < 0 || gi > 1000 || ci > 1000)
        return false;
    snprintf(sub, sizeof(sub), "gi%d", (int)gi);
    if (!(n = cap_node(h, root, gpu, sub)))
        return false;
    json_array_append_new(nodes, n);
    snprintf(sub, sizeof(sub), "gi%d/ci%d", (int)gi, (int)ci);
    if (!(n = cap_node(h, root, gpu, sub)))
        return false;
    json_array_append_new(nodes, n);
    return true;
}

static bool name_ok(const char *n)
{
    if (!n || !n[0] || strlen(n) > 200)
        return false;
    for (const char *p = n; *p; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '.' || *p == '-' || *p == ':'))
            return false;
    }
    return true;
}

int fatia_agent_cdi_spec(const struct fatia_cdi_host *h, const char *root, const json_t *devices,
                         const char *files_dir, const char *lib, json_t **ret)
{
    json_t *spec = json_pack("{s:s,s:s,s:[],s:{s:[],s:[],s:[],s:[]}}", "cdiVersion",
                             FATIA_CDI_VERSION, "kind", FATIA_CDI_KIND, "devices", "containerEdits",
                             "deviceNodes", "mounts", "hooks", "env");
    json_t *common, *list;
    const json_t *dev;
    size_t i;

    if (!spec)
        return -ENOMEM;
    common = json_object_get(spec, "containerEdits");
    list = json_object_get(spec, "devices");
    for (i = 0; !h->simulated && i < h->n_nodes; i++)
        json_array_append_new(json_object_get(common, "deviceNodes"),
                              dev_node(root, h->nodes[i], h->node_major[i], h->node_minor[i]));
    for (i = 0; !h->simulated && i < h->n_files; i++) {
        char host[1100];
        snprintf(host, sizeof(host), "%s%s", root ? root : "", h->files[i]);
        json_array_append_new(json_object_get(common, "mounts"),
                              ro_mount(host, h->files[i], "bind"));
    }
    json_array_foreach(devices, i, dev)
    {
        const char *name = fatia_json_str(dev, "name"), *type = attr(dev, "type");
        const char *uuid = attr(dev, "uuid");
        int minor = name ? minor_of(name) : -1;
        json_t *edits, *d;
        char node[64], v1[160], v2[160];
        uint64_t cap;

        if (!name_ok(name) || !uuid || minor < 0 || !type)
            continue;
        snprintf(node, sizeof(node), "/dev/nvidia%d", minor);
        if (!h->simulated && !node_exists(root, node))
            continue; /* a GPU gone: no spec, so no container starts on it */
        snprintf(v1, sizeof(v1), "NVIDIA_VISIBLE_DEVICES=%s", uuid);
        snprintf(v2, sizeof(v2), "CUDA_VISIBLE_DEVICES=%s", uuid);
        if (h->simulated)
            edits = json_pack("{s:[],s:[s,s]}", "deviceNodes", "env", v1, v2);
        else
            edits = json_pack("{s:[o],s:[s,s]}", "deviceNodes",
                              dev_node(root, node, h->gpu_major, (unsigned)minor), "env", v1, v2);
        if (edits && !h->simulated && !strcmp(type, "mig") &&
            !mig_caps(h, root, dev, minor, json_object_get(edits, "deviceNodes"))) {
            json_decref(edits);
            continue; /* its caps are not on this host: no spec (the file's comment) */
        }
        cap = cap_of(dev);
        if (edits && cap && lib) {
            char conf[700], preload[700], acct[700];
            json_t *m = json_array();

            snprintf(conf, sizeof(conf), "%s/%s/vgpu.conf", files_dir, name);
            snprintf(preload, sizeof(preload), "%s/%s/ld.so.preload", files_dir, name);
            snprintf(acct, sizeof(acct), "%s/%s/slice.acct", files_dir, name);
            json_array_append_new(m, ro_mount(conf, FATIA_VGPU_CONF_PATH, "bind"));
            json_array_append_new(m, ro_mount(preload, "/etc/ld.so.preload", "bind"));
            json_array_append_new(m, ro_mount(lib, "/usr/lib/fatia/libfatia-vgpu.so", "bind"));
            json_array_append_new(m,
                                  json_pack("{s:s,s:s,s:s,s:[s,s,s,s]}", "hostPath", acct,
                                            "containerPath", "/run/fatia/vgpu/slice.acct", "type",
                                            "bind", "options", "rw", "nosuid", "nodev", "rbind"));
            json_object_set_new(edits, "mounts", m);
        }
        d = edits ? json_pack("{s:s,s:o}", "name", name, "containerEdits", edits) : NULL;
        if (!d) {
            json_decref(spec);
            return -ENOMEM;
        }
        json_array_append_new(list, d);
    }
    *ret = spec;
    return 0;
}

static int mkdirs(const char *dir, mode_t mode)
{
    if (mkdir(dir, mode) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

int fatia_agent_cdi_write(const char *dir, const struct fatia_cdi_host *h, const char *root,
                          const json_t *devices, const char *lib)
{
    char files[900], path[1100], tmp[1200];
    json_t *spec = NULL;
    const json_t *dev;
    char *text;
    size_t i;
    int r, fd;

    snprintf(files, sizeof(files), "%s/slices", dir);
    if ((r = mkdirs(dir, 0755)) < 0 || (r = mkdirs(files, 0755)) < 0)
        return r;
    r = fatia_agent_cdi_spec(h, root, devices, files, lib, &spec);
    if (r < 0)
        return r;
    /* each capped slice's files, for a container started outside fatia with this device */
    json_array_foreach(devices, i, dev)
    {
        const char *name = fatia_json_str(dev, "name"), *uuid = attr(dev, "uuid");
        uint64_t cap = cap_of(dev);
        struct fatia_vgpu_slice s = {.library = lib, .n_devices = 1};
        char d[1000], conf[2048], why[256];
        uint64_t limit[FATIA_VGPU_MAX_DEVICES];

        if (!cap || !lib || !uuid || !name_ok(name) || minor_of(name) < 0)
            continue;
        snprintf(d, sizeof(d), "%s/%s", files, name);
        if ((r = mkdirs(d, 0755)) < 0)
            goto out;
        s.uuids[0] = uuid;
        s.cap[0] = cap;
        snprintf(path, sizeof(path), "%s/slice.acct", d);
        s.accounting_file = path;
        if (fatia_agent_vgpu_slice_conf(&s, "/run/fatia/vgpu/slice.acct", conf, sizeof(conf)) < 0)
            continue;
        snprintf(tmp, sizeof(tmp), "%s/vgpu.conf", d);
        if ((r = fatia_agent_vgpu_write_ro(tmp, conf)) < 0)
            goto out;
        snprintf(tmp, sizeof(tmp), "%s/ld.so.preload", d);
        if ((r = fatia_agent_vgpu_write_ro(tmp, "/usr/lib/fatia/libfatia-vgpu.so\n")) < 0)
            goto out;
        for (int k = 0; k < FATIA_VGPU_MAX_DEVICES; k++)
            limit[k] = k == 0 ? cap : FATIA_VGPU_NO_LIMIT;
        if (access(path, F_OK) < 0)
            (void)fatia_vgpu_region_create(path, limit, why, sizeof(why));
    }
    text = json_dumps(spec, JSON_INDENT(1));
    if (!text) {
        r = -ENOMEM;
        goto out;
    }
    snprintf(path, sizeof(path), "%s/fatia.dev-gpu.json", dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    r = fd < 0 ? -errno : 0;
    if (r == 0) {
        size_t len = strlen(text);
        if (write(fd, text, len) != (ssize_t)len)
            r = -EIO;
        if (close(fd) < 0 && r == 0)
            r = -errno;
        if (r == 0 && rename(tmp, path) < 0)
            r = -errno;
    }
    free(text);
out:
    json_decref(spec);
    return r;
}

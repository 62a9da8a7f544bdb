/*
 * agent/oci_spec.c: one container's OCI config.json (runtime-spec 1.0, as runc 1.1.5 reads it)
 * from the Pod, the image config and what the agent computed. Pure: no I/O, no clock.
 *
 * Model. The result is a template: the sandbox's network, IPC and UTS namespaces are entries
 * marked "fatiaSandbox" that the shim points at its pause process (oci.c). Everything else is
 * decided here:
 *   - user namespace: the sandbox's (marked like the others), whose ids 0..65535 map onto
 *     host_base.. (the pod's namespace's range; the mappings are in the config too), so the
 *     container's root is never host root and runAsUser N is host uid host_base + N;
 *   - process: argv and env as given; cwd: workingDir, else the image's WorkingDir, else "/";
 *     uid/gid (and the image's supplementary groups) by fatia_oci_user; capabilities: the runtime default set, minus drop (ALL
 *     included), plus add; noNewPrivileges unless allowPrivilegeEscalation is true;
 *   - mounts: runc's defaults (proc, /dev tmpfs, devpts, /dev/shm, /sys read-only), the pod's
 *     /etc/hosts, /etc/hostname and /etc/resolv.conf, then the volumeMounts;
 *   - root: "rootfs", read-only with readOnlyRootFilesystem;
 *   - masked and read-only paths: runc's defaults (kubelet sends the same).
 *
 * Invariants: every refusal names the field path; nothing from the pod reaches mount options or
 * paths unchecked (mountPath absolute, subPath relative without ".." components, and refused on
 * the volumes the pod itself writes, emptyDir and persistentVolumeClaim: runc resolves a mount's
 * source on the host, so a symlink planted there by a container would lead out of the volume).
 *
 * Rejected: mounting sysfs (runc 1.1.5 fails EPERM in a user namespace that does not own the
 * network namespace: a read-only bind of /sys instead), and /dev/mqueue (not needed yet).
 */
#include "base/compat.h"

#include <errno.h>
#include <stdlib.h>

#include "agent/oci.h"
#include "agent/refvol.h"
#include "base/error.h"
#include "base/json.h"
#include "model/quantity.h"

const char *const fatia_oci_default_caps[] = {"CAP_CHOWN",
                                              "CAP_DAC_OVERRIDE",
                                              "CAP_FSETID",
                                              "CAP_FOWNER",
                                              "CAP_MKNOD",
                                              "CAP_NET_RAW",
                                              "CAP_SETGID",
                                              "CAP_SETUID",
                                              "CAP_SETFCAP",
                                              "CAP_SETPCAP",
                                              "CAP_NET_BIND_SERVICE",
                                              "CAP_SYS_CHROOT",
                                              "CAP_KILL",
                                              "CAP_AUDIT_WRITE",
                                              NULL};

static const json_t *sec(const json_t *o)
{
    return json_object_get(o, "securityContext");
}

/* The securityContext field of the container, else of the pod. */
static const json_t *sc_field(const json_t *pod, const json_t *ctr, const char *f)
{
    const json_t *v = json_object_get(sec(ctr), f);
    return v ? v : json_object_get(sec(json_object_get(pod, "spec")), f);
}

/* A securityContext id (runAsUser, runAsGroup) in 0..FATIA_OCI_IDS-1, or -1 when unset. */
static int sc_id(const json_t *v, const char *field, const char *name, int64_t *ret, char *why,
                 size_t why_n)
{
    *ret = -1;
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) >= (json_int_t)FATIA_OCI_IDS) {
        snprintf(why, why_n, "container %s: securityContext.%s: expected 0..%u", name, field,
                 FATIA_OCI_IDS - 1);
        return -FATIA_E_INVALID;
    }
    *ret = json_integer_value(v);
    return 0;
}

int fatia_oci_user(const json_t *pod, const json_t *ctr, const json_t *image_config,
                   const struct fatia_imguser_files *files, struct fatia_imguser *ret, char *why,
                   size_t why_n)
{
    const json_t *nr = sc_field(pod, ctr, "runAsNonRoot");
    const char *iu = fatia_json_str(image_config, "User");
    const char *name = fatia_json_str(ctr, "name");
    char spec[300], err[400];
    int64_t u, g;
    int r;

    if ((r = sc_id(sc_field(pod, ctr, "runAsUser"), "runAsUser", name, &u, why, why_n)) < 0 ||
        (r = sc_id(sc_field(pod, ctr, "runAsGroup"), "runAsGroup", name, &g, why, why_n)) < 0)
        return r;
    /* runAsUser replaces the image's User, group included (CRI's rule); runAsGroup the group */
    if (u >= 0) {
        snprintf(spec, sizeof(spec), "%lld", (long long)u);
    } else {
        if (iu && strlen(iu) > 250) {
            snprintf(why, why_n, "container %s: the image's User '%.60s...' is too long", name, iu);
            return -EINVAL;
        }
        snprintf(spec, sizeof(spec), "%s", iu ? iu : "");
    }
    if (g >= 0) {
        char *colon = strchr(spec, ':');
        size_t l = colon ? (size_t)(colon - spec) : strlen(spec);
        snprintf(spec + l, sizeof(spec) - l, ":%lld", (long long)g);
    }
    r = fatia_oci_imguser_resolve(spec, files, FATIA_OCI_IDS - 1, ret, err, sizeof(err));
    if (r < 0) {
        if (u < 0)
            snprintf(why, why_n, "container %s: the image's User '%.100s': %s", name, iu, err);
        else
            snprintf(why, why_n, "container %s: securityContext: %s", name, err);
        return r;
    }
    if (json_is_true(nr) && ret->uid == 0) {
        /* kubelet's words */
        snprintf(why, why_n,
                 "container has runAsNonRoot and image will run as root (pod: %s, "
                 "container: %s)",
                 fatia_json_str(json_object_get(pod, "metadata"), "name"), name);
        return -FATIA_E_INVALID;
    }
    return 0;
}

json_t *fatia_oci_merge_command(const json_t *ctr, const json_t *image_config)
{
    json_t *c = json_deep_copy(ctr);
    const json_t *cmd = json_object_get(ctr, "command"), *args = json_object_get(ctr, "args");
    const json_t *ep = json_object_get(image_config, "Entrypoint");
    const json_t *icmd = json_object_get(image_config, "Cmd");
    bool hc = json_array_size(cmd) > 0, ha = json_array_size(args) > 0;

    if (!c)
        return NULL;
    if (!hc && !ha) {
        json_object_set_new(c, "command", ep ? json_deep_copy(ep) : json_array());
        json_object_set_new(c, "args", icmd ? json_deep_copy(icmd) : json_array());
    } else if (hc && !ha) {
        json_object_set_new(c, "args", json_array());
    } else if (!hc && ha) {
        json_object_set_new(c, "command", ep ? json_deep_copy(ep) : json_array());
    }
    return c;
}

static json_t *str_list(const char *const *v)
{
    json_t *a = json_array();
    for (size_t i = 0; v[i]; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

static bool list_has(const json_t *a, const char *s)
{
    size_t i;
    json_t *x;
    json_array_foreach(a, i, x)
    {
        const char *v = json_string_value(x);
        if (v && (!strcasecmp(v, s) || (!strncasecmp(s, "CAP_", 4) && !strcasecmp(v, s + 4))))
            return true;
    }
    return false;
}

/* The capability set: default minus drop, plus add. */
static int caps(const json_t *ctr, json_t **ret, char *why, size_t why_n)
{
    const json_t *c = json_object_get(sec(ctr), "capabilities");
    const json_t *drop = json_object_get(c, "drop"), *add = json_object_get(c, "add");
    json_t *set = json_array();
    size_t i;
    json_t *x;

    if (!list_has(drop, "ALL")) {
        for (size_t k = 0; fatia_oci_default_caps[k]; k++) {
            if (!list_has(drop, fatia_oci_default_caps[k]))
                json_array_append_new(set, json_string(fatia_oci_default_caps[k]));
        }
    }
    json_array_foreach(add, i, x)
    {
        const char *v = json_string_value(x);
        char name[64];
        if (!v || !v[0] || strlen(v) > 40) {
            snprintf(why, why_n,
                     "container %s: securityContext.capabilities.add[%zu]: expected a name",
                     fatia_json_str(ctr, "name"), i);
            json_decref(set);
            return -FATIA_E_INVALID;
        }
        snprintf(name, sizeof(name), "%s%s", strncasecmp(v, "CAP_", 4) ? "CAP_" : "", v);
        for (char *p = name; *p; p++)
            *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
        if (!list_has(set, name))
            json_array_append_new(set, json_string(name));
    }
    *ret = json_pack("{s:O,s:O,s:O,s:[]}", "bounding", set, "effective", set, "permitted", set,
                     "ambient");
    json_decref(set);
    return *ret ? 0 : -ENOMEM;
}

/* The container's limits in runc's linux.resources: memory.limit, cpu quota (limits.cpu, period
 * 100 ms) and shares (requests.cpu, else limits.cpu, as kubelet: milli * 1024 / 1000, at least
 * 2). */
static void resources(const json_t *ctr, json_t *res)
{
    const json_t *r = json_object_get(ctr, "resources");
    const json_t *lc = json_object_get(json_object_get(r, "limits"), "cpu");
    const json_t *lm = json_object_get(json_object_get(r, "limits"), "memory");
    const json_t *rc = json_object_get(json_object_get(r, "requests"), "cpu");
    struct fatia_quantity q;
    json_t *cpu = json_object();

    if (lm && fatia_quantity_parse_json(lm, &q, NULL, 0) == 0 && fatia_quantity_value(&q) > 0)
        json_object_set_new(res, "memory",
                            json_pack("{s:I}", "limit", (json_int_t)fatia_quantity_value(&q)));
    if (lc && fatia_quantity_parse_json(lc, &q, NULL, 0) == 0 && fatia_quantity_milli(&q) > 0) {
        json_object_set_new(cpu, "quota", json_integer(fatia_quantity_milli(&q) * 100));
        json_object_set_new(cpu, "period", json_integer(100000));
    }
    if (!rc)
        rc = lc;
    if (rc && fatia_quantity_parse_json(rc, &q, NULL, 0) == 0 && fatia_quantity_milli(&q) > 0) {
        int64_t sh = fatia_quantity_milli(&q) * 1024 / 1000;
        json_object_set_new(cpu, "shares", json_integer(sh < 2 ? 2 : sh));
    }
    if (json_object_size(cpu))
        json_object_set_new(res, "cpu", cpu);
    else
        json_decref(cpu);
}

static json_t *mnt(const char *dst, const char *type, const char *src, json_t *opts)
{
    return json_pack("{s:s,s:s,s:s,s:o}", "destination", dst, "type", type, "source", src,
                     "options", opts);
}

static bool path_ok(const char *p, bool absolute)
{
    if (!p || !p[0] || strlen(p) > 1000)
        return false;
    if (absolute != (p[0] == '/'))
        return false;
    for (const char *s = p; *s;) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 2 && s[0] == '.' && s[1] == '.')
            return false;
        if (!e)
            break;
        s = e + 1;
    }
    return true;
}

static const json_t *find_volume(const json_t *pod, const char *name, size_t *ret_i)
{
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(json_object_get(pod, "spec"), "volumes"), i, v)
    {
        const char *n = fatia_json_str(v, "name");
        if (n && !strcmp(n, name)) {
            *ret_i = i;
            return v;
        }
    }
    return NULL;
}

static int volume_mounts(const struct fatia_oci_in *in, json_t *mounts, char *why, size_t why_n)
{
    const char *cname = fatia_json_str(in->ctr, "name");
    size_t i;
    json_t *vm;

    json_array_foreach(json_object_get(in->ctr, "volumeMounts"), i, vm)
    {
        const char *name = fatia_json_str(vm, "name"), *dst = fatia_json_str(vm, "mountPath");
        const char *sub = fatia_json_str(vm, "subPath");
        bool ro = fatia_json_bool(vm, "readOnly", false);
        const json_t *vol;
        char src[4400];
        size_t vi = 0;

        if (!name || !(vol = find_volume(in->pod, name, &vi))) {
            snprintf(why, why_n,
                     "container %s: volumeMounts[%zu].name: no volume '%.100s' in "
                     "spec.volumes",
                     cname, i, name ? name : "");
            return -FATIA_E_INVALID;
        }
        if (!path_ok(dst, true)) {
            snprintf(why, why_n,
                     "container %s: volumeMounts[%zu].mountPath: expected an absolute path "
                     "without '..'",
                     cname, i);
            return -FATIA_E_INVALID;
        }
        if (sub && sub[0] && !path_ok(sub, false)) {
            snprintf(why, why_n,
                     "container %s: volumeMounts[%zu].subPath: expected a relative path without "
                     "'..'",
                     cname, i);
            return -FATIA_E_INVALID;
        }
        if (json_object_get(vol, "emptyDir") || json_object_get(vol, "downwardAPI") ||
            fatia_pod_vol_is_ref(vol) || json_object_get(vol, "persistentVolumeClaim")) {
            snprintf(src, sizeof(src), "%s/volumes/%s", in->run_dir, name);
            if (json_object_get(vol, "persistentVolumeClaim"))
                ro = ro || fatia_json_bool(json_object_get(vol, "persistentVolumeClaim"),
                                           "readOnly", false);
            else if (!json_object_get(vol, "emptyDir"))
                ro = true; /* as kubelet's: read-only whatever the mount says */
        } else if (json_object_get(vol, "hostPath")) {
            const char *hp = fatia_json_str(json_object_get(vol, "hostPath"), "path");
            if (!path_ok(hp, true)) {
                snprintf(why, why_n,
                         "spec.volumes[%zu].hostPath.path: expected an absolute path without "
                         "'..'",
                         vi);
                return -FATIA_E_INVALID;
            }
            snprintf(src, sizeof(src), "%s", hp);
        } else {
            snprintf(why, why_n,
                     "spec.volumes[%zu]: only emptyDir, hostPath, downwardAPI, configMap, "
                     "secret, projected and persistentVolumeClaim volumes are served in "
                     "containers",
                     vi);
            return -FATIA_E_INVALID;
        }
        if (sub && sub[0] &&
            (json_object_get(vol, "emptyDir") || json_object_get(vol, "persistentVolumeClaim"))) {
            /* the tenant writes these volumes: a symlink it plants would be followed on the
             * host when runc resolves the mount's source (CVE-2017-1002101's class) */
            snprintf(why, why_n,
                     "container %s: volumeMounts[%zu].subPath: not served on emptyDir and "
                     "persistentVolumeClaim volumes in containers (a path the pod writes would be "
                     "resolved on the host); mount the volume and use a path inside it",
                     cname, i);
            return -FATIA_E_INVALID;
        }
        if (sub && sub[0]) {
            size_t l = strlen(src);
            snprintf(src + l, sizeof(src) - l, "/%s", sub);
        }
        json_array_append_new(mounts,
                              mnt(dst, "bind", src,
                                  ro ? json_pack("[s,s,s,s]", "rbind", "ro", "nosuid", "nodev")
                                     : json_pack("[s,s,s]", "rbind", "nosuid", "nodev")));
    }
    return 0;
}

static json_t *default_mounts(const struct fatia_oci_in *in)
{
    char p[4400];
    json_t *m = json_array();

    json_array_append_new(
        m, mnt("/proc", "proc", "proc", json_pack("[s,s,s]", "nosuid", "noexec", "nodev")));
    json_array_append_new(
        m, mnt("/dev", "tmpfs", "tmpfs",
               json_pack("[s,s,s,s]", "nosuid", "strictatime", "mode=755", "size=65536k")));
    json_array_append_new(m, mnt("/dev/pts", "devpts", "devpts",
                                 json_pack("[s,s,s,s,s]", "nosuid", "noexec", "newinstance",
                                           "ptmxmode=0666", "mode=0620")));
    json_array_append_new(
        m, mnt("/dev/shm", "tmpfs", "shm",
               json_pack("[s,s,s,s,s]", "nosuid", "noexec", "nodev", "mode=1777", "size=65536k")));
    json_array_append_new(
        m, mnt("/sys", "bind", "/sys",
               json_pack("[s,s,s,s,s]", "rbind", "ro", "nosuid", "nodev", "noexec")));
    static const char *const etc[] = {"hosts", "hostname", "resolv.conf"};
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(etc); i++) {
        char dst[64];
        snprintf(p, sizeof(p), "%s/etc/%s", in->run_dir, etc[i]);
        snprintf(dst, sizeof(dst), "/etc/%s", etc[i]);
        json_array_append_new(
            m, mnt(dst, "bind", p, json_pack("[s,s,s,s]", "bind", "ro", "nosuid", "nodev")));
    }
    return m;
}

int fatia_oci_spec_build(const struct fatia_oci_in *in, json_t **ret, char *why, size_t why_n)
{
    static const char *const masked[] = {"/proc/acpi",
                                         "/proc/asound",
                                         "/proc/kcore",
                                         "/proc/keys",
                                         "/proc/latency_stats",
                                         "/proc/timer_list",
                                         "/proc/timer_stats",
                                         "/proc/sched_debug",
                                         "/proc/scsi",
                                         "/sys/firmware",
                                         "/sys/devices/virtual/powercap",
                                         NULL};
    static const char *const rdonly[] = {
        "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL};
    const char *cwd = fatia_json_str(in->ctr, "workingDir");
    const json_t *ape = json_object_get(sec(in->ctr), "allowPrivilegeEscalation");
    const json_t *priv = json_object_get(sec(in->ctr), "privileged");
    json_t *cfg = NULL, *capset = NULL, *mounts = NULL, *ns, *lin, *proc;
    struct fatia_imguser ids;
    int r;

    if (json_is_true(priv)) {
        snprintf(why, why_n,
                 "container %s: securityContext.privileged: privileged containers are "
                 "not run",
                 fatia_json_str(in->ctr, "name"));
        return -FATIA_E_INVALID;
    }
    r = fatia_oci_user(in->pod, in->ctr, in->image_config, &in->etc, &ids, why, why_n);
    if (r < 0)
        return r;
    if (!cwd || !cwd[0])
        cwd = fatia_json_str(in->image_config, "WorkingDir");
    if (!cwd || !cwd[0])
        cwd = "/";
    if (cwd[0] != '/') {
        snprintf(why, why_n, "container %s: workingDir: expected an absolute path",
                 fatia_json_str(in->ctr, "name"));
        return -FATIA_E_INVALID;
    }
    r = caps(in->ctr, &capset, why, why_n);
    if (r < 0)
        return r;
    mounts = default_mounts(in);
    r = volume_mounts(in, mounts, why, why_n);
    if (r < 0)
        goto fail;
    /* no rlimits: the node's own (fatiad's), which a container may not raise anyway */
    proc = json_pack("{s:b,s:{s:i,s:i},s:O,s:O,s:s,s:o,s:b}", "terminal",
                     json_is_true(json_object_get(in->ctr, "tty")), "user", "uid", (int)ids.uid,
                     "gid", (int)ids.gid, "args", in->argv, "env", in->env, "cwd", cwd,
                     "capabilities", capset, "noNewPrivileges", !json_is_true(ape));
    capset = NULL;
    if (proc && ids.n_groups) {
        json_t *sg = json_array();
        for (size_t i = 0; i < ids.n_groups; i++)
            json_array_append_new(sg, json_integer(ids.groups[i]));
        json_object_set_new(json_object_get(proc, "user"), "additionalGids", sg);
    }
    ns = json_pack("[{s:s},{s:s},{s:s}]", "type", "pid", "type", "mount", "type", "cgroup");
    json_array_append_new(ns, json_pack("{s:s,s:b}", "type", "user", "fatiaSandbox", 1));
    json_array_append_new(ns, json_pack("{s:s,s:b}", "type", "ipc", "fatiaSandbox", 1));
    json_array_append_new(ns, json_pack("{s:s,s:b}", "type", "uts", "fatiaSandbox", 1));
    if (!in->host_network)
        json_array_append_new(ns, json_pack("{s:s,s:b}", "type", "network", "fatiaSandbox", 1));
    lin = json_pack("{s:o,s:[{s:i,s:I,s:I}],s:[{s:i,s:I,s:I}],s:o,s:o,s:{s:[{s:b,s:s}]}}",
                    "namespaces", ns, "uidMappings", "containerID", 0, "hostID",
                    (json_int_t)in->host_base, "size", (json_int_t)FATIA_OCI_IDS, "gidMappings",
                    "containerID", 0, "hostID", (json_int_t)in->host_base, "size",
                    (json_int_t)FATIA_OCI_IDS, "maskedPaths", str_list(masked), "readonlyPaths",
                    str_list(rdonly), "resources", "devices", "allow", 0, "access", "rwm");
    if (in->cgroups_path)
        json_object_set_new(lin, "cgroupsPath", json_string(in->cgroups_path));
    resources(in->ctr, json_object_get(lin, "resources"));
    if (in->devices) {
        const json_t *dn = json_object_get(in->devices, "devices");
        const json_t *da = json_object_get(in->devices, "allow");
        size_t i;
        json_t *x;
        if (dn)
            json_object_set(lin, "devices", (json_t *)dn);
        json_array_foreach(da, i, x)
            json_array_append(json_object_get(json_object_get(lin, "resources"), "devices"), x);
        json_array_foreach(json_object_get(in->devices, "mounts"), i, x)
            json_array_append(mounts, x);
    }
    /* no hostname: the UTS namespace is the sandbox's, named by the shim */
    cfg = json_pack("{s:s,s:o,s:{s:s,s:b},s:o,s:o}", "ociVersion", "1.0.2", "process", proc, "root",
                    "path", "rootfs", "readonly",
                    json_is_true(json_object_get(sec(in->ctr), "readOnlyRootFilesystem")), "mounts",
                    mounts, "linux", lin);
    mounts = NULL;
    if (!cfg)
        return -ENOMEM;
    if (in->devices && json_object_get(in->devices, "hooks"))
        json_object_set(cfg, "hooks", json_object_get(in->devices, "hooks"));
    *ret = cfg;
    return 0;
fail:
    json_decref(capset);
    json_decref(mounts);
    return r;
}

/*
 * agent/vgpu_ns.c: a process-mode pod's read-only interposer configuration (see vgpu_ns.h).
 *
 * Model: unshare(CLONE_NEWNS), make every mount private (nothing propagates back to the host),
 * then mount an overlay on /etc whose lower layers are the slice's layer and the host's /etc, in
 * that order; an overlay with no upper layer is read-only by construction. ld.so reads
 * /etc/ld.so.preload from it for every dynamically linked process of the pod, and the interposer
 * reads /etc/fatia/vgpu.conf, whatever the environment says. The pod's processes run under an
 * unprivileged uid with no_new_privs, so they can neither unmount it nor mount over it (a user
 * namespace of their own inherits the overlay locked).
 *
 * Invariants: the host's /etc is never written; a failure leaves the child to fail its start.
 *
 * Rejected: bind mounts over /etc/ld.so.preload and /etc/fatia/vgpu.conf (the targets must exist
 * on the host: an empty /etc/fatia/vgpu.conf there would make every interposed process on the
 * host read an empty configuration, and a file the agent plants in the host's /etc is a hazard);
 * a tmpfs over /etc (it would hide the host's passwd, resolv.conf, ld.so.cache).
 */
#include "base/compat.h"

#include "agent/vgpu_ns.h"

#include <sys/mount.h>
#include <sys/stat.h>

#include <errno.h>
#include <sched.h>

/* 0755 whatever the umask: the layer's root becomes the mode of /etc in the pod, and an /etc or
 * an ld.so.preload the pod cannot read would let ld.so skip the interposer (it fails open) */
static int mkdir_p(const char *d)
{
    if (mkdir(d, 0755) < 0 && errno != EEXIST)
        return -errno;
    return chmod(d, 0755) < 0 ? -errno : 0;
}

int fatia_agent_vgpu_ns_layer(const struct fatia_vgpu_slice *s, const char *dir)
{
    char sub[FATIA_VGPU_PATH_MAX + 16], path[FATIA_VGPU_PATH_MAX + 32], conf[2048],
        preload[FATIA_VGPU_PATH_MAX + 2];
    int r;

    if (strlen(dir) > FATIA_VGPU_PATH_MAX - 16 || strchr(dir, ',') || strchr(dir, ':'))
        return -EINVAL; /* the overlay's option syntax */
    snprintf(sub, sizeof(sub), "%s/fatia", dir);
    if ((r = mkdir_p(dir)) < 0 || (r = mkdir_p(sub)) < 0)
        return r;
    r = fatia_agent_vgpu_slice_conf(s, NULL, conf, sizeof(conf));
    if (r < 0)
        return r;
    snprintf(path, sizeof(path), "%s/vgpu.conf", sub);
    if ((r = fatia_agent_vgpu_write_ro(path, conf)) < 0)
        return r;
    snprintf(preload, sizeof(preload), "%s\n", s->library);
    snprintf(path, sizeof(path), "%s/ld.so.preload", dir);
    return fatia_agent_vgpu_write_ro(path, preload);
}

int fatia_agent_vgpu_ns_enter(const char *layer)
{
    char opts[FATIA_VGPU_PATH_MAX + 64];
    int n;

    n = snprintf(opts, sizeof(opts), "lowerdir=%s:/etc", layer);
    if (n < 0 || (size_t)n >= sizeof(opts))
        return -ENAMETOOLONG;
    if (unshare(CLONE_NEWNS) < 0)
        return -errno;
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return -errno;
    if (mount("fatia-vgpu", "/etc", "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV, opts) < 0)
        return -errno;
    return 0;
}

int fatia_agent_mps_shm_enter(const char *shm, bool in_private_ns)
{
    if (!in_private_ns) {
        if (unshare(CLONE_NEWNS) < 0)
            return -errno;
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
            return -errno;
    }
    if (mount(shm, "/dev/shm", NULL, MS_BIND, NULL) < 0)
        return -errno;
    return 0;
}

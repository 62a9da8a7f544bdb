/*
 * agent/computemode.c: holding a GPU's compute mode for its MPS daemon (see computemode.h).
 *
 * Model: each call loads NVML, finds the GPU by UUID, reads or sets its mode, and unloads it
 * (twice per daemon's life: not worth a resident handle). The state file is written durably
 * before the mode changes, so a crash between the two leaves a file that restores the mode the
 * GPU had, never one that "restores" EXCLUSIVE_PROCESS.
 *
 * Rejected: `nvidia-smi -c` (k8s-device-plugin's way: a program's output to parse, and a second
 * dependency for what one NVML call does).
 */
#include "base/compat.h"

#include "agent/computemode.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "base/error.h"

typedef int nvml_ret;
typedef struct nvml_dev *nvml_dev;

struct nvml {
    void *lib;
    nvml_ret (*shutdown)(void);
    nvml_ret (*get)(nvml_dev, int *);
    nvml_ret (*set)(nvml_dev, int);
    nvml_dev dev;
};

static int nvml_open(struct nvml *n, const char *path, const char *uuid, char *why, size_t why_n)
{
    nvml_ret (*init)(void), (*by_uuid)(const char *, nvml_dev *);
    const char *p = path ? path : "libnvidia-ml.so.1";

    memset(n, 0, sizeof(*n));
    n->lib = dlopen(p, RTLD_NOW | RTLD_LOCAL);
    if (!n->lib) {
        snprintf(why, why_n, "cannot load %s", p);
        return -FATIA_E_NODRIVER;
    }
    *(void **)&init = dlsym(n->lib, "nvmlInit_v2");
    *(void **)&n->shutdown = dlsym(n->lib, "nvmlShutdown");
    *(void **)&by_uuid = dlsym(n->lib, "nvmlDeviceGetHandleByUUID");
    *(void **)&n->get = dlsym(n->lib, "nvmlDeviceGetComputeMode");
    *(void **)&n->set = dlsym(n->lib, "nvmlDeviceSetComputeMode");
    if (!init || !n->shutdown || !by_uuid || !n->get || !n->set || init() != 0) {
        snprintf(why, why_n, "%s: no compute-mode calls, or nvmlInit failed", p);
        dlclose(n->lib);
        return -FATIA_E_DRIVER;
    }
    if (by_uuid(uuid, &n->dev) != 0) {
        snprintf(why, why_n, "NVML knows no GPU %s", uuid);
        n->shutdown();
        dlclose(n->lib);
        return -FATIA_E_DRIVER;
    }
    return 0;
}

static void nvml_close(struct nvml *n)
{
    n->shutdown();
    dlclose(n->lib);
}

static int read_state(const char *path, int *ret)
{
    char buf[16] = "";
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t len;

    if (fd < 0)
        return -errno;
    len = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (len <= 0 || buf[0] < '0' || buf[0] > '3')
        return -EPROTO;
    *ret = buf[0] - '0';
    return 0;
}

static int write_state(const char *path, int mode)
{
    char tmp[1100], text[4] = {(char)('0' + mode), '\n', '\0'};
    int fd, r = 0;

    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return -ENAMETOOLONG;
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    if (write(fd, text, 2) != 2 || fsync(fd) < 0)
        r = -EIO;
    close(fd);
    if (r == 0 && rename(tmp, path) < 0)
        r = -errno;
    return r;
}

int fatia_agent_compute_mode_hold(const char *nvml, const char *uuid, const char *state_file,
                                  char *why, size_t why_n)
{
    struct nvml n;
    int prev = -1, cur = -1, r;

    r = nvml_open(&n, nvml, uuid, why, why_n);
    if (r < 0)
        return r;
    if (n.get(n.dev, &cur) != 0) {
        snprintf(why, why_n, "GPU %s: cannot read its compute mode", uuid);
        r = -FATIA_E_DRIVER;
        goto out;
    }
    if (read_state(state_file, &prev) < 0) {
        r = write_state(state_file, cur);
        if (r < 0) {
            snprintf(why, why_n, "cannot write '%.300s'", state_file);
            goto out;
        }
    }
    if (cur != FATIA_COMPUTE_MODE_EXCLUSIVE_PROCESS &&
        n.set(n.dev, FATIA_COMPUTE_MODE_EXCLUSIVE_PROCESS) != 0) {
        snprintf(why, why_n, "GPU %s: cannot set EXCLUSIVE_PROCESS (root is needed)", uuid);
        if (prev < 0)
            (void)unlink(state_file);
        r = -FATIA_E_DRIVER;
    }
out:
    nvml_close(&n);
    return r;
}

int fatia_agent_compute_mode_release(const char *nvml, const char *uuid, const char *state_file,
                                     char *why, size_t why_n)
{
    struct nvml n;
    int prev, r = read_state(state_file, &prev);

    if (r == -ENOENT)
        return 0;
    if (r < 0) {
        snprintf(why, why_n, "'%.300s' holds no compute mode", state_file);
        return r;
    }
    r = nvml_open(&n, nvml, uuid, why, why_n);
    if (r < 0)
        return r;
    if (n.set(n.dev, prev) != 0) {
        snprintf(why, why_n, "GPU %s: cannot give back compute mode %d", uuid, prev);
        r = -FATIA_E_DRIVER;
    } else {
        (void)unlink(state_file);
    }
    nvml_close(&n);
    return r;
}

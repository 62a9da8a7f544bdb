/*
 * tests/vgpu/fake_nvml.c: a fake NVML, built as libnvidia-ml.so.1, with two GPUs of 80 GiB whose
 * UUIDs are GPU-fake-0 and GPU-fake-1 and whose used memory is FAKE_NVML_USED bytes (default 1 GiB,
 * which stands for contexts and other tenants, none of it the slice's). Enough for the
 * interposer's NVML hooks: handles, UUIDs, indices and the two memory queries.
 *
 * Per-process usage, for the agent's GPU memory watchdog: with FAKE_NVML_PROCS=<dir>, every file
 * <dir>/<gpu>.<pid> (plain compute process) or <dir>/mps.<gpu>.<pid> (MPS client) whose pid is
 * alive is a process using the number of bytes the file holds (decimal). An MPS client is in
 * both lists, as driver 580 on the H200 lists it (scripts/gpu-hostile found it), as the driver reports
 * every process that holds device memory whatever library it used. A test's "static binary" is a
 * process that writes such a file and sleeps: the interposer cannot see it, NVML can.
 * nvmlDeviceGetComputeRunningProcesses_v3 and the MPS variant answer INSUFFICIENT_SIZE with the
 * count when the caller's array is too small, as the real ones do.
 *
 * Per-process SM utilisation, for the agent's GPU-idleness samples: every file
 * <dir>/util.<gpu>.<pid> (same FAKE_NVML_PROCS dir) whose pid is alive holds that process's SM
 * utilisation in percent; nvmlDeviceGetProcessUtilization answers one sample per such file,
 * stamped now, and NOT_FOUND when there is none, as the real one does for a GPU nobody used
 * since lastSeenTimeStamp. With FAKE_NVML_UTIL_FAIL set it answers NOT_SUPPORTED (a GPU or
 * driver without per-process utilisation). FAKE_NVML_UUID<i> renames GPU i (so that a test can
 * pair this library with the inventory fake's UUIDs).
 *
 * Compute mode, for the agent's MPS management: FAKE_NVML_STATE=<dir> keeps each GPU's mode in
 * <dir>/compute-mode.<gpu> (absent: 0, DEFAULT); nvmlDeviceSetComputeMode writes it, and
 * appends "<gpu> <mode>" to <dir>/compute-mode.log so that a test sees every change.
 */
#include <sys/time.h>

#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu/cuda_abi.h"

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} fakeProcessInfo_t;

#define EXPORT __attribute__((visibility("default")))

static struct fake_dev {
    int index;
} devs[2] = {{0}, {1}};

static unsigned long long total = 80ULL << 30;

static unsigned long long used(void)
{
    const char *v = getenv("FAKE_NVML_USED");

    return v ? strtoull(v, NULL, 10) : 1ULL << 30;
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n)
{
    *n = 2;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d)
{
    if (i >= 2)
        return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    *d = (nvmlDevice_t)&devs[i];
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned *i)
{
    *i = (unsigned)((struct fake_dev *)d)->index;
    return NVML_SUCCESS;
}

static void uuid_of(int i, char *buf, size_t n)
{
    char var[32];
    const char *v;

    snprintf(var, sizeof(var), "FAKE_NVML_UUID%d", i);
    v = getenv(var);
    if (v && *v)
        snprintf(buf, n, "%s", v);
    else
        snprintf(buf, n, "GPU-fake-%d", i);
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned n)
{
    uuid_of(((struct fake_dev *)d)->index, buf, n);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    (void)d;
    m->total = total;
    m->used = used();
    m->free = total - m->used;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m)
{
    (void)d;
    m->total = total;
    m->reserved = 512ULL << 20;
    m->used = used();
    m->free = total - m->used - m->reserved;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *d)
{
    for (int i = 0; i < 2; i++) {
        char want[96];

        uuid_of(i, want, sizeof(want));
        if (strcmp(uuid, want) == 0) {
            *d = (nvmlDevice_t)&devs[i];
            return NVML_SUCCESS;
        }
    }
    return 6; /* NVML_ERROR_NOT_FOUND */
}

static nvmlReturn_t procs(nvmlDevice_t d, unsigned *n, fakeProcessInfo_t *out, int mps)
{
    const char *dir = getenv("FAKE_NVML_PROCS");
    int gpu = ((struct fake_dev *)d)->index;
    unsigned have = 0, cap = *n;
    struct dirent *e;
    DIR *dp;

    if (!dir || !(dp = opendir(dir))) {
        *n = 0;
        return NVML_SUCCESS;
    }
    while ((e = readdir(dp))) {
        const char *name = e->d_name;
        char path[1024];
        unsigned long long bytes = 0;
        int g, pid;
        FILE *f;

        if (strncmp(name, "mps.", 4) == 0)
            name += 4; /* an MPS client: in both lists */
        else if (mps || name[0] < '0' || name[0] > '9')
            continue;
        if (sscanf(name, "%d.%d", &g, &pid) != 2 || g != gpu || pid <= 0 || kill(pid, 0) != 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        f = fopen(path, "r");
        if (!f)
            continue;
        if (fscanf(f, "%llu", &bytes) != 1)
            bytes = 0;
        fclose(f);
        if (have < cap) {
            out[have].pid = (unsigned)pid;
            out[have].usedGpuMemory = bytes;
            out[have].gpuInstanceId = 0xFFFFFFFFu;
            out[have].computeInstanceId = 0xFFFFFFFFu;
        }
        have++;
    }
    closedir(dp);
    *n = have;
    return have > cap ? 7 /* NVML_ERROR_INSUFFICIENT_SIZE */ : NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned *n,
                                                            fakeProcessInfo_t *out)
{
    return procs(d, n, out, 0);
}

EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t d, unsigned *n,
                                                               fakeProcessInfo_t *out)
{
    return procs(d, n, out, 1);
}

typedef struct {
    unsigned int pid;
    unsigned long long timeStamp;
    unsigned int smUtil, memUtil, encUtil, decUtil;
} fakeProcessUtilizationSample_t;

EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d,
                                                    fakeProcessUtilizationSample_t *out,
                                                    unsigned *n, unsigned long long last_seen)
{
    const char *dir = getenv("FAKE_NVML_PROCS");
    int gpu = ((struct fake_dev *)d)->index;
    unsigned have = 0, cap = out ? *n : 0;
    struct timeval tv;
    unsigned long long now;
    struct dirent *e;
    DIR *dp;

    if (getenv("FAKE_NVML_UTIL_FAIL"))
        return 3; /* NVML_ERROR_NOT_SUPPORTED */
    gettimeofday(&tv, NULL);
    now = (unsigned long long)tv.tv_sec * 1000000ULL + (unsigned long long)tv.tv_usec;
    if (!dir || !(dp = opendir(dir)))
        return 6; /* NVML_ERROR_NOT_FOUND: no sample since last_seen */
    while ((e = readdir(dp))) {
        char path[1024];
        unsigned pct = 0;
        int g, pid;
        FILE *f;

        if (sscanf(e->d_name, "util.%d.%d", &g, &pid) != 2 || g != gpu || pid <= 0 ||
            kill(pid, 0) != 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        f = fopen(path, "r");
        if (!f)
            continue;
        if (fscanf(f, "%u", &pct) != 1)
            pct = 0;
        fclose(f);
        if (have < cap) {
            memset(&out[have], 0, sizeof(out[have]));
            out[have].pid = (unsigned)pid;
            out[have].timeStamp = now > last_seen ? now : last_seen + 1;
            out[have].smUtil = pct > 100 ? 100 : pct;
        }
        have++;
    }
    closedir(dp);
    *n = have;
    if (have == 0)
        return 6;
    return have > cap ? 7 /* NVML_ERROR_INSUFFICIENT_SIZE */ : NVML_SUCCESS;
}

static int mode_path(char *buf, size_t n, const char *what, int gpu)
{
    const char *dir = getenv("FAKE_NVML_STATE");

    if (!dir)
        return -1;
    if (gpu < 0)
        snprintf(buf, n, "%s/%s", dir, what);
    else
        snprintf(buf, n, "%s/%s.%d", dir, what, gpu);
    return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t d, int *mode)
{
    char path[1024];
    FILE *f;

    *mode = 0;
    if (mode_path(path, sizeof(path), "compute-mode", ((struct fake_dev *)d)->index) < 0)
        return NVML_SUCCESS;
    f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%d", mode) != 1)
            *mode = 0;
        fclose(f);
    }
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceSetComputeMode(nvmlDevice_t d, int mode)
{
    int gpu = ((struct fake_dev *)d)->index;
    char path[1024];
    FILE *f;

    if (mode < 0 || mode > 3 || mode == 1)
        return 2; /* NVML_ERROR_INVALID_ARGUMENT (1, EXCLUSIVE_THREAD, is gone since CUDA 8) */
    if (mode_path(path, sizeof(path), "compute-mode", gpu) < 0)
        return 4; /* NVML_ERROR_NO_PERMISSION: nowhere to keep it */
    f = fopen(path, "w");
    if (!f)
        return 4;
    fprintf(f, "%d\n", mode);
    fclose(f);
    if (mode_path(path, sizeof(path), "compute-mode.log", -1) == 0 && (f = fopen(path, "a"))) {
        fprintf(f, "%d %d\n", gpu, mode);
        fclose(f);
    }
    return NVML_SUCCESS;
}

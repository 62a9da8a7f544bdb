/*
 * tests/supply/fake_nvml.c: a fake libnvidia-ml.so.1 that replays a recording of a real GPU's
 * answers (tests/data/nvml/h200.json, made by fatia-nvml-record on the H200), so that CI runs the
 * supply layer's nvml backend, unchanged, with no GPU. DESIGN §7.
 *
 * Read calls answer what the recording says, return code included (a call the recording lacks
 * answers NVML_ERROR_NOT_SUPPORTED). MIG state is simulated on top, because the real GPU's MIG mode
 * must never change and so no recording of a MIG-enabled H200 can be made:
 *
 *     MIG mode   disabled --nvmlDeviceSetMigMode(1)--> enabled   (or, with
 *                FATIA_FAKE_NVML_RESET_REQUIRED=1, only pending, activation RESET_REQUIRED)
 *     instances  CreateGpuInstanceWithPlacement checks the recorded placements, overlap and the
 *                instance limit (INSUFFICIENT_RESOURCES, as NVML); compute instances are
 *                synthesized from the GI profile (their profile table is not recordable with MIG
 *                off), MIG UUIDs derived from the GPU UUID, GI start and profile.
 *
 * Environment: FATIA_FAKE_NVML = the recording (default: the H200's in the source tree);
 * FATIA_FAKE_NVML_STATE = a file that keeps the simulated MIG state between processes (written
 * after every change), so that `fatia plan --apply` followed by `fatia plan` sees the change.
 *
 * Exports fatiaFakeNvml, which fatia's --apply checks before it agrees to change anything; the
 * build with FAKE_UNMARKED (tests/fake-nvml-unmarked) does not, and plays a real driver there.
 */
#include "base/compat.h"

#include <jansson.h>

#include "supply/nvml.h"

#define MAX_DEV 64
#define MAX_GI  16
#define MAX_CI  8

#ifndef FAKE_UNMARKED
int fatiaFakeNvml =
    1; /* the unmarked build stands in for a real driver in the --apply safety test */
#endif

struct nvmlDevice_st {
    int dev;
    int gi; /* -1: the GPU itself; else a MIG device (GI slot, CI slot) */
    int ci;
};

struct nvmlGpuInstance_st {
    int dev, gi;
};

struct nvmlComputeInstance_st {
    int dev, gi, ci;
};

struct fake_ci {
    bool used;
    unsigned id, profile_id;
    char uuid[64];
};

struct fake_gi {
    bool used;
    unsigned id, profile_id, start, size;
    struct fake_ci ci[MAX_CI];
};

struct fake_dev {
    json_t *rec;
    unsigned mig_cur, mig_pend;
    struct fake_gi gi[MAX_GI];
    struct nvmlDevice_st handle;
    struct nvmlGpuInstance_st gih[MAX_GI];
    struct nvmlComputeInstance_st cih[MAX_GI][MAX_CI];
    struct nvmlDevice_st migh[MAX_GI][MAX_CI];
};

static json_t *recording;
static struct fake_dev devs[MAX_DEV];
static unsigned n_devs;
static int init_count;

static const unsigned ci_slices[] = {1, 2, 3, 4, 7, 8, 6};

static json_t *sys_answer(const char *name)
{
    return json_object_get(json_object_get(recording, "system"), name);
}

static nvmlReturn_t ret_of(const json_t *a)
{
    return a ? (nvmlReturn_t)json_integer_value(json_object_get(a, "ret"))
             : NVML_ERROR_NOT_SUPPORTED;
}

static json_t *value_of(const json_t *a)
{
    return json_object_get(a, "value");
}

static json_t *entry_by(json_t *list, const char *key, json_int_t v)
{
    size_t i;
    json_t *e;

    json_array_foreach(list, i, e) if (json_integer_value(json_object_get(e, key)) == v) return e;
    return NULL;
}

static struct fake_dev *dev_of(nvmlDevice_t d)
{
    if (!d || d->dev < 0 || (unsigned)d->dev >= n_devs)
        return NULL;
    return &devs[d->dev];
}

/* ---- state file ---- */

static void save_state(void)
{
    const char *path = getenv("FATIA_FAKE_NVML_STATE");
    json_t *doc, *list;
    char tmp[4096];

    if (!path || !*path)
        return;
    list = json_array();
    for (unsigned d = 0; d < n_devs; d++) {
        json_t *gis = json_array();
        for (unsigned g = 0; g < MAX_GI; g++) {
            const struct fake_gi *gi = &devs[d].gi[g];
            json_t *cis;
            if (!gi->used)
                continue;
            cis = json_array();
            for (unsigned c = 0; c < MAX_CI; c++)
                if (gi->ci[c].used)
                    json_array_append_new(
                        cis, json_pack("{s:I,s:I,s:s}", "id", (json_int_t)gi->ci[c].id, "profileId",
                                       (json_int_t)gi->ci[c].profile_id, "uuid", gi->ci[c].uuid));
            json_array_append_new(gis, json_pack("{s:I,s:I,s:I,s:I,s:o}", "id", (json_int_t)gi->id,
                                                 "profileId", (json_int_t)gi->profile_id, "start",
                                                 (json_int_t)gi->start, "size",
                                                 (json_int_t)gi->size, "computeInstances", cis));
        }
        json_array_append_new(list, json_pack("{s:[i,i],s:o}", "migMode", devs[d].mig_cur,
                                              devs[d].mig_pend, "gpuInstances", gis));
    }
    doc = json_pack("{s:o}", "devices", list);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if (json_dump_file(doc, tmp, JSON_INDENT(1)) == 0)
        rename(tmp, path);
    json_decref(doc);
}

static void load_state(void)
{
    const char *path = getenv("FATIA_FAKE_NVML_STATE");
    json_t *doc, *d;
    size_t i;

    if (!path || !*path || !(doc = json_load_file(path, 0, NULL)))
        return;
    json_array_foreach(json_object_get(doc, "devices"), i, d)
    {
        json_t *g;
        size_t k;
        if (i >= n_devs)
            break;
        devs[i].mig_cur =
            (unsigned)json_integer_value(json_array_get(json_object_get(d, "migMode"), 0));
        devs[i].mig_pend =
            (unsigned)json_integer_value(json_array_get(json_object_get(d, "migMode"), 1));
        json_array_foreach(json_object_get(d, "gpuInstances"), k, g)
        {
            struct fake_gi *gi = &devs[i].gi[k];
            json_t *c;
            size_t x;
            if (k >= MAX_GI)
                break;
            gi->used = true;
            gi->id = (unsigned)json_integer_value(json_object_get(g, "id"));
            gi->profile_id = (unsigned)json_integer_value(json_object_get(g, "profileId"));
            gi->start = (unsigned)json_integer_value(json_object_get(g, "start"));
            gi->size = (unsigned)json_integer_value(json_object_get(g, "size"));
            json_array_foreach(json_object_get(g, "computeInstances"), x, c)
            {
                if (x >= MAX_CI)
                    break;
                gi->ci[x].used = true;
                gi->ci[x].id = (unsigned)json_integer_value(json_object_get(c, "id"));
                gi->ci[x].profile_id =
                    (unsigned)json_integer_value(json_object_get(c, "profileId"));
                snprintf(gi->ci[x].uuid, sizeof(gi->ci[x].uuid), "%s",
                         json_string_value(json_object_get(c, "uuid")));
            }
        }
    }
    json_decref(doc);
}

/* ---- init ---- */

nvmlReturn_t nvmlInitWithFlags(unsigned int flags);
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);

nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    const char *path = getenv("FATIA_FAKE_NVML");
    json_error_t err;
    json_t *list, *d;
    size_t i;

    (void)flags;
    if (init_count++ > 0)
        return NVML_SUCCESS;
    if (!path || !*path)
        path = FATIA_SOURCE_DIR "/tests/data/nvml/h200.json";
    recording = json_load_file(path, 0, &err);
    if (!recording) {
        fprintf(stderr, "fake libnvidia-ml: cannot read %s: %s\n", path, err.text);
        init_count = 0;
        return NVML_ERROR_UNKNOWN;
    }
    list = json_object_get(recording, "devices");
    n_devs = 0;
    memset(devs, 0, sizeof(devs));
    json_array_foreach(list, i, d)
    {
        json_t *mm = value_of(json_object_get(d, "nvmlDeviceGetMigMode"));
        if (i >= MAX_DEV)
            break;
        devs[i].rec = d;
        devs[i].handle = (struct nvmlDevice_st){(int)i, -1, -1};
        devs[i].mig_cur = (unsigned)json_integer_value(json_array_get(mm, 0));
        devs[i].mig_pend = (unsigned)json_integer_value(json_array_get(mm, 1));
        for (int g = 0; g < MAX_GI; g++) {
            devs[i].gih[g] = (struct nvmlGpuInstance_st){(int)i, g};
            for (int c = 0; c < MAX_CI; c++) {
                devs[i].cih[g][c] = (struct nvmlComputeInstance_st){(int)i, g, c};
                devs[i].migh[g][c] = (struct nvmlDevice_st){(int)i, g, c};
            }
        }
        n_devs++;
    }
    load_state();
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit_v2(void)
{
    return nvmlInitWithFlags(0);
}

nvmlReturn_t nvmlShutdown(void)
{
    if (init_count == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (--init_count == 0) {
        json_decref(recording);
        recording = NULL;
    }
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t r);

const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case NVML_SUCCESS:
        return "Success";
    case NVML_ERROR_UNINITIALIZED:
        return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
        return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
        return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND:
        return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
        return "Insufficient Size";
    case NVML_ERROR_RESET_REQUIRED:
        return "GPU requires reset";
    case NVML_ERROR_IN_USE:
        return "In use by another client";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
        return "Insufficient Resources";
    }
    return "Unknown Error";
}

/* ---- system ---- */

static nvmlReturn_t copy_string(const json_t *a, char *buf, unsigned n)
{
    nvmlReturn_t r = ret_of(a);
    const char *s = json_string_value(value_of(a));

    if (r != NVML_SUCCESS)
        return r;
    if (!s)
        return NVML_ERROR_UNKNOWN;
    if (strlen(s) + 1 > n)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    snprintf(buf, n, "%s", s);
    return NVML_SUCCESS;
}

#define DECL(ret, name, ...) ret name(__VA_ARGS__);

DECL(nvmlReturn_t, nvmlSystemGetDriverVersion, char *, unsigned int)

nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned int n)
{
    return copy_string(sys_answer("nvmlSystemGetDriverVersion"), buf, n);
}

DECL(nvmlReturn_t, nvmlSystemGetNVMLVersion, char *, unsigned int)

nvmlReturn_t nvmlSystemGetNVMLVersion(char *buf, unsigned int n)
{
    return copy_string(sys_answer("nvmlSystemGetNVMLVersion"), buf, n);
}

static nvmlReturn_t int_answer(const json_t *a, int *v)
{
    if (ret_of(a) == NVML_SUCCESS)
        *v = (int)json_integer_value(value_of(a));
    return ret_of(a);
}

DECL(nvmlReturn_t, nvmlSystemGetCudaDriverVersion_v2, int *)

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v)
{
    return int_answer(sys_answer("nvmlSystemGetCudaDriverVersion_v2"), v);
}

DECL(nvmlReturn_t, nvmlSystemGetCudaDriverVersion, int *)

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v)
{
    return int_answer(sys_answer("nvmlSystemGetCudaDriverVersion"), v);
}

DECL(nvmlReturn_t, nvmlDeviceGetCount_v2, unsigned int *)

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
    if (!recording)
        return NVML_ERROR_UNINITIALIZED;
    *n = n_devs;
    return NVML_SUCCESS;
}

DECL(nvmlReturn_t, nvmlDeviceGetHandleByIndex_v2, unsigned int, nvmlDevice_t *)

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d)
{
    if (!recording)
        return NVML_ERROR_UNINITIALIZED;
    if (i >= n_devs)
        return NVML_ERROR_INVALID_ARGUMENT;
    *d = &devs[i].handle;
    return NVML_SUCCESS;
}

/* ---- device reads ---- */

static json_t *dev_answer(nvmlDevice_t d, const char *name)
{
    struct fake_dev *fd = dev_of(d);

    return fd && d->gi < 0 ? json_object_get(fd->rec, name) : NULL;
}

DECL(nvmlReturn_t, nvmlDeviceGetName, nvmlDevice_t, char *, unsigned int)

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *buf, unsigned int n)
{
    return copy_string(dev_answer(d, "nvmlDeviceGetName"), buf, n);
}

DECL(nvmlReturn_t, nvmlDeviceGetUUID, nvmlDevice_t, char *, unsigned int)

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned int n)
{
    struct fake_dev *fd = dev_of(d);

    if (fd && d->gi >= 0) {
        const struct fake_ci *ci = &fd->gi[d->gi].ci[d->ci];
        if (!fd->gi[d->gi].used || !ci->used)
            return NVML_ERROR_NOT_FOUND;
        if (strlen(ci->uuid) + 1 > n)
            return NVML_ERROR_INSUFFICIENT_SIZE;
        snprintf(buf, n, "%s", ci->uuid);
        return NVML_SUCCESS;
    }
    return copy_string(dev_answer(d, "nvmlDeviceGetUUID"), buf, n);
}

static nvmlReturn_t dev_uint(nvmlDevice_t d, const char *name, unsigned int *v)
{
    json_t *a = dev_answer(d, name);

    if (ret_of(a) == NVML_SUCCESS)
        *v = (unsigned)json_integer_value(value_of(a));
    return ret_of(a);
}

DECL(nvmlReturn_t, nvmlDeviceGetMinorNumber, nvmlDevice_t, unsigned int *)

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned int *v)
{
    return dev_uint(d, "nvmlDeviceGetMinorNumber", v);
}

DECL(nvmlReturn_t, nvmlDeviceGetIndex, nvmlDevice_t, unsigned int *)

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned int *v)
{
    return dev_uint(d, "nvmlDeviceGetIndex", v);
}

/* Getters replayed as recorded, for completeness of the recording round trip. */
#define PASSTHROUGH_UINT(name)                             \
    DECL(nvmlReturn_t, name, nvmlDevice_t, unsigned int *) \
    nvmlReturn_t name(nvmlDevice_t d, unsigned int *v)     \
    {                                                      \
        return dev_uint(d, #name, v);                      \
    }
PASSTHROUGH_UINT(nvmlDeviceGetPersistenceMode)
PASSTHROUGH_UINT(nvmlDeviceGetComputeMode)
PASSTHROUGH_UINT(nvmlDeviceGetMultiGpuBoard)

DECL(nvmlReturn_t, nvmlDeviceGetSerial, nvmlDevice_t, char *, unsigned int)

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t d, char *buf, unsigned int n)
{
    return copy_string(dev_answer(d, "nvmlDeviceGetSerial"), buf, n);
}

DECL(nvmlReturn_t, nvmlDeviceGetVbiosVersion, nvmlDevice_t, char *, unsigned int)

nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t d, char *buf, unsigned int n)
{
    return copy_string(dev_answer(d, "nvmlDeviceGetVbiosVersion"), buf, n);
}

DECL(nvmlReturn_t, nvmlDeviceGetBrand, nvmlDevice_t, int *)

nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t d, int *v)
{
    return dev_uint(d, "nvmlDeviceGetBrand", (unsigned *)v);
}

DECL(nvmlReturn_t, nvmlDeviceGetArchitecture, nvmlDevice_t, unsigned int *)

nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t d, unsigned int *v)
{
    return dev_uint(d, "nvmlDeviceGetArchitecture", v);
}

DECL(nvmlReturn_t, nvmlDeviceGetCudaComputeCapability, nvmlDevice_t, int *, int *)

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major, int *minor)
{
    json_t *a = dev_answer(d, "nvmlDeviceGetCudaComputeCapability");

    if (ret_of(a) == NVML_SUCCESS) {
        *major = (int)json_integer_value(json_array_get(value_of(a), 0));
        *minor = (int)json_integer_value(json_array_get(value_of(a), 1));
    }
    return ret_of(a);
}

DECL(nvmlReturn_t, nvmlDeviceGetMemoryInfo, nvmlDevice_t, nvmlMemory_t *)

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    json_t *a = dev_answer(d, "nvmlDeviceGetMemoryInfo"), *v = value_of(a);

    if (ret_of(a) == NVML_SUCCESS) {
        m->total = (unsigned long long)json_integer_value(json_object_get(v, "total"));
        m->free = (unsigned long long)json_integer_value(json_object_get(v, "free"));
        m->used = (unsigned long long)json_integer_value(json_object_get(v, "used"));
    }
    return ret_of(a);
}

static const char *str_or(const char *s)
{
    return s ? s : "";
}

static void fill_pci(const json_t *v, nvmlPciInfo_t *p)
{
    memset(p, 0, sizeof(*p));
    snprintf(p->busIdLegacy, sizeof(p->busIdLegacy), "%s",
             str_or(json_string_value(json_object_get(v, "busIdLegacy"))));
    p->domain = (unsigned)json_integer_value(json_object_get(v, "domain"));
    p->bus = (unsigned)json_integer_value(json_object_get(v, "bus"));
    p->device = (unsigned)json_integer_value(json_object_get(v, "device"));
    p->pciDeviceId = (unsigned)json_integer_value(json_object_get(v, "pciDeviceId"));
    p->pciSubSystemId = (unsigned)json_integer_value(json_object_get(v, "pciSubSystemId"));
    snprintf(p->busId, sizeof(p->busId), "%s",
             str_or(json_string_value(json_object_get(v, "busId"))));
}

DECL(nvmlReturn_t, nvmlDeviceGetPciInfo_v3, nvmlDevice_t, nvmlPciInfo_t *)

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p)
{
    json_t *a = dev_answer(d, "nvmlDeviceGetPciInfo_v3");

    if (ret_of(a) == NVML_SUCCESS)
        fill_pci(value_of(a), p);
    return ret_of(a);
}

DECL(nvmlReturn_t, nvmlDeviceGetMigMode, nvmlDevice_t, unsigned int *, unsigned int *)

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *cur, unsigned int *pend)
{
    json_t *a = dev_answer(d, "nvmlDeviceGetMigMode");

    if (ret_of(a) != NVML_SUCCESS)
        return ret_of(a);
    *cur = dev_of(d)->mig_cur;
    *pend = dev_of(d)->mig_pend;
    return NVML_SUCCESS;
}

static void fill_profile(const json_t *v, nvmlGpuInstanceProfileInfo_v2_t *p, bool v2)
{
    p->id = (unsigned)json_integer_value(json_object_get(v, "id"));
    p->isP2pSupported = (unsigned)json_integer_value(json_object_get(v, "isP2pSupported"));
    p->sliceCount = (unsigned)json_integer_value(json_object_get(v, "sliceCount"));
    p->instanceCount = (unsigned)json_integer_value(json_object_get(v, "instanceCount"));
    p->multiprocessorCount =
        (unsigned)json_integer_value(json_object_get(v, "multiprocessorCount"));
    p->copyEngineCount = (unsigned)json_integer_value(json_object_get(v, "copyEngineCount"));
    p->decoderCount = (unsigned)json_integer_value(json_object_get(v, "decoderCount"));
    p->encoderCount = (unsigned)json_integer_value(json_object_get(v, "encoderCount"));
    p->jpegCount = (unsigned)json_integer_value(json_object_get(v, "jpegCount"));
    p->ofaCount = (unsigned)json_integer_value(json_object_get(v, "ofaCount"));
    p->memorySizeMB = (unsigned long long)json_integer_value(json_object_get(v, "memorySizeMB"));
    if (v2)
        snprintf(p->name, sizeof(p->name), "%s",
                 str_or(json_string_value(json_object_get(v, "name"))));
}

DECL(nvmlReturn_t, nvmlDeviceGetGpuInstanceProfileInfoV, nvmlDevice_t, unsigned int,
     nvmlGpuInstanceProfileInfo_v2_t *)

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t d, unsigned int idx,
                                                  nvmlGpuInstanceProfileInfo_v2_t *p)
{
    json_t *e = entry_by(dev_answer(d, "nvmlDeviceGetGpuInstanceProfileInfoV"), "index", idx);

    if (!e)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (p->version != nvmlGpuInstanceProfileInfo_v2)
        return 25; /* NVML_ERROR_ARGUMENT_VERSION_MISMATCH */
    if (ret_of(e) == NVML_SUCCESS)
        fill_profile(value_of(e), p, true);
    return ret_of(e);
}

DECL(nvmlReturn_t, nvmlDeviceGetGpuInstanceProfileInfo, nvmlDevice_t, unsigned int,
     nvmlGpuInstanceProfileInfo_t *)

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t d, unsigned int idx,
                                                 nvmlGpuInstanceProfileInfo_t *p)
{
    json_t *e = entry_by(dev_answer(d, "nvmlDeviceGetGpuInstanceProfileInfo"), "index", idx);
    nvmlGpuInstanceProfileInfo_v2_t v2;

    if (!e)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (ret_of(e) == NVML_SUCCESS) {
        memset(&v2, 0, sizeof(v2));
        fill_profile(value_of(e), &v2, false);
        memcpy(p, &v2.id, sizeof(*p));
    }
    return ret_of(e);
}

/* The recorded profile (v2 answer) with this id. */
static const json_t *profile_by_id(struct fake_dev *fd, unsigned pid)
{
    size_t i;
    json_t *e;

    json_array_foreach(json_object_get(fd->rec, "nvmlDeviceGetGpuInstanceProfileInfoV"), i, e)
    {
        if (ret_of(e) == NVML_SUCCESS &&
            (unsigned)json_integer_value(json_object_get(value_of(e), "id")) == pid)
            return value_of(e);
    }
    return NULL;
}

DECL(nvmlReturn_t, nvmlDeviceGetGpuInstancePossiblePlacements_v2, nvmlDevice_t, unsigned int,
     nvmlGpuInstancePlacement_t *, unsigned int *)

nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t d, unsigned int pid,
                                                           nvmlGpuInstancePlacement_t *p,
                                                           unsigned int *count)
{
    json_t *e =
        entry_by(dev_answer(d, "nvmlDeviceGetGpuInstancePossiblePlacements_v2"), "profileId", pid);
    json_t *list = value_of(e), *x;
    size_t i;

    if (!e)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (ret_of(e) != NVML_SUCCESS)
        return ret_of(e);
    if (!p) {
        *count = (unsigned)json_array_size(list);
        return NVML_SUCCESS;
    }
    if (*count < json_array_size(list))
        return NVML_ERROR_INSUFFICIENT_SIZE;
    json_array_foreach(list, i, x)
    {
        p[i].start = (unsigned)json_integer_value(json_array_get(x, 0));
        p[i].size = (unsigned)json_integer_value(json_array_get(x, 1));
    }
    *count = (unsigned)json_array_size(list);
    return NVML_SUCCESS;
}

static unsigned count_gis(struct fake_dev *fd, unsigned pid)
{
    unsigned n = 0;

    for (unsigned g = 0; g < MAX_GI; g++)
        n += fd->gi[g].used && fd->gi[g].profile_id == pid;
    return n;
}

DECL(nvmlReturn_t, nvmlDeviceGetMaxMigDeviceCount, nvmlDevice_t, unsigned int *)

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int *v)
{
    struct fake_dev *fd = dev_of(d);
    json_t *a = dev_answer(d, "nvmlDeviceGetMaxMigDeviceCount");

    if (!fd || ret_of(a) != NVML_SUCCESS)
        return ret_of(a);
    /* 0 while MIG is off (as on the H200, HW); 7 compute slices' worth once on */
    *v = fd->mig_cur == NVML_DEVICE_MIG_ENABLE ? 7 : (unsigned)json_integer_value(value_of(a));
    return NVML_SUCCESS;
}

DECL(nvmlReturn_t, nvmlDeviceGetGpuInstanceRemainingCapacity, nvmlDevice_t, unsigned int,
     unsigned int *)

nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t d, unsigned int pid,
                                                       unsigned int *v)
{
    struct fake_dev *fd = dev_of(d);
    json_t *e =
        entry_by(dev_answer(d, "nvmlDeviceGetGpuInstanceRemainingCapacity"), "profileId", pid);

    if (!fd || !e)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (ret_of(e) != NVML_SUCCESS)
        return ret_of(e);
    /* with MIG off the recorded answer; on, the limit less what exists (overlap not modelled) */
    *v = (unsigned)json_integer_value(value_of(e));
    if (fd->mig_cur == NVML_DEVICE_MIG_ENABLE) {
        unsigned used = count_gis(fd, pid);
        *v = *v > used ? *v - used : 0;
    }
    return NVML_SUCCESS;
}

DECL(nvmlReturn_t, nvmlDeviceGetGpuInstances, nvmlDevice_t, unsigned int, nvmlGpuInstance_t *,
     unsigned int *)

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t d, unsigned int pid, nvmlGpuInstance_t *out,
                                       unsigned int *count)
{
    struct fake_dev *fd = dev_of(d);
    unsigned n = 0;

    if (!fd || d->gi >= 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (fd->mig_cur != NVML_DEVICE_MIG_ENABLE) {
        json_t *e = entry_by(dev_answer(d, "nvmlDeviceGetGpuInstances"), "profileId", pid);
        return e ? ret_of(e) : NVML_ERROR_NOT_SUPPORTED;
    }
    if (!profile_by_id(fd, pid))
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned g = 0; g < MAX_GI; g++) {
        if (!fd->gi[g].used || fd->gi[g].profile_id != pid)
            continue;
        if (n >= *count)
            return NVML_ERROR_INSUFFICIENT_SIZE;
        out[n++] = &fd->gih[g];
    }
    *count = n;
    return NVML_SUCCESS;
}

static struct fake_gi *gi_of(nvmlGpuInstance_t gi)
{
    if (!gi || gi->dev < 0 || (unsigned)gi->dev >= n_devs || gi->gi < 0 || gi->gi >= MAX_GI ||
        !devs[gi->dev].gi[gi->gi].used)
        return NULL;
    return &devs[gi->dev].gi[gi->gi];
}

DECL(nvmlReturn_t, nvmlGpuInstanceGetInfo, nvmlGpuInstance_t, nvmlGpuInstanceInfo_t *)

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gi, nvmlGpuInstanceInfo_t *info)
{
    struct fake_gi *g = gi_of(gi);

    if (!g)
        return NVML_ERROR_INVALID_ARGUMENT;
    info->device = &devs[gi->dev].handle;
    info->id = g->id;
    info->profileId = g->profile_id;
    info->placement.start = g->start;
    info->placement.size = g->size;
    return NVML_SUCCESS;
}

DECL(nvmlReturn_t, nvmlGpuInstanceGetComputeInstanceProfileInfo, nvmlGpuInstance_t, unsigned int,
     unsigned int, nvmlComputeInstanceProfileInfo_t *)

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gi, unsigned int idx,
                                                          unsigned int eng,
                                                          nvmlComputeInstanceProfileInfo_t *info)
{
    struct fake_gi *g = gi_of(gi);
    const json_t *p;
    unsigned slices, sms;

    if (!g || eng != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED ||
        idx >= FATIA_ARRAY_SIZE(ci_slices))
        return NVML_ERROR_INVALID_ARGUMENT;
    p = profile_by_id(&devs[gi->dev], g->profile_id);
    slices = (unsigned)json_integer_value(json_object_get(p, "sliceCount"));
    sms = (unsigned)json_integer_value(json_object_get(p, "multiprocessorCount"));
    if (!slices || ci_slices[idx] > slices || slices % ci_slices[idx])
        return NVML_ERROR_NOT_SUPPORTED;
    memset(info, 0, sizeof(*info));
    info->id = idx; /* synthesized: not recordable while MIG is off */
    info->sliceCount = ci_slices[idx];
    info->instanceCount = slices / ci_slices[idx];
    info->multiprocessorCount = sms * ci_slices[idx] / slices;
    return NVML_SUCCESS;
}

DECL(nvmlReturn_t, nvmlGpuInstanceGetComputeInstances, nvmlGpuInstance_t, unsigned int,
     nvmlComputeInstance_t *, unsigned int *)

nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gi, unsigned int cpid,
                                                nvmlComputeInstance_t *out, unsigned int *count)
{
    struct fake_gi *g = gi_of(gi);
    unsigned n = 0;

    if (!g)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned c = 0; c < MAX_CI; c++) {
        if (!g->ci[c].used || g->ci[c].profile_id != cpid)
            continue;
        if (n >= *count)
            return NVML_ERROR_INSUFFICIENT_SIZE;
        out[n++] = &devs[gi->dev].cih[gi->gi][c];
    }
    *count = n;
    return NVML_SUCCESS;
}

DECL(nvmlReturn_t, nvmlComputeInstanceGetInfo_v2, nvmlComputeInstance_t,
     nvmlComputeInstanceInfo_t *)

nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t ci,
                                           nvmlComputeInstanceInfo_t *info)
{
    struct fake_gi *g;

    if (!ci || ci->dev < 0 || (unsigned)ci->dev >= n_devs || ci->gi < 0 || ci->gi >= MAX_GI ||
        ci->ci < 0 || ci->ci >= MAX_CI)
        return NVML_ERROR_INVALID_ARGUMENT;
    g = &devs[ci->dev].gi[ci->gi];
    if (!g->used || !g->ci[ci->ci].used)
        return NVML_ERROR_INVALID_ARGUMENT;
    info->device = &devs[ci->dev].migh[ci->gi][ci->ci];
    info->gpuInstance = &devs[ci->dev].gih[ci->gi];
    info->id = g->ci[ci->ci].id;
    info->profileId = g->ci[ci->ci].profile_id;
    info->placement.start = 0;
    info->placement.size = ci_slices[g->ci[ci->ci].profile_id % FATIA_ARRAY_SIZE(ci_slices)];
    return NVML_SUCCESS;
}

DECL(nvmlReturn_t, nvmlDeviceGetNvLinkState, nvmlDevice_t, unsigned int, int *)

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link, int *active)
{
    json_t *list = dev_answer(d, "nvmlDeviceGetNvLinkState");
    json_t *e = entry_by(list, "link", link);

    if (!list)
        return NVML_ERROR_NOT_SUPPORTED;
    if (!e)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (ret_of(e) == NVML_SUCCESS)
        *active = (int)json_integer_value(value_of(e));
    return ret_of(e);
}

DECL(nvmlReturn_t, nvmlDeviceGetNvLinkRemotePciInfo_v2, nvmlDevice_t, unsigned int, nvmlPciInfo_t *)

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned int link,
                                                 nvmlPciInfo_t *p)
{
    json_t *e = entry_by(dev_answer(d, "nvmlDeviceGetNvLinkRemotePciInfo_v2"), "link", link);

    if (!e)
        return NVML_ERROR_NOT_SUPPORTED;
    if (ret_of(e) == NVML_SUCCESS)
        fill_pci(value_of(e), p);
    return ret_of(e);
}

/* ---- MIG changes (simulated) ---- */

DECL(nvmlReturn_t, nvmlDeviceSetMigMode, nvmlDevice_t, unsigned int, nvmlReturn_t *)

nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t d, unsigned int mode, nvmlReturn_t *activation)
{
    struct fake_dev *fd = dev_of(d);
    const char *reset = getenv("FATIA_FAKE_NVML_RESET_REQUIRED");

    if (!fd || d->gi >= 0 || mode > 1)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (ret_of(dev_answer(d, "nvmlDeviceGetMigMode")) != NVML_SUCCESS)
        return NVML_ERROR_NOT_SUPPORTED;
    for (unsigned g = 0; mode == NVML_DEVICE_MIG_DISABLE && g < MAX_GI; g++)
        if (fd->gi[g].used)
            return NVML_ERROR_IN_USE;
    fd->mig_pend = mode;
    if (reset && !strcmp(reset, "1")) {
        *activation = NVML_ERROR_RESET_REQUIRED;
    } else {
        fd->mig_cur = mode;
        *activation = NVML_SUCCESS;
    }
    save_state();
    return NVML_SUCCESS;
}

static bool placement_ok(struct fake_dev *fd, unsigned pid, unsigned start, unsigned size)
{
    json_t *e = entry_by(json_object_get(fd->rec, "nvmlDeviceGetGpuInstancePossiblePlacements_v2"),
                         "profileId", pid);
    json_t *x;
    size_t i;

    json_array_foreach(value_of(e), i, x)
    {
        if ((unsigned)json_integer_value(json_array_get(x, 0)) == start &&
            (unsigned)json_integer_value(json_array_get(x, 1)) == size)
            return true;
    }
    return false;
}

DECL(nvmlReturn_t, nvmlDeviceCreateGpuInstanceWithPlacement, nvmlDevice_t, unsigned int,
     const nvmlGpuInstancePlacement_t *, nvmlGpuInstance_t *)

nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t d, unsigned int pid,
                                                      const nvmlGpuInstancePlacement_t *pl,
                                                      nvmlGpuInstance_t *out)
{
    struct fake_dev *fd = dev_of(d);
    const json_t *prof;
    unsigned count = 0, next_id = 1, free_slot = MAX_GI;

    if (!fd || d->gi >= 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (fd->mig_cur != NVML_DEVICE_MIG_ENABLE)
        return NVML_ERROR_NOT_SUPPORTED;
    prof = profile_by_id(fd, pid);
    if (!prof || !placement_ok(fd, pid, pl->start, pl->size))
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned g = 0; g < MAX_GI; g++) {
        const struct fake_gi *x = &fd->gi[g];
        if (!x->used) {
            if (free_slot == MAX_GI)
                free_slot = g;
            continue;
        }
        if (x->start < pl->start + pl->size && pl->start < x->start + x->size)
            return NVML_ERROR_INSUFFICIENT_RESOURCES; /* overlap: NVML says this, not EXISTS */
        count += x->profile_id == pid;
        next_id = FATIA_MAX(next_id, x->id + 1);
    }
    if (count >= (unsigned)json_integer_value(json_object_get(prof, "instanceCount")) ||
        free_slot == MAX_GI)
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    fd->gi[free_slot] = (struct fake_gi){true, next_id, pid, pl->start, pl->size, {{0}}};
    *out = &fd->gih[free_slot];
    save_state();
    return NVML_SUCCESS;
}

DECL(nvmlReturn_t, nvmlGpuInstanceCreateComputeInstance, nvmlGpuInstance_t, unsigned int,
     nvmlComputeInstance_t *)

nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gi, unsigned int cpid,
                                                  nvmlComputeInstance_t *out)
{
    struct fake_gi *g = gi_of(gi);
    nvmlComputeInstanceProfileInfo_t info;
    const char *parent;
    unsigned slot = MAX_CI;

    if (!g || cpid >= FATIA_ARRAY_SIZE(ci_slices) ||
        nvmlGpuInstanceGetComputeInstanceProfileInfo(
            gi, cpid, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info) != NVML_SUCCESS)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned c = 0; c < MAX_CI; c++)
        if (!g->ci[c].used) {
            slot = c;
            break;
        }
    if (slot == MAX_CI)
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    parent = json_string_value(value_of(json_object_get(devs[gi->dev].rec, "nvmlDeviceGetUUID")));
    g->ci[slot].used = true;
    g->ci[slot].id = slot;
    g->ci[slot].profile_id = cpid;
    /* MIG-<the GPU UUID's hex with the GI start and profile folded in>: stable and unique */
    snprintf(g->ci[slot].uuid, sizeof(g->ci[slot].uuid), "MIG-%.8s-%04x-%04x-%.4s-%.12s",
             parent && strlen(parent) >= 40 ? parent + 4 : "00000000", g->start * 256 + slot,
             g->profile_id, parent && strlen(parent) >= 40 ? parent + 23 : "0000",
             parent && strlen(parent) >= 40 ? parent + 28 : "000000000000");
    *out = &devs[gi->dev].cih[gi->gi][slot];
    save_state();
    return NVML_SUCCESS;
}

DECL(nvmlReturn_t, nvmlComputeInstanceDestroy, nvmlComputeInstance_t)

nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t ci)
{
    struct fake_gi *g;

    if (!ci || ci->dev < 0 || (unsigned)ci->dev >= n_devs || ci->gi < 0 || ci->gi >= MAX_GI ||
        ci->ci < 0 || ci->ci >= MAX_CI)
        return NVML_ERROR_INVALID_ARGUMENT;
    g = &devs[ci->dev].gi[ci->gi];
    if (!g->used || !g->ci[ci->ci].used)
        return NVML_ERROR_INVALID_ARGUMENT;
    g->ci[ci->ci].used = false;
    save_state();
    return NVML_SUCCESS;
}

DECL(nvmlReturn_t, nvmlGpuInstanceDestroy, nvmlGpuInstance_t)

nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gi)
{
    struct fake_gi *g = gi_of(gi);

    if (!g)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned c = 0; c < MAX_CI; c++)
        if (g->ci[c].used)
            return NVML_ERROR_IN_USE; /* compute instances first (dra-driver deleteMigDevice) */
    g->used = false;
    save_state();
    return NVML_SUCCESS;
}

/* ---- events (the node agent's GPU health watch, agent/gpuhealth_agent.c) ----
 *
 * FATIA_FAKE_NVML_EVENTS = a file a test appends lines to; nvmlEventSetWait_v2 polls it every
 * 20 ms until its timeout and hands out each new line as one event of a GPU whose events are
 * registered in the set (others are skipped, as the driver does):
 *
 *     <index> xid <n>   nvmlEventTypeXidCriticalError, eventData n
 *     <index> dbe       nvmlEventTypeDoubleBitEccError
 *     <index> sbe       nvmlEventTypeSingleBitEccError
 *     <index> lost      XID 79 (fallen off the bus); from then on nvmlDeviceGetHandleByUUID of
 *                       that GPU answers NVML_ERROR_GPU_IS_LOST (the agent's recovery probe)
 *     <index> found     the GPU answers again (no event)
 *                       (lost/found before the set was made set the state and send nothing)
 *     wait-error        the wait itself fails once with NVML_ERROR_UNKNOWN
 *
 * The inventory reads GPUs by index and is not affected by "lost" (a real lost GPU would also
 * refuse those reads). */
#include <stdatomic.h>
#include <time.h>

#define FAKE_EV_SBE  0x1ULL
#define FAKE_EV_DBE  0x2ULL
#define FAKE_EV_XID  0x8ULL
#define FAKE_EV_ALL  (FAKE_EV_SBE | FAKE_EV_DBE | FAKE_EV_XID)
#define FAKE_TIMEOUT 10
#define FAKE_IS_LOST 15

typedef struct nvmlEventSet_st *nvmlEventSet_t;

typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} fakeEventData_t;

struct nvmlEventSet_st {
    unsigned long long mask[MAX_DEV];
    long offset;
};

static atomic_int dev_lost[MAX_DEV];

DECL(nvmlReturn_t, nvmlEventSetCreate, nvmlEventSet_t *)
DECL(nvmlReturn_t, nvmlEventSetFree, nvmlEventSet_t)
DECL(nvmlReturn_t, nvmlDeviceGetSupportedEventTypes, nvmlDevice_t, unsigned long long *)
DECL(nvmlReturn_t, nvmlDeviceRegisterEvents, nvmlDevice_t, unsigned long long, nvmlEventSet_t)
DECL(nvmlReturn_t, nvmlEventSetWait_v2, nvmlEventSet_t, fakeEventData_t *, unsigned int)
DECL(nvmlReturn_t, nvmlDeviceGetHandleByUUID, const char *, nvmlDevice_t *)

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
    const char *path = getenv("FATIA_FAKE_NVML_EVENTS");
    FILE *f;

    if (!recording)
        return NVML_ERROR_UNINITIALIZED;
    if (!(*set = calloc(1, sizeof(**set))))
        return NVML_ERROR_UNKNOWN;
    /* events written before the set existed are not delivered, as with the driver; a GPU
     * lost before stays lost (a state of the hardware, not of this process) */
    if (path && (f = fopen(path, "r"))) {
        char line[256], kind[32];
        unsigned idx;
        while (fgets(line, sizeof(line), f))
            if (sscanf(line, "%u %31s", &idx, kind) == 2 && idx < n_devs &&
                (!strcmp(kind, "lost") || !strcmp(kind, "found")))
                atomic_store(&dev_lost[idx], !strcmp(kind, "lost"));
        (*set)->offset = ftell(f);
        fclose(f);
    }
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
    free(set);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t d, unsigned long long *types)
{
    if (!dev_of(d) || d->gi >= 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    *types = FAKE_EV_ALL | 0x4ULL /* PState */;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set)
{
    if (!set || !dev_of(d) || d->gi >= 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (types & ~(FAKE_EV_ALL | 0x4ULL))
        return NVML_ERROR_NOT_SUPPORTED;
    set->mask[d->dev] |= types;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *d)
{
    for (unsigned i = 0; recording && i < n_devs; i++) {
        char u[96];
        if (copy_string(dev_answer(&devs[i].handle, "nvmlDeviceGetUUID"), u, sizeof(u)) ||
            strcmp(u, uuid))
            continue;
        if (atomic_load(&dev_lost[i]))
            return FAKE_IS_LOST;
        *d = &devs[i].handle;
        return NVML_SUCCESS;
    }
    return recording ? NVML_ERROR_NOT_FOUND : NVML_ERROR_UNINITIALIZED;
}

/* One line of the file after set->offset as an event; 1 when one was made, 0 when none is
 * there yet, -1 for a wait error. */
static int next_event(nvmlEventSet_t set, fakeEventData_t *data)
{
    const char *path = getenv("FATIA_FAKE_NVML_EVENTS");
    char line[256], kind[32];
    unsigned idx;
    unsigned long long n = 0;
    FILE *f;
    int got = 0;

    if (!path || !(f = fopen(path, "r")))
        return 0;
    fseek(f, set->offset, SEEK_SET);
    while (!got && fgets(line, sizeof(line), f)) {
        size_t len = strlen(line);
        unsigned long long type = 0;
        if (!len || line[len - 1] != '\n')
            break; /* a line being written: later */
        set->offset = ftell(f);
        if (!strncmp(line, "wait-error", 10)) {
            got = -1;
            break;
        }
        if (sscanf(line, "%u %31s %llu", &idx, kind, &n) < 2 || idx >= n_devs)
            continue;
        if (!strcmp(kind, "xid"))
            type = FAKE_EV_XID;
        else if (!strcmp(kind, "dbe"))
            type = FAKE_EV_DBE, n = 0;
        else if (!strcmp(kind, "sbe"))
            type = FAKE_EV_SBE, n = 0;
        else if (!strcmp(kind, "lost")) {
            atomic_store(&dev_lost[idx], 1);
            type = FAKE_EV_XID, n = 79;
        } else if (!strcmp(kind, "found")) {
            atomic_store(&dev_lost[idx], 0);
            continue;
        }
        if (!(set->mask[idx] & type))
            continue;
        *data = (fakeEventData_t){&devs[idx].handle, type, n, 0xFFFFFFFFu, 0xFFFFFFFFu};
        got = 1;
    }
    fclose(f);
    return got;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, fakeEventData_t *data, unsigned int ms)
{
    struct timespec step = {0, 20 * 1000 * 1000};

    if (!set || !data)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned waited = 0;; waited += 20) {
        int r = next_event(set, data);
        if (r > 0)
            return NVML_SUCCESS;
        if (r < 0)
            return NVML_ERROR_UNKNOWN;
        if (waited >= ms)
            return FAKE_TIMEOUT;
        nanosleep(&step, NULL);
    }
}

/*
 * tests/supply/nvml_record.c: fatia-nvml-record: asks NVML everything fatia's nvml backend asks
 * (and a little more, for the record), read-only, and prints the answers as JSON: the return code
 * of every call and the value it gave. The fake library (fake_nvml.c) replays such a recording so
 * that CI runs the backend's real code; scripts/verify-h200-nvml records the H200 with it.
 *
 * Usage: fatia-nvml-record [LIBRARY] > recording.json   (LIBRARY defaults to libnvidia-ml.so.1)
 *
 * Format (tests/data/nvml/README.md): {"format": "fatia-nvml-recording/v1", "system": {CALL:
 * {"ret", "value"}}, "devices": [{CALL: {"ret", "value"} or [per-argument answers]}]}. Calls are
 * named by their NVML symbol. Nothing here changes a setting: only Get calls are made.
 *
 * Rejected: recording by interposing every call of the backend (LD_PRELOAD): the recording would
 * then hold only what one version of the backend asked, in its order, and the fake could not
 * answer a backend that asks differently.
 */
#include "base/compat.h"

#include <dlfcn.h>
#include <jansson.h>

#include "supply/nvml.h"

typedef nvmlReturn_t (*fn_t)();

static void *lib;

static void *sym(const char *name)
{
    return dlsym(lib, name);
}

/* dlsym's object pointer as a function pointer, without the cast ISO C frowns on */
static fn_t fn(const char *name)
{
    void *p = dlsym(lib, name);
    fn_t f;

    memcpy(&f, &p, sizeof(f));
    return f;
}

static json_t *answer(nvmlReturn_t r, json_t *value)
{
    json_t *a = json_pack("{s:i}", "ret", r);

    if (r == NVML_SUCCESS && value)
        json_object_set_new(a, "value", value);
    else
        json_decref(value);
    return a;
}

static json_t *pci_json(const nvmlPciInfo_t *p)
{
    return json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:s}", "busIdLegacy", p->busIdLegacy, "domain",
                     (json_int_t)p->domain, "bus", (json_int_t)p->bus, "device",
                     (json_int_t)p->device, "pciDeviceId", (json_int_t)p->pciDeviceId,
                     "pciSubSystemId", (json_int_t)p->pciSubSystemId, "busId", p->busId);
}

static json_t *profile_json(const nvmlGpuInstanceProfileInfo_v2_t *v, bool v2)
{
    json_t *j = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "id", (json_int_t)v->id,
                          "isP2pSupported", (json_int_t)v->isP2pSupported, "sliceCount",
                          (json_int_t)v->sliceCount, "instanceCount", (json_int_t)v->instanceCount,
                          "multiprocessorCount", (json_int_t)v->multiprocessorCount,
                          "copyEngineCount", (json_int_t)v->copyEngineCount, "decoderCount",
                          (json_int_t)v->decoderCount, "encoderCount", (json_int_t)v->encoderCount,
                          "jpegCount", (json_int_t)v->jpegCount, "ofaCount",
                          (json_int_t)v->ofaCount, "memorySizeMB", (json_int_t)v->memorySizeMB);
    if (v2)
        json_object_set_new(j, "name", json_string(v->name));
    return j;
}

#define CALL(name, ...) (sym(name) ? fn(name)(__VA_ARGS__) : -1)

static json_t *record_gpu_instances(nvmlDevice_t dev, unsigned pid)
{
    nvmlGpuInstance_t gis[32];
    unsigned n = 32;
    json_t *list = json_array();
    nvmlReturn_t r = CALL("nvmlDeviceGetGpuInstances", dev, pid, gis, &n);

    if (r != NVML_SUCCESS)
        return answer(r, list);
    for (unsigned k = 0; k < n; k++) {
        nvmlGpuInstanceInfo_t info;
        json_t *gi = json_object(), *cps = json_array();
        nvmlReturn_t ri = CALL("nvmlGpuInstanceGetInfo", gis[k], &info);
        if (ri == NVML_SUCCESS)
            json_object_set_new(gi, "info",
                                json_pack("{s:I,s:I,s:I,s:I}", "id", (json_int_t)info.id,
                                          "profileId", (json_int_t)info.profileId, "start",
                                          (json_int_t)info.placement.start, "size",
                                          (json_int_t)info.placement.size));
        for (unsigned c = 0; c < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; c++) {
            nvmlComputeInstanceProfileInfo_t cp;
            nvmlComputeInstance_t cis[8];
            unsigned cn = 8;
            json_t *ce, *cil = json_array();
            nvmlReturn_t rc = CALL("nvmlGpuInstanceGetComputeInstanceProfileInfo", gis[k], c,
                                   NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &cp);
            ce = answer(rc, json_pack("{s:I,s:I,s:I,s:I}", "id", (json_int_t)cp.id, "sliceCount",
                                      (json_int_t)cp.sliceCount, "instanceCount",
                                      (json_int_t)cp.instanceCount, "multiprocessorCount",
                                      (json_int_t)cp.multiprocessorCount));
            json_object_set_new(ce, "index", json_integer(c));
            if (rc == NVML_SUCCESS && CALL("nvmlGpuInstanceGetComputeInstances", gis[k], cp.id, cis,
                                           &cn) == NVML_SUCCESS) {
                for (unsigned x = 0; x < cn; x++) {
                    nvmlComputeInstanceInfo_t ci;
                    char uuid[96] = "";
                    if (CALL("nvmlComputeInstanceGetInfo_v2", cis[x], &ci) != NVML_SUCCESS)
                        continue;
                    CALL("nvmlDeviceGetUUID", ci.device, uuid, (unsigned)sizeof(uuid));
                    json_array_append_new(cil,
                                          json_pack("{s:I,s:I,s:I,s:s}", "id", (json_int_t)ci.id,
                                                    "profileId", (json_int_t)ci.profileId, "start",
                                                    (json_int_t)ci.placement.start, "uuid", uuid));
                }
            }
            json_object_set_new(ce, "computeInstances", cil);
            json_array_append_new(cps, ce);
        }
        json_object_set_new(gi, "computeInstanceProfiles", cps);
        json_array_append_new(list, gi);
    }
    return answer(r, list);
}

static json_t *record_device(unsigned i)
{
    json_t *d = json_object(), *v1s = json_array(), *v2s = json_array(), *pl = json_array();
    json_t *rem = json_array(), *gis = json_array(), *links = json_array(), *remote = json_array();
    nvmlDevice_t dev;
    char buf[256];
    unsigned u = 0, u2 = 0;
    int a = 0, b = 0;
    nvmlMemory_t mem;
    nvmlPciInfo_t pci;
    nvmlReturn_t r;
    unsigned ids[64], n_ids = 0;

    r = CALL("nvmlDeviceGetHandleByIndex_v2", i, &dev);
    json_object_set_new(d, "nvmlDeviceGetHandleByIndex_v2", answer(r, NULL));
    if (r != NVML_SUCCESS)
        return d;
#define STR(name)                                                  \
    do {                                                           \
        memset(buf, 0, sizeof(buf));                               \
        r = CALL(name, dev, buf, (unsigned)sizeof(buf));           \
        json_object_set_new(d, name, answer(r, json_string(buf))); \
    } while (0)
#define UINT(name)                                                \
    do {                                                          \
        u = 0;                                                    \
        r = CALL(name, dev, &u);                                  \
        json_object_set_new(d, name, answer(r, json_integer(u))); \
    } while (0)
    STR("nvmlDeviceGetName");
    STR("nvmlDeviceGetUUID");
    STR("nvmlDeviceGetSerial");
    STR("nvmlDeviceGetVbiosVersion");
    UINT("nvmlDeviceGetIndex");
    UINT("nvmlDeviceGetMinorNumber");
    UINT("nvmlDeviceGetBrand");
    UINT("nvmlDeviceGetArchitecture");
    UINT("nvmlDeviceGetPersistenceMode");
    UINT("nvmlDeviceGetComputeMode");
    UINT("nvmlDeviceGetMaxMigDeviceCount");
    UINT("nvmlDeviceGetMultiGpuBoard");
    r = CALL("nvmlDeviceGetCudaComputeCapability", dev, &a, &b);
    json_object_set_new(d, "nvmlDeviceGetCudaComputeCapability",
                        answer(r, json_pack("[i,i]", a, b)));
    memset(&mem, 0, sizeof(mem));
    r = CALL("nvmlDeviceGetMemoryInfo", dev, &mem);
    json_object_set_new(d, "nvmlDeviceGetMemoryInfo",
                        answer(r, json_pack("{s:I,s:I,s:I}", "total", (json_int_t)mem.total, "free",
                                            (json_int_t)mem.free, "used", (json_int_t)mem.used)));
    memset(&pci, 0, sizeof(pci));
    r = CALL("nvmlDeviceGetPciInfo_v3", dev, &pci);
    json_object_set_new(d, "nvmlDeviceGetPciInfo_v3", answer(r, pci_json(&pci)));
    r = CALL("nvmlDeviceGetMigMode", dev, &u, &u2);
    json_object_set_new(d, "nvmlDeviceGetMigMode", answer(r, json_pack("[i,i]", u, u2)));
    for (unsigned idx = 0; idx < NVML_GPU_INSTANCE_PROFILE_COUNT_MAX; idx++) {
        nvmlGpuInstanceProfileInfo_v2_t v2;
        nvmlGpuInstanceProfileInfo_t v1;
        json_t *e;
        memset(&v2, 0, sizeof(v2));
        v2.version = nvmlGpuInstanceProfileInfo_v2;
        r = CALL("nvmlDeviceGetGpuInstanceProfileInfoV", dev, idx, &v2);
        e = answer(r, profile_json(&v2, true));
        json_object_set_new(e, "index", json_integer(idx));
        json_array_append_new(v2s, e);
        memset(&v1, 0, sizeof(v1));
        r = CALL("nvmlDeviceGetGpuInstanceProfileInfo", dev, idx, &v1);
        memcpy(&v2.id, &v1, sizeof(v1));
        e = answer(r, profile_json(&v2, false));
        json_object_set_new(e, "index", json_integer(idx));
        json_array_append_new(v1s, e);
        if (r == NVML_SUCCESS && n_ids < 64)
            ids[n_ids++] = v1.id;
    }
    json_object_set_new(d, "nvmlDeviceGetGpuInstanceProfileInfoV", v2s);
    json_object_set_new(d, "nvmlDeviceGetGpuInstanceProfileInfo", v1s);
    for (unsigned k = 0; k < n_ids; k++) {
        nvmlGpuInstancePlacement_t p[64];
        unsigned count = 64, cap = 0;
        json_t *list = json_array(), *e;
        r = CALL("nvmlDeviceGetGpuInstancePossiblePlacements_v2", dev, ids[k], p, &count);
        for (unsigned x = 0; r == NVML_SUCCESS && x < count; x++)
            json_array_append_new(
                list, json_pack("[I,I]", (json_int_t)p[x].start, (json_int_t)p[x].size));
        e = answer(r, list);
        json_object_set_new(e, "profileId", json_integer(ids[k]));
        json_array_append_new(pl, e);
        r = CALL("nvmlDeviceGetGpuInstanceRemainingCapacity", dev, ids[k], &cap);
        e = answer(r, json_integer(cap));
        json_object_set_new(e, "profileId", json_integer(ids[k]));
        json_array_append_new(rem, e);
        e = record_gpu_instances(dev, ids[k]);
        json_object_set_new(e, "profileId", json_integer(ids[k]));
        json_array_append_new(gis, e);
    }
    json_object_set_new(d, "nvmlDeviceGetGpuInstancePossiblePlacements_v2", pl);
    json_object_set_new(d, "nvmlDeviceGetGpuInstanceRemainingCapacity", rem);
    json_object_set_new(d, "nvmlDeviceGetGpuInstances", gis);
    for (unsigned k = 0; k < NVML_NVLINK_MAX_LINKS; k++) {
        int active = 0;
        json_t *e;
        r = CALL("nvmlDeviceGetNvLinkState", dev, k, &active);
        e = answer(r, json_integer(active));
        json_object_set_new(e, "link", json_integer(k));
        json_array_append_new(links, e);
        if (r == NVML_SUCCESS && active) {
            memset(&pci, 0, sizeof(pci));
            r = CALL("nvmlDeviceGetNvLinkRemotePciInfo_v2", dev, k, &pci);
            e = answer(r, pci_json(&pci));
            json_object_set_new(e, "link", json_integer(k));
            json_array_append_new(remote, e);
        }
        if (r == NVML_ERROR_INVALID_ARGUMENT)
            break;
    }
    json_object_set_new(d, "nvmlDeviceGetNvLinkState", links);
    json_object_set_new(d, "nvmlDeviceGetNvLinkRemotePciInfo_v2", remote);
    return d;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "libnvidia-ml.so.1";
    json_t *doc, *sys, *devs;
    char buf[256];
    unsigned count = 0;
    int cuda = 0;
    nvmlReturn_t r;

    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "fatia-nvml-record: cannot load %s: %s\n", path, dlerror());
        return 1;
    }
    r = sym("nvmlInitWithFlags") ? CALL("nvmlInitWithFlags", 0u) : fn("nvmlInit_v2")();
    if (r != NVML_SUCCESS) {
        fprintf(stderr, "fatia-nvml-record: nvmlInit failed: %d\n", r);
        return 1;
    }
    sys = json_object();
#define SYSSTR(name)                                                 \
    do {                                                             \
        memset(buf, 0, sizeof(buf));                                 \
        r = CALL(name, buf, (unsigned)sizeof(buf));                  \
        json_object_set_new(sys, name, answer(r, json_string(buf))); \
    } while (0)
    SYSSTR("nvmlSystemGetDriverVersion");
    SYSSTR("nvmlSystemGetNVMLVersion");
    r = CALL("nvmlSystemGetCudaDriverVersion_v2", &cuda);
    json_object_set_new(sys, "nvmlSystemGetCudaDriverVersion_v2", answer(r, json_integer(cuda)));
    r = CALL("nvmlSystemGetCudaDriverVersion", &cuda);
    json_object_set_new(sys, "nvmlSystemGetCudaDriverVersion", answer(r, json_integer(cuda)));
    r = CALL("nvmlDeviceGetCount_v2", &count);
    json_object_set_new(sys, "nvmlDeviceGetCount_v2", answer(r, json_integer(count)));
    devs = json_array();
    for (unsigned i = 0; r == NVML_SUCCESS && i < count; i++)
        json_array_append_new(devs, record_device(i));
    doc = json_pack("{s:s,s:s,s:b,s:o,s:o}", "format", "fatia-nvml-recording/v1", "library", path,
                    "fake", sym("fatiaFakeNvml") != NULL, "system", sys, "devices", devs);
    json_dumpf(doc, stdout, JSON_INDENT(1));
    fputc('\n', stdout);
    json_decref(doc);
    if (sym("nvmlShutdown"))
        fn("nvmlShutdown")();
    dlclose(lib);
    return 0;
}

/*
 * supply/nvml.c: the nvml inventory backend (see inventory.h, nvml.h): this machine's GPUs read
 * through libnvidia-ml.so.1, loaded with dlopen at run time. Read-only.
 *
 * Per device, as reference nvidia-slicing.md §8 prescribes: name, UUID, minor, brand,
 * architecture, compute capability, memory, PCI (bus id in go-nvlib's form, device id, PCIe root
 * from sysfs), MIG mode (current and pending); then every GPU-instance profile index from 0 until
 * NVML_GPU_INSTANCE_PROFILE_COUNT_MAX, skipping NOT_SUPPORTED and INVALID_ARGUMENT (an H200 on
 * driver 580 answers 3 for 0x5, 0x6, 0x8, 0xA-0x10 and 2 from 0x11), with the profile's possible
 * placements (asked by profile id); the existing GPU and compute instances with their MIG UUIDs
 * when MIG is on; NVLink links to other GPUs or to NVSwitches, which make the islands.
 *
 * NVML wins over the catalog: the GPU's model is built from NVML's answers (name, memory, MIG
 * geometry); the catalog entry of the same product only fills what NVML does not say (SM count,
 * CUDA context reserve, MPS client limit). When the profile queries are refused (they are
 * "privileged" in nvml.h) the catalog's geometry is used and a warning says so.
 *
 * NVLink islands: GPUs are joined when a link of one ends at the other, or when links of both
 * end at the same remote device (an NVSwitch); every GPU without links is an island of its own.
 */
#include "base/compat.h"

#include "supply/nvml.h"

#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/vec.h"

#define SYM(field, name, required)                                   \
    do {                                                             \
        *(void **)&n->field = dlsym(n->lib, name);                   \
        if ((required) && !n->field) {                               \
            snprintf(why, why_n, "%s: no symbol %s", n->path, name); \
            goto fail;                                               \
        }                                                            \
    } while (0)

int fatia_nvml_open(struct fatia_nvml *n, const char *path, char *why, size_t why_n)
{
    nvmlReturn_t r;

    memset(n, 0, sizeof(*n));
    snprintf(n->path, sizeof(n->path), "%s", path ? path : "libnvidia-ml.so.1");
    n->lib = dlopen(n->path, RTLD_NOW | RTLD_LOCAL);
    if (!n->lib) {
        const char *e = dlerror();
        snprintf(why, why_n, "cannot load %s: %s", n->path, e ? e : "unknown error");
        return -FATIA_E_NODRIVER;
    }
    n->is_fake = dlsym(n->lib, "fatiaFakeNvml") != NULL;
    SYM(InitWithFlags, "nvmlInitWithFlags", false);
    SYM(Init, "nvmlInit_v2", false);
    SYM(Shutdown, "nvmlShutdown", true);
    SYM(ErrorString, "nvmlErrorString", false);
    SYM(SystemGetDriverVersion, "nvmlSystemGetDriverVersion", true);
    SYM(SystemGetCudaDriverVersion, "nvmlSystemGetCudaDriverVersion_v2", false);
    if (!n->SystemGetCudaDriverVersion)
        SYM(SystemGetCudaDriverVersion, "nvmlSystemGetCudaDriverVersion", false);
    SYM(DeviceGetCount, "nvmlDeviceGetCount_v2", true);
    SYM(DeviceGetHandleByIndex, "nvmlDeviceGetHandleByIndex_v2", true);
    SYM(DeviceGetName, "nvmlDeviceGetName", true);
    SYM(DeviceGetUUID, "nvmlDeviceGetUUID", true);
    SYM(DeviceGetMinorNumber, "nvmlDeviceGetMinorNumber", false);
    SYM(DeviceGetBrand, "nvmlDeviceGetBrand", false);
    SYM(DeviceGetArchitecture, "nvmlDeviceGetArchitecture", false);
    SYM(DeviceGetCudaComputeCapability, "nvmlDeviceGetCudaComputeCapability", false);
    SYM(DeviceGetMemoryInfo, "nvmlDeviceGetMemoryInfo", true);
    SYM(DeviceGetPciInfo, "nvmlDeviceGetPciInfo_v3", true);
    SYM(DeviceGetMigMode, "nvmlDeviceGetMigMode", false);
    SYM(DeviceGetGpuInstanceProfileInfoV, "nvmlDeviceGetGpuInstanceProfileInfoV", false);
    SYM(DeviceGetGpuInstanceProfileInfo, "nvmlDeviceGetGpuInstanceProfileInfo", false);
    SYM(DeviceGetGpuInstancePossiblePlacements, "nvmlDeviceGetGpuInstancePossiblePlacements_v2",
        false);
    SYM(DeviceGetGpuInstances, "nvmlDeviceGetGpuInstances", false);
    SYM(GpuInstanceGetInfo, "nvmlGpuInstanceGetInfo", false);
    SYM(GpuInstanceGetComputeInstanceProfileInfo, "nvmlGpuInstanceGetComputeInstanceProfileInfo",
        false);
    SYM(GpuInstanceGetComputeInstances, "nvmlGpuInstanceGetComputeInstances", false);
    SYM(ComputeInstanceGetInfo, "nvmlComputeInstanceGetInfo_v2", false);
    SYM(DeviceGetNvLinkState, "nvmlDeviceGetNvLinkState", false);
    SYM(DeviceGetNvLinkRemotePciInfo, "nvmlDeviceGetNvLinkRemotePciInfo_v2", false);
    SYM(DeviceSetMigMode, "nvmlDeviceSetMigMode", false);
    SYM(DeviceCreateGpuInstanceWithPlacement, "nvmlDeviceCreateGpuInstanceWithPlacement", false);
    SYM(GpuInstanceCreateComputeInstance, "nvmlGpuInstanceCreateComputeInstance", false);
    SYM(ComputeInstanceDestroy, "nvmlComputeInstanceDestroy", false);
    SYM(GpuInstanceDestroy, "nvmlGpuInstanceDestroy", false);
    if (!n->InitWithFlags && !n->Init) {
        snprintf(why, why_n, "%s: neither nvmlInitWithFlags nor nvmlInit_v2", n->path);
        goto fail;
    }
    r = n->InitWithFlags ? n->InitWithFlags(NVML_INIT_FLAG_NO_GPUS) : n->Init();
    if (r != NVML_SUCCESS) {
        snprintf(why, why_n, "nvmlInit failed: %s", fatia_nvml_strerror(n, r));
        goto fail;
    }
    return 0;
fail:
    dlclose(n->lib);
    n->lib = NULL;
    return -FATIA_E_NODRIVER;
}

void fatia_nvml_close(struct fatia_nvml *n)
{
    if (!n->lib)
        return;
    n->Shutdown();
    dlclose(n->lib);
    n->lib = NULL;
}

const char *fatia_nvml_strerror(const struct fatia_nvml *n, nvmlReturn_t r)
{
    static char buf[32];
    const char *s = n && n->ErrorString ? n->ErrorString(r) : NULL;

    if (s)
        return s;
    snprintf(buf, sizeof(buf), "NVML error %d", r);
    return buf;
}

void fatia_nvml_bus_id(const char *in, char *buf, size_t n)
{
    char tmp[40];
    size_t i;

    for (i = 0; in[i] && i < sizeof(tmp) - 1; i++)
        tmp[i] = (char)tolower((unsigned char)in[i]);
    tmp[i] = '\0';
    /* go-nvlib: strings.TrimPrefix(id, "0000") unless the id is "0000" */
    snprintf(buf, n, "%s", strcmp(tmp, "0000") && !strncmp(tmp, "0000", 4) ? tmp + 4 : tmp);
}

/* resource.kubernetes.io/pcieRoot: the root complex in /sys/devices ("pci0000:00"). */
static void pcie_root(const char *bus_id, char *buf, size_t n)
{
    char link[PATH_MAX], real[PATH_MAX], *p, *end;

    buf[0] = '\0';
    snprintf(link, sizeof(link), "/sys/bus/pci/devices/%s", bus_id);
    if (!realpath(link, real))
        return;
    p = strstr(real, "/pci");
    if (!p)
        return;
    p++;
    end = strchr(p, '/');
    snprintf(buf, n, "%.*s", end ? (int)(end - p) : (int)strlen(p), p);
}

static const char *brand_name(int b)
{
    /* go-nvlib GetBrandAsString */
    static const char *const names[] = {
        "Unknown",   "Quadro",      "Tesla",     "NVS",        "Grid",      "GeForce",
        "Titan",     "NvidiaVApps", "NvidiaVPC", "NvidiaVCS",  "NvidiaVWS", "NvidiaCloudGaming",
        "QuadroRTX", "NvidiaRTX",   "Nvidia",    "GeForceRTX", "TitanRTX"};
    return b >= 0 && (size_t)b < FATIA_ARRAY_SIZE(names) ? names[b] : "Unknown";
}

static const char *arch_name(unsigned a)
{
    /* go-nvlib GetArchitectureAsString; NVML_DEVICE_ARCH_* */
    switch (a) {
    case 2:
        return "Kepler";
    case 3:
        return "Maxwell";
    case 4:
        return "Pascal";
    case 5:
        return "Volta";
    case 6:
        return "Turing";
    case 7:
        return "Ampere";
    case 8:
        return "Ada Lovelace";
    case 9:
        return "Hopper";
    case 10:
        return "Blackwell";
    }
    return "Unknown";
}

/* The MIG geometry NVML reports. 0, or <0 with why (the caller falls back to the catalog). */
static int read_geometry(const struct fatia_nvml *n, nvmlDevice_t dev,
                         const struct fatia_gpu_model *known, struct fatia_mig_geom *g, char *why,
                         size_t why_n)
{
    nvmlReturn_t r;

    memset(g, 0, sizeof(*g));
    if (!n->DeviceGetGpuInstancePossiblePlacements ||
        (!n->DeviceGetGpuInstanceProfileInfoV && !n->DeviceGetGpuInstanceProfileInfo)) {
        snprintf(why, why_n, "the driver lacks the MIG profile queries");
        return -FATIA_E_UNSUPPORTED;
    }
    for (unsigned idx = 0; idx < NVML_GPU_INSTANCE_PROFILE_COUNT_MAX; idx++) {
        nvmlGpuInstanceProfileInfo_v2_t v2;
        nvmlGpuInstancePlacement_t pl[FATIA_MIG_MAX_SLICES * 2];
        unsigned count = FATIA_ARRAY_SIZE(pl);
        struct fatia_mig_profile *p;

        memset(&v2, 0, sizeof(v2));
        if (n->DeviceGetGpuInstanceProfileInfoV) {
            v2.version = nvmlGpuInstanceProfileInfo_v2;
            r = n->DeviceGetGpuInstanceProfileInfoV(dev, idx, &v2);
        } else {
            nvmlGpuInstanceProfileInfo_t v1;
            r = n->DeviceGetGpuInstanceProfileInfo(dev, idx, &v1);
            if (r == NVML_SUCCESS) {
                const struct fatia_mig_profile *kp =
                    known && known->mig ? fatia_mig_geom_find_id(known->mig, (int)v1.id) : NULL;
                memcpy(&v2.id, &v1, sizeof(v1));
                snprintf(v2.name, sizeof(v2.name), "%s", kp ? kp->name : "");
            }
        }
        if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_INVALID_ARGUMENT)
            continue;
        if (r != NVML_SUCCESS) {
            snprintf(why, why_n, "GPU instance profile %u: %s", idx, fatia_nvml_strerror(n, r));
            return -FATIA_E_DRIVER;
        }
        if (!v2.name[0]) {
            snprintf(why, why_n, "GPU instance profile %u (id %u) has no name", idx, v2.id);
            return -FATIA_E_DRIVER;
        }
        r = n->DeviceGetGpuInstancePossiblePlacements(dev, v2.id, pl, &count);
        if (r != NVML_SUCCESS) {
            snprintf(why, why_n, "placements of profile %s: %s", v2.name,
                     fatia_nvml_strerror(n, r));
            return -FATIA_E_DRIVER;
        }
        if (g->n_profiles == FATIA_MIG_MAX_PROFILES) {
            snprintf(why, why_n, "more than %d MIG profiles", FATIA_MIG_MAX_PROFILES);
            return -FATIA_E_LIMIT;
        }
        p = &g->profiles[g->n_profiles++];
        /* NVML names are "MIG 1g.18gb" in nvidia-smi; the struct carries "1g.18gb" */
        snprintf(p->name, sizeof(p->name), "%.31s",
                 strncmp(v2.name, "MIG ", 4) == 0 ? v2.name + 4 : v2.name);
        p->id = (int)v2.id;
        p->nvml_index = (int)idx;
        p->compute_slices = (uint8_t)v2.sliceCount;
        p->max_instances = (uint8_t)FATIA_MIN(v2.instanceCount, (unsigned)FATIA_MIG_MAX_INSTANCES);
        p->memory_bytes = (uint64_t)v2.memorySizeMB << 20;
        p->multiprocessors = v2.multiprocessorCount;
        p->copy_engines = v2.copyEngineCount;
        p->decoders = v2.decoderCount;
        p->encoders = v2.encoderCount;
        p->jpeg_engines = v2.jpegCount;
        p->ofa_engines = v2.ofaCount;
        p->verified = "nvml";
        for (unsigned k = 0; k < count && p->n_starts < FATIA_MIG_MAX_SLICES; k++) {
            p->starts[p->n_starts++] = (uint8_t)pl[k].start;
            p->memory_slices = (uint8_t)pl[k].size;
        }
        /* NVML lists placements in start order; keep the invariant if a driver does not */
        for (unsigned a = 1; a < p->n_starts; a++)
            for (unsigned b = a; b > 0 && p->starts[b] < p->starts[b - 1]; b--) {
                uint8_t t = p->starts[b];
                p->starts[b] = p->starts[b - 1];
                p->starts[b - 1] = t;
            }
    }
    if (!g->n_profiles) {
        snprintf(why, why_n, "no GPU instance profile answered");
        return -FATIA_E_DRIVER;
    }
    if (known && known->mig)
        memcpy(g->balanced, known->mig->balanced, sizeof(g->balanced));
    /* balanced counts index profiles: they are valid only if the order matches; recompute
     * unless every name agrees */
    for (size_t i = 0; known && known->mig && i < g->n_profiles; i++)
        if (i >= known->mig->n_profiles ||
            strcmp(known->mig->profiles[i].name, g->profiles[i].name))
            memset(g->balanced, 0, sizeof(g->balanced));
    return fatia_mig_geom_finish(g, why, why_n);
}

/* The existing MIG instances of a MIG-enabled GPU. */
static int read_instances(const struct fatia_nvml *n, nvmlDevice_t dev,
                          const struct fatia_mig_geom *g, struct fatia_inv_gpu *out, char *why,
                          size_t why_n)
{
    if (!n->DeviceGetGpuInstances || !n->GpuInstanceGetInfo)
        return 0;
    out->instances = fatia_calloc(FATIA_MIG_MAX_INSTANCES, sizeof(*out->instances));
    if (!out->instances)
        return -ENOMEM;
    for (size_t pi = 0; pi < g->n_profiles; pi++) {
        nvmlGpuInstance_t gis[FATIA_MIG_MAX_INSTANCES];
        unsigned count = FATIA_MIG_MAX_INSTANCES;
        nvmlReturn_t r = n->DeviceGetGpuInstances(dev, (unsigned)g->profiles[pi].id, gis, &count);
        if (r == NVML_ERROR_NOT_FOUND || r == NVML_ERROR_NOT_SUPPORTED)
            continue;
        if (r != NVML_SUCCESS) {
            snprintf(why, why_n, "GPU instances of profile %s: %s", g->profiles[pi].name,
                     fatia_nvml_strerror(n, r));
            return -FATIA_E_DRIVER;
        }
        for (unsigned k = 0; k < count && out->n_instances < FATIA_MIG_MAX_INSTANCES; k++) {
            struct fatia_inv_mig_instance *mi = &out->instances[out->n_instances];
            nvmlGpuInstanceInfo_t info;
            if (n->GpuInstanceGetInfo(gis[k], &info) != NVML_SUCCESS)
                continue;
            mi->profile = &g->profiles[pi];
            mi->start = (uint8_t)info.placement.start;
            mi->gi_id = info.id;
            out->n_instances++;
            /* the full-size compute instance and its MIG device UUID */
            for (unsigned ci = 0; n->GpuInstanceGetComputeInstanceProfileInfo &&
                                  n->GpuInstanceGetComputeInstances && n->ComputeInstanceGetInfo &&
                                  ci < NVML_COMPUTE_INSTANCE_PROFILE_COUNT && !mi->uuid[0];
                 ci++) {
                nvmlComputeInstanceProfileInfo_t cp;
                nvmlComputeInstance_t cis[8];
                nvmlComputeInstanceInfo_t cinfo;
                unsigned cn = 8;
                if (n->GpuInstanceGetComputeInstanceProfileInfo(
                        gis[k], ci, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &cp) !=
                        NVML_SUCCESS ||
                    n->GpuInstanceGetComputeInstances(gis[k], cp.id, cis, &cn) != NVML_SUCCESS ||
                    cn == 0 || n->ComputeInstanceGetInfo(cis[0], &cinfo) != NVML_SUCCESS)
                    continue;
                mi->ci_id = cinfo.id;
                if (n->DeviceGetUUID(cinfo.device, mi->uuid, sizeof(mi->uuid)) != NVML_SUCCESS)
                    mi->uuid[0] = '\0';
            }
        }
    }
    return 0;
}

/* Union-find over GPUs and remote link ends. */
struct links {
    char key[FATIA_NODE_MAX_GPUS * 8][20];
    int parent[FATIA_NODE_MAX_GPUS * 8];
    size_t n;
};

static int link_node(struct links *l, const char *key)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->key[i], key))
            return (int)i;
    if (l->n == FATIA_ARRAY_SIZE(l->key))
        return -1;
    snprintf(l->key[l->n], sizeof(l->key[0]), "%s", key);
    l->parent[l->n] = (int)l->n;
    return (int)l->n++;
}

static int link_find(struct links *l, int i)
{
    while (l->parent[i] != i)
        i = l->parent[i] = l->parent[l->parent[i]];
    return i;
}

static void link_union(struct links *l, int a, int b)
{
    a = link_find(l, a);
    b = link_find(l, b);
    if (a != b)
        l->parent[a > b ? a : b] = a < b ? a : b;
}

static void nvlink_islands(const struct fatia_nvml *n, nvmlDevice_t *devs,
                           struct fatia_inv_gpu *gpus, uint32_t n_gpus, bool *has_links)
{
    struct links *l = fatia_calloc(1, sizeof(*l));
    int root_island[FATIA_NODE_MAX_GPUS * 8];
    int next = 0;

    for (uint32_t g = 0; l && g < n_gpus; g++)
        link_node(l, gpus[g].pci_bus_id);
    for (uint32_t g = 0;
         l && g < n_gpus && n->DeviceGetNvLinkState && n->DeviceGetNvLinkRemotePciInfo; g++) {
        for (unsigned k = 0; k < NVML_NVLINK_MAX_LINKS; k++) {
            int active = 0;
            nvmlPciInfo_t pci;
            char bus[20];
            int r;
            nvmlReturn_t ret = n->DeviceGetNvLinkState(devs[g], k, &active);
            if (ret == NVML_ERROR_INVALID_ARGUMENT)
                break; /* past the last link */
            if (ret != NVML_SUCCESS || !active)
                continue;
            memset(&pci, 0, sizeof(pci));
            if (n->DeviceGetNvLinkRemotePciInfo(devs[g], k, &pci) != NVML_SUCCESS)
                continue;
            has_links[g] = true;
            fatia_nvml_bus_id(pci.busId, bus, sizeof(bus));
            r = link_node(l, bus);
            if (r >= 0)
                link_union(l, (int)g, r);
        }
    }
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(root_island); i++)
        root_island[i] = -1;
    for (uint32_t g = 0; g < n_gpus; g++) {
        int root = l ? link_find(l, (int)g) : (int)g;
        if (root_island[root] < 0)
            root_island[root] = next++;
        gpus[g].island = root_island[root];
    }
    fatia_free(l);
}

/* The model of a GPU from NVML's answers, shared by GPUs with the same product and memory. */
static int gpu_model(struct fatia_inventory *inv, const struct fatia_nvml *n, nvmlDevice_t dev,
                     const char *name, uint64_t memory, uint32_t pci_id, const char *driver,
                     struct fatia_diag *diag, const struct fatia_gpu_model **ret)
{
    const struct fatia_gpu_model *known = fatia_catalog_find(inv->catalog, name);
    struct fatia_gpu_model *m;
    unsigned cur = 0, pend = 0, arch = 0;
    int brand = -1, major = 0, minor = 0, r;
    char why[256], src[160];

    if (!known)
        known = fatia_catalog_find_pci(inv->catalog, pci_id);
    for (size_t i = 0; i < inv->n_models; i++)
        if (!strcmp(inv->models[i]->product, name) && inv->models[i]->memory_bytes == memory) {
            *ret = inv->models[i];
            return 0;
        }
    m = known ? fatia_gpu_model_dup(known) : fatia_gpu_model_new();
    if (!m)
        return -ENOMEM;
    fatia_free(m->product);
    fatia_free(m->architecture);
    fatia_free(m->brand);
    fatia_free(m->verified);
    fatia_free(m->source);
    fatia_free(m->mig);
    m->mig = NULL;
    if (n->DeviceGetBrand)
        n->DeviceGetBrand(dev, &brand);
    if (n->DeviceGetArchitecture)
        n->DeviceGetArchitecture(dev, &arch);
    if (n->DeviceGetCudaComputeCapability &&
        n->DeviceGetCudaComputeCapability(dev, &major, &minor) == NVML_SUCCESS) {
        m->cc_major = (uint8_t)major;
        m->cc_minor = (uint8_t)minor;
        m->mps_max_clients = major >= 7 ? 48 : 16;
    }
    snprintf(src, sizeof(src), "NVML, driver %s%s", driver,
             known ? "; SM count and context reserve from the catalog" : "");
    m->product = fatia_strdup(name);
    m->architecture = fatia_strdup(arch_name(arch));
    m->brand = fatia_strdup(brand >= 0 ? brand_name(brand) : (known ? known->brand : "Unknown"));
    m->verified = fatia_strdup("nvml");
    m->source = fatia_strdup(src);
    if (!m->product || !m->architecture || !m->brand || !m->verified || !m->source) {
        fatia_gpu_model_free(m);
        return -ENOMEM;
    }
    m->memory_bytes = memory;
    if (!m->n_pci_device_ids && pci_id) {
        m->pci_device_ids = fatia_calloc(1, sizeof(uint32_t));
        if (!m->pci_device_ids) {
            fatia_gpu_model_free(m);
            return -ENOMEM;
        }
        m->pci_device_ids[0] = pci_id;
        m->n_pci_device_ids = 1;
    }
    if (n->DeviceGetMigMode && n->DeviceGetMigMode(dev, &cur, &pend) == NVML_SUCCESS) {
        m->mig = fatia_calloc(1, sizeof(*m->mig));
        if (!m->mig) {
            fatia_gpu_model_free(m);
            return -ENOMEM;
        }
        r = read_geometry(n, dev, known, m->mig, why, sizeof(why));
        if (r < 0) {
            if (known && known->mig) {
                *m->mig = *known->mig;
                fatia_diag_add(diag, FATIA_DIAG_WARNING, NULL, 0, 0, NULL, NULL,
                               "%s: MIG profiles from NVML unavailable (%s): using the catalog's, "
                               "ignoring",
                               name, why);
            } else {
                fatia_diag_add(diag, FATIA_DIAG_WARNING, NULL, 0, 0, NULL, NULL,
                               "%s: MIG profiles unavailable (%s) and not in the catalog: MIG "
                               "disabled for planning, ignoring",
                               name, why);
                fatia_free(m->mig);
                m->mig = NULL;
            }
        }
    }
    if (!m->multiprocessors && m->mig)
        for (size_t i = 0; i < m->mig->n_profiles; i++)
            m->multiprocessors = FATIA_MAX(m->multiprocessors, m->mig->profiles[i].multiprocessors);
    r = fatia_inventory_own_model(inv, m);
    if (r < 0)
        return r;
    *ret = m;
    return 0;
}

int fatia_inventory_nvml(struct fatia_inventory *inv, const struct fatia_nvml_opts *opts,
                         const struct fatia_catalog *cat, struct fatia_diag *diag)
{
    struct fatia_nvml n;
    struct fatia_inv_node *node;
    nvmlDevice_t devs[FATIA_NODE_MAX_GPUS];
    bool has_links[FATIA_NODE_MAX_GPUS] = {false};
    unsigned count = 0;
    char why[512], buf[96], host[256];
    int cuda = 0, r;

    fatia_inventory_release(inv);
    inv->source = FATIA_INV_NVML;
    inv->catalog = cat;
    r = fatia_nvml_open(&n, opts ? opts->lib_path : NULL, why, sizeof(why));
    if (r < 0) {
        fatia_diag_add(diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, NULL, "%s", why);
        return r;
    }
    r = -ENOMEM;
    inv->nodes = fatia_calloc(1, sizeof(*inv->nodes));
    if (!inv->nodes)
        goto out;
    node = &inv->nodes[0];
    inv->n_nodes = 1;
    if (opts && opts->node_name)
        snprintf(host, sizeof(host), "%s", opts->node_name);
    else if (gethostname(host, sizeof(host)) < 0)
        snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = '\0';
    node->name = (char *)fatia_inventory_strdup(inv, host);
    if (!node->name)
        goto out;
    if (opts && opts->pool) {
        node->pool = opts->pool;
        node->labels = opts->pool->labels;
        node->taints = opts->pool->taints;
    }
    {
        /* A real node's own capacity, as the kubelet reports it: online CPUs, physical memory,
         * and the kubelet's default of 110 pods; never the pool's, which describes a simulated
         * box (the walkthrough's pool declares 128 cpu and 2Ti, which a real host may lack). */
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        char mem[48];
        snprintf(buf, sizeof(buf), "%ld", cpus > 0 ? cpus : 1);
        snprintf(mem, sizeof(mem), "%lldKi",
                 pages > 0 && page > 0 ? (long long)pages * page / 1024 : 0LL);
        inv->host_resources = json_pack("{s:s,s:s,s:s}", "cpu", buf, "memory", mem, "pods", "110");
        if (!inv->host_resources)
            goto out;
        node->resources = inv->host_resources;
    }
    if (n.SystemGetDriverVersion(buf, sizeof(buf)) == NVML_SUCCESS)
        node->driver_version = fatia_inventory_strdup(inv, buf);
    if (n.SystemGetCudaDriverVersion && n.SystemGetCudaDriverVersion(&cuda) == NVML_SUCCESS) {
        snprintf(buf, sizeof(buf), "%d.%d", cuda / 1000, (cuda % 1000) / 10);
        node->cuda_driver_version = fatia_inventory_strdup(inv, buf);
    }
    if ((r = n.DeviceGetCount(&count)) != NVML_SUCCESS) {
        fatia_diag_add(diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, NULL, "nvmlDeviceGetCount: %s",
                       fatia_nvml_strerror(&n, r));
        r = -FATIA_E_DRIVER;
        goto out;
    }
    count = FATIA_MIN(count, (unsigned)FATIA_NODE_MAX_GPUS);
    node->gpus = fatia_calloc(count + 1, sizeof(*node->gpus));
    if (!node->gpus) {
        r = -ENOMEM;
        goto out;
    }
    for (unsigned i = 0; i < count; i++) {
        struct fatia_inv_gpu *g = &node->gpus[i];
        nvmlMemory_t mem;
        nvmlPciInfo_t pci;
        unsigned cur = 0, pend = 0;
        char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
        nvmlReturn_t ret;

        if ((ret = n.DeviceGetHandleByIndex(i, &devs[i])) != NVML_SUCCESS ||
            (ret = n.DeviceGetName(devs[i], name, sizeof(name))) != NVML_SUCCESS ||
            (ret = n.DeviceGetUUID(devs[i], g->uuid, sizeof(g->uuid))) != NVML_SUCCESS ||
            (ret = n.DeviceGetMemoryInfo(devs[i], &mem)) != NVML_SUCCESS ||
            (ret = n.DeviceGetPciInfo(devs[i], &pci)) != NVML_SUCCESS) {
            fatia_diag_add(diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, NULL, "GPU %u: %s", i,
                           fatia_nvml_strerror(&n, ret));
            r = -FATIA_E_DRIVER;
            goto out;
        }
        node->n_gpus = i + 1;
        g->index = i;
        g->minor = i;
        if (n.DeviceGetMinorNumber) {
            unsigned minor;
            if (n.DeviceGetMinorNumber(devs[i], &minor) == NVML_SUCCESS)
                g->minor = minor;
        }
        fatia_nvml_bus_id(pci.busId, g->pci_bus_id, sizeof(g->pci_bus_id));
        pcie_root(g->pci_bus_id, g->pcie_root, sizeof(g->pcie_root));
        g->pci_device_id = pci.pciDeviceId;
        r = gpu_model(inv, &n, devs[i], name, mem.total, pci.pciDeviceId,
                      node->driver_version ? node->driver_version : "?", diag, &g->model);
        if (r < 0)
            goto out;
        g->mig_mode = g->mig_pending = FATIA_MIG_MODE_UNSUPPORTED;
        if (g->model->mig && n.DeviceGetMigMode &&
            n.DeviceGetMigMode(devs[i], &cur, &pend) == NVML_SUCCESS) {
            g->mig_mode =
                cur == NVML_DEVICE_MIG_ENABLE ? FATIA_MIG_MODE_ENABLED : FATIA_MIG_MODE_DISABLED;
            g->mig_pending =
                pend == NVML_DEVICE_MIG_ENABLE ? FATIA_MIG_MODE_ENABLED : FATIA_MIG_MODE_DISABLED;
        }
        if (g->mig_mode == FATIA_MIG_MODE_ENABLED) {
            r = read_instances(&n, devs[i], g->model->mig, g, why, sizeof(why));
            if (r < 0) {
                if (r != -ENOMEM)
                    fatia_diag_add(diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, NULL, "GPU %u: %s", i,
                                   why);
                goto out;
            }
        }
    }
    nvlink_islands(&n, devs, node->gpus, node->n_gpus, has_links);
    r = 0;
out:
    fatia_nvml_close(&n);
    if (r < 0)
        fatia_inventory_release(inv);
    return r;
}

int fatia_inventory_auto(struct fatia_inventory *inv, const struct fatia_nvml_opts *opts,
                         const struct fatia_supply_config *cfg, const struct fatia_catalog *cat,
                         struct fatia_diag *diag)
{
    struct fatia_diag nd;
    int r;

    fatia_diag_init(&nd);
    r = fatia_inventory_nvml(inv, opts, cat, &nd);
    if (r == 0 && inv->n_nodes && inv->nodes[0].n_gpus) {
        fatia_diag_move(diag, &nd);
        fatia_diag_release(&nd);
        return 0;
    }
    if (r == -ENOMEM) {
        fatia_diag_release(&nd);
        return r;
    }
    {
        /* the note says why in a person's words; the loader's own message stays for the other
           failures (a driver that is there but broken) */
        const char *why = r == 0 ? "NVML found no GPU"
                          : r == -FATIA_E_NODRIVER
                              ? "no NVIDIA driver (libnvidia-ml.so.1 not found)"
                          : nd.n ? nd.v[0].msg
                                 : "no NVIDIA driver";
        char note[256];
        snprintf(note, sizeof(note), "simulated fleet: %s", why);
        fatia_diag_release(&nd);
        r = fatia_inventory_sim(inv, cfg, cat, diag);
        if (r == 0)
            snprintf(inv->note, sizeof(inv->note), "%s", note);
    }
    return r;
}

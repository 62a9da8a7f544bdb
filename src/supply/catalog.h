/*
 * supply/catalog.h: the GPU catalog: what fatia knows about each GPU product before (or without)
 * asking NVML.
 *
 * The catalog is data (the YAML files under data/gpus, docs/supply.md), loaded at run time by
 * fatia_catalog_load (catalog_load.c, the I/O edge). Each product has its NVML name, aliases (the
 * names traces and fleets use: "H200", "V100M16"), memory, SM count, architecture, compute
 * capability, brand, NVLink presence, the CUDA context reserve (device memory each context holds
 * outside any allocation, measured on an H200), and for MIG-capable parts the MIG geometry: memory
 * and compute slice counts and every GPU-instance profile with its NVML profile id, slices,
 * memory, SMs, engines, instance limit and placements. Every entry says how it was verified
 * (`hardware`, `dump`, `documentation`, `inferred`, or `declared` for a product a fleet declared).
 *
 * On a real GPU the NVML answers win: the nvml backend builds a model from NVML (name, memory,
 * profiles, placements) and borrows from the catalog only what NVML does not say (SM count of a
 * non-MIG GPU, context reserve, balanced layout).
 *
 * Invariants (checked at load, and by fatia_mig_geom_check for NVML-built geometries): profile ids
 * unique per product; 0 < memory_slices <= FATIA_MIG_MAX_SLICES; every placement start + size
 * fits the memory slices; compute slices of a profile <= the GPU's.
 */
#ifndef FATIA_SUPPLY_CATALOG_H
#define FATIA_SUPPLY_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/map.h"
#include "model/diag.h"

#define FATIA_MIG_MAX_SLICES      16 /* memory slices per GPU (8 on most parts, 12 on RTX PRO) */
#define FATIA_MIG_MAX_PROFILES    24
#define FATIA_MIG_MAX_INSTANCES   16 /* GPU instances on one GPU */
#define FATIA_GPU_NAME_MAX        96 /* NVML_DEVICE_NAME_V2_BUFFER_SIZE */
#define FATIA_DEFAULT_CTX_RESERVE (512ull << 20)

/* fatia_mig_profile.flags, from the name suffix (go-nvlib grammar) */
#define FATIA_MIG_ME     (1u << 0) /* "+me": with media engines; limited to one instance */
#define FATIA_MIG_ME_ALL (1u << 1) /* "+me.all": blocks every profile but "-me" ones */
#define FATIA_MIG_NO_ME  (1u << 2) /* "-me" */
#define FATIA_MIG_GFX    (1u << 3) /* "+gfx" */

/* One GPU-instance profile (a row of `nvidia-smi mig -lgip` with its -lgipp placements). */
struct fatia_mig_profile {
    char name[32];          /* "1g.18gb", "1g.18gb+me" (NVML's own spelling) */
    int id;                 /* nvmlGpuInstanceProfileInfo_t.id: the -lgip ID column */
    int nvml_index;         /* NVML_GPU_INSTANCE_PROFILE_* index; -1 when unknown */
    uint8_t compute_slices; /* sliceCount: the "Ng" */
    uint8_t memory_slices;  /* placement size */
    uint8_t max_instances;  /* instanceCount */
    uint8_t n_starts;
    uint8_t starts[FATIA_MIG_MAX_SLICES]; /* possible placement starts, ascending */
    unsigned flags;
    uint64_t memory_bytes; /* memorySizeMB << 20 */
    uint32_t multiprocessors, copy_engines, decoders, encoders, jpeg_engines, ofa_engines;
    const char *verified; /* borrowed; "hardware", "dump", ... */
};

/* The MIG geometry of a product. */
struct fatia_mig_geom {
    uint8_t memory_slices; /* 0 = not MIG capable */
    uint8_t compute_slices;
    size_t n_profiles;
    struct fatia_mig_profile profiles[FATIA_MIG_MAX_PROFILES];
    /* all-balanced layout: profile index -> count (computed by the mig-parted rule unless the
     * catalog gives one) */
    uint8_t balanced[FATIA_MIG_MAX_PROFILES];
};

struct fatia_gpu_model {
    char *product;  /* NVML name: "NVIDIA H200" */
    char **aliases; /* "H200", "H200-141GB" */
    size_t n_aliases;
    uint32_t *pci_device_ids; /* combined device<<16 | vendor: 0x233510DE */
    size_t n_pci_device_ids;
    uint64_t memory_bytes;    /* nvmlDeviceGetMemoryInfo total */
    uint32_t multiprocessors; /* 0 = unknown */
    char *architecture;       /* "Hopper", as go-nvlib spells it; "Unknown" when unknown */
    char *brand;              /* "Nvidia", "Tesla" */
    uint8_t cc_major, cc_minor;
    bool nvlink;
    uint64_t context_reserve;   /* bytes per CUDA context */
    char *verified;             /* hardware | dump | documentation | inferred | declared | nvml */
    char *source;               /* where the numbers come from */
    struct fatia_mig_geom *mig; /* NULL when not MIG capable */
    int mps_max_clients;        /* 48 (Volta+) or 16 (pre-Volta) */
};

struct fatia_catalog {
    struct fatia_gpu_model **v;
    size_t n, cap;
    struct fatia_strmap by_name; /* product and alias names (lowercased) -> model */
    char **keys;                 /* owned lowercased keys */
    size_t n_keys, keys_cap;
    char *path; /* where it was loaded from */
};

void fatia_catalog_init(struct fatia_catalog *cat);
void fatia_catalog_release(struct fatia_catalog *cat);

/* Where the catalog is: explicit (--catalog), else $FATIA_DATA_DIR/gpus, else the build tree's
 * data/gpus. Writes the path into buf. (catalog_load.c, fatia_supply_io: it reads the
 * environment) */
void fatia_catalog_default_path(const char *explicit_path, char *buf, size_t n);

/* Loads every *.yaml under path (a directory or one file), validates each entry and reports
 * problems with file:line and field into diag. Returns 0, -FATIA_E_INVALID (diag has errors; the
 * catalog is left empty), -ENOENT, -ENOMEM. (catalog_load.c, fatia_supply_io) */
int fatia_catalog_load(struct fatia_catalog *cat, const char *path, struct fatia_diag *diag);

/* Adds a model (the catalog takes it) and indexes its names. -FATIA_E_EXISTS when a name is
 * taken (the model is freed), -ENOMEM. */
int fatia_catalog_add(struct fatia_catalog *cat, struct fatia_gpu_model *m);

/* A product by NVML name or alias, case-insensitive; NULL when unknown. */
const struct fatia_gpu_model *fatia_catalog_find(const struct fatia_catalog *cat, const char *name);

/* A model by PCI device id (0x233510DE); NULL when unknown. */
const struct fatia_gpu_model *fatia_catalog_find_pci(const struct fatia_catalog *cat,
                                                     uint32_t pci_device_id);

struct fatia_gpu_model *fatia_gpu_model_new(void);
/* A deep copy (for a model with declared overrides). NULL on OOM. */
struct fatia_gpu_model *fatia_gpu_model_dup(const struct fatia_gpu_model *m);
void fatia_gpu_model_free(struct fatia_gpu_model *m);

/* Profile lookup by name ("1g.18gb") or NVML id; NULL when absent. */
const struct fatia_mig_profile *fatia_mig_geom_find(const struct fatia_mig_geom *g,
                                                    const char *name);
const struct fatia_mig_profile *fatia_mig_geom_find_id(const struct fatia_mig_geom *g, int id);

/* Checks the invariants above (for geometries built from NVML answers); why says which. Also
 * fills flags from names and the balanced layout when it is all zero. */
int fatia_mig_geom_finish(struct fatia_mig_geom *g, char *why, size_t why_n);

/* Flags from a profile name's suffix. */
unsigned fatia_mig_profile_flags(const char *name);

/* The GPU Feature Discovery family of a compute capability: "hopper", "ampere", "ada-lovelace",
 * "volta", "turing", "pascal", ... ("undefined" when unknown). */
const char *fatia_gpu_family(int cc_major, int cc_minor);

#endif

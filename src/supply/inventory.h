/*
 * supply/inventory.h: the GPUs there are: nodes, and per node its GPUs with product, memory,
 * UUID, PCI address, MIG mode and existing MIG instances, NVLink island. One snapshot type, three
 * backends:
 *
 *   - sim (inventory_sim.c): the fleet a config declares with NodePools. Deterministic: node
 *     names <prefix>-<i>, GPU UUIDs derived from node name and index, PCI bus 0x18 + index.
 *     Pure (no I/O).
 *   - nvml (nvml.c): the GPUs of this machine through libnvidia-ml.so.1, dlopen()ed at run time.
 *     Read-only; NVML answers win over the catalog (name, memory, MIG profiles and placements).
 *   - auto: nvml when it finds at least one GPU, else sim, and the snapshot says why in `note`.
 *
 * A snapshot owns everything it points to except the catalog models it borrows (sim GPUs of a
 * known product point at the catalog's model; GPUs of declared or NVML-read products point at
 * models the snapshot owns) and the JSON of labels/taints/resources, borrowed from NodePool
 * objects (so a snapshot of the sim backend must not outlive its objset).
 */
#ifndef FATIA_SUPPLY_INVENTORY_H
#define FATIA_SUPPLY_INVENTORY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/diag.h"
#include "supply/catalog.h"
#include "supply/config.h"

enum fatia_inv_source {
    FATIA_INV_SIM,
    FATIA_INV_NVML,
};

enum fatia_mig_mode {
    FATIA_MIG_MODE_UNSUPPORTED,
    FATIA_MIG_MODE_DISABLED,
    FATIA_MIG_MODE_ENABLED,
};

struct fatia_inv_mig_instance {
    const struct fatia_mig_profile *profile;
    uint8_t start;
    uint32_t gi_id, ci_id;
    char uuid[48]; /* "MIG-..." */
};

struct fatia_inv_gpu {
    uint32_t index;         /* NVML index; position in the node */
    uint32_t minor;         /* /dev/nvidia<minor>: the DRA device name gpu-<minor> */
    char uuid[48];          /* "GPU-..." */
    char pci_bus_id[20];    /* "0000:18:00.0" (go-nvlib's form) */
    char pcie_root[24];     /* "pci0000:00", or "" when unknown */
    uint32_t pci_device_id; /* 0x233510DE, 0 when unknown */
    const struct fatia_gpu_model *model;
    int island; /* NVLink island within the node: GPUs with the same number are connected */
    uint8_t mig_mode, mig_pending; /* enum fatia_mig_mode */
    uint8_t n_instances;           /* existing MIG instances (nvml only) */
    struct fatia_inv_mig_instance *instances;
    bool unhealthy; /* out of service (the node agent's health watch): capacity, no slices */
};

struct fatia_inv_node {
    char *name;
    const struct fatia_pool *pool;       /* the NodePool it came from, or NULL */
    size_t pool_index;                   /* i of <prefix>-<i> */
    json_t *labels, *taints, *resources; /* borrowed from the pool, may be NULL */
    struct fatia_inv_gpu *gpus;
    uint32_t n_gpus;
    const char *driver_version;      /* "580.159.04", or NULL when unknown (sim) */
    const char *cuda_driver_version; /* "13.0", or NULL */
    bool published; /* GPUs from the node's own NVML (inventory_json.c), in a sim snapshot */
};

struct fatia_inventory {
    enum fatia_inv_source source;
    struct fatia_inv_node *nodes;
    size_t n_nodes;
    struct fatia_inv_gpu *gpu_store; /* all GPUs of all nodes (sim) */
    struct fatia_gpu_model **models; /* owned models */
    size_t n_models, models_cap;
    const struct fatia_catalog *catalog;
    char *strings; /* owned strings (names, versions), freed as one list */
    char **owned;
    size_t n_owned, owned_cap;
    char note[256];              /* why sim was chosen by auto, or "" */
    json_t *host_resources;      /* nvml without a pool: this host's cpu, memory, pods; owned */
    json_t *published_resources; /* the resources of published nodes (inventory_json.c), owned */
    void **blocks; /* owned allocations: GPUs read from JSON and their MIG instances */
    size_t n_blocks, blocks_cap;
};

void fatia_inventory_init(struct fatia_inventory *inv);
void fatia_inventory_release(struct fatia_inventory *inv);

/* The simulated fleet of cfg's NodePools. Unknown products without a declared memory, and node
 * names two pools both produce, are errors naming spec.gpus[i].product or metadata.name. Returns
 * 0, -FATIA_E_INVALID (diag has the errors; inv is left empty), -ENOMEM. */
int fatia_inventory_sim(struct fatia_inventory *inv, const struct fatia_supply_config *cfg,
                        const struct fatia_catalog *cat, struct fatia_diag *diag);

struct fatia_nvml_opts {
    const char *lib_path;          /* NULL: "libnvidia-ml.so.1" from the loader's path */
    const char *node_name;         /* NULL: the host name */
    const struct fatia_pool *pool; /* labels, taints and resources for the node; may be NULL */
};

/* This machine's GPUs through NVML (nvml.c). -FATIA_E_NODRIVER when the library cannot be
 * loaded or initialized (the message is in diag), -FATIA_E_DRIVER when a call fails. */
int fatia_inventory_nvml(struct fatia_inventory *inv, const struct fatia_nvml_opts *opts,
                         const struct fatia_catalog *cat, struct fatia_diag *diag);

/* nvml when it finds a GPU, else sim; inv->note says which and why. */
int fatia_inventory_auto(struct fatia_inventory *inv, const struct fatia_nvml_opts *opts,
                         const struct fatia_supply_config *cfg, const struct fatia_catalog *cat,
                         struct fatia_diag *diag);

/* Keeps a copy of s in the snapshot; NULL on OOM. */
const char *fatia_inventory_strdup(struct fatia_inventory *inv, const char *s);
/* The snapshot takes the model. -ENOMEM (the model is freed). */
int fatia_inventory_own_model(struct fatia_inventory *inv, struct fatia_gpu_model *m);

/* The snapshot takes p (freed on release). -ENOMEM (p is freed). */
int fatia_inventory_own_block(struct fatia_inventory *inv, void *p);

/* inventory_json.c: one node's GPUs as the JSON a node role publishes in its Node's annotation
 * FATIA_GPU_INVENTORY_ANNOTATION (the format is in inventory_json.c). _json: NULL on OOM.
 * _from_json: replaces n's GPUs and driver versions by j's, after checking every field against
 * inv->catalog; inv must be a simulated snapshot (its GPUs are one store). 0, -ENOMEM, or
 * -FATIA_E_INVALID with why naming the first bad field ("gpus[1].uuid: ..."); n is unchanged. */
#define FATIA_GPU_INVENTORY_ANNOTATION "fatia.dev/gpu-inventory"
#define FATIA_INV_JSON_MAX_GPUS        64
json_t *fatia_inventory_node_json(const struct fatia_inv_node *n);
int fatia_inventory_node_from_json(struct fatia_inventory *inv, struct fatia_inv_node *n,
                                   const json_t *j, char *why, size_t why_n);

/* A deterministic UUID for a simulated device: "GPU-" or "MIG-" + 8-4-4-4-12 hex of a stable
 * hash of key. */
void fatia_inventory_sim_uuid(const char *prefix, const char *key, char *buf, size_t n);

#endif

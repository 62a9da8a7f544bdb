/*
 * vgpu/region.h: a slice's device-memory budget, shared by its processes through one file.
 *
 * The file is a fixed layout (struct fatia_vgpu_region_header, then FATIA_VGPU_MAX_SLOTS slots)
 * mapped MAP_SHARED by every process of the slice. The header holds the cap of each device; each
 * process owns one slot holding the bytes it has reserved per device. The slice's usage of a
 * device is the sum over slots. docs/vgpu.md draws the layout and the slot state machine.
 *
 * The node agent creates the file with the slice's caps (fatia_vgpu_region_create) before it
 * starts the slice's first process; a process that finds no file creates it from its own
 * environment. Either way the file, once written, is the authority on the caps.
 */
#ifndef FATIA_VGPU_REGION_H
#define FATIA_VGPU_REGION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/config.h"

#define FATIA_VGPU_REGION_MAGIC   UINT64_C(0x316d656d61697461) /* "atiamem1" */
#define FATIA_VGPU_REGION_VERSION 1
#define FATIA_VGPU_MAX_SLOTS      512

/* Slot states, the high half of the owner word; the low half is the owner's pid. */
enum {
    FATIA_VGPU_SLOT_FREE = 0,
    FATIA_VGPU_SLOT_CLAIMING = 1,
    FATIA_VGPU_SLOT_LIVE = 2,
    FATIA_VGPU_SLOT_RECLAIMING = 3,
};

struct fatia_vgpu_slot {
    _Atomic uint64_t owner;      /* state << 32 | pid */
    _Atomic uint64_t start_time; /* the owner's start, /proc/<pid>/stat field 22; 0: unknown */
    _Atomic uint64_t used[FATIA_VGPU_MAX_DEVICES]; /* bytes reserved, per device */
    uint64_t spare[6];
};

struct fatia_vgpu_region_header {
    _Atomic uint64_t magic; /* written last: a file without it is not initialized */
    uint32_t version;
    uint32_t header_size;
    uint32_t slot_size;
    uint32_t n_slots;
    uint32_t n_devices;
    uint32_t flags;
    uint64_t limit[FATIA_VGPU_MAX_DEVICES]; /* bytes; FATIA_VGPU_NO_LIMIT: not capped */
    _Atomic uint32_t high_water;            /* slots [0, high_water) have ever been claimed */
    uint32_t pad;
    _Atomic uint64_t n_reclaimed; /* slots of dead processes reclaimed, ever */
    _Atomic uint64_t n_refused;   /* reservations refused as over the cap, ever */
    uint8_t spare[3912];
};

/* The file: the header, then the slots. */
struct fatia_vgpu_region_map {
    struct fatia_vgpu_region_header hdr;
    struct fatia_vgpu_slot slots[];
};

/* A process's view of a region. */
struct fatia_vgpu_region {
    struct fatia_vgpu_region_header *hdr;
    struct fatia_vgpu_slot *slots;
    size_t map_size;
    bool read_only;
    bool anonymous;     /* private memory: this process accounts alone */
    bool limits_differ; /* the file's caps differ from those passed to open */
    uint64_t limit[FATIA_VGPU_MAX_DEVICES];
    _Atomic int my_slot;        /* -1: none claimed yet */
    _Atomic uint64_t my_owner;  /* the owner word of my_slot */
    pthread_mutex_t claim_lock; /* one claim per process, whichever thread allocates first */
    /* Bytes this process holds per device, to restore a slot that was taken from it. */
    _Atomic uint64_t local_used[FATIA_VGPU_MAX_DEVICES];
};

#define FATIA_VGPU_REGION_SIZE                 \
    (sizeof(struct fatia_vgpu_region_header) + \
     FATIA_VGPU_MAX_SLOTS * sizeof(struct fatia_vgpu_slot))

enum {
    FATIA_VGPU_REGION_READ_ONLY = 1 << 0, /* attach to an existing file, never write it */
};

/* Maps the accounting file at path (created and initialized with limit[] if missing or empty),
 * or, with path NULL or "", anonymous memory private to this process. On failure returns
 * -errno or -EPROTO (a file of another layout) and writes a reason to why. */
int fatia_vgpu_region_open(struct fatia_vgpu_region *r, const char *path,
                           const uint64_t limit[FATIA_VGPU_MAX_DEVICES], unsigned flags, char *why,
                           size_t why_len);

/* Creates (or re-initializes, if nobody has claimed a slot yet) the file at path with these caps:
 * what the node agent calls before it starts a slice. 0 or -errno / -EPROTO / -EBUSY. */
int fatia_vgpu_region_create(const char *path, const uint64_t limit[FATIA_VGPU_MAX_DEVICES],
                             char *why, size_t why_len);

void fatia_vgpu_region_close(struct fatia_vgpu_region *r);

/* Reserves n bytes on device dev for this process: 0, or -ENOMEM when the slice's usage plus n
 * would pass the cap (after reclaiming the slots of dead processes). Never blocks on a lock. */
int fatia_vgpu_region_reserve(struct fatia_vgpu_region *r, int dev, uint64_t n);

/* Returns n bytes reserved earlier on dev. */
void fatia_vgpu_region_release(struct fatia_vgpu_region *r, int dev, uint64_t n);

/* The slice's usage of dev: the sum over slots. */
uint64_t fatia_vgpu_region_used(const struct fatia_vgpu_region *r, int dev);

/* Frees the slots of processes that are gone (no /proc entry, zombie, or a reused pid). Returns
 * how many it freed. */
int fatia_vgpu_region_reclaim(struct fatia_vgpu_region *r);

/* In a child after fork(): forget the parent's slot and usage (the child holds no memory). With
 * private (anonymous) accounting the child's copy starts from zero: it is a budget of its own. */
void fatia_vgpu_region_after_fork(struct fatia_vgpu_region *r);

/* How many slots are live (claimed by a process), for tests and the agent. */
int fatia_vgpu_region_live_slots(const struct fatia_vgpu_region *r);

/* Reads /proc/<pid>/stat: 0 with the state letter and start time, or -errno. */
int fatia_vgpu_proc_stat(int pid, char *ret_state, uint64_t *ret_start);

#endif

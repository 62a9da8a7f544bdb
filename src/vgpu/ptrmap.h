/*
 * vgpu/ptrmap.h: what each live allocation of this process was charged, so frees subtract it.
 *
 * Keys are driver handles: device pointers, VMM allocation handles, arrays, memory pools. The map
 * is process-local and sharded: a key's hash picks one of FATIA_VGPU_PTRMAP_SHARDS shards, each an
 * open-addressing table with its own mutex, so threads allocating at once rarely meet.
 */
#ifndef FATIA_VGPU_PTRMAP_H
#define FATIA_VGPU_PTRMAP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define FATIA_VGPU_PTRMAP_SHARDS 64

enum fatia_vgpu_kind {
    FATIA_VGPU_KIND_PTR = 1, /* CUdeviceptr: cuMemAlloc*, pitch, managed, async */
    FATIA_VGPU_KIND_HANDLE,  /* CUmemGenericAllocationHandle: cuMemCreate */
    FATIA_VGPU_KIND_ARRAY,   /* CUarray */
    FATIA_VGPU_KIND_MIPMAP,  /* CUmipmappedArray */
    FATIA_VGPU_KIND_POOL,    /* CUmemoryPool: size unused, dev = the pool's device or -1 */
};

struct fatia_vgpu_entry {
    uint64_t key;
    uint64_t size;
    int32_t dev;
    uint32_t kind; /* 0: empty slot */
};

struct fatia_vgpu_shard {
    pthread_mutex_t lock;
    struct fatia_vgpu_entry *tab;
    uint32_t cap; /* power of two, or 0 */
    uint32_t count;
};

struct fatia_vgpu_ptrmap {
    struct fatia_vgpu_shard shard[FATIA_VGPU_PTRMAP_SHARDS];
};

void fatia_vgpu_ptrmap_init(struct fatia_vgpu_ptrmap *m);
void fatia_vgpu_ptrmap_release(struct fatia_vgpu_ptrmap *m);

/* Records e. If the key was already present (a free the interposer did not see), its old entry
 * is replaced and returned in ret_old with 1; otherwise returns 0. -ENOMEM if the table cannot
 * grow (nothing changed). */
int fatia_vgpu_ptrmap_put(struct fatia_vgpu_ptrmap *m, const struct fatia_vgpu_entry *e,
                          struct fatia_vgpu_entry *ret_old);

/* Removes the entry of (kind, key) into ret. false when absent. */
bool fatia_vgpu_ptrmap_take(struct fatia_vgpu_ptrmap *m, uint32_t kind, uint64_t key,
                            struct fatia_vgpu_entry *ret);

/* Copies the entry of (kind, key) into ret. false when absent. */
bool fatia_vgpu_ptrmap_get(struct fatia_vgpu_ptrmap *m, uint32_t kind, uint64_t key,
                           struct fatia_vgpu_entry *ret);

/* Number of entries (tests). */
uint64_t fatia_vgpu_ptrmap_count(struct fatia_vgpu_ptrmap *m);

/* In a child after fork(): forget every entry without taking locks another thread of the
 * parent may have held (the tables are leaked, not freed). */
void fatia_vgpu_ptrmap_after_fork(struct fatia_vgpu_ptrmap *m);

#endif

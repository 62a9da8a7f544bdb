/*
 * agent/vgpu_slice.h: what the node agent does to run a process inside a memory-capped slice.
 *
 * For each slice instance (one pod on a time-sliced or fractional GPU share) the agent:
 *   1. picks an accounting file path private to that instance, e.g.
 *      /run/fatia/slices/<pod uid>/<slice id>.acct, in a directory only the pod's uid can write;
 *   2. calls fatia_agent_vgpu_slice_prepare() once, which creates that file with the caps;
 *   3. adds fatia_agent_vgpu_slice_env()'s variables to every process it starts for the pod
 *      (LD_PRELOAD, CUDA_VISIBLE_DEVICES, FATIA_VGPU_*);
 *   4. may read the slice's usage at any time with fatia_agent_vgpu_slice_usage();
 *   5. removes the file when the pod is gone (nothing else needs cleaning: the library keeps no
 *      other state).
 * docs/vgpu.md describes the variables; DESIGN §7 sets what a cap counts and its default.
 */
#ifndef FATIA_AGENT_VGPU_SLICE_H
#define FATIA_AGENT_VGPU_SLICE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/envput.h"
#include "vgpu/config.h"

/* The device memory one CUDA context holds outside any allocation on an H200 (CUDA 13.0, driver
 * 580), the reserve DESIGN §7 subtracts per replica. scripts/vgpu-proof measured 527 MiB for a
 * bare runtime context and 685 MiB for PyTorch once cuBLAS is loaded (docs/vgpu.md); 768 MiB
 * covers the latter with room for contexts that grow while the GPU is full. Settable per GPU
 * model by the caller. */
#define FATIA_VGPU_CONTEXT_RESERVE_H200 (UINT64_C(768) << 20)

struct fatia_vgpu_slice {
    const char *library;         /* path of libfatia-vgpu.so */
    const char *accounting_file; /* absolute path of this slice instance's accounting file */
    unsigned n_devices;          /* 1..FATIA_VGPU_MAX_DEVICES */
    const char *uuids[FATIA_VGPU_MAX_DEVICES]; /* the GPUs, in the order CUDA will number them */
    uint64_t cap[FATIA_VGPU_MAX_DEVICES];      /* bytes per device; FATIA_VGPU_NO_LIMIT: none */
    const char *log_level;                     /* FATIA_VGPU_LOG; NULL: silent */
    const char *ld_preload;                    /* the pod's own LD_PRELOAD, kept after ours */
};

/* The default cap of each of `replicas` time-slice replicas of a GPU with gpu_memory bytes
 * (DESIGN §7): (gpu_memory - replicas x reserve) / replicas, rounded down to 2 MiB (the driver's
 * allocation granularity). 0 when nothing is left. */
uint64_t fatia_agent_vgpu_default_cap(uint64_t gpu_memory, unsigned replicas, uint64_t reserve);

/* Creates the slice's accounting file with its caps (replacing one no live process uses).
 * 0, -EINVAL (a bad slice), -EBUSY (live processes use the file) or -errno; why says more. */
int fatia_agent_vgpu_slice_prepare(const struct fatia_vgpu_slice *s, char *why, size_t why_len);

/* Puts the variables a process of the slice needs. 0, -EINVAL, or put's error. */
int fatia_agent_vgpu_slice_env(const struct fatia_vgpu_slice *s, fatia_env_put_fn put, void *ctx);

/* The bytes the slice's processes hold on device dev (live ones; dead ones are reclaimed first
 * when the caller may write the file). 0 or -errno / -EPROTO. */
int fatia_agent_vgpu_slice_usage(const char *accounting_file, unsigned dev, uint64_t *ret_used);

/* The text of the slice's configuration file (vgpu/conffile.h): the accounting file as the
 * processes see it (acct_in_container; NULL: s->accounting_file), the UUIDs and the caps. The
 * agent makes it visible read-only at FATIA_VGPU_CONF_PATH, with an /etc/ld.so.preload naming the
 * library, in the container or the pod's mount namespace. 0, -EINVAL, -ENAMETOOLONG (n). */
int fatia_agent_vgpu_slice_conf(const struct fatia_vgpu_slice *s, const char *acct_in_container,
                                char *buf, size_t n);

/* Writes text to path (replaced atomically) with mode 0444, owned by the caller (root for the
 * agent): what the configuration and ld.so.preload files need. 0 or -errno. */
int fatia_agent_vgpu_write_ro(const char *path, const char *text);

#endif

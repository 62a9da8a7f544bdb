/*
 * gateway/kvxfer.h: the KV-cache transfer of prefill/decode disaggregation, as engine-sim models
 * it: NIXL moving a prompt's KV blocks from the prefill server's GPU memory to the decode
 * server's over NVLink or RDMA. Pure code: virtual seconds in, virtual seconds out.
 *
 * Model: each decode server has one inbound link per GPU (a tensor-parallel rank pulls its own
 * shard of the KV, 1/tp of it, in parallel with the others, so one link carries the bytes per
 * GPU). Transfers on a link go one after another, first come first served, each at the link's
 * bandwidth; a transfer that may start at t_ready starts at max(t_ready, link free), ends its
 * bytes at start + bytes / bandwidth, and lands (the decode server may schedule the request)
 * latency later: the notification round trip (NIXL's side channel) and the DMA set-up.
 *
 * Presets (docs/serving.md, "Prefill/decode disaggregation"):
 *   nvlink  328e9 B/s: the NCCL all-reduce bus bandwidth measured between two NVLink-connected
 *           H200s at 1 GiB (docs/multigpu.md); latency 0.5 ms (assumed, not measured here).
 *   rdma    45e9 B/s: a 400 Gb/s NIC (50 GB/s line rate) at 90 %; latency 0.5 ms (assumed).
 * Choices rejected: sharing a link's bandwidth among concurrent transfers (processor sharing)
 * gives the same total time for a batch and later first tokens for all of them; FIFO is what a
 * queue of RDMA writes on one queue pair does.
 */
#ifndef FATIA_GATEWAY_KVXFER_H
#define FATIA_GATEWAY_KVXFER_H

#include "base/compat.h"

struct fatia_kvxfer_link {
    double bandwidth;  /* bytes per second, > 0 */
    double latency;    /* seconds, >= 0 */
    double busy_until; /* virtual seconds: the end of the last transfer's bytes */
};

/* "nvlink" or "rdma" (busy_until 0). 0, or -EINVAL. */
int fatia_kvxfer_preset(const char *name, struct fatia_kvxfer_link *ret);

/* Schedules a transfer of `bytes` that may start at t_ready; returns when it lands. */
double fatia_kvxfer_schedule(struct fatia_kvxfer_link *l, double t_ready, uint64_t bytes);

#endif

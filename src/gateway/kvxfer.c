/*
 * gateway/kvxfer.c: the KV transfer link (see kvxfer.h for the model and its presets).
 */
#include "base/compat.h"

#include "gateway/kvxfer.h"

#include "base/error.h"

int fatia_kvxfer_preset(const char *name, struct fatia_kvxfer_link *ret)
{
    if (!strcmp(name, "nvlink")) {
        *ret = (struct fatia_kvxfer_link){.bandwidth = 328e9, .latency = 0.5e-3};
        return 0;
    }
    if (!strcmp(name, "rdma")) {
        *ret = (struct fatia_kvxfer_link){.bandwidth = 45e9, .latency = 0.5e-3};
        return 0;
    }
    return -EINVAL;
}

double fatia_kvxfer_schedule(struct fatia_kvxfer_link *l, double t_ready, uint64_t bytes)
{
    double start = t_ready > l->busy_until ? t_ready : l->busy_until;

    l->busy_until = start + (double)bytes / l->bandwidth;
    return l->busy_until + l->latency;
}

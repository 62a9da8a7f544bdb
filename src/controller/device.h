/*
 * controller/device.h: what the device controller offers the placement controller (internal).
 */
#ifndef FATIA_CONTROLLER_DEVICE_H
#define FATIA_CONTROLLER_DEVICE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "supply/plan.h"

struct device_ctl;

/* May the fleet move to plan? 0, or -EBUSY with why (a slice a running pod holds would go). */
typedef int (*device_check_fn)(void *arg, const struct fatia_plan *plan, char *why, size_t n);
/* The fleet moved to plan (the previous plan is freed right after this returns). */
typedef void (*device_replanned_fn)(void *arg, const struct fatia_plan *plan);

void fatia_ctlr_device_ctl_set_hooks(struct device_ctl *d, device_check_fn check,
                                     device_replanned_fn replanned, void *arg);
/* The current plan, or NULL before the first one. Valid until the next re-plan. */
const struct fatia_plan *fatia_ctlr_device_ctl_plan(const struct device_ctl *d);
/* A pod let go of slices: a re-plan that waited for them is tried again. */
void fatia_ctlr_device_ctl_slices_freed(struct device_ctl *d);

/* device_health.c: marks the GPUs of n that the Node's fatia.dev/gpu-health annotation lists
 * (the node agent's health watch) unhealthy; did that annotation change between old and obj? */
struct fatia_inv_node;
void fatia_ctlr_device_health_apply(struct fatia_inv_node *n, const json_t *node);
bool fatia_ctlr_device_health_changed(const json_t *old, const json_t *obj);

/* device_inventory.c: plans n from the GPUs its Node's fatia.dev/gpu-inventory annotation
 * publishes (the node role's NVML read), into the simulated snapshot inv; a bad annotation is a
 * Warning Event on the Node and n keeps the last one accepted (m: node name -> what was seen),
 * else its pool's GPUs. 0 or -ENOMEM. Did that annotation change between old and obj? */
struct ctl;
struct fatia_inventory;
struct fatia_strmap;
int fatia_ctlr_device_inventory_apply(struct ctl *c, struct fatia_strmap *m,
                                      struct fatia_inventory *inv, struct fatia_inv_node *n,
                                      const json_t *node);
bool fatia_ctlr_device_inventory_changed(const json_t *old, const json_t *obj);
void fatia_ctlr_device_inventory_release(struct fatia_strmap *m);

#endif

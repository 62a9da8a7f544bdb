/*
 * controller/gpuidle.h: the GPU-idleness policy's entry points (gpuidle.c; internal to
 * src/controller).
 */
#ifndef FATIA_CONTROLLER_GPUIDLE_H
#define FATIA_CONTROLLER_GPUIDLE_H

struct ctl;
struct gpuidle;

/* NULL in *ret when the policy is off (fatia_controllers_opts.gpu_idle_after 0). */
int fatia_ctlr_gpuidle_new(struct ctl *c, struct gpuidle **ret);
void fatia_ctlr_gpuidle_free(struct gpuidle *g);

#endif

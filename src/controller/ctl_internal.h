/*
 * controller/ctl_internal.h: what runtime.c and manager.c share beyond ctl.h.
 */
#ifndef FATIA_CONTROLLER_CTL_INTERNAL_H
#define FATIA_CONTROLLER_CTL_INTERNAL_H

#include "controller/ctl.h"

/* The informer of k if one exists (no creation). */
struct informer *fatia_ctlr_informer_peek(struct ctl *c, const struct fatia_kind *k);
void fatia_ctlr_informer_synced(struct ctl *c, struct informer *inf);
void fatia_ctlr_informer_restart(struct ctl *c, struct informer *inf);
int fatia_ctlr_informer_start(struct informer *inf);
void fatia_ctlr_informer_free(struct informer *inf);

void fatia_ctlr_register_wq(struct ctl *c, struct wq *q);
/* Every informer is synced and the sync hooks have run. */
bool fatia_ctlr_ready(struct ctl *c);
void fatia_ctlr_wq_kick(struct wq *q);

void fatia_ctlr_op_started(struct ctl *c);
void fatia_ctlr_op_finished(struct ctl *c);
unsigned fatia_ctlr_next_seq(struct ctl *c);

/* Runs fn(arg) once every informer has synced, before any work queue runs (controllers rebuild
 * their state there: the placement controller binds the pods that are already bound). */
int fatia_ctlr_on_synced(struct ctl *c, void (*fn)(void *arg), void *arg);

#endif

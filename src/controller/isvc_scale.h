/*
 * controller/isvc_scale.h: the InferenceService autoscaler's loop (isvc_scale.c), owned by the
 * InferenceService controller (inferenceservice.c).
 */
#ifndef FATIA_CONTROLLER_ISVC_SCALE_H
#define FATIA_CONTROLLER_ISVC_SCALE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "controller/ctl.h"

struct isvc_scaler;

/* Ticks every period, scraping the ready replicas of every autoscaled InferenceService of isvcs
 * (its Deployment in deploys, its pods in pods) and kicking q with the key when its count
 * changes. */
int fatia_ctlr_isvc_scaler_new(struct ctl *c, struct wq *q, struct informer *isvcs,
                               struct informer *deploys, struct informer *pods,
                               struct isvc_scaler **ret);
void fatia_ctlr_isvc_scaler_free(struct isvc_scaler *s);

/* Whether isvc is autoscaled: maxReplicas above minReplicas, or minReplicas 0. */
bool fatia_ctlr_isvc_autoscaled(const json_t *isvc);
/* The replicas the Deployment of isvc (key ns/name) should have: the autoscaler's count, else the
 * Deployment's own (have, may be NULL) within [min, max], else min (at least 1 with min 0 while
 * the autoscaler has no data: a fresh InferenceService starts with one replica). */
int64_t fatia_ctlr_isvc_scale_replicas(struct isvc_scaler *s, const char *key, const json_t *isvc,
                                       const json_t *have);
/* Replicas of key waiting for Kueue admission (their pods gated), counted at the last tick. */
int fatia_ctlr_isvc_scale_gated(struct isvc_scaler *s, const char *key);

/* The model server's port (inferenceservice.c). */
int fatia_ctlr_isvc_port(const json_t *isvc);

#endif

/*
 * demand/place_oneshot.h: the one-shot placement driver (`fatia place`, golden tests): see
 * place_oneshot.c for the order objects are placed in and the JSON it returns.
 */
#ifndef FATIA_DEMAND_PLACE_ONESHOT_H
#define FATIA_DEMAND_PLACE_ONESHOT_H

#include <jansson.h>

#include "demand/place.h"
#include "model/diag.h"
#include "model/objset.h"

/* Places the Pods and Workloads of set on plan's fleet with opts (opts->mix is ignored: the
 * driver keeps its own). Returns 0 and *ret (a new reference), -FATIA_E_INVALID (a pod spec that
 * cannot be placed at all, reported to diag with its object and field), -ENOMEM. */
int fatia_place_oneshot(const struct fatia_objset *set, const struct fatia_plan *plan,
                        const struct fatia_place_opts *opts, json_t **ret, struct fatia_diag *diag);

#endif

/*
 * controller/isvc_runtime.h: the predictor container a ServingRuntime names (isvc_runtime.c).
 */
#ifndef FATIA_CONTROLLER_ISVC_RUNTIME_H
#define FATIA_CONTROLLER_ISVC_RUNTIME_H

#include <jansson.h>
#include <stddef.h>

/* KServe's default port of a runtime container without ports. */
#define FATIA_CTLR_RUNTIME_PORT 8080

/* The predictor container of isvc from runtime (a ServingRuntime or ClusterServingRuntime) as
 * KServe builds it: the runtime's spec.containers[0] with predictor.model's container fields
 * merged over it, then {{.Name}}, {{.Namespace}}, {{.Labels.K}}, {{.Annotations.K}} and
 * {{index .Labels "K"}} / {{index .Annotations "K"}} expanded in command, args and env values.
 * *ret_ctr NULL (and 0) when the runtime's first container names no image: the built-in
 * engine-sim container applies. *ret_port: its first containerPort, else 8080. -EINVAL with why
 * in err (naming the runtime's field) for an unknown template variable; -ENOMEM. */
int fatia_ctlr_isvc_runtime_container(const json_t *runtime, const json_t *isvc, char *err,
                                      size_t errlen, json_t **ret_ctr, int *ret_port);

#endif

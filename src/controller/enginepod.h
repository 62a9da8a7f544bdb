/*
 * controller/enginepod.h: the model-server container that the InferenceService and
 * LLMInferenceService controllers put in their pods (enginepod.c).
 */
#ifndef FATIA_CONTROLLER_ENGINEPOD_H
#define FATIA_CONTROLLER_ENGINEPOD_H

#include <jansson.h>

/* The image the model servers name: scripts/images/engine-sim builds it from the build's fatia,
 * scripts/images/load-examples loads it (IfNotPresent: a tagged name, never pulled when there). */
#define FATIA_CTLR_ENGINE_IMAGE "fatia.dev/engine-sim:1"

/* A container `name` running `fatia engine-sim --listen $(POD_IP):port --reuse-port` then the
 * strings of flags (borrowed), with port as its http port and /health as its readiness probe.
 * bin: fatiad's fatia (fatia_ctlr_fatia_bin), whose directory leads the container's PATH. NULL
 * when out of memory. */
json_t *fatia_ctlr_engine_container(const char *bin, const char *name, int port,
                                    const json_t *flags);

#endif

/*
 * apiserver/nodeserve.h: what every pod stream needs (the loop and the node agent's providers),
 * for the API server's handlers (logs.c, stream_exec.c, stream_portforward.c).
 */
#ifndef FATIA_APISERVER_NODESERVE_H
#define FATIA_APISERVER_NODESERVE_H

#include <jansson.h>

#include "client/plugin.h"

struct event_base;

/* What a pod's log, exec, attach and port-forward streams need: the loop and the providers
 * (the node agent's: agent.h), each NULL when none serves it (the stream answers 503). */
struct fatia_api_streams {
    struct event_base *base;
    fatia_log_provider_fn log;
    void *log_arg;
    fatia_exec_provider_fn exec;
    void *exec_arg;
    fatia_portforward_provider_fn pf;
    void *pf_arg;
};

#endif

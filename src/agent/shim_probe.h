/*
 * agent/shim_probe.h: running a container's probes from fatia-shim (see shim_probe.c). The
 * policy (what a result means) is agent/probe.h's; this file runs exec, httpGet and tcpSocket
 * probes in prober processes the shim reaps, and records the last failure's message.
 */
#ifndef FATIA_AGENT_SHIM_PROBE_H
#define FATIA_AGENT_SHIM_PROBE_H

#include <sys/types.h>

#include <jansson.h>
#include <stdbool.h>

#include "agent/probe.h"
#include "agent/runtime.h"
#include "base/clock.h"

struct fatia_shim_probes {
    struct fatia_agent_probes ps;
    const json_t *spec[FATIA_PROBE_KINDS]; /* spec.json's probes (borrowed), NULL: none */
    pid_t pid[FATIA_PROBE_KINDS];          /* a prober in flight, 0: none */
    int msg_fd[FATIA_PROBE_KINDS];         /* its message pipe's read end */
    fatia_usec_t deadline[FATIA_PROBE_KINDS];
    char msg[FATIA_PROBE_KINDS][512];     /* the last failure's output, for the status and Events */
    unsigned failures[FATIA_PROBE_KINDS]; /* failed runs since the instance started */
};

/* Reads the container's "probes" from its spec.json entry (absent: none). false when malformed. */
bool fatia_shim_probes_load(struct fatia_shim_probes *sp, const json_t *ctr_spec);
bool fatia_shim_probes_any(const struct fatia_shim_probes *sp);
/* The container's instance started (now: monotonic) / ended (probers in flight are killed). */
void fatia_shim_probes_start(struct fatia_shim_probes *sp, fatia_usec_t now);
void fatia_shim_probes_stop(struct fatia_shim_probes *sp);
/* Starts the probes due now and kills probers past their timeout (counted as failures). host is
 * the pod's address ("127.0.0.1" when it has none of its own). Returns true when a result that
 * counts changed or a run failed. *next: lowered to when this wants to run again. */
bool fatia_shim_probes_tick(struct fatia_shim_probes *sp, struct fatia_rt_pod *pod,
                            const struct fatia_runtime *rt, const struct fatia_rt_ctr *c,
                            const char *host, fatia_usec_t now, fatia_usec_t *next);
/* Reaps sp's probers that ended. Returns true when a result that counts changed or a run
 * failed (the status file then says so). */
bool fatia_shim_probes_reap(struct fatia_shim_probes *sp);
/* The status file's fields of these probes: {"startup": {"result", "failures", "message"}, ...},
 * new reference, or NULL when the container has none. */
json_t *fatia_shim_probes_json(const struct fatia_shim_probes *sp);

#endif

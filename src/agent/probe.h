/*
 * agent/probe.h: a container's probes (startupProbe, livenessProbe, readinessProbe) as a pure
 * state machine fed probe results and times, and the translation of a Pod's probe fields into
 * the shim's spec.json. No I/O, no clock: the shim (shim_probe.c) runs the probes and asks this
 * file what they mean.
 */
#ifndef FATIA_AGENT_PROBE_H
#define FATIA_AGENT_PROBE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"

enum fatia_agent_probe_kind {
    FATIA_PROBE_STARTUP,
    FATIA_PROBE_LIVENESS,
    FATIA_PROBE_READINESS,
    FATIA_PROBE_KINDS
};

enum fatia_agent_probe_result {
    FATIA_PROBE_UNKNOWN,
    FATIA_PROBE_SUCCESS,
    FATIA_PROBE_FAILURE
};

/* The timing fields of a probe, Kubernetes' defaults applied (initialDelaySeconds 0,
 * periodSeconds 10, timeoutSeconds 1, successThreshold 1, failureThreshold 3). */
struct fatia_agent_probe_cfg {
    int64_t initial_delay_s, period_s, timeout_s;
    unsigned success_threshold, failure_threshold;
};

struct fatia_agent_probe {
    bool present;
    struct fatia_agent_probe_cfg cfg;
    enum fatia_agent_probe_result result; /* what counts (after the thresholds) */
    enum fatia_agent_probe_result last;   /* the last raw result */
    unsigned run;                         /* consecutive raw results equal to last */
    bool on_hold;         /* liveness or startup failed: no probing until the next instance */
    bool done;            /* startup succeeded: it is not run again for this instance */
    fatia_usec_t next_at; /* when it is next due */
};

/* The probes of one container instance. Times are the caller's monotonic clock. */
struct fatia_agent_probes {
    struct fatia_agent_probe p[FATIA_PROBE_KINDS];
    bool running; /* an instance runs (else nothing is due and nothing is ready) */
};

/* Whether kind k of ps has a probe: sets its config (cfg NULL: none). */
void fatia_agent_probes_set(struct fatia_agent_probes *ps, enum fatia_agent_probe_kind k,
                            const struct fatia_agent_probe_cfg *cfg);
/* A new instance started at now: every result back to its initial value (readiness Failure,
 * liveness Success, startup Unknown), each first due initialDelaySeconds after now. */
void fatia_agent_probes_start(struct fatia_agent_probes *ps, fatia_usec_t now);
/* The instance ended: nothing is due, nothing ready. */
void fatia_agent_probes_stop(struct fatia_agent_probes *ps);
/* Whether probe k should run now (due, not on hold; liveness and readiness only once the
 * startup probe, if any, succeeded). */
bool fatia_agent_probes_due(const struct fatia_agent_probes *ps, enum fatia_agent_probe_kind k,
                            fatia_usec_t now);
/* A run of k was started at now: the next one is due a period later. */
void fatia_agent_probes_ran(struct fatia_agent_probes *ps, enum fatia_agent_probe_kind k,
                            fatia_usec_t now);
/* A run of k answered ok (a timeout is a failure). Returns true when the result that counts
 * changed. */
bool fatia_agent_probes_result(struct fatia_agent_probes *ps, enum fatia_agent_probe_kind k,
                               bool ok);
/* The earliest time a probe is due (INT64_MAX: none). */
fatia_usec_t fatia_agent_probes_next(const struct fatia_agent_probes *ps);
/* containerStatuses[].started: running and the startup probe (if any) succeeded. */
bool fatia_agent_probes_started(const struct fatia_agent_probes *ps);
/* containerStatuses[].ready: started and the readiness probe (if any) succeeded. */
bool fatia_agent_probes_ready(const struct fatia_agent_probes *ps);
/* The probe whose failure means the instance must be killed (liveness or startup in
 * Failure), else FATIA_PROBE_KINDS. The caller kills it and calls fatia_agent_probes_hold. */
enum fatia_agent_probe_kind fatia_agent_probes_failed(const struct fatia_agent_probes *ps);
void fatia_agent_probes_hold(struct fatia_agent_probes *ps, enum fatia_agent_probe_kind k);
/* "Startup", "Liveness", "Readiness". */
const char *fatia_agent_probe_kind_name(enum fatia_agent_probe_kind k);
/* "startupProbe", ... */
const char *fatia_agent_probe_field(enum fatia_agent_probe_kind k);

/*
 * The shim's form of container c's probes (the Pod's container object): {"startup": P,
 * "liveness": P, "readiness": P} with only the probes set, P = {"initialDelaySeconds",
 * "periodSeconds", "timeoutSeconds", "successThreshold", "failureThreshold", and one of
 * "exec": {"command": [..]}, "httpGet": {"host", "port": N, "path", "scheme", "headers":
 * [[name, value]..]}, "tcpSocket": {"host", "port": N}}; a named port is resolved against the
 * container's ports. *ret is NULL when c has no probe. -FATIA_E_INVALID with why naming the field
 * path (spec.containers[i].readinessProbe.httpGet.port ...), -ENOMEM.
 */
int fatia_agent_probe_spec(const json_t *c, size_t index, json_t **ret, char *why, size_t why_n);
/* Reads one P of that form into cfg. false when malformed. */
bool fatia_agent_probe_cfg_parse(const json_t *p, struct fatia_agent_probe_cfg *cfg);

#endif

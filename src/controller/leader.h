/*
 * controller/leader.h: leader election of fatiad's controllers with a coordination.k8s.io
 * Lease, as kube-controller-manager does it (client-go's leaderelection). See leader.c.
 */
#ifndef FATIA_CONTROLLER_LEADER_H
#define FATIA_CONTROLLER_LEADER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/clock.h"

struct event_base;
struct fatia_client;
struct fatia_ctlr_leader;

struct fatia_ctlr_leader_timing {
    fatia_usec_t lease;          /* --leader-elect-lease-duration: 15 s */
    fatia_usec_t renew_deadline; /* --leader-elect-renew-deadline: 10 s */
    fatia_usec_t retry;          /* --leader-elect-retry-period: 2 s */
};

/* client-go's rule: lease > renew deadline > 1.2 x retry, all > 0. 0 or -EINVAL with why. */
int fatia_ctlr_leader_timing_check(const struct fatia_ctlr_leader_timing *t, char *why,
                                   size_t why_n);

/* ---- the decision (pure: the caller passes the time, the Lease as last read) ---- */

enum fatia_ctlr_leader_action {
    FATIA_CTLR_LEADER_WAIT = 0, /* another holds a lease that has not run out on our clock */
    FATIA_CTLR_LEADER_TAKE,     /* create the Lease, or take it over: write it as ours */
    FATIA_CTLR_LEADER_RENEW,    /* we lead: write renewTime */
    FATIA_CTLR_LEADER_LOST, /* we led and could not renew within the deadline, or another holds it */
};

struct fatia_ctlr_leader_state {
    bool leader;
    char observed[512];       /* holder, renewTime and transitions of the record last seen */
    fatia_usec_t observed_at; /* when that record was first seen (monotonic clock) */
    fatia_usec_t renewed_at;  /* leader: when the last successful renewal was sent */
};

/* What to do at now (monotonic) with the Lease as read (NULL: there is none). Moves st's
 * observation. The leader's renewals succeeded or not: the caller sets st->renewed_at. */
enum fatia_ctlr_leader_action fatia_ctlr_leader_decide(struct fatia_ctlr_leader_state *st,
                                                       const char *self, const json_t *lease,
                                                       fatia_usec_t now,
                                                       const struct fatia_ctlr_leader_timing *t);

/* The Lease to write for TAKE or RENEW (a new tree): lease (NULL: none yet) with holder self,
 * renewTime now_real, and on a change of holder acquireTime now_real and leaseTransitions + 1. */
json_t *fatia_ctlr_leader_lease_json(const json_t *lease, const char *ns, const char *name,
                                     const char *self, const struct fatia_ctlr_leader_timing *t,
                                     fatia_usec_t now_real);

/* ---- the elector on the event loop ---- */

struct fatia_ctlr_leader_opts {
    const char *ns, *name; /* the Lease: kube-system/fatia-controller-manager by default */
    const char *identity;  /* holderIdentity; NULL: "<hostname>_<pid>_<start>" */
    struct fatia_ctlr_leader_timing timing;
    void (*started)(void *arg); /* became the leader (once) */
    void (*stopped)(void *arg); /* lost the lease: stop leading (kube-controller-manager exits) */
    void *arg;
};

int fatia_ctlr_leader_new(struct event_base *base, struct fatia_client *c,
                          const struct fatia_ctlr_leader_opts *o, struct fatia_ctlr_leader **ret);
void fatia_ctlr_leader_free(struct fatia_ctlr_leader *l);
const char *fatia_ctlr_leader_identity(const struct fatia_ctlr_leader *l);
bool fatia_ctlr_leader_leading(const struct fatia_ctlr_leader *l);

#endif

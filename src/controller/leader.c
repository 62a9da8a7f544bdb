/*
 * controller/leader.c: leader election of the controllers with a Lease (see leader.h), as
 * client-go's leaderelection package runs it for kube-controller-manager.
 *
 * Model: every retry period (2 s) the elector reads the Lease (kube-system/
 * fatia-controller-manager) from the cache and decides (fatia_ctlr_leader_decide, pure):
 *   - no Lease: create it as ours (a create of a taken name fails: one winner);
 *   - another holder: remember when its record (holder, renewTime, transitions) last changed,
 *     on our own monotonic clock; once it has not changed for its leaseDurationSeconds, take it
 *     over: an update with the resourceVersion read, so of several candidates one wins and the
 *     others get 409;
 *   - ours: renew (renewTime = now), same compare-and-swap.
 * A leader whose renewals have not succeeded for the renew deadline (10 s), or that reads the
 * Lease held by another, has lost: stopped() runs, and the elector is a candidate again (a new
 * term: the answer of a renewal still in flight from the old one is ignored). fatiad's stopped()
 * frees the controllers and their client, which drops every answer they still await
 * (apiserver/client.c), while its API server goes on serving: kube-controller-manager exits
 * instead, but it is a process of its own, and here the API replica would go with it. If elected
 * again, fresh controllers start from their informers, as in a new process. Handover after
 * kill -9 of the leader takes at most lease + retry (17 s with the defaults; about 15 s on
 * average: the candidates' clocks start at their first read of the record).
 *
 * Invariants: at most one write of the Lease is out at a time. The decision never compares
 * renewTime with our wall clock (hosts' clocks may differ): only the record's changes, seen on
 * our monotonic clock, count, as in client-go.
 *
 * Not a fence by itself: a leader paused (SIGSTOP, a long GC) past its lease may still write
 * when it resumes, before its next tick. The API server's fence (apiserver opts fence_lease*)
 * refuses the controllers' writes unless the Lease in its cache is ours and unchanged in etcd.
 *
 * Rejected: etcd's election API (/v3/election/campaign: a fencing token for free, but the
 * controllers would depend on etcd, and the SQLite default has no etcd); coordinated leader
 * election (Kubernetes 1.31's LeaseCandidate: alpha).
 */
#include "base/compat.h"

#include "controller/leader.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "client/client.h"

struct fatia_ctlr_leader {
    struct event_base *base;
    struct fatia_client *c;
    struct fatia_ctlr_leader_opts o;
    char ns[128], name[256], identity[256];
    struct event *tick;
    struct fatia_ctlr_leader_state st;
    bool inflight;
    bool started;
    bool lost;          /* FATIA_TEST_LEADER_NO_STEPDOWN: deposed for good */
    unsigned term;      /* moves at each step-down */
    unsigned sent_term; /* the term of the write in flight */
    fatia_usec_t sent_at;
    struct alive *alive;
};

/* A write in flight when the elector is freed finds alive->l NULL. */
struct alive {
    struct fatia_ctlr_leader *l;
};

int fatia_ctlr_leader_timing_check(const struct fatia_ctlr_leader_timing *t, char *why,
                                   size_t why_n)
{
    const char *bad = NULL;

    if (t->lease <= 0 || t->renew_deadline <= 0 || t->retry <= 0)
        bad = "the lease duration, renew deadline and retry period must be > 0";
    else if (t->lease <= t->renew_deadline)
        bad = "--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline";
    else if (t->renew_deadline * 10 <= t->retry * 12)
        bad = "--leader-elect-renew-deadline must be greater than 1.2 x "
              "--leader-elect-retry-period";
    if (!bad)
        return 0;
    if (why && why_n)
        snprintf(why, why_n, "%s", bad);
    return -EINVAL;
}

static const char *spec_str(const json_t *lease, const char *f)
{
    const char *s = fatia_json_str(json_object_get(lease, "spec"), f);
    return s ? s : "";
}

static int64_t spec_int(const json_t *lease, const char *f)
{
    int64_t v = 0;

    if (!fatia_json_int(json_object_get(lease, "spec"), f, &v))
        return 0;
    return v;
}

enum fatia_ctlr_leader_action fatia_ctlr_leader_decide(struct fatia_ctlr_leader_state *st,
                                                       const char *self, const json_t *lease,
                                                       fatia_usec_t now,
                                                       const struct fatia_ctlr_leader_timing *t)
{
    const char *holder = lease ? spec_str(lease, "holderIdentity") : "";
    char rec[sizeof(st->observed)];
    int64_t dur_s;

    if (st->leader) {
        if (now - st->renewed_at > t->renew_deadline)
            return FATIA_CTLR_LEADER_LOST;
        if (lease && strcmp(holder, self))
            return FATIA_CTLR_LEADER_LOST; /* taken over: our record ran out somewhere */
        return FATIA_CTLR_LEADER_RENEW;
    }
    if (!lease)
        return FATIA_CTLR_LEADER_TAKE;
    snprintf(rec, sizeof(rec), "%s|%s|%" PRId64, holder, spec_str(lease, "renewTime"),
             spec_int(lease, "leaseTransitions"));
    if (strcmp(rec, st->observed)) {
        snprintf(st->observed, sizeof(st->observed), "%s", rec);
        st->observed_at = now;
    }
    dur_s = spec_int(lease, "leaseDurationSeconds");
    if (dur_s <= 0)
        dur_s = t->lease / FATIA_USEC_PER_SEC;
    if (holder[0] && strcmp(holder, self) && now < st->observed_at + dur_s * FATIA_USEC_PER_SEC)
        return FATIA_CTLR_LEADER_WAIT;
    return FATIA_CTLR_LEADER_TAKE;
}

json_t *fatia_ctlr_leader_lease_json(const json_t *lease, const char *ns, const char *name,
                                     const char *self, const struct fatia_ctlr_leader_timing *t,
                                     fatia_usec_t now_real)
{
    json_t *obj, *spec;
    char now[64];
    bool changed;

    if (fatia_time_format_rfc3339(now_real, true, now, sizeof(now)) < 0)
        return NULL;
    if (lease) {
        obj = json_deep_copy(lease);
    } else {
        obj = json_pack("{s:s,s:s,s:{s:s,s:s},s:{}}", "apiVersion", "coordination.k8s.io/v1",
                        "kind", "Lease", "metadata", "name", name, "namespace", ns, "spec");
    }
    spec = obj ? fatia_json_object_ensure(obj, "spec") : NULL;
    if (!spec) {
        json_decref(obj);
        return NULL;
    }
    changed = !lease || strcmp(spec_str(lease, "holderIdentity"), self);
    json_object_set_new(spec, "holderIdentity", json_string(self));
    json_object_set_new(spec, "leaseDurationSeconds",
                        json_integer((json_int_t)(t->lease / FATIA_USEC_PER_SEC)));
    json_object_set_new(spec, "renewTime", json_string(now));
    if (changed) {
        json_object_set_new(spec, "acquireTime", json_string(now));
        json_object_set_new(spec, "leaseTransitions",
                            json_integer(lease ? spec_int(lease, "leaseTransitions") + 1 : 0));
    }
    return obj;
}

static const struct fatia_kind *lease_kind(void)
{
    return fatia_kind_find("coordination.k8s.io/v1", "Lease", NULL);
}

static void ns_done(void *arg, const struct fatia_client_result *res)
{
    (void)arg;
    (void)res; /* made, or there: the next tick writes the Lease */
}

static void lose(struct fatia_ctlr_leader *l, const char *why)
{
    if (l->lost)
        return;
    l->st.leader = false;
    fatia_error("leader election: lost the lease %s/%s (%s)", l->ns, l->name, why);
    if (getenv("FATIA_TEST_LEADER_NO_STEPDOWN")) {
        /* tests of the fence: a deposed leader whose controllers go on */
        l->lost = true;
        fatia_warn("leader election: FATIA_TEST_LEADER_NO_STEPDOWN: the controllers go on");
        return;
    }
    if (l->o.stopped)
        l->o.stopped(l->o.arg);
    /* a candidate again, from a clean record */
    l->started = false;
    l->term++;
    memset(&l->st, 0, sizeof(l->st));
    fatia_info("leader election: %s stepped down; a candidate for the lease %s/%s again",
               l->identity, l->ns, l->name);
}

static void wrote(void *arg, const struct fatia_client_result *res)
{
    struct alive *a = arg;
    struct fatia_ctlr_leader *l = a->l;

    if (!l) {
        fatia_free(a);
        return;
    }
    l->inflight = false;
    if (l->sent_term != l->term)
        return; /* sent before a step-down: the new term decides from the cache */
    if (res->status) {
        if (res->code == 404) {
            json_t *ns = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                                   "metadata", "name", l->ns);
            if (ns)
                (void)fatia_client_create(l->c, ns, NULL, ns_done, NULL);
            json_decref(ns);
        } else if (res->code != 409) {
            fatia_warn("leader election: writing the lease %s/%s: %d %s", l->ns, l->name, res->code,
                       fatia_json_str(res->status, "message"));
        }
        return; /* a leader's failed renewal: the deadline decides */
    }
    l->st.renewed_at = l->sent_at;
    if (!l->st.leader && !l->lost) {
        l->st.leader = true;
        fatia_info("leader election: %s leads (lease %s/%s)", l->identity, l->ns, l->name);
        if (!l->started && l->o.started) {
            l->started = true;
            l->o.started(l->o.arg);
        }
    }
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
    struct fatia_ctlr_leader *l = arg;
    const json_t *lease;
    enum fatia_ctlr_leader_action act;
    fatia_usec_t now = fatia_now_mono_usec();
    json_t *obj;
    int r;

    (void)fd;
    (void)what;
    if (l->lost)
        return;
    lease = fatia_client_cached(l->c, lease_kind(), l->ns, l->name);
    act = fatia_ctlr_leader_decide(&l->st, l->identity, lease, now, &l->o.timing);
    if (act == FATIA_CTLR_LEADER_LOST) {
        lose(l, l->st.leader && lease && strcmp(spec_str(lease, "holderIdentity"), l->identity)
                    ? "another holds it"
                    : "not renewed within the renew deadline");
        return;
    }
    if (act == FATIA_CTLR_LEADER_WAIT || l->inflight)
        return;
    obj = fatia_ctlr_leader_lease_json(lease, l->ns, l->name, l->identity, &l->o.timing,
                                       fatia_now_real_usec());
    if (!obj)
        return;
    l->sent_at = now;
    l->sent_term = l->term;
    r = lease ? fatia_client_update(l->c, obj, NULL, wrote, l->alive)
              : fatia_client_create(l->c, obj, NULL, wrote, l->alive);
    json_decref(obj);
    if (r == 0)
        l->inflight = true;
}

int fatia_ctlr_leader_new(struct event_base *base, struct fatia_client *c,
                          const struct fatia_ctlr_leader_opts *o, struct fatia_ctlr_leader **ret)
{
    struct fatia_ctlr_leader *l = fatia_calloc(1, sizeof(*l));
    struct timeval tv;
    char host[128] = "host";
    int r;

    if (!l)
        return -ENOMEM;
    l->base = base;
    l->c = c;
    l->o = *o;
    r = fatia_ctlr_leader_timing_check(&o->timing, NULL, 0);
    if (r < 0)
        goto out_free;
    snprintf(l->ns, sizeof(l->ns), "%s", o->ns ? o->ns : "kube-system");
    snprintf(l->name, sizeof(l->name), "%s", o->name ? o->name : "fatia-controller-manager");
    if (o->identity) {
        snprintf(l->identity, sizeof(l->identity), "%s", o->identity);
    } else {
        (void)gethostname(host, sizeof(host) - 1);
        snprintf(l->identity, sizeof(l->identity), "%s_%d_%" PRId64, host, (int)getpid(),
                 (int64_t)(fatia_now_real_usec() / FATIA_USEC_PER_SEC));
    }
    l->o.identity = l->identity;
    l->alive = fatia_calloc(1, sizeof(*l->alive));
    l->tick = event_new(base, -1, EV_PERSIST, tick_cb, l);
    r = -ENOMEM;
    if (!l->alive || !l->tick)
        goto out_free;
    l->alive->l = l;
    tv = (struct timeval){.tv_sec = o->timing.retry / FATIA_USEC_PER_SEC,
                          .tv_usec = o->timing.retry % FATIA_USEC_PER_SEC};
    event_add(l->tick, &tv);
    event_active(l->tick, EV_TIMEOUT, 0); /* the first try now */
    fatia_info("leader election: %s is a candidate for the lease %s/%s", l->identity, l->ns,
               l->name);
    *ret = l;
    return 0;

out_free:
    if (l->tick)
        event_free(l->tick);
    fatia_free(l->alive);
    fatia_free(l);
    return r;
}

void fatia_ctlr_leader_free(struct fatia_ctlr_leader *l)
{
    if (!l)
        return;
    if (l->tick)
        event_free(l->tick);
    if (l->inflight)
        l->alive->l = NULL; /* the answer frees it */
    else
        fatia_free(l->alive);
    fatia_free(l);
}

const char *fatia_ctlr_leader_identity(const struct fatia_ctlr_leader *l)
{
    return l->identity;
}

bool fatia_ctlr_leader_leading(const struct fatia_ctlr_leader *l)
{
    return l->st.leader && !l->lost;
}

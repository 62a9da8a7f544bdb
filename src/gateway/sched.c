/*
 * gateway/sched.c: filters, scorers and the picker (see sched.h).
 *
 * Ties: totals within 1e-9 of the best are equal; the winner among them is drawn uniformly with
 * reservoir sampling, so no shuffle or allocation is needed (GIE shuffles then sorts stably: the
 * same distribution). The decision's reason is "prefix" when the winner has the best prefix score
 * among the candidates, that score is positive, and without the prefix term another endpoint
 * would have won or tied; otherwise "load".
 */
#include "base/compat.h"

#include "gateway/sched.h"

#include <math.h>

#include "base/alloc.h"
#include "base/error.h"

#define EPS 1e-9

int fatia_policy_parse(const char *s, enum fatia_policy *ret)
{
    static const char *const names[] = {"cache-aware", "round-robin", "least-request", "oracle"};
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(names); i++)
        if (!strcmp(s, names[i])) {
            *ret = (enum fatia_policy)i;
            return 0;
        }
    return -EINVAL;
}

const char *fatia_policy_name(enum fatia_policy p)
{
    switch (p) {
    case FATIA_POLICY_CACHE_AWARE:
        return "cache-aware";
    case FATIA_POLICY_ROUND_ROBIN:
        return "round-robin";
    case FATIA_POLICY_LEAST_REQUEST:
        return "least-request";
    case FATIA_POLICY_ORACLE:
        return "oracle";
    }
    return "?";
}

const char *fatia_route_reason_name(enum fatia_route_reason r)
{
    static const char *const names[] = {"prefix",        "load",   "round_robin",
                                        "least_request", "oracle", "only_candidate"};
    return r < FATIA_ROUTE_N ? names[r] : "?";
}

void fatia_sched_config_default(struct fatia_sched_config *c)
{
    memset(c, 0, sizeof(*c));
    c->policy = FATIA_POLICY_CACHE_AWARE;
    c->w = (struct fatia_sched_weights){.queue = 2, .kv = 2, .prefix = 3};
}

uint64_t fatia_sched_rand(uint64_t *s)
{
    uint64_t x = *s ? *s : UINT64_C(0x9E3779B97F4A7C15);
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * UINT64_C(0x2545F4914F6CDD1D);
}

static double queue_of(const struct fatia_sched_endpoint *e)
{
    return e->fresh ? e->waiting : (double)e->inflight;
}

static double minmax(double v, double lo, double hi)
{
    return hi - lo < EPS ? 1.0 : (hi - v) / (hi - lo);
}

/* Picks uniformly among the candidates whose key is maximal (keys compared within EPS). */
static size_t pick_max(const double *key, const bool *cand, size_t n, uint64_t *rng)
{
    double best = -1e300;
    size_t win = SIZE_MAX, ties = 0;

    for (size_t i = 0; i < n; i++) {
        if (!cand[i])
            continue;
        if (key[i] > best + EPS) {
            best = key[i];
            win = i;
            ties = 1;
        } else if (key[i] >= best - EPS) {
            ties++;
            if (fatia_sched_rand(rng) % ties == 0)
                win = i;
        }
    }
    return win;
}

int fatia_sched_pick(const struct fatia_sched_config *cfg, const struct fatia_sched_endpoint *ep,
                     size_t n, const struct fatia_sched_request *req, uint64_t *rng, size_t *rr,
                     struct fatia_sched_result *ret)
{
    bool cand_stack[256], *cand = cand_stack;
    double key_stack[256], nopfx_stack[256], *key = key_stack, *nopfx = nopfx_stack;
    size_t n_ready = 0, n_cand = 0, win;
    double qlo = 1e300, qhi = -1e300, ilo = 1e300, ihi = -1e300, best_pfx = 0;
    uint64_t thr = cfg->token_load_threshold ? cfg->token_load_threshold : UINT64_C(4) << 20;
    struct fatia_sched_result r = {0};
    int rc = 0;

    if (n > 256) {
        cand = fatia_calloc(n, sizeof(*cand));
        key = fatia_calloc(n, sizeof(*key));
        nopfx = fatia_calloc(n, sizeof(*nopfx));
        if (!cand || !key || !nopfx) {
            rc = -ENOMEM;
            goto out;
        }
    }
    for (size_t i = 0; i < n; i++) {
        cand[i] = ep[i].ready;
        if (!ep[i].ready)
            continue;
        n_ready++;
        if (cfg->queue_limit && queue_of(&ep[i]) > cfg->queue_limit)
            cand[i] = false;
        else
            n_cand++;
    }
    if (!n_ready) {
        rc = -ENOENT;
        goto out;
    }
    if (!n_cand) {
        rc = -FATIA_E_LIMIT;
        goto out;
    }

    switch (cfg->policy) {
    case FATIA_POLICY_ROUND_ROBIN:
        for (size_t k = 0; k < n; k++) {
            size_t i = (*rr + k) % n;
            if (cand[i]) {
                r.index = i;
                *rr = i + 1;
                break;
            }
        }
        r.reason = FATIA_ROUTE_ROUND_ROBIN;
        break;
    case FATIA_POLICY_LEAST_REQUEST:
        for (size_t i = 0; i < n; i++)
            key[i] = -(double)ep[i].inflight;
        r.index = pick_max(key, cand, n, rng);
        r.reason = FATIA_ROUTE_LEAST_REQUEST;
        break;
    case FATIA_POLICY_ORACLE:
        /* most cached tokens first, then fewest in flight */
        for (size_t i = 0; i < n; i++)
            key[i] = (double)ep[i].prefix_match * 1e6 - (double)FATIA_MIN(ep[i].inflight, 999999u);
        r.index = pick_max(key, cand, n, rng);
        r.reason = FATIA_ROUTE_ORACLE;
        break;
    case FATIA_POLICY_CACHE_AWARE:
        for (size_t i = 0; i < n; i++) {
            double q = queue_of(&ep[i]), in = ep[i].inflight;
            if (!cand[i])
                continue;
            qlo = q < qlo ? q : qlo;
            qhi = q > qhi ? q : qhi;
            ilo = in < ilo ? in : ilo;
            ihi = in > ihi ? in : ihi;
        }
        for (size_t i = 0; i < n; i++) {
            double s = 0, pfx;
            if (!cand[i])
                continue;
            s += cfg->w.queue * minmax(queue_of(&ep[i]), qlo, qhi);
            s += cfg->w.kv * (ep[i].fresh ? 1.0 - fmin(fmax(ep[i].kv_usage, 0), 1) : 0.5);
            s += cfg->w.inflight * minmax(ep[i].inflight, ilo, ihi);
            s += cfg->w.token_load * (1.0 - fmin(1.0, (double)ep[i].inflight_tokens / (double)thr));
            pfx = req->n_blocks ? fmin(1.0, (double)ep[i].prefix_match / req->n_blocks) : 0;
            best_pfx = pfx > best_pfx ? pfx : best_pfx;
            nopfx[i] = s;
            key[i] = s + cfg->w.prefix * pfx;
        }
        r.index = win = pick_max(key, cand, n, rng);
        r.score = key[win];
        r.reason = FATIA_ROUTE_LOAD;
        if (best_pfx > 0 && cfg->w.prefix > 0) {
            double pw = req->n_blocks ? (double)ep[win].prefix_match / req->n_blocks : 0;
            bool best = pw >= best_pfx - EPS;
            /* would the load scorers alone have put another endpoint strictly ahead? */
            bool mattered = false;
            for (size_t i = 0; i < n && best; i++)
                if (cand[i] && i != win && nopfx[i] >= nopfx[win] - EPS)
                    mattered = true;
            if (best && mattered)
                r.reason = FATIA_ROUTE_PREFIX;
        }
        break;
    }
    if (n_cand == 1)
        r.reason = FATIA_ROUTE_ONLY_CANDIDATE;
    *ret = r;
out:
    if (cand != cand_stack) {
        fatia_free(cand);
        fatia_free(key);
        fatia_free(nopfx);
    }
    return rc;
}

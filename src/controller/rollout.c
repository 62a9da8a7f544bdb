/*
 * controller/rollout.c: a Deployment's rolling-update arithmetic (see rollout.h).
 *
 * Transcribed rule by rule from pkg/controller/deployment/rolling.go and util/deployment_util.go
 * (kubernetes/kubernetes); tests/unit/test_rollout.c carries upstream's own tables for it.
 * Invariants: the new ReplicaSet never takes the total past replicas + maxSurge, and the old ones
 * never shrink while it would leave fewer than replicas - maxUnavailable pods available, counting
 * the new set's unavailable pods as not available. Unavailable old pods go first: they cost no
 * availability.
 */
#include "base/compat.h"

#include "controller/rollout.h"

int64_t fatia_ctlr_rollout_scaled(const json_t *v, int64_t total, bool round_up)
{
    const char *s;
    size_t n;
    int64_t p = 0;

    if (json_is_integer(v))
        return json_integer_value(v);
    if (!json_is_string(v))
        return 0;
    s = json_string_value(v);
    n = strlen(s);
    if (n < 2 || s[n - 1] != '%' || strspn(s, "0123456789") != n - 1 || n > 12)
        return 0;
    for (size_t i = 0; i + 1 < n; i++)
        p = p * 10 + (s[i] - '0');
    return round_up ? (p * total + 99) / 100 : p * total / 100;
}

void fatia_ctlr_rollout_fenceposts(const json_t *max_surge, const json_t *max_unavailable,
                                   int64_t replicas, int64_t *ret_surge, int64_t *ret_unavailable)
{
    int64_t surge = fatia_ctlr_rollout_scaled(max_surge, replicas, true);
    int64_t unavailable = fatia_ctlr_rollout_scaled(max_unavailable, replicas, false);

    if (surge == 0 && unavailable == 0)
        unavailable = 1;
    *ret_surge = surge;
    *ret_unavailable = unavailable;
}

int64_t fatia_ctlr_rollout_new_replicas(int64_t replicas, int64_t surge, int64_t all_spec,
                                        int64_t new_spec)
{
    int64_t max_total = replicas + surge, up;

    if (new_spec >= replicas)
        return replicas; /* scale down (or stay) to replicas */
    if (all_spec >= max_total)
        return new_spec;
    up = max_total - all_spec;
    if (up > replicas - new_spec)
        up = replicas - new_spec;
    return new_spec + up;
}

int64_t fatia_ctlr_rollout_cleanup_unhealthy(struct fatia_rollout_rs *old, size_t n,
                                             int64_t max_cleanup)
{
    int64_t cleaned = 0;

    for (size_t i = 0; i < n && cleaned < max_cleanup; i++) {
        int64_t c;
        if (old[i].want == 0 || old[i].want <= old[i].available)
            continue;
        c = old[i].want - old[i].available;
        if (c > max_cleanup - cleaned)
            c = max_cleanup - cleaned;
        old[i].want -= c;
        cleaned += c;
    }
    return cleaned;
}

int64_t fatia_ctlr_rollout_scale_old(int64_t replicas, int64_t max_unavailable, int64_t new_spec,
                                     int64_t new_available, struct fatia_rollout_rs *old, size_t n)
{
    int64_t old_count = 0, all = new_spec, min_available, max_down, cleaned = 0, avail;
    int64_t down = 0, goal;

    if (max_unavailable > replicas)
        max_unavailable = replicas;
    for (size_t i = 0; i < n; i++) {
        old[i].want = old[i].spec;
        old_count += old[i].spec;
        all += old[i].spec;
    }
    if (old_count == 0)
        return 0;
    min_available = replicas - max_unavailable;
    max_down = all - min_available - (new_spec - new_available);
    if (max_down <= 0)
        return 0;
    cleaned = fatia_ctlr_rollout_cleanup_unhealthy(old, n, max_down);
    /* scaleDownOldReplicaSetsForRollingUpdate */
    avail = new_available;
    for (size_t i = 0; i < n; i++)
        avail += old[i].available;
    if (avail > min_available) {
        goal = avail - min_available;
        for (size_t i = 0; i < n && down < goal; i++) {
            int64_t c = old[i].want;
            if (c == 0)
                continue;
            if (c > goal - down)
                c = goal - down;
            old[i].want -= c;
            down += c;
        }
    }
    return cleaned + down;
}

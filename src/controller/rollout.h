/*
 * controller/rollout.h: the arithmetic of a Deployment's rolling update, as
 * kube-controller-manager's deployment controller does it (pkg/controller/deployment/rolling.go,
 * util/deployment_util.go): how far the new ReplicaSet may grow and how far the old ones may
 * shrink, given maxSurge and maxUnavailable. Pure: no I/O, no clock; deployment.c applies it.
 */
#ifndef FATIA_CONTROLLER_ROLLOUT_H
#define FATIA_CONTROLLER_ROLLOUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An IntOrString ("25%" or 3) of total, rounded up or down (GetScaledValueFromIntOrPercent);
 * a value that is neither gives 0. */
int64_t fatia_ctlr_rollout_scaled(const json_t *v, int64_t total, bool round_up);

/* maxSurge (rounded up) and maxUnavailable (rounded down) of replicas; both 0 makes
 * maxUnavailable 1 (ResolveFenceposts). */
void fatia_ctlr_rollout_fenceposts(const json_t *max_surge, const json_t *max_unavailable,
                                   int64_t replicas, int64_t *ret_surge, int64_t *ret_unavailable);

/* The new ReplicaSet's replicas for a rolling update (NewRSNewReplicas, reconcileNewReplicaSet):
 * all_spec is the sum of spec.replicas of every ReplicaSet (the new one included), new_spec the
 * new one's. */
int64_t fatia_ctlr_rollout_new_replicas(int64_t replicas, int64_t surge, int64_t all_spec,
                                        int64_t new_spec);

/* One old ReplicaSet: its spec.replicas and status.availableReplicas in, the replicas it should
 * have out (want). Callers pass them oldest first. */
struct fatia_rollout_rs {
    int64_t spec, available;
    int64_t want;
};

/* cleanupUnhealthyReplicas: lowers want (start it at spec) by the old sets' unavailable pods,
 * oldest first, at most max_cleanup in all; returns how many. */
int64_t fatia_ctlr_rollout_cleanup_unhealthy(struct fatia_rollout_rs *old, size_t n,
                                             int64_t max_cleanup);

/* reconcileOldReplicaSets: first the old sets' unavailable pods go (cleanupUnhealthyReplicas),
 * then available ones while more than replicas - maxUnavailable stay available
 * (scaleDownOldReplicaSetsForRollingUpdate). Sets old[i].want; returns the pods scaled down. */
int64_t fatia_ctlr_rollout_scale_old(int64_t replicas, int64_t max_unavailable, int64_t new_spec,
                                     int64_t new_available, struct fatia_rollout_rs *old, size_t n);

#endif

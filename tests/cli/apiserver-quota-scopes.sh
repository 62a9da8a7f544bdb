#!/usr/bin/env bash
# tests/cli/apiserver-quota-scopes.sh: ResourceQuota scopes and scopeSelector
# (controller/quota_scope.c) as kube-apiserver enforces them, with kubectl 1.33: a quota with
# BestEffort, NotBestEffort, Terminating, NotTerminating or a PriorityClass selector counts only
# the pods its scopes match, in admission (403 with upstream's message) and in status.used; a pod
# outside every scope is not held back by it; a ConfigMap is outside every scoped quota.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
agent_setup
trap '[ -n "$FATIAD_PID" ] && kill -9 "$FATIAD_PID" 2>/dev/null; rm -rf "$TMP"' EXIT
D=$TMP/d
FATIAD_CONTROLLERS=1 start_fatiad "$D" --no-agent || exit 1
k create namespace qs >/dev/null || fail "create namespace qs"
k create namespace qp >/dev/null || fail "create namespace qp"
k create priorityclass high --value=1000 >/dev/null || fail "create priorityclass high"
cat <<EOF | k -n qp apply -f - >/dev/null || fail "create the PriorityClass quota"
apiVersion: v1
kind: ResourceQuota
metadata: {name: pc}
spec:
  hard: {pods: "1"}
  scopeSelector:
    matchExpressions: [{scopeName: PriorityClass, operator: In, values: [high]}]
EOF
NS=qs
cat <<EOF | k -n qs apply -f - >/dev/null || fail "create the quotas"
apiVersion: v1
kind: ResourceQuota
metadata: {name: be}
spec: {hard: {pods: "1"}, scopes: [BestEffort]}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: nbe}
spec: {hard: {pods: "3", requests.cpu: 100m}, scopes: [NotBestEffort, NotTerminating]}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: term}
spec: {hard: {pods: "1"}, scopes: [Terminating]}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: cm}
spec: {hard: {count/configmaps: "0"}, scopes: [BestEffort]}
EOF
pod() { # NAME CPU(or -) [EXTRA SPEC LINE]
    local res="" extra=${3:-}
    [ "$2" != - ] && res="    resources: {requests: {cpu: $2}}"
    cat <<EOF | k -n "$NS" create -f - >"$TMP/out" 2>"$TMP/err"
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
$extra
  containers:
  - name: c
    image: busybox
$res
EOF
}
ok() { pod "$@" || fail "pod $1 refused: $(cat "$TMP/err")"; }
no() { # QUOTA NAME ...
    local q=$1
    shift
    if pod "$@"; then fail "ATTACK SUCCEEDED: pod $1 passed quota $q"; return; fi
    grep -q "exceeded quota: $q," "$TMP/err" || fail "pod $1: refused, but not by quota $q: $(cat "$TMP/err")"
}
ok be1 -
no be be2 -
ok nb1 40m
ok nb2 40m
no nbe nb3 40m # requests.cpu 120m > 100m
# Terminating: a deadline; NotBestEffort with a deadline is outside nbe (NotTerminating)
ok t1 1m "  activeDeadlineSeconds: 60"
no term t2 1m "  activeDeadlineSeconds: 60"
# PriorityClass In [high], in its own namespace: a pod of no class is outside it
NS=qp
ok hi1 10m "  priorityClassName: high"
no pc hi2 5m "  priorityClassName: high"
ok lo1 10m
ok lo2 -
NS=qs
# a ConfigMap is outside every scoped quota (count/configmaps: 0 under BestEffort)
k -n qs create configmap c --from-literal=a=b >/dev/null 2>&1 || fail "a scoped quota held back a ConfigMap"
used() { k -n "$2" get quota "$1" -o 'jsonpath={.status.used.pods} {.status.used.requests\.cpu}'; }
is_used() { [ "$(used "$1" "$2")" = "$3" ]; }
wait_for 20 is_used be qs "1 "
wait_for 20 is_used nbe qs "2 80m"
wait_for 20 is_used term qs "1 "
wait_for 20 is_used pc qp "1 "
finish

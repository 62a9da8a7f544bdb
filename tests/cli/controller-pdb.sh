#!/usr/bin/env bash
# tests/cli/controller-pdb.sh: a PodDisruptionBudget's status as the disruption controller keeps
# it (expectedPods, currentHealthy, desiredHealthy, disruptionsAllowed, DisruptionAllowed), with
# kubectl 1.27 and 1.33: minAvailable as an integer and a percentage, maxUnavailable; a pod's
# readiness (written through the status subresource, as the node agent does) and its deletion
# move the figures; pods the selector does not match and pods that ended are not counted.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
K27=$KUBECTL_DIR/kubectl.1.27
K33=$KUBECTL_DIR/kubectl.1.33
FATIAD_CONTROLLERS=1 start_fatiad "$TMP/data" --no-agent || exit 1
k() { "$K33" --kubeconfig "$KCFG" "$@"; }
k create namespace pd >/dev/null
for p in w1 w2 w3 other; do
    app=web
    [ $p = other ] && app=db
    cat <<EOF | k create -f - >/dev/null || fail "create pod $p"
apiVersion: v1
kind: Pod
metadata: {name: $p, namespace: pd, labels: {app: $app}}
spec:
  schedulingGates: [{name: test.fatia.dev/hold}]
  containers: [{name: main, image: busybox, command: [sleep, "600"]}]
EOF
done
ready() { # pod True|False
    k -n pd patch pod "$1" --subresource=status --type merge \
        -p "{\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"$2\"}]}}" >/dev/null ||
        fail "cannot set $1 Ready=$2"
}
for p in w1 w2 w3 other; do ready $p True; done
expect_rc 0 "$K27" --kubeconfig "$KCFG" -n pd create pdb web --selector=app=web --min-available=2
expect_rc 0 k -n pd create pdb pct --selector=app=web --min-available=50%
expect_rc 0 k -n pd create pdb mu --selector=app=web --max-unavailable=1
st() { k -n pd get pdb "$1" -o jsonpath='{.status.expectedPods} {.status.currentHealthy} {.status.desiredHealthy} {.status.disruptionsAllowed} {.status.conditions[0].status}'; }
want() { # pdb status...
    local b=$1
    shift
    for _ in $(seq 100); do [ "$(st "$b")" = "$*" ] && return 0; sleep 0.1; done
    fail "pdb $b: '$(st "$b")', want '$*'"
}
want web 3 3 2 1 True
want pct 3 3 2 1 True
want mu 3 3 2 1 True
"$K27" --kubeconfig "$KCFG" -n pd get pdb web >"$TMP/get"
grep -Eq '^web +2 +N/A +1 ' "$TMP/get" || fail "kubectl 1.27 get pdb: $(cat "$TMP/get")"
# one pod not ready: no disruption allowed
ready w2 False
want web 3 2 2 0 False
want mu 3 2 2 0 False
# a pod that ended is not expected; a deleted one neither
ready w2 True
k -n pd patch pod w3 --subresource=status --type merge -p '{"status":{"phase":"Succeeded"}}' >/dev/null
want web 2 2 2 0 False
want pct 2 2 1 1 True
k -n pd delete pod w3 >/dev/null
want mu 2 2 1 1 True
finish

#!/usr/bin/env bash
# tests/cli/apiserver-quota.sh: ResourceQuota and LimitRange enforced at admission as
# kube-apiserver's ResourceQuota and LimitRanger plugins, with kubectl 1.27 and 1.33: LimitRange
# defaults written into a pod, min and max refused with upstream's messages; a quota's pods,
# requests.cpu, limits.memory, count/configmaps and requests.nvidia.com/gpu refused with 403
# "exceeded quota: q, requested: ..., used: ..., limited: ..."; "must specify"; a tenant trying
# every verb (create, apply, server-side apply, replace, patch, a Deployment's controller) never
# gets past the quota; a pod that ended frees its share.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
K27=$KUBECTL_DIR/kubectl.1.27
K33=$KUBECTL_DIR/kubectl.1.33
D=$TMP/data
FATIAD_CONTROLLERS=1 start_fatiad "$D" --no-agent || exit 1
k() { "$K33" --kubeconfig "$KCFG" "$@"; }

k create namespace team-a >/dev/null || fail "create namespace team-a"
cat >"$TMP/limits.yaml" <<'EOF'
apiVersion: v1
kind: LimitRange
metadata: {name: lr, namespace: team-a}
spec:
  limits:
  - type: Container
    default: {cpu: 200m, memory: 128Mi}
    defaultRequest: {cpu: 100m}
    min: {cpu: 50m}
    max: {cpu: 500m}
EOF
expect_rc 0 "$K27" --kubeconfig "$KCFG" create -f "$TMP/limits.yaml"
expect_rc 0 "$K27" --kubeconfig "$KCFG" -n team-a create quota q \
    --hard=pods=3,requests.cpu=300m,limits.memory=400Mi,count/configmaps=3,requests.nvidia.com/gpu=1
mk() { pod "$@" >"$TMP/$1.yaml"; }
pod() { # name [cpu-request [more of the resources map]]
    cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: team-a}
spec:
  schedulingGates: [{name: test.fatia.dev/hold}]
  containers:
  - name: main
    image: busybox
    command: [sleep, "600"]
EOF
    if [ -n "${2:-}" ]; then
        echo "    resources: {requests: {cpu: $2}${3:-}}"
    fi
}

# ---- LimitRanger: defaults written, min and max refused ----
pod p1 | k create -f - >/dev/null || fail "create p1"
[ "$(k -n team-a get pod p1 -o jsonpath='{.spec.containers[0].resources.limits.cpu} {.spec.containers[0].resources.requests.cpu} {.spec.containers[0].resources.limits.memory} {.spec.containers[0].resources.requests.memory}')" = "200m 100m 128Mi 128Mi" ] ||
    fail "LimitRange defaults: $(k -n team-a get pod p1 -o jsonpath='{.spec.containers[0].resources}')"
mk small 10m
expect_rc 1 "$K27" --kubeconfig "$KCFG" create -f "$TMP/small.yaml"
expect_line "$TMP/err" 'pods "small" is forbidden: minimum cpu usage per Container is 50m, but request is 10m'
mk big 100m ", limits: {cpu: \"2\"}"
expect_rc 1 k create -f "$TMP/big.yaml"
expect_line "$TMP/err" 'pods "big" is forbidden: maximum cpu usage per Container is 500m, but limit is 2'

# ---- ResourceQuota: requests.cpu (p1 holds 100m of 300m) ----
pod p2 150m | k create -f - >/dev/null || fail "create p2 (within the quota)"
mk p3 100m
expect_rc 1 "$K27" --kubeconfig "$KCFG" create -f "$TMP/p3.yaml"
expect_line "$TMP/err" 'pods "p3" is forbidden: exceeded quota: q, requested: requests.cpu=100m, used: requests.cpu=250m, limited: requests.cpu=300m'
k -n team-a get pod p3 >/dev/null 2>&1 && fail "a pod over the quota was stored"
# limits.memory: 128Mi each by default, 400Mi: a third pod at 50m fits cpu, and memory
pod p3 50m | k create -f - >/dev/null || fail "create p3 (cpu 300m of 300m)"
# status.used, as the resourcequota controller keeps it (kubectl describe quota shows it)
used() { k -n team-a get quota q -o jsonpath='{.status.used.pods} {.status.used.requests\.cpu} {.status.used.limits\.memory} {.status.used.count/configmaps}'; }
for _ in $(seq 100); do [ "$(used)" = "3 300m 384Mi 0" ] && break; sleep 0.1; done
# (the namespace's kube-root-ca.crt counts, as upstream's does)
[ "$(used)" = "3 300m 384Mi 1" ] || fail "status.used: '$(used)', want '3 300m 384Mi 1'"
"$K27" --kubeconfig "$KCFG" -n team-a describe quota q >"$TMP/describe" 2>&1
grep -Eq '^requests.cpu +300m +300m' "$TMP/describe" || fail "kubectl 1.27 describe quota: $(cat "$TMP/describe")"
# pods=3 now reached (p1 p2 p3), and the cpu too: both are named
mk p4 50m
expect_rc 1 k create -f "$TMP/p4.yaml"
grep -q 'exceeded quota: q, requested: ' "$TMP/err" || fail "p4: $(cat "$TMP/err")"
grep -q 'pods=1' "$TMP/err" || fail "p4 over pods=3: $(cat "$TMP/err")"

# ---- a tenant, by every verb ----
expect_rc 0 "$FATIA" token create --data-dir "$D" --user mallory --namespace team-a
cp "$TMP/out" "$TMP/mallory.kubeconfig"
sed -i 's/^\(\s*namespace:\).*/\1 team-a/' "$TMP/mallory.kubeconfig"
for _ in $(seq 50); do
    "$K33" --kubeconfig "$TMP/mallory.kubeconfig" -n team-a get pods >/dev/null 2>&1 && break
    sleep 0.1
done
M() { "$K33" --kubeconfig "$TMP/mallory.kubeconfig" -n team-a "$@"; }
pod m1 50m >"$TMP/m1.yaml"
expect_rc 1 M create -f "$TMP/m1.yaml"
expect_line "$TMP/err" 'exceeded quota: q'
expect_rc 1 M apply -f "$TMP/m1.yaml"
grep -q 'exceeded quota: q' "$TMP/err" || fail "kubectl apply: $(cat "$TMP/err")"
expect_rc 1 M apply --server-side -f "$TMP/m1.yaml"
grep -q 'exceeded quota: q' "$TMP/err" || fail "server-side apply: $(cat "$TMP/err")"
expect_rc 1 M run m2 --image=busybox --restart=Never -- sleep 1
grep -q 'exceeded quota: q' "$TMP/err" || fail "kubectl run: $(cat "$TMP/err")"
# raising a pod's requests by patch or replace is refused (the pod's own rules, or the quota)
M get pod p3 -o json >"$TMP/p3.json"
expect_rc 1 M patch pod p3 --type json -p '[{"op":"replace","path":"/spec/containers/0/resources/requests/cpu","value":"2"}]'
sed 's/"cpu": "50m"/"cpu": "2"/' "$TMP/p3.json" >"$TMP/p3-big.json"
expect_rc 1 M replace -f "$TMP/p3-big.json"
[ "$(M get pod p3 -o jsonpath='{.spec.containers[0].resources.requests.cpu}')" = 50m ] ||
    fail "p3's request changed"
# object counts: count/configmaps=3, one of them kube-root-ca.crt
expect_rc 0 M create configmap c1 --from-literal=a=1
expect_rc 0 M create configmap c2 --from-literal=a=1
expect_rc 1 M create configmap c3 --from-literal=a=1
expect_line "$TMP/err" 'error: failed to create configmap: configmaps "c3" is forbidden: exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=3, limited: count/configmaps=3'
# a Deployment's pods are refused too: its ReplicaSet creates none past the quota
M create deployment web --image=busybox --replicas=2 -- sleep 600 >/dev/null 2>&1
sleep 2
n=$(M get pods -o name | wc -l)
[ "$n" = 3 ] || fail "pods past the quota through a Deployment: $n pods: $(M get pods -o name | tr '\n' ' ')"

# ---- a pod that ended frees its share; the GPU request ----
k -n team-a delete pod p2 p3 --wait=false >/dev/null
for _ in $(seq 50); do [ "$(k -n team-a get pods -o name | wc -l)" -le 2 ] && break; sleep 0.1; done
k -n team-a delete deployment web >/dev/null 2>&1
for _ in $(seq 50); do [ "$(k -n team-a get pods -o name | wc -l)" -le 1 ] && break; sleep 0.1; done
pod g1 50m ", limits: {nvidia.com/gpu: \"1\"}" | k create -f - >/dev/null || fail "create g1 (one GPU)"
mk g2 50m ", limits: {nvidia.com/gpu: \"1\"}"
expect_rc 1 k create -f "$TMP/g2.yaml"
expect_line "$TMP/err" 'pods "g2" is forbidden: exceeded quota: q, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=1, limited: requests.nvidia.com/gpu=1'

# ---- must specify ----
k create namespace team-b >/dev/null
k -n team-b create quota strict --hard=limits.cpu=1 >/dev/null
pod nolimit | sed 's/team-a/team-b/' >"$TMP/nolimit.yaml"
expect_rc 1 k create -f "$TMP/nolimit.yaml"
expect_line "$TMP/err" 'pods "nolimit" is forbidden: failed quota: strict: must specify limits.cpu for: main'
finish

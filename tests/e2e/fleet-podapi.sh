#!/bin/bash
# tests/e2e/fleet-podapi.sh (fast tier): a node role's pods keep the API when the replica they
# reach goes (agent/apiproxy.c's failover over --server): one etcd member, two control
# replicas A and B (tests/e2e/fleet.bash: one ServiceAccount signing key for both), started
# once to make their certificates and again with `--root-ca-file` of both (the kube-root-ca.crt
# pods verify the API with); one `fatiad --role node --server A,B` for box-0 with a recorded
# node token, its pods in runc containers of the busybox image this test builds:
#   1. a pod on box-0 with the default kube-api-access volume runs kubectl in-cluster every
#      0.3 s (KUBERNETES_SERVICE_HOST/PORT: the agent's proxy on its gateway) and lists team-a's
#      pods as its ServiceAccount (a RoleBinding of view);
#   2. kill -9 of A, the first --server: the pod's next calls reach B through the same
#      proxy, with the same token (made through A) and the same ca.crt: they succeed again
#      within 10 s, and box-0's log says the proxy moved.
# Skipped without root, runc, umoci, skopeo, busybox or the CNI plugins.
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fleet.bash"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || skip "containers need root"
need_tools runc umoci skopeo busybox
[ -x /usr/lib/cni/bridge ] || skip "the CNI plugins are not installed (scripts/setup installs them)"
find_kubectl
chmod 711 "$TMP"
export HOME=$TMP/home
mkdir -p "$HOME" "$TMP/box-0/agent" "$TMP/podout"
chmod 777 "$TMP/podout"

start_etcd fleet 1 || finish
PIDS=()
NR=
cleanup() {
    local c
    [ -n "$NR" ] && kill -9 "$NR" 2>/dev/null
    kill_agent_pods "$TMP"/box-0/agent/status/*.json
    for c in $(runc --root "$TMP/box-0/agent/runc" list -q 2>/dev/null); do
        runc --root "$TMP/box-0/agent/runc" delete --force "$c" 2>/dev/null
    done
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    grep -o " ${TMP}[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
    etcd_cleanup
    rm -rf "$TMP"
}
trap cleanup EXIT

"$SRC/scripts/images/busybox" "$TMP/busybox.tar" || { fail "cannot build the image"; finish; }
expect_rc 0 "$FATIA" image load -d "$TMP/box-0" --name fatia.dev/busybox:1 "$TMP/busybox.tar"

# the certificates first (each replica makes its own at its first start), then both replicas
# with both certificates as the pods' kube-root-ca.crt
replica A
replica B
cat "$TMP/A/tls.crt" "$TMP/B/tls.crt" >"$TMP/ca.crt"
kill -9 "$A_PID" "$B_PID"
wait "$A_PID" "$B_PID" 2>/dev/null
export FLEET_ARGS="--root-ca-file $TMP/ca.crt"
replica A
replica B
K=$B_K
wait_until 20 $K get node box-0 -o name
wait_until 20 eval '$K get configmap kube-root-ca.crt -n team-a -o jsonpath="{.data.ca\.crt}" | grep -c "BEGIN CERTIFICATE" | grep -qx 2' ||
    fail "kube-root-ca.crt does not hold both replicas' certificates"
$K create namespace kube-node-lease >/dev/null 2>&1
"$FATIA" token create --node box-0 --record --output-file "$TMP/box-0.token" >"$TMP/rec.json" ||
    fail "fatia token create --record"
$K apply -f "$TMP/rec.json" >/dev/null || fail "the admin could not apply the record"
"$FATIAD" --role node --server "$A_URL,$B_URL" --token "$TMP/box-0.token" --ca "$TMP/ca.crt" \
    --node-name box-0 --data-dir "$TMP/box-0" --agent runtime=oci \
    --agent host-path-namespaces=team-a >"$TMP/box-0.log" 2>&1 &
NR=$!
$K -n team-a create serviceaccount runner >/dev/null || fail "create sa runner"
$K -n team-a create rolebinding runner-view --clusterrole=view --serviceaccount=team-a:runner \
    >/dev/null || fail "bind view to team-a:runner"

# ---- 1. the pod lists its namespace's pods, again and again ----
$K create -f - >/dev/null <<EOF || fail "cannot create pod app"
apiVersion: v1
kind: Pod
metadata: {name: app, namespace: team-a}
spec:
  nodeName: box-0
  serviceAccountName: runner
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: kbin, hostPath: {path: $KUBECTL_DIR}}
  - {name: out, hostPath: {path: $TMP/podout}}
  containers:
  - name: main
    image: fatia.dev/busybox:1
    env: [{name: HOME, value: /tmp}]
    command: ["sh", "-c", "env >/out/env; ls -la /var/run/secrets/kubernetes.io/serviceaccount/ >/out/ls 2>&1; wc -c /var/run/secrets/kubernetes.io/serviceaccount/* >>/out/ls 2>&1; id >>/out/ls; i=0; while :; do i=\$((i+1)); if timeout 3 /kbin/kubectl.1.33 get pods -n team-a -o name >/tmp/o 2>&1; then echo \"\$i ok\" >>/out/log; else echo \"\$i fail \$(head -c 200 /tmp/o)\" >>/out/log; fi; sleep 0.3; done"]
    volumeMounts: [{name: kbin, mountPath: /kbin, readOnly: true}, {name: out, mountPath: /out}]
EOF
oks() { grep -c ' ok$' "$TMP/podout/log" 2>/dev/null; }
wait_until 40 eval '[ "$(oks)" -ge 2 ]' || {
    tail -5 "$TMP/podout/log" >&2
    grep KUBERNETES "$TMP/podout/env" >&2
    cat "$TMP/podout/ls" >&2
    tail -20 "$TMP/box-0.log" >&2
    fail "the pod's kubectl never listed team-a's pods"
    finish
}

# ---- 2. A goes: the pod's calls reach B ----
kill -9 "$A_PID"
t0=$(date +%s%N)
n0=$(wc -l <"$TMP/podout/log")
sleep 0.5
back() { tail -n +"$((n0 + 2))" "$TMP/podout/log" | grep -q ' ok$'; }
wait_until 10 back || {
    tail -8 "$TMP/podout/log" >&2
    fail "the pod's API calls did not succeed again within 10 s of A's loss"
}
echo "the pod's API back $((($(date +%s%N) - t0) / 1000000)) ms after kill -9 of A;" \
    "$(tail -n +"$((n0 + 1))" "$TMP/podout/log" | grep -c fail) failed call(s) between"
grep -q "API replica 1 of 2 did not accept" "$TMP/box-0.log" ||
    fail "box-0's proxy did not say it moved: $(grep apiproxy "$TMP/box-0.log" | tail -3)"
kill -TERM "$NR"
wait "$NR" || fail "box-0's node role exited $? after SIGTERM"
NR=
finish

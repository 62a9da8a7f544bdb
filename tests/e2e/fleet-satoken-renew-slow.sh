#!/bin/bash
# tests/e2e/fleet-satoken-renew-slow.sh: a node role renews its pod's projected ServiceAccount
# token before it expires, at 80 % of its life as kubelet does (agent/satoken.c through
# daemon/remote.c's TokenRequest; docs/fleet.md "The node role"): a pod on `fatiad --role node`
# with a serviceAccountToken source of expirationSeconds 600 (the least a TokenRequest takes)
# reads a new token after about 480 s and before 600 s, through the same file; the new token
# works against the control plane, and the old one until its own expiry. About 9 minutes.
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
export FATIAD_CONTROLLERS=1
NR=
trap node_role_cleanup EXIT
"$SRC/scripts/images/busybox" "$TMP/busybox.tar" || { fail "cannot build the image"; finish; }
expect_rc 0 "$FATIA" image load -d "$TMP/box-0" --name fatia.dev/busybox:1 "$TMP/busybox.tar"
start_fatiad "$TMP/data" --fleet examples/fleet/ -f examples/ --no-agent || { finish; exit 1; }
K="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $KCFG"
wait_until 20 $K get node box-0 -o name
$K create namespace kube-node-lease >/dev/null 2>&1 || fail "kubectl create namespace kube-node-lease"
"$FATIA" token create --data-dir "$TMP/data" --node box-0 >/dev/null 2>&1 || fail "token for box-0"
awk '$2 == "system:node:box-0" {print $1; exit}' "$TMP/data/tokens" >"$TMP/box-0.token"
"$FATIAD" --role node --server "$URL" --token "$TMP/box-0.token" --ca "$CA" --node-name box-0 \
    --data-dir "$TMP/box-0" --agent runtime=oci --agent host-path-namespaces=default \
    >"$TMP/box-0.log" 2>&1 &
NR=$!
cat <<EOF | $K create -f - >/dev/null || fail "create the pod"
apiVersion: v1
kind: Pod
metadata: {name: renew, namespace: default}
spec:
  nodeName: box-0
  terminationGracePeriodSeconds: 1
  automountServiceAccountToken: false
  containers:
  - name: main
    image: fatia.dev/busybox:1
    command: ["sh", "-c", "while true; do cp /tok/token /out/t.tmp && mv /out/t.tmp /out/token; sleep 1; done"]
    volumeMounts: [{name: tok, mountPath: /tok, readOnly: true}, {name: out, mountPath: /out}]
  volumes:
  - {name: out, hostPath: {path: $TMP/podout}}
  - name: tok
    projected:
      sources:
      - serviceAccountToken: {path: token, expirationSeconds: 600}
EOF
wait_until 60 test -s "$TMP/podout/token" || tail -20 "$TMP/box-0.log" >&2
T0=$SECONDS
OLD=$(cat "$TMP/podout/token")
[ -n "$OLD" ] || fail "no token in the pod"
code() { curl -s -o /dev/null -w '%{http_code}' --cacert "$CA" -H "Authorization: Bearer $1" "$URL/api/v1/namespaces/default/pods/renew"; }
[ "$(code "$OLD")" = 403 ] || fail "the token is not taken as the ServiceAccount's (want 403 without a binding): $(code "$OLD")"
NEW=$OLD
while [ "$NEW" = "$OLD" ] && [ $((SECONDS - T0)) -lt 590 ]; do
    sleep 5
    NEW=$(cat "$TMP/podout/token" 2>/dev/null || echo "$OLD")
done
AGE=$((SECONDS - T0))
echo "renewed after ${AGE}s"
[ "$NEW" != "$OLD" ] || fail "the token was not renewed before it expired"
[ "$AGE" -ge 450 ] || fail "the token was renewed after ${AGE}s, before 80 % of its life"
[ "$(code "$NEW")" = 403 ] || fail "the renewed token is refused: $(code "$NEW")"
[ "$(code "$OLD")" = 403 ] || fail "the old token stopped before its expiry: $(code "$OLD")"
kill -TERM "$NR"
wait "$NR" || fail "box-0's node role exited $? after SIGTERM"
NR=
stop_fatiad
finish

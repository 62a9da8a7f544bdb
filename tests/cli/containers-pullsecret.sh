#!/usr/bin/env bash
# tests/cli/containers-pullsecret.sh: imagePullSecrets passed to the image puller
# (src/agent/pullauth.c: skopeo --authfile per pod) against Debian's docker-registry with
# htpasswd auth, started here on loopback: a pod without a pull secret is ErrImagePull (the
# registry's 401 in the message); with a kubernetes.io/dockerconfigjson Secret made by `kubectl
# create secret docker-registry` it runs; a pod of another namespace naming a Secret of that name
# that it does not have gets no credentials (the lookup is the pod's own namespace) and a Warning
# Event names the missing Secret; no password is in fatiad's log, an Event or a pod's status.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || skip "containers need root"
need_tools runc umoci skopeo busybox docker-registry htpasswd
agent_setup
REG_PID=
cleanup() {
    agent_cleanup
    [ -n "$FATIAD_PID" ] && kill -9 "$FATIAD_PID" 2>/dev/null
    [ -n "$REG_PID" ] && kill "$REG_PID" 2>/dev/null
    for c in $(runc --root "$D/agent/runc" list -q 2>/dev/null); do
        runc --root "$D/agent/runc" delete --force "$c" 2>/dev/null
    done
    grep -o " $TMP[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
    rm -rf "$TMP"
}
trap cleanup EXIT
D=$TMP/d
PASS=Pull-Pa55-$$
htpasswd -Bbn puller "$PASS" >"$TMP/htpasswd" || { fail "htpasswd"; finish; }
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$TMP/registry.yml" <<EOF
version: 0.1
storage: {filesystem: {rootdirectory: $TMP/registry}}
http: {addr: 127.0.0.1:$PORT}
auth: {htpasswd: {realm: fatia-test, path: $TMP/htpasswd}}
EOF
docker-registry serve "$TMP/registry.yml" >"$TMP/registry.log" 2>&1 &
REG_PID=$!
for _ in $(seq 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/v2/")" = 401 ] && break
    sleep 0.1
done
"$SRC/scripts/images/busybox" "$TMP/busybox.tar" || { fail "cannot build the image"; finish; }
REF=127.0.0.1:$PORT/private/busybox:1
skopeo --insecure-policy copy -q --dest-tls-verify=false --dest-creds "puller:$PASS" \
    "oci-archive:$TMP/busybox.tar" "docker://$REF" || { fail "cannot push with credentials"; finish; }
skopeo inspect --tls-verify=false "docker://$REF" >/dev/null 2>&1 && fail "the registry answers without credentials"

start_fatiad "$D" --no-controllers --agent runtime=oci --agent "insecure-registries=127.0.0.1:$PORT" \
    --agent restart-backoff=1s --agent restart-backoff-max=2s || exit 1
k create secret docker-registry regcred --docker-server="127.0.0.1:$PORT" --docker-username=puller \
    --docker-password="$PASS" >/dev/null || fail "kubectl create secret docker-registry"
k create namespace other >/dev/null
"$KUBECTL_DIR/kubectl.1.27" --kubeconfig "$KCFG" -n other create secret generic unrelated \
    --from-literal=x=y >/dev/null || fail "kubectl 1.27: create secret"

mkpod() { # NAME NAMESPACE [SECRET]
    local ips=""
    [ -n "${3:-}" ] && ips="imagePullSecrets: [{name: $3}]"
    cat >"$TMP/$1.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: $2}
spec:
  nodeName: node-0
  restartPolicy: Never
  $ips
  containers:
  - name: main
    image: $REF
    imagePullPolicy: Always
    command: ["sh", "-c", "echo pulled-with-secret"]
EOF
    k create -f "$TMP/$1.yaml" >/dev/null || fail "cannot create pod $1"
}
waiting() { [ "$(k -n "$2" get pod "$1" -o 'jsonpath={.status.containerStatuses[0].state.waiting.reason}' 2>/dev/null)" = "$3" ]; }

mkpod nosecret default
wait_for 40 waiting nosecret default ErrImagePull
k get pod nosecret -o 'jsonpath={.status.containerStatuses[0].state.waiting.message}' | grep -qi "unauthorized\|authentication required\|401" ||
    fail "no-secret pull message: $(k get pod nosecret -o 'jsonpath={.status.containerStatuses[0].state.waiting.message}')"
mkpod withsecret default regcred
wait_for 60 phase_is withsecret Succeeded
[ "$(k logs withsecret 2>/dev/null)" = pulled-with-secret ] || fail "logs: $(k logs withsecret 2>&1)"
mkpod thief other regcred
wait_for 40 waiting thief other ErrImagePull
k -n other get events -o 'jsonpath={.items[*].message}' | grep -qF "Unable to retrieve some image pull secrets (regcred)" ||
    fail "no Warning naming the missing Secret: $(k -n other get events -o 'jsonpath={.items[*].message}')"
[ "$(k -n other get pod thief -o 'jsonpath={.status.phase}')" = Pending ] || fail "another namespace pulled with the Secret"

k get events -A -o json >"$TMP/events.json" 2>/dev/null
k get pods -A -o json >"$TMP/pods.json" 2>/dev/null
grep -qF "$PASS" "$TMP/events.json" "$TMP/pods.json" "$D.log" && fail "the registry password is in an Event, a status or fatiad's log"
k delete pod --all -A --grace-period=0 --wait=false >/dev/null 2>&1
finish

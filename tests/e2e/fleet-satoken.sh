#!/bin/bash
# tests/e2e/fleet-satoken.sh: ServiceAccount tokens of a node role's pods (src/daemon/remote.c's
# TokenRequest, agent/apiproxy.c forwarding to --server, apiserver/nodeauth.c's token rule;
# docs/fleet.md "The node role"): one `fatiad --role node` (box-0; runc containers of the
# busybox image this test builds) joined to a control fatiad (its own agent off); box-1 is a
# node of the fleet that no node role runs (its pods stay bound and idle); the control plane
# listens on 127.0.0.2, so only a proxy that forwards to --server reaches it:
#   1. a pod on box-0 with the default kube-api-access volume runs kubectl in-cluster
#      (KUBERNETES_SERVICE_HOST/PORT, the volume's token and ca.crt): as
#      system:serviceaccount:team-a:runner it lists team-a's pods (a RoleBinding of view) and is
#      refused team-b's (no binding), and its namespace file says team-a;
#   2. hostile, with box-0's node token, each refusal checked by the message of the rule it
#      tests: a token of a service account only a pod of box-1 uses (the node authorizer); a
#      token bound to box-1's pod of the same service account as box-0's (scheduled on a
#      different node); unbound; bound without the pod's uid; for an audience the pod's volume
#      does not name; longer than the pod's projection asks for; an admin's token for a
#      service account bound to a pod running as another (satoken.c). A token bound to box-0's
#      pod as its projection asks is made (201): the rules do not refuse everything;
#   3. the pod deleted: its own token and the one box-0 made for it are refused (401).
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
mkdir -p "$HOME" "$TMP/fleet" "$TMP/box-0/agent" "$TMP/podout"
chmod 777 "$TMP/podout"
export FATIAD_CONTROLLERS=1
sed 's/^  count: 1$/  count: 2/' examples/fleet/00-box.yaml >"$TMP/fleet/00-box.yaml"
grep -q 'count: 2' "$TMP/fleet/00-box.yaml" || fail "could not make the two-node fleet"

NR=
trap node_role_cleanup EXIT

"$SRC/scripts/images/busybox" "$TMP/busybox.tar" || { fail "cannot build the image"; finish; }
expect_rc 0 "$FATIA" image load -d "$TMP/box-0" --name fatia.dev/busybox:1 "$TMP/busybox.tar"
IMG=fatia.dev/busybox:1

# on 127.0.0.2: the node role's API proxy must forward to --server, not to a loopback 127.0.0.1
start_fatiad "$TMP/data" --fleet "$TMP/fleet/" -f examples/ --no-agent --listen 127.0.0.2:0 ||
    { finish; exit 1; }
case $URL in https://127.0.0.2:*) ;; *) fail "the control plane is not on 127.0.0.2: $URL" ;; esac
K="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $KCFG"
wait_until 20 $K get node box-1 -o name
$K create namespace kube-node-lease >/dev/null 2>&1 || fail "kubectl create namespace kube-node-lease"
"$FATIA" token create --data-dir "$TMP/data" --node box-0 >/dev/null 2>&1 || fail "token for box-0"
NODE_TOKEN=$(awk '$2 == "system:node:box-0" {print $1; exit}' "$TMP/data/tokens")
echo "$NODE_TOKEN" >"$TMP/box-0.token"
"$FATIAD" --role node --server "$URL" --token "$TMP/box-0.token" --ca "$CA" --node-name box-0 \
    --data-dir "$TMP/box-0" --agent runtime=oci --agent host-path-namespaces=team-a \
    --agent restart-backoff=200ms \
    --agent restart-backoff-max=1s >"$TMP/box-0.log" 2>&1 &
NR=$!

for sa in runner far; do $K -n team-a create serviceaccount $sa >/dev/null || fail "create sa $sa"; done
$K -n team-a create rolebinding runner-view --clusterrole=view --serviceaccount=team-a:runner \
    >/dev/null || fail "bind view to team-a:runner"

pod() { # pod NAME NODE SA: a pod of the container spec on stdin, with the default token volume
    {
        cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: team-a}
spec:
  nodeName: $2
  serviceAccountName: $3
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
EOF
        cat
    } | $K create -f - >/dev/null || fail "cannot create pod $1"
}
# box-1's pods: nobody runs them, their binding is what the node authorizer reads
idle() { printf '  containers: [{name: main, image: %s, command: [sleep, "3600"]}]\n' "$IMG"; }
idle | pod far box-1 far
idle | pod near box-1 runner

# ---- 1. a pod of box-0 reaches the API as its ServiceAccount ----
t0=$SECONDS
pod app box-0 runner <<EOF
  volumes:
  - {name: kbin, hostPath: {path: $KUBECTL_DIR}}
  - {name: out, hostPath: {path: $TMP/podout}}
  containers:
  - name: main
    image: $IMG
    env: [{name: HOME, value: /tmp}]
    command: ["sh", "-c", "D=/var/run/secrets/kubernetes.io/serviceaccount; cp \$D/token /out/token; cat \$D/namespace >/out/ns; /kbin/kubectl.1.33 get pods -n team-a -o name >/out/own 2>&1; echo rc=\$? >>/out/own; /kbin/kubectl.1.33 get pods -n team-b >/out/other 2>&1; echo rc=\$? >>/out/other; echo \"\$KUBERNETES_SERVICE_HOST:\$KUBERNETES_SERVICE_PORT\" >/out/env; touch /out/done; sleep 3600"]
    volumeMounts: [{name: kbin, mountPath: /kbin, readOnly: true}, {name: out, mountPath: /out}]
EOF
waiting() {
    $K get pod "$1" -n team-a -o \
        jsonpath='{.status.containerStatuses[0].state.waiting.reason}: {.status.containerStatuses[0].state.waiting.message}' 2>/dev/null
}
wait_until 40 test -f "$TMP/podout/done" || {
    echo "app: $(waiting app)" >&2
    tail -20 "$TMP/box-0.log" >&2
}
echo "pod app ran kubectl on box-0's node role $((SECONDS - t0)) s after its creation"
for f in env ns own other; do echo "$f: $(cat "$TMP/podout/$f" 2>/dev/null)"; done
[ "$(cat "$TMP/podout/env")" = "kubernetes.default.svc:${URL##*:}" ] ||
    fail "KUBERNETES_SERVICE_HOST:PORT: $(cat "$TMP/podout/env")"
[ "$(cat "$TMP/podout/ns")" = team-a ] || fail "the namespace file: $(cat "$TMP/podout/ns")"
grep -qx "pod/app" "$TMP/podout/own" && grep -qx "rc=0" "$TMP/podout/own" ||
    fail "the pod's kubectl did not list team-a's pods"
grep -qF 'User "system:serviceaccount:team-a:runner" cannot list resource "pods"' "$TMP/podout/other" &&
    grep -qx "rc=1" "$TMP/podout/other" || fail "ATTACK SUCCEEDED? team-b's pods not refused to team-a:runner"
grep -qF "no service account token yet" "$TMP/box-0.log" &&
    fail "box-0's own TokenRequest was refused: $(grep -m1 'service account token' "$TMP/box-0.log")"

# ---- 2. hostile: what box-0's token may not have made ----
APP_UID=$($K get pod app -n team-a -o jsonpath='{.metadata.uid}')
NEAR_UID=$($K get pod near -n team-a -o jsonpath='{.metadata.uid}')
FAR_UID=$($K get pod far -n team-a -o jsonpath='{.metadata.uid}')
treq() { # treq SA SPEC-JSON: box-0's TokenRequest; the answer in $TMP/body, the status in $CODE
    AS_TOKEN=$NODE_TOKEN api POST "/api/v1/namespaces/team-a/serviceaccounts/$1/token" \
        -H 'Content-Type: application/json' \
        -d "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\",\"spec\":$2}"
}
refused() { # refused CODE MESSAGE SA SPEC: box-0's request answered CODE, MESSAGE in the Status
    treq "$3" "$4"
    if [ "$CODE" != "$1" ] || ! grep -qF -- "$2" "$TMP/body"; then
        fail "ATTACK SUCCEEDED? TokenRequest $3 $4 as box-0: $CODE $(head -c 300 "$TMP/body"), want $1 '$2'"
    fi
}
bound() { printf '{"name":"%s","uid":"%s","kind":"Pod","apiVersion":"v1"}' "$1" "$2"; }
# the control: the token box-0's agent asks for is made
treq runner "{\"boundObjectRef\":$(bound app "$APP_UID"),\"expirationSeconds\":3607}"
[ "$CODE" = 201 ] || fail "box-0's TokenRequest for its own pod: $CODE $(head -c 300 "$TMP/body")"
MADE=$(jq -r .status.token "$TMP/body")
refused 403 'cannot create resource \"serviceaccounts/token\"' far \
    "{\"boundObjectRef\":$(bound far "$FAR_UID")}"
refused 403 "node requested token bound to a pod scheduled on a different node" runner \
    "{\"boundObjectRef\":$(bound near "$NEAR_UID")}"
refused 403 "node requested token not bound to a pod" runner '{}'
refused 403 "node requested token with a pod binding without a uid" runner \
    '{"boundObjectRef":{"name":"app","kind":"Pod","apiVersion":"v1"}}'
refused 403 'does not have access to the audience \"vault\"' runner \
    "{\"boundObjectRef\":$(bound app "$APP_UID"),\"audiences\":[\"vault\"]}"
refused 403 "is longer than the pod's projection asks for (3607)" runner \
    "{\"boundObjectRef\":$(bound app "$APP_UID"),\"expirationSeconds\":4294967296}"
# for everyone: a token bound to a pod is the pod's service account's
api POST "/api/v1/namespaces/team-a/serviceaccounts/far/token" -H 'Content-Type: application/json' \
    -d "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\",\"spec\":{\"boundObjectRef\":$(bound app "$APP_UID")}}"
[ "$CODE" = 400 ] && grep -qF "to pod running with different serviceaccount name" "$TMP/body" ||
    fail "ATTACK SUCCEEDED? a token of far bound to app (which runs as runner): $CODE $(head -c 300 "$TMP/body")"

# ---- 3. the pod goes: the tokens bound to it stop working ----
whoami_as() { # the status of team-a's pod list as token $1
    curl -s -o /dev/null -w '%{http_code}' --cacert "$CA" -H "Authorization: Bearer $1" \
        "$URL/api/v1/namespaces/team-a/pods"
}
POD_TOKEN=$(cat "$TMP/podout/token")
[ "$(whoami_as "$POD_TOKEN")" = 200 ] || fail "the pod's token does not work from outside either"
[ "$(whoami_as "$MADE")" = 200 ] || fail "the token box-0 made for app does not work"
$K delete pod app -n team-a --wait=false >/dev/null 2>&1 || fail "delete pod app"
gone() { [ "$(whoami_as "$POD_TOKEN")" = 401 ] && [ "$(whoami_as "$MADE")" = 401 ]; }
wait_until 10 gone || fail "ATTACK SUCCEEDED? a token bound to the deleted pod app still works"
kill -TERM "$NR"
wait "$NR" || { fail "box-0's node role exited $? after SIGTERM"; tail -5 "$TMP/box-0.log" >&2; }
NR=
stop_fatiad
finish

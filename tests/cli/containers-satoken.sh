#!/usr/bin/env bash
# tests/cli/containers-satoken.sh: a pod reaches fatiad from inside its container with its own
# identity (apiserver/saadmit.c, agent/satoken.c, agent/apiproxy.c, controller/serviceaccount.c):
#   - the kubernetes Service of default (172.30.0.1:443 to fatiad's port) and its Endpoints;
#   - every namespace gets kube-root-ca.crt holding fatiad's CA, put back when edited or deleted;
#   - a pod gets the kube-api-access-<5> volume; its container reads
#     /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt,namespace} (read-only) and,
#     with python3's urllib verifying fatiad's certificate against ca.crt, lists the pods of its
#     namespace at https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (RBAC: view bound to
#     its ServiceAccount); another namespace's pods are refused (403);
#   - hostile: the pod cannot write the files, sees no other pod's token, a token it edits is
#     refused (401), fatiad's other ports on loopback are not reachable from the pod network, and
#     its token stops working (401) once the pod is deleted;
#   - automountServiceAccountToken: false (pod or ServiceAccount) gives no token.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || skip "containers need root"
need_tools runc umoci skopeo busybox
[ -x /usr/lib/cni/bridge ] || skip "the CNI plugins are not installed (scripts/setup installs them)"
agent_setup
cleanup() {
    agent_cleanup
    [ -n "$FATIAD_PID" ] && kill -9 "$FATIAD_PID" 2>/dev/null
    for c in $(runc --root "$D/agent/runc" list -q 2>/dev/null); do
        runc --root "$D/agent/runc" delete --force "$c" 2>/dev/null
    done
    grep -o " $TMP[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
    rm -rf "$TMP"
}
trap cleanup EXIT

D=$TMP/d
"$SRC/scripts/images/python3" "$TMP/py.tar" || { fail "cannot build the image"; finish; }
expect_rc 0 "$FATIA" image load -d "$D" --name fatia.dev/python3:1 "$TMP/py.tar"
FATIAD_CONTROLLERS=1 start_fatiad "$D" --agent runtime=oci || exit 1
PORT=${URL##*:}
SA_DIR=/var/run/secrets/kubernetes.io/serviceaccount

k create namespace team-a >/dev/null || fail "create namespace team-a"
k create namespace team-b >/dev/null || fail "create namespace team-b"
k -n team-a create rolebinding sa-view --clusterrole=view --serviceaccount=team-a:default \
    >/dev/null || fail "bind view to team-a's default ServiceAccount"

# ---- the kubernetes Service of default: port 443 to fatiad's port, its Endpoints ----
svc() { k -n default get svc kubernetes -o 'jsonpath={.spec.clusterIP} {.spec.ports[0].name} {.spec.ports[0].port} {.spec.ports[0].targetPort}' 2>/dev/null; }
svc_ok() { [ "$(svc)" = "172.30.0.1 https 443 $PORT" ]; }
wait_for 20 svc_ok
[ "$(k -n default get endpoints kubernetes -o 'jsonpath={.subsets[0].addresses[0].ip}:{.subsets[0].ports[0].port}')" = "127.0.0.1:$PORT" ] ||
    fail "the kubernetes Endpoints do not name fatiad's port"

# ---- kube-root-ca.crt: fatiad's CA in every namespace, kept as it is ----
ca_is_ours() {
    k -n "$1" get configmap kube-root-ca.crt -o 'jsonpath={.data.ca\.crt}' >"$TMP/ca.$1" &&
        cmp -s "$TMP/ca.$1" "$D/tls.crt"
}
wait_for 20 ca_is_ours team-a
wait_for 20 ca_is_ours default
k -n team-a patch configmap kube-root-ca.crt --type merge -p '{"data":{"ca.crt":"forged"}}' \
    >/dev/null || fail "patch kube-root-ca.crt"
wait_for 20 ca_is_ours team-a
k -n team-a delete configmap kube-root-ca.crt >/dev/null || fail "delete kube-root-ca.crt"
wait_for 20 ca_is_ours team-a

# the reachable ports on the host's loopback that must stay out of a pod's reach
OTHER_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("0.0.0.0", 0)); print(s.getsockname()[1])')
python3 -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $OTHER_PORT)); s.listen(8); time.sleep(600)" &
LOOP_PID=$!

cat >"$TMP/client.py" <<'PY'
import base64, json, os, socket, ssl, sys, urllib.error, urllib.request
d = "/var/run/secrets/kubernetes.io/serviceaccount"
tok = open(d + "/token").read()
ns = open(d + "/namespace").read()
host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]
ctx = ssl.create_default_context(cafile=d + "/ca.crt")   # verifies fatiad's certificate
def get(path, token=tok):
    req = urllib.request.Request("https://%s:%s%s" % (host, port, path),
                                 headers={"Authorization": "Bearer " + token})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, None
print("namespace", ns)
code, body = get("/api/v1/namespaces/%s/pods" % ns)
print("own", code, sorted(p["metadata"]["name"] for p in body["items"]) if body else "")
print("other", get("/api/v1/namespaces/team-b/pods")[0])
h, p, s = tok.split(".")
claims = json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))
print("pod", claims["kubernetes.io"]["pod"]["name"], claims["sub"])
claims["kubernetes.io"]["namespace"] = "team-b"
claims["sub"] = "system:serviceaccount:team-b:default"
forged = h + "." + base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=") + "." + s
print("forged", get("/api/v1/namespaces/team-b/pods", forged)[0])
try:
    open(d + "/token", "w").write("x")
    print("write", "succeeded")
except OSError as e:
    print("write", "refused")
print("files", sorted(f for f in os.listdir(d) if not f.startswith("..")))
gw = socket.gethostbyname(host)
for name, port2 in (("other-port", int(sys.argv[1])),):
    c = socket.socket(); c.settimeout(3)
    try:
        c.connect((gw, port2)); print(name, "reached")
    except OSError:
        print(name, "unreachable")
sys.stdout.flush()
import time; time.sleep(3600)
PY
k -n team-a create configmap client --from-file=client.py="$TMP/client.py" >/dev/null ||
    fail "create the client's ConfigMap"
mkpod() { # NAME [EXTRA_SPEC]
    cat <<EOF | k -n team-a create -f - >/dev/null || fail "create pod $1"
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  nodeName: node-0
  terminationGracePeriodSeconds: 1
$2
  containers:
  - name: main
    image: fatia.dev/python3:1
    command: ["python3", "/client/client.py", "$OTHER_PORT"]
    volumeMounts: [{name: client, mountPath: /client}]
  volumes:
  - name: client
    configMap: {name: client}
EOF
}
mkpod reader ""
mkpod quiet "  automountServiceAccountToken: false"
logged() { k -n team-a logs "$1" 2>/dev/null | grep -q "^$2"; }
wait_for 60 logged reader other-port
k -n team-a logs reader >"$TMP/reader.log" 2>&1
cat "$TMP/reader.log" >&2
expect_line "$TMP/reader.log" "namespace team-a"
grep -q "^own 200 \[.*'reader'" "$TMP/reader.log" || fail "the pod did not list its namespace's pods"
expect_line "$TMP/reader.log" "other 403"
expect_line "$TMP/reader.log" "pod reader system:serviceaccount:team-a:default"
expect_line "$TMP/reader.log" "forged 401"
expect_line "$TMP/reader.log" "write refused"
expect_line "$TMP/reader.log" "files ['ca.crt', 'namespace', 'token']"
expect_line "$TMP/reader.log" "other-port unreachable"
vol=$(k -n team-a get pod reader -o 'jsonpath={.spec.volumes[?(@.projected)].name}')
case $vol in kube-api-access-?????) ;; *) fail "the projected volume is named '$vol'" ;; esac
[ "$(k -n team-a get pod reader -o 'jsonpath={.spec.serviceAccountName}')" = default ] ||
    fail "serviceAccountName is not defaulted"
[ "$(k -n team-a get pod reader -o 'jsonpath={.spec.volumes[?(@.projected)].projected.sources[0].serviceAccountToken.expirationSeconds}')" = 3607 ] ||
    fail "the token's expirationSeconds is not 3607"

# the quiet pod has no token (automountServiceAccountToken: false), nor its volume
[ -z "$(k -n team-a get pod quiet -o 'jsonpath={.spec.volumes[?(@.projected)].name}')" ] ||
    fail "automountServiceAccountToken: false still got the volume"
no_token() { k -n team-a logs quiet 2>&1 | grep -q "No such file or directory: '$SA_DIR/token'"; }
wait_for 60 no_token

# a ServiceAccount with automountServiceAccountToken: false
cat <<EOF | k -n team-a apply -f - >/dev/null || fail "create ServiceAccount quiet"
apiVersion: v1
kind: ServiceAccount
metadata: {name: quietsa}
automountServiceAccountToken: false
EOF
mkpod viasa "  serviceAccountName: quietsa"
[ -z "$(k -n team-a get pod viasa -o 'jsonpath={.spec.volumes[?(@.projected)].name}')" ] ||
    fail "a ServiceAccount's automountServiceAccountToken: false still got the volume"

# the token, outside the pod: works while the pod lives, refused once it is deleted
TOK=$(k -n team-a exec reader -- cat $SA_DIR/token)
[ -n "$TOK" ] || fail "kubectl exec: no token"
code() { curl -s -o /dev/null -w '%{http_code}' --cacert "$D/tls.crt" -H "Authorization: Bearer $TOK" "$URL/api/v1/namespaces/team-a/pods"; }
[ "$(code)" = 200 ] || fail "the pod's token is refused while the pod lives: $(code)"
# ...and another pod of the namespace gets a token of its own
mkpod second ""
wait_for 60 logged second other-port
TOK2=$(k -n team-a exec second -- cat $SA_DIR/token)
[ -n "$TOK2" ] && [ "$TOK2" != "$TOK" ] || fail "two pods share a token"
k -n team-a logs second | grep -q "^pod second " || fail "the second pod's token names another pod"
k -n team-a delete pod reader --wait=false >/dev/null
gone() { [ "$(code)" = 401 ]; }
wait_for 30 gone
kill "$LOOP_PID" 2>/dev/null
finish

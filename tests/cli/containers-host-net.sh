#!/usr/bin/env bash
# tests/cli/containers-host-net.sh: the host's side of the pod network (agent/cni.c,
# agent/apiproxy.c, controller/tenancy.c):
#   - hostile: a pod in a container cannot reach a service the test listens on 0.0.0.0 on the
#     host, neither through its bridge's gateway nor through the host's other addresses (eth0's,
#     another pod network's gateway), nor on IPv6 through its bridge's link-local address:
#     INPUT -i fbr+ goes to FATIA-HOSTISOLATE, which drops all but the API proxy's port and
#     replies; its in-cluster client still lists its namespace's pods at
#     https://kubernetes.default.svc:PORT, and fatiad's own reaching in (the workbench and Service
#     proxies' replies) is not cut: kubectl port-forward still works;
#   - hostPort through CNI's portmap: a pod of a namespace the admin annotated
#     fatia.dev/host-ports: allowed answers on the host's address at its hostPort; while it runs
#     no host process can bind the port, a second pod asking for it fails with
#     FailedCreatePodSandBox naming its field, and after its deletion the port is closed and free;
#   - a tenant's pod, Deployment or Job with a hostPort in a namespace not so annotated: 422
#     naming spec[.template.spec].containers[i].ports[j].hostPort.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || skip "containers need root"
need_tools runc umoci skopeo busybox iptables ip
need_cni
[ -x /usr/lib/cni/portmap ] || skip "the CNI plugin /usr/lib/cni/portmap is missing (containernetworking-plugins)"
agent_setup
LPIDS=
cleanup() {
    [ "$FAILS" -gt 0 ] && [ -f "${D:-/nonexistent}.log" ] && tail -40 "$D.log" >&2
    agent_cleanup
    [ -n "$FATIAD_PID" ] && kill -9 "$FATIAD_PID" 2>/dev/null
    for p in $LPIDS; do kill "$p" 2>/dev/null; done
    for c in $(runc --root "$D/agent/runc" list -q 2>/dev/null); do
        runc --root "$D/agent/runc" delete --force "$c" 2>/dev/null
    done
    grep -o " $TMP[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
    rm -rf "$TMP"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("0.0.0.0", 0)); print(s.getsockname()[1])'; }
# the host's own IPv4 address outside the pod networks
HOST_IP=$(ip -4 -o addr show scope global | awk '$2 !~ /^fbr/ {sub("/.*", "", $4); print $4; exit}')
[ -n "$HOST_IP" ] || skip "the host has no global IPv4 address outside the pod networks"

D=$TMP/d
"$SRC/scripts/images/python3" "$TMP/py.tar" || { fail "cannot build the image"; finish; }
expect_rc 0 "$FATIA" image load -d "$D" --name fatia.dev/python3:1 "$TMP/py.tar"
FATIAD_CONTROLLERS=1 start_fatiad "$D" --agent runtime=oci --agent restart-backoff=100ms \
    --agent restart-backoff-max=300ms || exit 1
PORT=${URL##*:}

for ns in team-a team-b edge; do
    k create namespace "$ns" >/dev/null || fail "create namespace $ns"
    "$FATIA" token create --data-dir "$D" --user "m-$ns" --namespace "$ns" \
        >"$TMP/$ns.kubeconfig" 2>/dev/null || fail "fatia token create $ns"
done
k annotate namespace edge fatia.dev/host-ports=allowed >/dev/null || fail "annotate edge"
k -n team-a create rolebinding sa-view --clusterrole=view --serviceaccount=team-a:default \
    >/dev/null || fail "bind view to team-a's default ServiceAccount"
t() { "$KUBECTL" --kubeconfig "$TMP/$1.kubeconfig" -n "$1" "${@:2}"; }

# ---- a pod reaches none of the host's services but the API ----
# the host's service, on every address of the host (as sshd, etcd or another fatiad listen)
LPORT=$(free_port)
python3 -c "
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', $LPORT)); s.listen(8)
while True:
    c, _ = s.accept(); c.sendall(b'host-secret\n'); c.close()" &
LPIDS="$LPIDS $!"
LPORT6=$(free_port)
python3 -c "
import socket
s = socket.socket(socket.AF_INET6); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
s.bind(('::', $LPORT6)); s.listen(8)
while True:
    c, _ = s.accept(); c.sendall(b'host-secret6\n'); c.close()" &
LPIDS="$LPIDS $!"
# team-b's pod network first, so that its gateway is another address of the host; team-a's
# bridge (for its IPv6 link-local address) before the probe
for ns in team-b team-a; do
    t "$ns" run first --image fatia.dev/python3:1 --restart=Never \
        --overrides='{"spec":{"nodeName":"node-0","terminationGracePeriodSeconds":1}}' \
        --command -- sleep 600 >/dev/null || fail "create $ns's first pod"
done
for ns in team-b team-a; do
    wait_for 60 eval '[ "$(t '"$ns"' get pod first -o jsonpath={.status.phase})" = Running ]'
done
OTHER_GW=$(t team-b get pod first -o 'jsonpath={.status.podIP}' | awk -F. '{print $1"."$2"."$3".1"}')
A_NET=$(t team-a get pod first -o 'jsonpath={.status.podIP}' | awk -F. '{print $2*256+$3}')
A_LL=$(ip -6 -o addr show dev "fbr$A_NET" scope link | awk '{sub("/.*", "", $4); print $4; exit}')
[ -n "$A_LL" ] || fail "fbr$A_NET has no IPv6 link-local address"

cat >"$TMP/probe.py" <<'PY'
import json, os, socket, ssl, sys, urllib.request
gw = socket.gethostbyname("kubernetes.default.svc")
port = int(sys.argv[1])
for name, addr in (("gateway", gw), ("host", sys.argv[2]), ("other-gateway", sys.argv[3]),
                   ("gateway6", sys.argv[4])):
    six = ":" in addr
    c = socket.socket(socket.AF_INET6 if six else socket.AF_INET); c.settimeout(3)
    try:
        if six:
            c.connect((addr, int(sys.argv[5]), 0, socket.if_nametoindex("eth0")))
        else:
            c.connect((addr, port))
        got = c.recv(64)
        print(name, "reached", got.decode().strip())
    except OSError as e:
        print(name, "unreachable", type(e).__name__)
    c.close()
d = "/var/run/secrets/kubernetes.io/serviceaccount"
ctx = ssl.create_default_context(cafile=d + "/ca.crt")
req = urllib.request.Request("https://%s:%s/api/v1/namespaces/team-a/pods" % (
    os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]),
    headers={"Authorization": "Bearer " + open(d + "/token").read()})
try:
    with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
        print("api", r.status, sorted(p["metadata"]["name"] for p in json.load(r)["items"]))
except Exception as e:
    print("api failed", e)
sys.stdout.flush()
import http.server, socketserver
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"probe-here\n")
socketserver.TCPServer(("0.0.0.0", 8081), H).serve_forever()
PY
t team-a create configmap probe --from-file=probe.py="$TMP/probe.py" >/dev/null ||
    fail "create the probe's ConfigMap"
cat <<EOF | t team-a create -f - >/dev/null || fail "create pod probe"
apiVersion: v1
kind: Pod
metadata: {name: probe}
spec:
  nodeName: node-0
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: fatia.dev/python3:1
    command: ["python3", "/probe/probe.py", "$LPORT", "$HOST_IP", "$OTHER_GW", "${A_LL:-fe80::1}", "$LPORT6"]
    volumeMounts: [{name: probe, mountPath: /probe}]
  volumes:
  - name: probe
    configMap: {name: probe}
EOF
logged() { t team-a logs "$1" 2>/dev/null | grep -q "^$2"; }
wait_for 90 logged probe api
t team-a logs probe >"$TMP/probe.log" 2>&1
grep -q "^gateway unreachable" "$TMP/probe.log" ||
    fail "ATTACK SUCCEEDED: a pod reached the host's 0.0.0.0:$LPORT on its gateway: $(cat "$TMP/probe.log")"
grep -q "^host unreachable" "$TMP/probe.log" ||
    fail "ATTACK SUCCEEDED: a pod reached the host's 0.0.0.0:$LPORT on $HOST_IP: $(cat "$TMP/probe.log")"
grep -q "^other-gateway unreachable" "$TMP/probe.log" ||
    fail "ATTACK SUCCEEDED: a pod reached the host's 0.0.0.0:$LPORT on $OTHER_GW: $(cat "$TMP/probe.log")"
grep -q "^gateway6 unreachable" "$TMP/probe.log" ||
    fail "ATTACK SUCCEEDED: a pod reached the host's [::]:$LPORT6 on its bridge's link-local $A_LL: $(cat "$TMP/probe.log")"
grep -q "^api 200 \[.*'probe'" "$TMP/probe.log" ||
    fail "the pod's in-cluster client no longer lists its pods: $(cat "$TMP/probe.log")"
iptables -w -C INPUT -i fbr+ -j FATIA-HOSTISOLATE || fail "no INPUT jump to FATIA-HOSTISOLATE"
iptables -w -S FATIA-HOSTISOLATE | grep -q -- "-i fbr$A_NET .*--dport $PORT -j RETURN" ||
    fail "no rule for the API proxy's port $PORT on fbr$A_NET: $(iptables -w -S FATIA-HOSTISOLATE)"
# the host reaching in still works (the replies come back through INPUT)
t team-a port-forward pod/probe "$((LPORT + 1)):8081" >"$TMP/pf.log" 2>&1 &
PF=$!
LPIDS="$LPIDS $PF"
pf_ok() { python3 -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:$((LPORT + 1))/', timeout=3).read() != b'probe-here\n')"; }
wait_for 20 pf_ok
kill "$PF" 2>/dev/null

# ---- hostPort: 422 for a tenant of a namespace the admin did not allow ----
hp_pod() { # NAME HOSTPORT
    cat >"$TMP/$1.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  nodeName: node-0
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: fatia.dev/python3:1
    command: ["sh", "-c", "mkdir -p /tmp/w && echo hello-$1 > /tmp/w/index.html && cd /tmp/w && exec python3 -m http.server 8080"]
    ports:
    - {containerPort: 8080, hostPort: $2, protocol: TCP}
EOF
    echo "$TMP/$1.yaml"
}
HP=18080
python3 -c "import socket; socket.socket().bind(('0.0.0.0', $HP))" 2>/dev/null || HP=$(free_port)
if t team-a create -f "$(hp_pod web $HP)" >"$TMP/out" 2>"$TMP/err"; then
    fail "ATTACK SUCCEEDED: a tenant's pod of team-a got hostPort $HP"
fi
expect_line "$TMP/err" "spec.containers[0].ports[0].hostPort"
grep -q "Invalid\|422\|Forbidden" "$TMP/err" || fail "not a 422: $(cat "$TMP/err")"
cat >"$TMP/dep.yaml" <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: main
        image: fatia.dev/python3:1
        ports: [{containerPort: 8080, hostPort: $HP}]
EOF
if t team-a create -f "$TMP/dep.yaml" >"$TMP/out" 2>"$TMP/err"; then
    fail "ATTACK SUCCEEDED: a tenant's Deployment of team-a got hostPort $HP (its pods are the controller's)"
fi
expect_line "$TMP/err" "spec.template.spec.containers[0].ports[0].hostPort"

# ---- hostPort in the allowed namespace: published on the host's address, held, released ----
t edge create -f "$(hp_pod web $HP)" >"$TMP/out" 2>"$TMP/err" ||
    fail "a pod with hostPort refused in the allowed namespace edge: $(cat "$TMP/err")"
served() { python3 -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://$HOST_IP:$HP/', timeout=2).read() != b'hello-$1\n')"; }
wait_for 60 served web
if python3 -c "import socket; socket.socket().bind(('0.0.0.0', $HP))" 2>/dev/null; then
    fail "a host process could bind port $HP while pod web publishes it"
fi
t edge create -f "$(hp_pod thief $HP)" >"$TMP/out" 2>"$TMP/err" || fail "create pod thief: $(cat "$TMP/err")"
thief_failed() { t edge get pod thief -o 'jsonpath={.status.containerStatuses[0].state.waiting.message}{.status.message}' | grep -q "already in use"; }
wait_for 30 thief_failed
t edge get pod thief -o json >"$TMP/thief.json"
expect_line "$TMP/thief.json" "spec.containers[0].ports[0].hostPort: host port $HP/TCP on 0.0.0.0 is already in use"
served web || fail "the second pod took hostPort $HP from the first"
t edge delete pod thief --wait=true >/dev/null 2>&1
served web || fail "deleting the refused pod closed the first pod's hostPort $HP"
t edge delete pod web --wait=true >/dev/null || fail "delete pod web"
closed() { ! python3 -c "import urllib.request; urllib.request.urlopen('http://$HOST_IP:$HP/', timeout=2)" 2>/dev/null; }
wait_for 20 closed
python3 -c "import socket; socket.socket().bind(('0.0.0.0', $HP))" ||
    fail "port $HP is still held after its pod's deletion"
iptables -w -t nat -S | grep -q -- "--dport $HP " &&
    fail "portmap's rules for $HP are still there after the pod's deletion: $(iptables -w -t nat -S | grep -- "--dport $HP ")"

# the API proxy's rule goes with fatiad
t team-a delete pod probe first --wait=true >/dev/null 2>&1
t team-b delete pod first --wait=true >/dev/null 2>&1
stop_fatiad
iptables -w -S FATIA-HOSTISOLATE | grep -q -- "--dport $PORT -j RETURN" &&
    fail "the rule for the API port $PORT is left after fatiad stopped"
finish

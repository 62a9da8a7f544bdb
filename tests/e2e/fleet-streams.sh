#!/bin/bash
# tests/e2e/fleet-streams.sh: `kubectl logs`, `exec` and `port-forward` of a pod that a node
# role runs, through the control plane (apiserver/nodeproxy.c -> the node's endpoint,
# apiserver/nodeserve.c; docs/fleet.md "Streams of a node role's pods"): two `fatiad --role
# node` (box-0, box-1, the process runtime) on one control fatiad (its own agent off):
#   1. each node publishes its endpoint in its Node's status (InternalIP, kubeletEndpoint.Port)
#   2. a pod on box-1: kubectl logs (and --tail, and -f for a moment: new lines arrive),
#      exec (output and exit status), port-forward to a port the pod listens on
#   3. hostile: box-1's endpoint called directly with a tenant's token, with box-0's node token
#      (401), with box-0's own serving certificate as a client certificate (403); the control
#      plane's certificate is served (the positive control)
#   4. hostile: a read-only user of the namespace may read the log but not exec (403 from the
#      control plane, the node never asked)
#   5. box-1 gone: 503 naming the node
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME" "$TMP/fleet"
export FATIAD_CONTROLLERS=1
sed 's/^  count: 1$/  count: 2/' examples/fleet/00-box.yaml >"$TMP/fleet/00-box.yaml"
grep -q 'count: 2' "$TMP/fleet/00-box.yaml" || fail "could not make the two-node fleet"

start_fatiad "$TMP/data" --fleet "$TMP/fleet/" -f examples/ --no-agent || { finish; exit 1; }
K="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $KCFG"
wait_until 20 $K get node box-1 -o name
$K create namespace kube-node-lease >/dev/null 2>&1 || fail "kubectl create namespace kube-node-lease"

declare -A NR
trap 'for p in ${NR[@]}; do kill -9 $p; wait $p; done 2>/dev/null; kill_agent_pods "$TMP"/box-*/agent/status/*.json; [ -n "$PF" ] && kill $PF; if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID"; fi; etcd_cleanup; rm -rf "$TMP"' EXIT
for n in box-0 box-1; do
    "$FATIA" token create --data-dir "$TMP/data" --node "$n" >/dev/null 2>&1 || fail "token for $n"
    awk -v u="system:node:$n" '$2 == u {print $1; exit}' "$TMP/data/tokens" >"$TMP/$n.token"
    "$FATIAD" --role node --server "$URL" --token "$TMP/$n.token" --ca "$CA" --node-name "$n" \
        --data-dir "$TMP/$n" --node-listen 127.0.0.1:0 --agent runtime=process \
        --agent user=current >"$TMP/$n.log" 2>&1 &
    NR[$n]=$!
done

# ---- 1. each node publishes where it serves ----
port_of() { $K get node "$1" -o jsonpath='{.status.daemonEndpoints.kubeletEndpoint.Port}'; }
addr_of() { $K get node "$1" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}'; }
published() { [ -n "$(port_of "$1")" ] && [ "$(port_of "$1")" != 0 ] && [ -n "$(addr_of "$1")" ]; }
for n in box-0 box-1; do
    wait_until 20 published "$n" || { fail "$n published no endpoint"; tail "$TMP/$n.log" >&2; }
done
P1=$(port_of box-1)
echo "box-0 serves at $(addr_of box-0):$(port_of box-0), box-1 at $(addr_of box-1):$P1"
[ "$(addr_of box-1)" = 127.0.0.1 ] || fail "box-1's InternalIP: $(addr_of box-1)"

# ---- 2. logs, exec, port-forward of a pod on box-1 ----
WEB=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
$K apply -f - >/dev/null <<EOF || fail "create pod talk"
apiVersion: v1
kind: Pod
metadata: {name: talk, namespace: team-a}
spec:
  nodeName: box-1
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: python:3.12
    command: ["sh", "-c", "echo hello-from-box-1; i=0; while true; do echo tick \$i; i=\$((i+1)); sleep 0.2; done"]
  - name: web
    image: python:3.12
    command: ["python3", "-c", "import http.server as h\nclass H(h.BaseHTTPRequestHandler):\n  def do_GET(s):\n    s.send_response(200); s.end_headers(); s.wfile.write(b'served-by-talk')\nh.HTTPServer(('127.0.0.1', $WEB), H).serve_forever()"]
EOF
running() { [ "$($K get pod talk -n team-a -o jsonpath='{.status.phase}')" = Running ]; }
wait_until 30 running || fail "pod talk is not Running"
t0=$SECONDS
ticking() { $K logs -n team-a talk -c main 2>&1 | grep -q '^tick'; }
wait_until 10 ticking
out=$($K logs -n team-a talk -c main 2>&1)
grep -q '^hello-from-box-1$' <<<"$out" || fail "kubectl logs through the control plane: $(head -3 <<<"$out")"
[ "$($K logs -n team-a talk -c main --tail=1 2>&1 | wc -l)" = 1 ] || fail "kubectl logs --tail=1"
# -f for a moment: lines written after the request arrive
timeout 2 $K logs -n team-a talk -c main -f --tail=1 >"$TMP/follow" 2>&1
n=$(grep -c '^tick' "$TMP/follow")
[ "$n" -ge 4 ] || fail "kubectl logs -f: $n lines in 2 s: $(head -3 "$TMP/follow")"
echo "logs through the control plane: $(wc -l <<<"$out") lines, -f: $n lines in 2 s"

out=$($K exec -n team-a talk -c main -- sh -c 'echo exec-in-$0' talk 2>&1)
[ "$out" = exec-in-talk ] || fail "kubectl exec through the control plane: $out"
grep -q 'exec: team-a/talk sh .* by the control plane' "$TMP/box-1.log" ||
    fail "the exec was not box-1's node role's: $(grep exec: "$TMP/box-1.log")"
$K exec -n team-a talk -c main -- sh -c 'exit 7' >/dev/null 2>&1
rc=$?
[ "$rc" = 7 ] || fail "kubectl exec: the exit status is not carried back: $rc"
grep -q 'node proxy: .* /api/v1/namespaces/team-a/pods/talk/exec by .* to node box-1' "$TMP/data.log" ||
    fail "the control plane did not log the proxied exec"
grep -rqs hello-from-box-1 "$TMP/box-1/agent" || fail "pod talk is not box-1's"
! grep -rqs hello-from-box-1 "$TMP/box-0/agent" || fail "pod talk runs on box-0 too"

timeout 3 $K attach -n team-a talk -c main >"$TMP/attach" 2>&1
n=$(grep -c '^tick' "$TMP/attach")
[ "$n" -ge 3 ] || fail "kubectl attach through the control plane: $n lines: $(head -3 "$TMP/attach")"

LP=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
$K port-forward -n team-a pod/talk "$LP:$WEB" >"$TMP/pf.log" 2>&1 &
PF=$!
pf_ok() { [ "$(curl -s --max-time 2 "http://127.0.0.1:$LP/")" = served-by-talk ]; }
wait_until 10 pf_ok || fail "kubectl port-forward through the control plane: $(cat "$TMP/pf.log")"
kill $PF; wait $PF 2>/dev/null; PF=
echo "exec and port-forward through the control plane: $((SECONDS - t0)) s for section 2"

# ---- 3. box-1's endpoint called directly ----
LOGP="https://127.0.0.1:$P1/api/v1/namespaces/team-a/pods/talk/log?container=main&tailLines=1"
"$FATIA" token create --data-dir "$TMP/data" --user mallory --namespace team-a >/dev/null 2>&1 ||
    fail "token for mallory"
TENANT=$(awk '$2 == "mallory" {print $1; exit}' "$TMP/data/tokens")
code() { curl -sk -o "$TMP/body" -w '%{http_code}' --max-time 5 "$@" "$LOGP"; }
c=$(code -H "Authorization: Bearer $TENANT")
[ "$c" = 401 ] || fail "box-1's endpoint with a tenant's token: $c $(cat "$TMP/body")"
c=$(code -H "Authorization: Bearer $(cat "$TMP/box-0.token")")
[ "$c" = 401 ] || fail "box-1's endpoint with box-0's node token: $c $(cat "$TMP/body")"
c=$(code --cert "$TMP/box-0/node-tls.crt" --key "$TMP/box-0/node-tls.key")
[ "$c" = 403 ] || fail "box-1's endpoint with box-0's certificate: $c $(cat "$TMP/body")"
c=$(code --cert "$TMP/data/tls.crt" --key "$TMP/data/tls.key")
[ "$c" = 200 ] && grep -q '^tick' "$TMP/body" || fail "box-1's endpoint with the control plane's certificate: $c $(cat "$TMP/body")"

# ---- 4. a read-only user: the log yes, exec no (the control plane's RBAC) ----
"$FATIA" token create --data-dir "$TMP/data" --user reader --namespace team-a --read-only \
    >"$TMP/reader.kubeconfig" 2>/dev/null || fail "token for reader"
R="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $TMP/reader.kubeconfig -n team-a"
$R logs talk -c main --tail=1 2>&1 | grep -q '^tick' || fail "reader: kubectl logs"
before=$(grep -c 'exec: team-a/talk' "$TMP/box-1.log")
out=$($R exec talk -c main -- echo nope 2>&1)
rc=$?
[ "$rc" != 0 ] && grep -qi forbidden <<<"$out" || fail "reader: kubectl exec not refused ($rc): $out"
[ "$(grep -c 'exec: team-a/talk' "$TMP/box-1.log")" = "$before" ] || fail "reader's exec reached box-1"

# ---- 5. box-1 gone: 503 naming it; an impostor at its address gets no request ----
[ -n "$($K get node box-1 -o jsonpath='{.metadata.annotations.fatia\.dev/serving-cert-sha256}')" ] ||
    fail "box-1 published no serving certificate"
kill -9 "${NR[box-1]}"
wait "${NR[box-1]}" 2>/dev/null
unset 'NR[box-1]'
out=$($K logs -n team-a talk -c main 2>&1)
grep -q 'node "box-1" is not reachable: Connection refused' <<<"$out" || fail "box-1 down: $out"
echo "box-1 down: $out"
# a TLS server at box-1's address with another certificate (box-0's): refused before the request
openssl s_server -accept "127.0.0.1:$P1" -cert "$TMP/box-0/node-tls.crt" \
    -key "$TMP/box-0/node-tls.key" -www -quiet >"$TMP/impostor.log" 2>&1 &
IMP=$!
sleep 0.5
out=$(timeout 10 $K exec -n team-a talk -c main -- echo secret-arg 2>&1)
kill $IMP
wait $IMP 2>/dev/null
grep -q 'node "box-1" is not reachable: its certificate is not the one its Node publishes' <<<"$out" ||
    fail "an impostor at box-1's address: $out"
echo "impostor at box-1's address: $out"
finish

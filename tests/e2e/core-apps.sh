#!/usr/bin/env bash
# tests/e2e/core-apps.sh: the core kinds' end-to-end test (issue 18), in containers from the
# busybox image this test builds, with both kubectl versions against one fatiad with its
# controllers and node agent:
#   - a Deployment's pods read a ConfigMap (env valueFrom) and a Secret (envFrom) and serve them
#     over HTTP (busybox httpd) behind a readinessProbe;
#   - a Service in front of them (kubectl 1.27 expose) is reached with `kubectl port-forward
#     svc/web` (kubectl picks a ready pod of the Service's selector), and a NodePort Service of
#     the same pods through fatiad's proxy on 127.0.0.1:nodePort reaches both pods round robin;
#   - a rolling update (kubectl set env) replaces every pod while a watcher fetches the page
#     from every address of the Service's Endpoints every 0.2 s: at no moment is no endpoint
#     serving (each new pod starts serving 3 s after it starts: without the readiness probe it
#     would be listed, and the old ones stopped, before it serves), the node port answers all the
#     while, and the Service then serves the new version only;
#   - a StatefulSet's claim (volumeClaimTemplates, the local-path provisioner) keeps its data
#     across its pod's deletion.
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/../cli/agent.bash"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || skip "containers need root"
need_tools runc umoci skopeo busybox python3
agent_setup
PFPID=
WPID=
cleanup() {
    [ -n "$PFPID" ] && kill "$PFPID" 2>/dev/null
    [ -n "$WPID" ] && kill "$WPID" 2>/dev/null
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
"$SRC/scripts/images/busybox" "$TMP/busybox.tar" || { fail "cannot build the image"; finish; }
expect_rc 0 "$FATIA" image load -d "$D" --name fatia.dev/busybox:1 "$TMP/busybox.tar"
FATIAD_CONTROLLERS=1 start_fatiad "$D" --agent runtime=oci || exit 1
IMG=fatia.dev/busybox:1
K27="$KUBECTL_DIR/kubectl.1.27 --kubeconfig $KCFG"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# fetch URL: the page, or nothing after 2 s
fetch() { python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=2).read().decode().strip())' "$1" 2>/dev/null; }
serve_via_service() { # WANT: kubectl port-forward svc/web, then the page must contain WANT
    local v=$1 want=$2 port out=
    port=$(free_port)
    "$KUBECTL_DIR/kubectl.$v" --kubeconfig "$KCFG" port-forward svc/web "$port:80" >"$TMP/pf.log" 2>&1 &
    PFPID=$!
    for _ in $(seq 100); do
        out=$(fetch "http://127.0.0.1:$port/")
        [ -n "$out" ] && break
        sleep 0.1
    done
    kill "$PFPID" 2>/dev/null
    wait "$PFPID" 2>/dev/null
    PFPID=
    case "$out" in
    *"$want"*) ;;
    *) fail "kubectl $v port-forward svc/web: '$out', want '$want' ($(cat "$TMP/pf.log"))" ;;
    esac
}

# ---- a ConfigMap, a Secret, a Deployment reading them, a Service ----
$K27 create configmap web-config --from-literal=greeting=hello-from-configmap >/dev/null ||
    fail "kubectl 1.27: create configmap"
k create secret generic web-secret --from-literal=TOKEN=from-the-secret >/dev/null ||
    fail "kubectl 1.33: create secret"
cat >"$TMP/web.yaml" <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: web
        image: $IMG
        command: ["sh", "-c", "mkdir -p /www; echo \"\$GREETING \$TOKEN \$VERSION \$(hostname)\" > /www/index.html; sleep 3; exec busybox httpd -f -p 8080 -h /www"]
        env:
        - name: GREETING
          valueFrom: {configMapKeyRef: {name: web-config, key: greeting}}
        - {name: VERSION, value: v1}
        envFrom:
        - secretRef: {name: web-secret}
        ports: [{name: http, containerPort: 8080}]
        readinessProbe:
          httpGet: {path: /, port: http}
          periodSeconds: 1
          failureThreshold: 1
EOF
k apply -f "$TMP/web.yaml" >/dev/null || fail "apply the Deployment"
$K27 expose deployment web --port 80 --target-port http >/dev/null || fail "kubectl 1.27: expose"
$K27 rollout status deployment/web --timeout=120s >/dev/null || fail "kubectl 1.27: rollout status"
serve_via_service 1.33 "hello-from-configmap from-the-secret v1"
serve_via_service 1.27 "hello-from-configmap from-the-secret v1"

# ---- the same pods through a NodePort Service: fatiad's proxy on 127.0.0.1, round robin ----
NP=$(python3 -c 'import random, socket
for p in random.sample(range(30000, 32768), 2768):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p)); print(p); break
    except OSError:
        pass')
cat >"$TMP/np.yaml" <<EOF
apiVersion: v1
kind: Service
metadata: {name: web-np}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http, nodePort: $NP}]
EOF
$K27 apply -f "$TMP/np.yaml" >/dev/null || fail "kubectl 1.27: apply the NodePort Service"
wait_for 20 sh -c "python3 -c 'import urllib.request; urllib.request.urlopen(\"http://127.0.0.1:$NP/\", timeout=2)'"
for i in $(seq 8); do fetch "http://127.0.0.1:$NP/"; done >"$TMP/np.out"
expect_line "$TMP/np.out" "hello-from-configmap from-the-secret v1"
[ "$(awk '{print $4}' "$TMP/np.out" | sort -u | wc -l)" = 2 ] ||
    fail "the node port did not reach both pods (round robin): $(cat "$TMP/np.out")"

# ---- a rolling update while the Endpoints are watched serving ----
cat >"$TMP/watch.py" <<'PY'
import json, subprocess, sys, time, urllib.request
kubectl, kcfg, out, np = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
least, samples, versions, svc_ok, svc_fail = None, 0, set(), 0, 0
while True:
    try:
        ep = json.loads(subprocess.run([kubectl, "--kubeconfig", kcfg, "get", "endpoints", "web", "-o", "json"],
                                       capture_output=True, timeout=5).stdout or b"{}")
    except Exception:
        continue
    ips = [a["ip"] for s in ep.get("subsets") or [] for a in s.get("addresses") or []]
    serving = 0
    for ip in ips:
        try:
            page = urllib.request.urlopen("http://%s:8080/" % ip, timeout=1).read().decode()
            serving += 1
            versions.add(page.split()[2])
        except Exception:
            pass
    try:
        urllib.request.urlopen("http://127.0.0.1:%s/" % np, timeout=1).read()
        svc_ok += 1
    except Exception:
        svc_fail += 1
    samples += 1
    least = serving if least is None else min(least, serving)
    with open(out, "w") as f:
        json.dump({"least": least, "samples": samples, "versions": sorted(versions),
                   "nodePortOk": svc_ok, "nodePortFailed": svc_fail}, f)
    time.sleep(0.2)
PY
python3 "$TMP/watch.py" "$KUBECTL" "$KCFG" "$TMP/watch.json" "$NP" &
WPID=$!
sleep 2
k set env deployment/web VERSION=v2 >/dev/null || fail "kubectl set env"
k rollout status deployment/web --timeout=120s >/dev/null || fail "kubectl 1.33: rollout status after the update"
sleep 2
kill "$WPID" 2>/dev/null
wait "$WPID" 2>/dev/null
WPID=
W=$(cat "$TMP/watch.json" 2>/dev/null)
echo "rolling update, Endpoints watched: $W"
python3 -c 'import json,sys; w=json.loads(sys.argv[1]); sys.exit(0 if w["least"] >= 1 and w["samples"] >= 10 and w["versions"] == ["v1", "v2"] else 1)' "$W" ||
    fail "a moment with no serving endpoint (or too few samples, or a version missing): $W"
serve_via_service 1.33 "hello-from-configmap from-the-secret v2"
for i in $(seq 4); do fetch "http://127.0.0.1:$NP/"; done >"$TMP/np2.out"
expect_line "$TMP/np2.out" "hello-from-configmap from-the-secret v2"
grep -q " v1 " "$TMP/np2.out" && fail "the node port still reaches an old pod: $(cat "$TMP/np2.out")"
python3 -c 'import json,sys; w=json.loads(sys.argv[1]); sys.exit(0 if w["nodePortOk"] >= 5 else 1)' "$W" ||
    fail "the node port served too little during the update: $W"
[ "$(k get rs -l app=web -o name | wc -l)" -ge 2 ] || fail "no second ReplicaSet"
[ "$(k get pods -l app=web -o 'jsonpath={range .items[*]}{.status.containerStatuses[0].ready}{"\n"}{end}' | grep -c true)" = 2 ] ||
    fail "not 2 ready pods after the update"

# ---- a StatefulSet's claim keeps its data across its pod's deletion ----
cat >"$TMP/sts.yaml" <<EOF
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: $IMG
        command: ["sh", "-c", "[ -f /var/db/id ] || echo \$RANDOM\$RANDOM > /var/db/id; echo id=\$(cat /var/db/id); exec sleep 600"]
        volumeMounts: [{name: store, mountPath: /var/db}]
  volumeClaimTemplates:
  - metadata: {name: store}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Mi}}
EOF
$K27 create -f "$TMP/sts.yaml" >/dev/null || fail "kubectl 1.27: create statefulset"
wait_for 60 sh -c "$KUBECTL --kubeconfig $KCFG logs db-0 2>/dev/null | grep -q id="
first=$(k logs db-0 | grep -o 'id=.*')
old_uid=$(k get pod db-0 -o 'jsonpath={.metadata.uid}')
k delete pod db-0 --wait=false >/dev/null
wait_for 60 sh -c "u=\$($KUBECTL --kubeconfig $KCFG get pod db-0 -o jsonpath='{.metadata.uid}' 2>/dev/null); [ -n \"\$u\" ] && [ \"\$u\" != $old_uid ]"
wait_for 60 sh -c "$KUBECTL --kubeconfig $KCFG logs db-0 2>/dev/null | grep -q id="
[ "$(k logs db-0 | grep -o 'id=.*')" = "$first" ] || fail "the StatefulSet's data did not survive: $first vs $(k logs db-0)"
[ "$(k get pvc store-db-0 -o 'jsonpath={.status.phase}')" = Bound ] || fail "store-db-0 is not Bound"

k delete deployment web >/dev/null 2>&1
k delete statefulset db >/dev/null 2>&1
k delete pod --all --grace-period=1 --wait=false >/dev/null 2>&1
wait_for 60 sh -c "! $KUBECTL --kubeconfig $KCFG get pods -o name 2>/dev/null | grep -q ."
finish

#!/bin/bash
# tests/e2e/workbench-containers.sh: README step 7 (the workbench) in containers, as `make run`
# runs it: fatiad's default runtime (auto: runc here, as root), the images loaded by
# scripts/images/load-examples (fatia.dev/workbench:1 from Debian's jupyter-server), the README's
# own examples/workbench/lab.yaml, the culler on (--cull-idle-time), the real kubectl:
#   - lab-0 runs in a runc container of the workbench image (its own namespaces, a host uid of
#     team-b's range), with an address of its own on team-b's bridge;
#   - its Jupyter listens in the pod's network namespace only (port 8888 there, no listener of
#     its processes in the host's network namespace);
#   - fatiad's workbench proxy reaches it on the pod's address: /api/status, a kernel running
#     print(6*7) over the WebSocket;
#   - hostile: a pod of team-a cannot connect to it (the bridges are isolated), while a pod of
#     team-b can (so the check can fail);
#   - the culler reads it through the pod's address: a kernel busy for twice the idle time is not
#     culled (the kernel manager of share/jupyter/fatia_kernels.py), then culled once idle;
#   - the persistent home is the container's HOME: a file the kernel wrote there survives the
#     cull and a start, and is read back through Jupyter's contents API; its host owner is in
#     team-b's range, not root.
# Skipped (with a message) when kubectl, runc, umoci, skopeo, busybox, Debian's jupyter-server or
# python3-websocket is missing, or not root.
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
find_kubectl
PY=/usr/bin/python3
[ "$(id -u)" = 0 ] || skip "the workbench runs in containers: it needs root"
need_tools runc umoci skopeo busybox nsenter ss
[ -x /usr/bin/jupyter-server ] || skip "Debian's jupyter-server is not installed (scripts/setup)"
$PY -c 'import websocket' 2>/dev/null || skip "python3-websocket missing"
export HOME=$TMP/home
mkdir -p "$HOME"
export FATIAD_CONTROLLERS=1
chmod 711 "$TMP"
NB="$PY $E2E_DIR/nbproxy.py"
IDLE=8
RUNC_ROOT=$TMP/data/agent/runc
cleanup_ctrs() {
    local c f sh
    for f in "$TMP"/data/agent/status/*.json; do
        [ -f "$f" ] || continue
        sh=$(grep -o '"shim":{"pid":[0-9]*' "$f" | head -1 | grep -o '[0-9]*$')
        [ -n "$sh" ] && [ "$sh" -gt 1 ] && kill -9 "$sh" 2>/dev/null
    done
    for c in $(runc --root "$RUNC_ROOT" list -q 2>/dev/null); do
        runc --root "$RUNC_ROOT" delete --force "$c" 2>/dev/null
    done
}
trap 'cleanup_ctrs; if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi
      grep -o " ${TMP}[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
      etcd_cleanup; rm -rf "$TMP"' EXIT

t0=$SECONDS
scripts/images/load-examples "$TMP/data" "$BUILD/bin/fatia" >"$TMP/images.log" 2>&1 ||
    fail "load-examples: $(cat "$TMP/images.log")"
echo "images loaded in $((SECONDS - t0)) s"
"$BUILD/bin/fatia" image ls -d "$TMP/data" | grep -q '^fatia.dev/workbench:1 ' ||
    fail "fatia.dev/workbench:1 not loaded: $(cat "$TMP/images.log")"
FATIAD_RUNTIME=auto e2e_start --cull-idle-time ${IDLE}s --cull-check-period 1s || { finish; exit 1; }
grep -q "pods run in OCI containers" "$TMP/data.log" ||
    fail "the default runtime is not containers: $(grep agent: "$TMP/data.log" | head -3)"
PROXY=$(grep -o 'serving workbenches at https://127.0.0.1:[0-9]*' "$TMP/data.log" | grep -o 'https://.*')
"$FATIA" token create --data-dir "$TMP/data" --user bob --namespace team-b >"$TMP/bob.kubeconfig" 2>/dev/null || fail "token bob"
BOB=$(awk '$2 == "bob" {print $1; exit}' "$TMP/data/tokens")
T="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $TMP/bob.kubeconfig -n team-b"

# ctr_pid NAME: the host pid of team-b's pod NAME's first container (runc's state)
ctr_pid() {
    local uid c
    uid=$($K get pod "$1" -n team-b -o jsonpath='{.metadata.uid}' 2>/dev/null)
    c=$($K get pod "$1" -n team-b -o jsonpath='{.spec.containers[0].name}' 2>/dev/null)
    [ -n "$uid" ] && [ -n "$c" ] || return 1
    runc --root "$RUNC_ROOT" state "$uid-$c" 2>/dev/null |
        $PY -c 'import json,sys; s = json.load(sys.stdin); print(s["pid"]) if s["status"] == "running" and s["pid"] > 0 else sys.exit(1)' 2>/dev/null
}
status_ok() { case $($NB get "$PROXY" "$CA" "/notebook/team-b/lab/api/status" "$cookie" 2>/dev/null) in 200*) return 0 ;; esac; return 1; }
stopped() { [ -n "$(jp notebook lab -n team-b -o jsonpath='{.metadata.annotations.kubeflow-resource-stopped}')" ]; }

# 1. the README's manifest, as the tenant
$T create -f examples/workbench/lab.yaml >/dev/null || fail "create the workbench"
wait_until 120 ctr_pid lab-0
pid=$(ctr_pid lab-0)
for n in mnt user net pid; do
    [ "$(readlink /proc/"$pid"/ns/$n)" != "$(readlink /proc/$$/ns/$n)" ] || fail "lab-0 shares the host's $n namespace"
done
[ -x "/proc/$pid/root/usr/bin/jupyter-server" ] || fail "lab-0's root is not the workbench image"
hu=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
[ "$hu" -ge 65536 ] || fail "lab-0 runs as host uid $hu (not team-b's range)"
IP=$(jp pod lab-0 -n team-b -o jsonpath='{.status.podIP}')
case $IP in 127.* | "") fail "lab-0 has no address of its own: '$IP'" ;; esac
cookie=$($NB login "$PROXY" "$CA" team-b lab "$BOB") || fail "login"
wait_until 90 status_ok
echo "Jupyter answers through the proxy on $IP after $((SECONDS - t0)) s"

# 2. where it listens: port 8888 in the pod's network namespace, nothing of it in the host's
nsenter -t "$pid" -n ss -Hltn >"$TMP/ss-pod"
grep -q ':8888 ' "$TMP/ss-pod" || fail "no listener on 8888 in lab-0's network namespace: $(cat "$TMP/ss-pod")"
pids=$(for p in $(pgrep -f jupyter); do [ "$(readlink /proc/"$p"/ns/net)" = "$(readlink /proc/"$pid"/ns/net)" ] && echo "$p"; done)
[ -n "$pids" ] || fail "no Jupyter process in lab-0's network namespace"
ss -Hltnp >"$TMP/ss-host"
for p in $pids; do
    grep -q "pid=$p," "$TMP/ss-host" && fail "Jupyter (pid $p) listens in the host's network namespace: $(grep "pid=$p," "$TMP/ss-host")"
done
$NB kernel "$PROXY" "$CA" team-b lab "$cookie" >"$TMP/out" 2>&1 || fail "kernel: $(cat "$TMP/out")"
expect_line "$TMP/out" 42

# 3. the hostile tenant: a pod of team-a cannot connect to lab-0's Jupyter; one of team-b can
probe_pod() { # NS NAME
    cat <<YAML | $K apply -f - >/dev/null || fail "create $1/$2"
apiVersion: v1
kind: Pod
metadata: {name: $2, namespace: $1}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: fatia.dev/busybox:1
    command: [sh, -c, 'if nc -w 3 $IP 8888 </dev/null; then echo OPEN; else echo CLOSED; fi']
YAML
}
probe_pod team-a peek
probe_pod team-b mate
done_pod() { case $(jp pod "$2" -n "$1" -o jsonpath='{.status.phase}') in Succeeded | Failed) return 0 ;; esac; return 1; }
wait_until 60 done_pod team-a peek
wait_until 60 done_pod team-b mate
$K logs peek -n team-a >"$TMP/peek" 2>&1
$K logs mate -n team-b >"$TMP/mate" 2>&1
expect_line "$TMP/peek" CLOSED
expect_line "$TMP/mate" OPEN
$K delete pod peek -n team-a >/dev/null
$K delete pod mate -n team-b >/dev/null

# 4. the culler through the pod's address: busy for twice the idle time and more, not culled; a
# file written in the home
BUSY=$((IDLE * 2 + 4))
$NB run "$PROXY" "$CA" team-b lab "$cookie" \
    "import os, time; open(os.path.join(os.environ['HOME'], 'kept.txt'), 'w').write('kept across stops'); time.sleep($BUSY)" \
    >"$TMP/out" 2>&1 || fail "run: $(cat "$TMP/out")"
tb=$SECONDS
# what Jupyter says of its kernels, twice a second, through the proxy (printed on a failure)
(while kill -0 $$ 2>/dev/null; do
    echo "$(date +%T.%N | cut -c1-12) $($NB get "$PROXY" "$CA" "/notebook/team-b/lab/api/kernels?no_track_activity=1" "$cookie" 2>&1)"
    sleep 0.5
done) >"$TMP/kpoll" 2>&1 &
kpoll=$!
while [ $((SECONDS - tb)) -lt $((BUSY - 1)) ]; do
    stopped && {
        fail "culled while its kernel was busy (after $((SECONDS - tb)) s)"
        $K get pod lab-0 -n team-b -o jsonpath='{.status.containerStatuses}' 2>&1 | head -c 1500
        echo
        $K logs lab-0 -n team-b 2>&1 | tail -40
        grep -a culler "$TMP/data.log" | tail -5
        cat "$TMP/kpoll"
        break
    }
    sleep 0.5
done
kill "$kpoll" 2>/dev/null
wait_until $((IDLE + 15)) stopped
echo "culled $((SECONDS - tb - BUSY)) s after the kernel went idle (idle time ${IDLE} s)"
lab_gone() { [ -z "$(jp pod lab-0 -n team-b -o name)" ]; }
wait_until 60 lab_gone
$K get events -n team-b --field-selector reason=Culled >"$TMP/out"
expect_line "$TMP/out" "its slice freed"
home=$TMP/data/agent/homes/team-b/lab
[ "$(cat "$home/kept.txt" 2>/dev/null)" = "kept across stops" ] || fail "the kernel's file is not in the home on the host"
ho=$(stat -c %u "$home/kept.txt" 2>/dev/null || echo 0)
[ "$ho" -ge 65536 ] || fail "the home's file is owned by host uid $ho (not team-b's range)"

# 5. started again: the file is there, read through Jupyter's contents API
$T annotate notebook lab kubeflow-resource-stopped- >/dev/null || fail "start again"
wait_until 120 ctr_pid lab-0
wait_until 90 status_ok
$NB get "$PROXY" "$CA" "/notebook/team-b/lab/api/contents/kept.txt?content=1" "$cookie" >"$TMP/out" 2>&1
expect_line "$TMP/out" '"content": "kept across stops"'

$T delete notebook lab >/dev/null || fail "delete the workbench"
wait_until 60 lab_gone
wait_until 30 out_empty runc --root "$RUNC_ROOT" list -q
stop_fatiad
finish

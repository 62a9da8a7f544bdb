#!/bin/bash
# tests/e2e/culler.sh: idle workbenches are stopped (fatiad --cull-idle-time), with a real
# jupyter-server behind the workbench proxy and the real kubectl:
#   - a workbench whose kernel is busy (time.sleep) is not culled while it runs, however long
#     past the idle time; once the kernel is idle for the idle time, the culler stops it: the
#     annotation kubeflow-resource-stopped, notebooks.kubeflow.org/last-activity, the Event
#     Culled, fatia_notebook_culled_total{namespace="team-b"} 1; the pod goes, its Workload ends
#     and team-b's quota is free again (it was on a GPU slice through the profile);
#   - a workbench whose server is not Jupyter (it answers nothing) is never culled: its probes
#     fail (fatia_notebook_probe_failures_total) and it keeps running.
# In the process mode (Jupyter on the home's socket); tests/e2e/workbench-containers.sh has the
# same in a container. Skipped when kubectl, Debian's jupyter-server or python3-websocket is
# missing.
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
find_kubectl
PY=/usr/bin/python3
[ -x /usr/bin/jupyter-server ] || skip "Debian's jupyter-server is not installed (scripts/setup)"
$PY -c 'import websocket, ipykernel' 2>/dev/null || skip "python3-websocket or python3-ipykernel missing"
[ "$(id -u)" = 0 ] || skip "needs root: the workbench runs under its namespace's uid"
export HOME=$TMP/home
mkdir -p "$HOME"
export FATIAD_CONTROLLERS=1
chmod 711 "$TMP"
NB="$PY $E2E_DIR/nbproxy.py"
IDLE=6

e2e_start --cull-idle-time ${IDLE}s --cull-check-period 1s || { finish; exit 1; }
PROXY=$(grep -o 'serving workbenches at https://127.0.0.1:[0-9]*' "$TMP/data.log" | grep -o 'https://.*')
"$FATIA" token create --data-dir "$TMP/data" --user bob --namespace team-b >"$TMP/bob.kubeconfig" 2>/dev/null || fail "token bob"
T="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $TMP/bob.kubeconfig -n team-b"
# the kernel manager of share/jupyter/fatia_kernels.py: busy while any request runs (the race of
# a control request during a cell, tests/e2e/kernelstate.sh); the workbench image has it. Copied
# under $TMP: the namespace's uid may not reach the source tree
SHARE=$TMP/share
mkdir -p "$SHARE"
install -m 0644 "$(dirname "$0")/../../share/jupyter/fatia_kernels.py" "$SHARE/"
chmod 755 "$SHARE"
JUPYTER="exec env PYTHONPATH=$SHARE /usr/bin/jupyter-server --ServerApp.kernel_manager_class=fatia_kernels.FatiaKernelManager"
JUPYTER+=' --sock="$HOME/.fatia-jupyter.sock" --ServerApp.base_url="$NB_PREFIX" --ServerApp.token= --ServerApp.password= --ServerApp.disable_check_xsrf=True --transport=ipc --KernelManager.ip=kernel-ipc --ServerApp.open_browser=False 2>>"$HOME/jupyter.log"'
cat >"$TMP/lab.yaml" <<YAML
apiVersion: kubeflow.org/v1
kind: Notebook
metadata:
  name: lab
  namespace: team-b
  annotations:
    opendatahub.io/hardware-profile-name: notebook-shared
    opendatahub.io/hardware-profile-namespace: gpu-catalog
spec:
  template:
    spec:
      containers:
      - name: lab
        image: fatia.dev/workbench:1
        command: [sh, -c, '$JUPYTER']
---
apiVersion: kubeflow.org/v1
kind: Notebook
metadata: {name: mute, namespace: team-b}
spec:
  template:
    spec:
      containers:
      - name: mute
        image: x
        command: [sleep, "600"]
YAML
$T create -f "$TMP/lab.yaml" >/dev/null || fail "create notebooks"
sock=$TMP/data/agent/homes/team-b/lab/.fatia-jupyter.sock
wait_until 60 test -S "$sock"
cookie=$($NB login "$PROXY" "$CA" team-b lab "$(tok() { awk -v u="$1" '$2 == u {print $1; exit}' "$TMP/data/tokens"; }; tok bob)") ||
    fail "login"
BUSY=$((IDLE * 2 + 4))
$NB run "$PROXY" "$CA" team-b lab "$cookie" "import time; time.sleep($BUSY)" >"$TMP/out" || fail "run: $(cat "$TMP/out")"
t0=$SECONDS
# what Jupyter says of its kernels, twice a second, through the proxy (printed on a failure)
(while kill -0 $$ 2>/dev/null; do
    echo "$(date +%T.%N | cut -c1-12) $($NB get "$PROXY" "$CA" "/notebook/team-b/lab/api/kernels?no_track_activity=1" "$cookie" 2>&1)"
    sleep 0.5
done) >"$TMP/kpoll" 2>&1 &
kpoll=$!
stopped() { [ -n "$(jp notebook lab -n team-b -o jsonpath='{.metadata.annotations.kubeflow-resource-stopped}')" ]; }
# busy for BUSY s: twice the idle time and more, and not culled
while [ $((SECONDS - t0)) -lt $((BUSY - 1)) ]; do
    stopped && {
        fail "culled while its kernel was busy (after $((SECONDS - t0)) s)"
        tail -30 "$TMP/data/agent/homes/team-b/lab/jupyter.log"
        grep -a culler "$TMP/data.log" | tail -5
        cat "$TMP/kpoll"
        break
    }
    sleep 0.5
done
[ -n "$(jp notebook lab -n team-b -o jsonpath='{.metadata.annotations.notebooks\.kubeflow\.org/last-activity}')" ] ||
    fail "no last-activity annotation while running"
kill "$kpoll" 2>/dev/null
# idle now: culled within the idle time plus a few periods
wait_until $((IDLE + 15)) stopped
took=$((SECONDS - t0 - BUSY))
echo "culled $took s after the kernel went idle (idle time ${IDLE} s)"
[ "$took" -ge $((IDLE - 2)) ] || fail "culled too early: $took s after the kernel went idle"
lab_gone() { [ -z "$(jp pod lab-0 -n team-b -o name)" ]; }
wait_until 60 lab_gone
$K get events -n team-b --field-selector reason=Culled >"$TMP/out"
expect_line "$TMP/out" "its slice freed"
cq_free() { [ "$(jp cq team-b -o jsonpath='{.status.admittedWorkloads}')" = 0 ]; }
wait_until 20 cq_free
metrics
expect_line "$TMP/metrics" 'fatia_notebook_culled_total{namespace="team-b"} 1'
grep -q '^fatia_notebook_probe_failures_total{namespace="team-b"} [1-9]' "$TMP/metrics" ||
    fail "the mute workbench's failed probes are not counted"
[ "$(jp pod mute-0 -n team-b -o jsonpath='{.status.phase}')" = Running ] || fail "the mute workbench was stopped"
[ -z "$(jp notebook mute -n team-b -o jsonpath='{.metadata.annotations.kubeflow-resource-stopped}')" ] ||
    fail "the mute workbench was culled"

$T delete notebooks --all >/dev/null || fail "delete notebooks"
nb_pods_gone() { [ -z "$(jp pods -n team-b -l notebook-name -o name)" ]; }
wait_until 60 nb_pods_gone
stop_fatiad
finish

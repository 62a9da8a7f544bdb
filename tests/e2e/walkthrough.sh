#!/bin/bash
# tests/e2e/walkthrough.sh: the README's walkthrough as a test, in containers as `make run` runs it:
# fatiad with its node agent on the walkthrough fleet (examples/fleet/) and examples/, the
# agent's default runtime (auto: runc here, as root), the examples' images loaded as `make run`
# loads them (scripts/images/load-examples), the real kubectl, and the walkthrough's own
# manifests (examples/jobs/), run faster (sleep 0.1 a step) and instrumented by sed: each
# container writes "start <name>" to $SHARED/order when it starts and "stop <name>" there (and to
# $SHARED/<name>.trap) when its SIGTERM trap runs ($SHARED is a hostPath volume: the test's
# namespaces are allowed them, --agent host-path-namespaces; the examples themselves have none).
# Checks:
#   - admission order, as the containers saw it: team-a's first job, then its second (borrowing
#     team-b's idle GPUs), then team-b's, which starts only after team-a's borrower got SIGTERM and
#     stopped (reclamation), then team-a's urgent job, only after team-a's batch job stopped
#     (priority preemption); team-b's job never stops team-a's job within its quota;
#   - each pod's process (its host pid from runc's state) is in a runc container: its own mount,
#     user, network and pid namespaces, a root that is the image's (python3 and busybox there, the
#     test's directory not), a host uid of its namespace's range (never 0);
#   - the environment each running container really has (/proc/PID/environ): the GPU UUIDs of its
#     pod's fatia.dev/devices annotation (the simulated ids) for whole GPUs, the MIG UUID on a MIG
#     slice, the MPS variables on an MPS share (a policy applied live, which re-plans two GPUs);
#     no LD_PRELOAD or FATIA_VGPU_* anywhere;
#   - the notebook's time-slice: the cap is read from its read-only /etc/fatia/vgpu.conf, and
#     /etc/ld.so.preload loads the interposer into a process started with `env -i` through
#     kubectl exec; a whole GPU and a MIG slice get neither file;
#   - at every step, over the live containers of this fatiad's pods: no slice (FATIA_SLICES) in
#     two pods at once;
#   - kubectl logs (a pod, job/x), the Pulled Event of a loaded image, final phases (every Job
#     Complete), quotas back to zero, kubectl get clusterqueues; deleting the Jobs deletes their
#     pods and their runc containers;
#   - tests/e2e/slicecheck.py over every pod event: no slice held by two pods.
# Skipped (with a message) when kubectl, runc, umoci, skopeo or busybox is missing or not root.
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
find_kubectl
[ "$(id -u)" = 0 ] || skip "the walkthrough runs in containers: it needs root"
need_tools runc umoci skopeo busybox
export HOME=$TMP/home
mkdir -p "$HOME"
export FATIAD_CONTROLLERS=1
chmod 711 "$TMP"
SHARED=$TMP/shared
mkdir -p "$SHARED"
chmod 1777 "$SHARED"
: >"$SHARED/order" # written by both teams' uids
chmod 666 "$SHARED/order"
RUNC_ROOT=$TMP/data/agent/runc
cleanup_ctrs() {
    local c f sh
    for f in "$TMP"/data/agent/status/*.json; do # the pods' supervisors, by the pids they recorded
        [ -f "$f" ] || continue
        sh=$(grep -o '"shim":{"pid":[0-9]*' "$f" | head -1 | grep -o '[0-9]*$')
        [ -n "$sh" ] && [ "$sh" -gt 1 ] && kill -9 "$sh" 2>/dev/null
    done
    for c in $(runc --root "$RUNC_ROOT" list -q 2>/dev/null); do
        runc --root "$RUNC_ROOT" delete --force "$c" 2>/dev/null
    done
}
# fatiad.bash's own trap, with the containers (pods outlive fatiad) and their mounts first
trap 'cleanup_ctrs; if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi
      grep -o " ${TMP}[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
      etcd_cleanup; rm -rf "$TMP"' EXIT

# the images the examples name, as make run loads them
scripts/images/load-examples "$TMP/data" "$BUILD/bin/fatia" >"$TMP/images.log" 2>&1 ||
    fail "load-examples: $(cat "$TMP/images.log")"
# fatiad's default runtime (auto), as make run starts it
FATIAD_RUNTIME=auto e2e_start --job-backoff 200ms --agent host-path-namespaces=team-a,team-b ||
    { finish; exit 1; }
grep -q "pods run in OCI containers" "$TMP/data.log" ||
    fail "the default runtime is not containers: $(grep agent: "$TMP/data.log" | head -3)"
watch_pods "$TMP/watch"

# job FILE NAME STEPS: the example, faster, with its start and its SIGTERM recorded in $SHARED
job() {
    sed -e "s/value: \"[0-9]*\"}/value: \"$3\"}/" \
        -e "s/sleep 1; done/sleep 0.1; done/" \
        -e "s|trap '|trap 'echo TERM >> $SHARED/$2.trap; echo stop $2 >> $SHARED/order; |" "examples/jobs/$1" |
        awk -v o="$SHARED/order" -v n="$2" -v sh="$SHARED" '
            /^ *containers:$/ {match($0, /^ */); printf "%*svolumes: [{name: shared, hostPath: {path: %s}}]\n", RLENGTH, "", sh}
            {print}
            /^ *image: / {match($0, /^ */); printf "%*svolumeMounts: [{name: shared, mountPath: %s}]\n", RLENGTH, "", sh}
            /^ *- \|$/ {match($0, /^ */); printf "%*s  echo start %s >> %s\n", RLENGTH, "", n, o}' \
            >"$TMP/$2.yaml"
    $K create -f "$TMP/$2.yaml" >/dev/null || fail "kubectl create -f examples/jobs/$1"
}
# pod_name NS NAME: the job's newest pod, or the pod NAME
pod_name() {
    local p
    p=$(pod_of_job "$1" "$2")
    echo "${p:-$2}"
}
# ctr_pid NS NAME: the host pid of the pod's (first) container, from runc's state of it
ctr_pid() {
    local pod uid c
    pod=$(pod_name "$1" "$2")
    uid=$($K get pod "$pod" -n "$1" -o jsonpath='{.metadata.uid}' 2>/dev/null)
    c=$($K get pod "$pod" -n "$1" -o jsonpath='{.spec.containers[0].name}' 2>/dev/null)
    [ -n "$uid" ] && [ -n "$c" ] || return 1
    runc --root "$RUNC_ROOT" state "$uid-$c" 2>/dev/null |
        python3 -c 'import json,sys; s = json.load(sys.stdin); print(s["pid"]) if s["status"] == "running" and s["pid"] > 0 else sys.exit(1)' 2>/dev/null
}
running() { # NS NAME: the job's (or pod's) container is up and its command started
    grep -qx "start $2" "$SHARED/order" && [ -n "$(ctr_pid "$1" "$2")" ]
}
environ_of() {
    tr '\0' '\n' <"/proc/$1/environ"
}
ns_of() { readlink "/proc/$1/ns/$2"; }
# in_container NS NAME: the pod's container process runs in a runc container of its image
in_container() {
    local pid hu
    pid=$(ctr_pid "$1" "$2") || { fail "$1/$2: no running runc container"; return 1; }
    for n in mnt user net pid uts ipc; do
        [ "$(ns_of "$pid" $n)" != "$(ns_of $$ $n)" ] || fail "$1/$2: pid $pid shares the host's $n namespace"
    done
    [ -e "/proc/$pid/root/usr/bin/python3" ] && [ -x "/proc/$pid/root/bin/busybox" ] ||
        fail "$1/$2: pid $pid's root is not the image fatia.dev/python3:1"
    [ -e "/proc/$pid/root$TMP/data" ] && fail "$1/$2: pid $pid sees the host's $TMP/data"
    hu=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
    [ "$hu" -ge 65536 ] || fail "$1/$2: pid $pid runs as host uid $hu (not the namespace's range)"
    grep -q "/fatia-pods/pod-" "/proc/$pid/cgroup" || fail "$1/$2: pid $pid is not in its pod's cgroup"
    return 0
}
# before A B: line A of $SHARED/order comes before line B (both there)
before() {
    local a b
    a=$(grep -nxF "$1" "$SHARED/order" | head -1 | cut -d: -f1)
    b=$(grep -nxF "$2" "$SHARED/order" | head -1 | cut -d: -f1)
    [ -n "$a" ] && [ -n "$b" ] && [ "$a" -lt "$b" ] ||
        fail "admission order: '$1' should come before '$2': $(tr '\n' ';' <"$SHARED/order")"
}
# no_shared_slices MIN: over the live containers of this fatiad's pods (runc's state under its
# data directory), no slice id of FATIA_SLICES belongs to two pods at once; at least MIN pods
# were found
live_slices() {
    local c pid
    for c in $(runc --root "$RUNC_ROOT" list -q 2>/dev/null); do
        pid=$(runc --root "$RUNC_ROOT" state "$c" 2>/dev/null | python3 -c 'import json,sys; s = json.load(sys.stdin); print(s["pid"] if s["status"] == "running" else "")')
        [ -n "$pid" ] || continue
        tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ" | awk -v c="${c:0:36}" '
            /^FATIA_SLICES=/ {s = substr($0, 14)}
            END {if (s != "") {n = split(s, a, ","); for (i = 1; i <= n; i++) print a[i], c}}'
    done | sort -u >"$TMP/live-slices"
}
# (a pod reads Running once its supervisor started it: its process may exec a moment later, so
# the count is retried for a few seconds; a shared slice fails at once)
no_shared_slices() {
    local i
    for i in $(seq 50); do
        live_slices
        [ "$(awk '{print $2}' "$TMP/live-slices" | sort -u | wc -l)" -ge "$1" ] && break
        awk '{n[$1]++} END {for (s in n) if (n[s] > 1) exit 1}' "$TMP/live-slices" || break
        sleep 0.2
    done
    awk '{n[$1]++; p[$1] = p[$1] " " $2} END {for (s in n) if (n[s] > 1) print s ":" p[s]}' \
        "$TMP/live-slices" >"$TMP/shared-slices"
    [ -s "$TMP/shared-slices" ] && fail "slices held by two running pods: $(cat "$TMP/shared-slices")"
    [ "$(awk '{print $2}' "$TMP/live-slices" | sort -u | wc -l)" -ge "$1" ] ||
        fail "want at least $1 pods running on slices, found: $(cat "$TMP/live-slices")"
    return 0
}
# uuids_of NS POD: the UUIDs the placement gave the pod (fatia.dev/devices), comma-separated
uuids_of() {
    $K get pod "$2" -n "$1" -o jsonpath='{.metadata.annotations.fatia\.dev/devices}' |
        python3 -c 'import json,sys; print(",".join(d.get("migUuid") or d["uuid"] for d in json.load(sys.stdin)))'
}

# 1. team-a trains on two whole GPUs
job 10-team-a-train.yaml train-a1 150
wait_until 15 running team-a train-a1
in_container team-a train-a1
environ_of "$(ctr_pid team-a train-a1)" >"$TMP/env-a1"
expect_line "$TMP/env-a1" "CUDA_VISIBLE_DEVICES=GPU-"
grep -q '^CUDA_VISIBLE_DEVICES=GPU-[0-9a-f-]*,GPU-[0-9a-f-]*$' "$TMP/env-a1" ||
    fail "train-a1 does not see two GPUs: $(grep CUDA_VISIBLE "$TMP/env-a1")"
expect_line "$TMP/env-a1" "NVIDIA_VISIBLE_DEVICES=GPU-"
grep -q '^LD_PRELOAD=\|^FATIA_VGPU' "$TMP/env-a1" && fail "a whole GPU got the interposer's variables"
[ -e "/proc/$(ctr_pid team-a train-a1)/root/etc/fatia/vgpu.conf" ] && fail "a whole GPU got vgpu.conf"
expect_line "$TMP/env-a1" "CUDA_VISIBLE_DEVICES=$(uuids_of team-a "$(pod_of_job team-a train-a1)")"
expect_line "$TMP/env-a1" "NVIDIA_VISIBLE_DEVICES=$(uuids_of team-a "$(pod_of_job team-a train-a1)")"
$K get events -n team-a >"$TMP/events"
expect_line "$TMP/events" "Pulled"
expect_line "$TMP/events" 'Container image "fatia.dev/python3:1" already present on machine'
expect_rc 0 $K get pod "$(pod_of_job team-a train-a1)" -n team-a -o jsonpath='{.status.containerStatuses[0].imageID}'
expect_line "$TMP/out" "sha256:"

# 2. a second job of team-a borrows team-b's idle GPUs
job 11-team-a-train-2.yaml train-a2 150
wait_until 15 running team-a train-a2
wait_until 5 out_is 4 cq_usage team-a h200 nvidia.com/gpu
expect_rc 0 $K get cq team-a -o jsonpath='{.status.flavorsUsage[?(@.name=="h200")].resources[?(@.name=="nvidia.com/gpu")].borrowed}'
expect_line "$TMP/out" "2"
no_shared_slices 2

# 3. team-b takes its GPUs back: the borrower gets SIGTERM (its log, followed as the README
# says, shows the trap's message and ends with the process)
$K logs -f job/train-a2 -n team-a >"$TMP/a2.log" 2>&1 &
LOGS_PID=$!
wait_until 5 grep -q "step" "$TMP/a2.log"
job 20-team-b-train.yaml train-b1 300 # runs on through step 4 (30 s: the checks in containers take longer on a loaded machine)
wait_until 15 test -s "$SHARED/train-a2.trap"
wait_until 15 eval "! kill -0 $LOGS_PID 2>/dev/null"
expect_line "$TMP/a2.log" "SIGTERM received at step"
wait_until 15 running team-b train-b1
# (the condition may already read "Previously: ..." if the job was admitted again meanwhile)
expect_rc 0 $K get workload "$(wl_of team-a train-a2)" -n team-a -o jsonpath='{.status.conditions[?(@.type=="Preempted")].message}'
expect_line "$TMP/out" "due to reclamation within the cohort"
[ -s "$SHARED/train-a1.trap" ] && fail "train-a1 was stopped by team-b's job"
no_shared_slices 1

# 4. urgent work of team-a preempts its batch job (team-b's job still runs, so team-a's
# borrower cannot be back and the urgent job's only possible victim is train-a1)
running team-b train-b1 || fail "train-b1 ended before step 4 (the victim would differ)"
job 30-team-a-urgent.yaml urgent-eval 10
wait_until 15 test -s "$SHARED/train-a1.trap"
wait_until 15 running team-a urgent-eval
expect_rc 0 $K get workload "$(wl_of team-a train-a1)" -n team-a -o jsonpath='{.status.conditions[?(@.type=="Preempted")].message}'
expect_line "$TMP/out" "due to prioritization in the ClusterQueue"
no_shared_slices 1
before "start train-a1" "start train-a2"
before "start train-a2" "stop train-a2"
before "stop train-a2" "start train-b1"
before "start train-b1" "stop train-a1"
before "stop train-a1" "start urgent-eval"

# 5. a notebook on a capped time-slice, a model server on MIG
job 40-team-b-notebook.yaml notebook 200
job 50-team-b-inference.yaml serve-llm 200
wait_until 15 running team-b notebook
wait_until 15 running team-b serve-llm
in_container team-b notebook
in_container team-b serve-llm
NB=$(ctr_pid team-b notebook)
environ_of "$NB" >"$TMP/env-nb"
expect_line "$TMP/env-nb" "CUDA_VISIBLE_DEVICES=GPU-"
grep -q '^LD_PRELOAD=\|^FATIA_VGPU' "$TMP/env-nb" &&
    fail "the capped container's environment carries the interposer: $(grep 'LD_PRE\|FATIA_VGPU' "$TMP/env-nb")"
# the cap is the read-only vgpu.conf's, the interposer loaded by /etc/ld.so.preload
grep -qx "FATIA_VGPU_MEMORY_LIMIT_0=36882612224" "/proc/$NB/root/etc/fatia/vgpu.conf" ||
    fail "notebook's vgpu.conf: $(cat "/proc/$NB/root/etc/fatia/vgpu.conf" 2>&1)"
expect_line "/proc/$NB/root/etc/ld.so.preload" "/usr/lib/fatia/libfatia-vgpu.so"
for f in /etc/fatia/vgpu.conf /etc/ld.so.preload /usr/lib/fatia/libfatia-vgpu.so; do
    awk -v f="$f" '$5 == f {split($6, o, ","); print o[1]}' "/proc/$NB/mountinfo" | grep -qx ro ||
        fail "notebook: $f is not a read-only mount: $(grep " $f " "/proc/$NB/mountinfo")"
done
expect_rc 0 $K exec notebook -n team-b -- env -i /usr/bin/python3 -c 'import os; print(os.environ.get("LD_PRELOAD", "-")); print(open("/proc/self/maps").read())'
expect_line "$TMP/out" "/usr/lib/fatia/libfatia-vgpu.so"
$K exec notebook -n team-b -- sh -c 'echo FATIA_VGPU_MEMORY_LIMIT_0=999999999999 > /etc/fatia/vgpu.conf' \
    >"$TMP/out" 2>&1 && fail "the tenant rewrote its vgpu.conf"
expect_line "$TMP/out" "Read-only file system"
MIG=$(ctr_pid team-b serve-llm)
[ -e "/proc/$MIG/root/etc/fatia/vgpu.conf" ] || [ -e "/proc/$MIG/root/etc/ld.so.preload" ] &&
    fail "a MIG slice got the interposer's files"
environ_of "$MIG" >"$TMP/env-mig"
expect_line "$TMP/env-mig" "CUDA_VISIBLE_DEVICES=MIG-"
expect_line "$TMP/env-mig" "CUDA_VISIBLE_DEVICES=$(uuids_of team-b "$(pod_of_job team-b serve-llm)")"
expect_line "$TMP/env-nb" "CUDA_VISIBLE_DEVICES=$(uuids_of team-b notebook)"
no_shared_slices 2
grep -q '^LD_PRELOAD=\|^FATIA_VGPU' "$TMP/env-mig" && fail "a MIG slice got the interposer"
expect_rc 0 $K logs notebook -n team-b
expect_line "$TMP/out" "memory cap: 36882612224 bytes"
expect_rc 0 $K logs job/serve-llm -n team-b
expect_line "$TMP/out" "serving on MIG-"

# 6. everything runs to the end (the preempted jobs are admitted again and start over)
for j in team-b/train-b1 team-a/urgent-eval team-a/train-a1 team-a/train-a2 team-b/serve-llm; do
    wait_until 90 is_true job_cond "${j%/*}" "${j#*/}" Complete
done
wait_until 30 out_is Succeeded $K get pod notebook -n team-b -o jsonpath='{.status.phase}'
expect_rc 0 $K logs job/train-a1 -n team-a
expect_line "$TMP/out" "step 150/150"
expect_line "$TMP/out" "done"
expect_rc 0 $K get jobs -A
for j in train-a1 train-a2 train-b1 urgent-eval serve-llm; do
    grep -q "^team-[ab] *$j *Complete" "$TMP/out" || fail "job $j is not Complete: $(grep "$j" "$TMP/out")"
done
for cq in team-a team-b; do
    for r in nvidia.com/gpu nvidia.com/gpu.shared nvidia.com/mig-3g.71gb; do
        wait_until 10 out_is 0 cq_usage $cq h200 $r
    done
done
expect_rc 0 $K get clusterqueues
grep -q '^team-a  *research  *0  *0  ' "$TMP/out" ||
    fail "kubectl get clusterqueues: $(cat "$TMP/out")"

# 7. MPS: two whole GPUs become MPS shares (a live re-plan), a pod gets one
cat >"$TMP/mps.yaml" <<'YAML'
apiVersion: fatia.dev/v1alpha1
kind: GPUSharingPolicy
metadata: {name: mps-pair}
spec:
  nodeSelector: {matchLabels: {fatia.dev/box: h200x8}}
  gpuIndices: [6, 7]
  mps:
    renameByDefault: true
    resources: [{name: nvidia.com/gpu, rename: nvidia.com/gpu.mps, replicas: 4}]
---
apiVersion: v1
kind: Pod
metadata: {name: mps-client, namespace: team-b}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: fatia.dev/busybox:1
    command: ["sh", "-c", "sleep 30"]
    resources: {limits: {nvidia.com/gpu.mps: 1}}
YAML
expect_rc 0 $K apply -f "$TMP/mps.yaml"
wait_until 15 ctr_pid team-b mps-client
environ_of "$(ctr_pid team-b mps-client)" >"$TMP/env-mps"
expect_line "$TMP/env-mps" "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25"
expect_line "$TMP/env-mps" "CUDA_MPS_PIPE_DIRECTORY="
expect_line "$TMP/env-mps" "CUDA_VISIBLE_DEVICES=GPU-"
expect_line "$TMP/env-mps" "CUDA_VISIBLE_DEVICES=$(uuids_of team-b mps-client)"
expect_line "$TMP/env-mps" "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT="
no_shared_slices 1
expect_rc 0 $K delete pod mps-client -n team-b
wait_until 20 out_empty $K get pod mps-client -n team-b -o name

# 8. deleting the Jobs deletes their finished pods (the job controller lets go of orphans)
expect_rc 0 $K delete jobs --all -n team-a
expect_rc 0 $K delete jobs --all -n team-b
expect_rc 0 $K delete pod notebook -n team-b
wait_until 30 out_empty $K get pods -A -o name
wait_until 30 out_empty runc --root "$RUNC_ROOT" list -q

# the history: no slice held by two pods
metrics
expect_line "$TMP/metrics" "fatia_slice_conflicts_total 0"
kill "$WATCH_PID" 2>/dev/null
if ! python3 "$E2E_DIR/slicecheck.py" "$TMP/watch" >"$TMP/check"; then
    fail "slice history: $(cat "$TMP/check")"
fi
cat "$TMP/check"
stop_fatiad
finish

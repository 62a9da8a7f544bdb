#!/bin/bash
# tests/e2e/walkthrough.sh: the README's walkthrough as a test, with real processes: fatiad with
# its node agent on the walkthrough fleet (examples/fleet/) and examples/, the real kubectl, and
# the walkthrough's own manifests (examples/jobs/), run faster (sleep 0.1 a step) and instrumented
# by sed: each process writes its pid to $SHARED/<name>.pid, "start <name>" to $SHARED/order
# when it starts and "stop <name>" there (and to $SHARED/<name>.trap) when its SIGTERM trap runs.
# Checks:
#   - admission order, as the processes saw it: team-a's first job, then its second (borrowing
#     team-b's idle GPUs), then team-b's, which starts only after team-a's borrower got SIGTERM and
#     stopped (reclamation), then team-a's urgent job, only after team-a's batch job stopped
#     (priority preemption); team-b's job never stops team-a's job within its quota;
#   - the environment each running process really has (/proc/PID/environ): the GPU UUIDs of its
#     pod's fatia.dev/devices annotation (the simulated ids) for whole GPUs, the MIG UUID on a MIG
#     slice, LD_PRELOAD of the interposer and the cap on a time-slice, the MPS variables on an MPS
#     share (a policy applied live, which re-plans two GPUs);
#   - at every step, over the live processes of this fatiad's pods: no slice (FATIA_SLICES) in
#     two pods at once;
#   - kubectl logs (a pod, job/x), the ImageNotPulled Event, final phases (every Job Complete),
#     quotas back to zero, kubectl get clusterqueues; deleting the Jobs deletes their pods;
#   - tests/e2e/slicecheck.py over every pod event: no slice held by two pods.
# Skipped (with a message) when kubectl is missing.
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
export FATIAD_CONTROLLERS=1
chmod 711 "$TMP"
SHARED=$TMP/shared
mkdir -p "$SHARED"
chmod 1777 "$SHARED"
: >"$SHARED/order" # written by both teams' uids
chmod 666 "$SHARED/order"

e2e_start --job-backoff 200ms || { finish; exit 1; }
watch_pods "$TMP/watch"

# job FILE NAME STEPS: the example, faster, with its pid and its SIGTERM recorded
job() {
    sed -e "s/value: \"[0-9]*\"}/value: \"$3\"}/" \
        -e "s/sleep 1; done/sleep 0.1; done/" \
        -e "s|trap '|trap 'echo TERM >> $SHARED/$2.trap; echo stop $2 >> $SHARED/order; |" "examples/jobs/$1" |
        awk -v f="$SHARED/$2.pid" -v o="$SHARED/order" -v n="$2" '{print}
            /^ *- \|$/ {match($0, /^ */); printf "%*s  echo $$$$ > %s; echo start %s >> %s\n", RLENGTH, "", f, n, o}' \
            >"$TMP/$2.yaml"
    $K create -f "$TMP/$2.yaml" >/dev/null || fail "kubectl create -f examples/jobs/$1"
}
running() { # NS NAME: the job's (or pod's) process is up
    [ -s "$SHARED/$2.pid" ] && kill -0 "$(cat "$SHARED/$2.pid")" 2>/dev/null
}
environ_of() {
    tr '\0' '\n' <"/proc/$1/environ"
}
# before A B: line A of $SHARED/order comes before line B (both there)
before() {
    local a b
    a=$(grep -nxF "$1" "$SHARED/order" | head -1 | cut -d: -f1)
    b=$(grep -nxF "$2" "$SHARED/order" | head -1 | cut -d: -f1)
    [ -n "$a" ] && [ -n "$b" ] && [ "$a" -lt "$b" ] ||
        fail "admission order: '$1' should come before '$2': $(tr '\n' ';' <"$SHARED/order")"
}
# no_shared_slices MIN: over the live processes of this fatiad's pods (their HOME is in its data
# directory), no slice id of FATIA_SLICES belongs to two pods (HOSTNAME) at once; at least MIN
# pods were found
live_slices() {
    local f
    for f in /proc/[0-9]*/environ; do
        tr '\0' '\n' 2>/dev/null <"$f" | awk -v d="HOME=$TMP/data/" '
            index($0, d) == 1 {ours = 1} /^HOSTNAME=/ {h = substr($0, 10)}
            /^FATIA_SLICES=/ {s = substr($0, 14)}
            END {if (ours && h != "" && s != "") {n = split(s, a, ","); for (i = 1; i <= n; i++) print a[i], h}}'
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
environ_of "$(cat "$SHARED/train-a1.pid")" >"$TMP/env-a1"
expect_line "$TMP/env-a1" "CUDA_VISIBLE_DEVICES=GPU-"
grep -q '^CUDA_VISIBLE_DEVICES=GPU-[0-9a-f-]*,GPU-[0-9a-f-]*$' "$TMP/env-a1" ||
    fail "train-a1 does not see two GPUs: $(grep CUDA_VISIBLE "$TMP/env-a1")"
expect_line "$TMP/env-a1" "NVIDIA_VISIBLE_DEVICES=GPU-"
grep -q '^LD_PRELOAD=' "$TMP/env-a1" && fail "a whole GPU got the interposer"
expect_line "$TMP/env-a1" "CUDA_VISIBLE_DEVICES=$(uuids_of team-a "$(pod_of_job team-a train-a1)")"
expect_line "$TMP/env-a1" "NVIDIA_VISIBLE_DEVICES=$(uuids_of team-a "$(pod_of_job team-a train-a1)")"
$K get events -n team-a >"$TMP/events"
expect_line "$TMP/events" "ImageNotPulled"
expect_line "$TMP/events" "image fatia.dev/python3:1 recorded, not pulled"

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
job 20-team-b-train.yaml train-b1 100 # runs on through step 4 (10 s or more)
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
job 40-team-b-notebook.yaml notebook 30
job 50-team-b-inference.yaml serve-llm 30
wait_until 15 running team-b notebook
wait_until 15 running team-b serve-llm
environ_of "$(cat "$SHARED/notebook.pid")" >"$TMP/env-nb"
expect_line "$TMP/env-nb" "CUDA_VISIBLE_DEVICES=GPU-"
expect_line "$TMP/env-nb" "libfatia-vgpu.so"
expect_line "$TMP/env-nb" "FATIA_VGPU_MEMORY_LIMIT_0=36882612224"
environ_of "$(cat "$SHARED/serve-llm.pid")" >"$TMP/env-mig"
expect_line "$TMP/env-mig" "CUDA_VISIBLE_DEVICES=MIG-"
expect_line "$TMP/env-mig" "CUDA_VISIBLE_DEVICES=$(uuids_of team-b "$(pod_of_job team-b serve-llm)")"
expect_line "$TMP/env-nb" "CUDA_VISIBLE_DEVICES=$(uuids_of team-b notebook)"
no_shared_slices 2
grep -q '^LD_PRELOAD=' "$TMP/env-mig" && fail "a MIG slice got the interposer"
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
    image: busybox
    command: ["sh", "-c", "echo $$$$ > SHARED/mps-client.pid; sleep 30"]
    resources: {limits: {nvidia.com/gpu.mps: 1}}
YAML
sed -i "s|SHARED|$SHARED|" "$TMP/mps.yaml"
expect_rc 0 $K apply -f "$TMP/mps.yaml"
wait_until 15 running team-b mps-client
environ_of "$(cat "$SHARED/mps-client.pid")" >"$TMP/env-mps"
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

#!/bin/bash
# tests/e2e/walkthrough.sh: the README's walkthrough as a test, with real processes: fatiad with
# its node agent on the walkthrough fleet (examples/fleet/) and examples/, the real kubectl, and
# the walkthrough's own manifests (examples/jobs/), run faster (sleep 0.1 a step) and instrumented
# by sed: each process writes its pid to $SHARED/<name>.pid and its SIGTERM trap to
# $SHARED/<name>.trap. Checks:
#   - admission order: team-a's first job, then its second (borrowing team-b's idle GPUs), then
#     team-b's (which reclaims them: team-a's borrower gets SIGTERM), then team-a's urgent job
#     (which preempts team-a's batch job: SIGTERM);
#   - the environment each running process really has (/proc/PID/environ): GPU UUIDs for whole
#     GPUs, the MIG UUID on a MIG slice, LD_PRELOAD of the interposer and the cap on a time-slice,
#     the MPS variables on an MPS share (a policy applied live, which re-plans two GPUs);
#   - kubectl logs; final phases (every Job Complete), quotas back to zero;
#   - tests/e2e/slicecheck.py over every pod event: no slice held by two pods.
# Skipped (with a message) when kubectl is missing or fatiad has no node agent.
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
find_kubectl
if [ -z "$NO_AGENT" ]; then
    echo "skipped: this fatiad has no node agent (docs/agent.md)"
    exit 0
fi
export HOME=$TMP/home
mkdir -p "$HOME"
export FATIAD_CONTROLLERS=1
chmod 711 "$TMP"
SHARED=$TMP/shared
mkdir -p "$SHARED"
chmod 1777 "$SHARED"

e2e_start --job-backoff 200ms || { finish; exit 1; }
watch_pods "$TMP/watch"

# job FILE NAME STEPS: the example, faster, with its pid and its SIGTERM recorded
job() {
    sed -e "s/value: \"[0-9]*\"}/value: \"$3\"}/" \
        -e "s/sleep 1; done/sleep 0.1; done/" \
        -e "s|trap '|trap 'echo TERM >> $SHARED/$2.trap; |" "examples/jobs/$1" |
        awk -v f="$SHARED/$2.pid" '{print} /^ *- \|$/ {match($0, /^ */); printf "%*s  echo $$$$ > %s\n", RLENGTH, "", f}' \
            >"$TMP/$2.yaml"
    $K create -f "$TMP/$2.yaml" >/dev/null || fail "kubectl create -f examples/jobs/$1"
}
running() { # NS NAME: the job's (or pod's) process is up
    [ -s "$SHARED/$2.pid" ] && kill -0 "$(cat "$SHARED/$2.pid")" 2>/dev/null
}
environ_of() {
    tr '\0' '\n' <"/proc/$1/environ"
}
admitted_at() { # NS JOB: when its workload's Admitted condition turned True
    $K get workload "$(wl_of "$1" "$2")" -n "$1" \
        -o jsonpath='{.status.conditions[?(@.type=="Admitted")].lastTransitionTime}'
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

# 2. a second job of team-a borrows team-b's idle GPUs
job 11-team-a-train-2.yaml train-a2 150
wait_until 15 running team-a train-a2
wait_until 5 out_is 4 cq_usage team-a h200 nvidia.com/gpu
expect_rc 0 $K get cq team-a -o jsonpath='{.status.flavorsUsage[?(@.name=="h200")].resources[?(@.name=="nvidia.com/gpu")].borrowed}'
expect_line "$TMP/out" "2"

# 3. team-b takes its GPUs back: the borrower gets SIGTERM
job 20-team-b-train.yaml train-b1 10
wait_until 15 test -s "$SHARED/train-a2.trap"
wait_until 15 running team-b train-b1
# (the condition may already read "Previously: ..." if the job was admitted again meanwhile)
expect_rc 0 $K get workload "$(wl_of team-a train-a2)" -n team-a -o jsonpath='{.status.conditions[?(@.type=="Preempted")].message}'
expect_line "$TMP/out" "due to reclamation within the cohort"
[ -s "$SHARED/train-a1.trap" ] && fail "train-a1 was stopped by team-b's job"

# 4. urgent work of team-a preempts its batch job
job 30-team-a-urgent.yaml urgent-eval 10
wait_until 15 test -s "$SHARED/train-a1.trap"
wait_until 15 running team-a urgent-eval
expect_rc 0 $K get workload "$(wl_of team-a train-a1)" -n team-a -o jsonpath='{.status.conditions[?(@.type=="Preempted")].message}'
expect_line "$TMP/out" "due to prioritization in the ClusterQueue"

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
expect_rc 0 $K delete pod mps-client -n team-b
wait_until 20 out_empty $K get pod mps-client -n team-b -o name

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

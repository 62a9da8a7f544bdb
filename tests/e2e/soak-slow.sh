#!/bin/bash
# tests/e2e/soak-slow.sh [BUILD] [JOBS]: a soak of short Jobs (default 1,000) across both teams of
# the walkthrough, on a real fatiad, submitted in bursts with kubectl, each asking for one kind of
# slice (one or two whole GPUs, a time-slice, a MIG 1g or 3g instance). With the node agent the
# jobs run as real processes, which append their job's name to $SHARED/done; without one
# (FATIA_SOAK_FAKE_AGENT=1 or --no-agent), tests/e2e/fakeagent.py plays its part.
# Checks: every Job Complete (succeeded 1, no failure), each with exactly one Workload (Finished);
# with the agent, each job's process succeeded exactly once (nothing lost, nothing run twice: a pod
# that succeeded while an eviction deleted it is gone from the API but counted by its Job), with
# the fake agent exactly one Succeeded pod per job; every ClusterQueue back to zero usage and
# nothing pending;
# fatia_slice_conflicts_total 0; and tests/e2e/slicecheck.py over every pod event of the run: no
# slice was held by two pods at any resourceVersion, and the pods that held slices were one per
# job plus at most one per eviction (the teams reclaim quota from each other all along).
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
export FATIAD_CONTROLLERS=1
chmod 711 "$TMP" # the pods' uids reach their working directories in $TMP/data
SHARED=$TMP/shared # each job's process appends its name to $SHARED/done (both teams' uids)
mkdir -p "$SHARED"
chmod 1777 "$SHARED"
: >"$SHARED/done"
chmod 666 "$SHARED/done"
N=${2:-${FATIA_SOAK_JOBS:-1000}}
AGENT=real
[ -n "$NO_AGENT" ] || AGENT=fake
[ "${FATIA_SOAK_FAKE_AGENT:-0}" = 1 ] && AGENT=fake
extra=
[ "$AGENT" = fake ] && extra=$NO_AGENT

e2e_start --job-backoff 200ms $extra || { finish; exit 1; }
watch_pods "$TMP/watch"
if [ "$AGENT" = fake ]; then
    python3 "$E2E_DIR/fakeagent.py" "$URL" "$TOKEN" "$CA" 100 >"$TMP/fakeagent.log" 2>&1 &
    FAKE_PID=$!
fi
echo "soak: $N jobs, $AGENT node agent"

# the shapes: resources of the job's one container
shapes=(
    'requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: "1"}
          limits: {nvidia.com/gpu: "1"}'
    'requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: "2"}
          limits: {nvidia.com/gpu: "2"}'
    'requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu.shared: "1"}
          limits: {nvidia.com/gpu.shared: "1"}'
    'requests: {cpu: "1", memory: 1Gi, nvidia.com/mig-1g.18gb: "1"}
          limits: {nvidia.com/mig-1g.18gb: "1"}'
    'requests: {cpu: "1", memory: 1Gi, nvidia.com/mig-3g.71gb: "1"}
          limits: {nvidia.com/mig-3g.71gb: "1"}'
)
start=$SECONDS
batch=100
for ((b = 0; b < N; b += batch)); do
    : >"$TMP/batch.yaml"
    for ((i = b; i < b + batch && i < N; i++)); do
        ns=team-a
        [ $((i % 2)) = 1 ] && ns=team-b
        shape=${shapes[$((i % ${#shapes[@]}))]}
        cat >>"$TMP/batch.yaml" <<EOF
---
apiVersion: batch/v1
kind: Job
metadata:
  name: soak-$i
  namespace: $ns
  labels: {kueue.x-k8s.io/queue-name: gpu, kueue.x-k8s.io/priority-class: batch}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "echo soak-$i >> $SHARED/done"]
        resources:
          $shape
EOF
    done
    expect_rc 0 $K create -f "$TMP/batch.yaml"
done
echo "soak: submitted $N jobs in $((SECONDS - start))s"

complete_jobs() {
    $K get jobs -A -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Complete")].status}{"\n"}{end}' |
        grep -c True
}
end=$((SECONDS + 1800))
last=-1
while [ $SECONDS -lt $end ]; do
    c=$(complete_jobs)
    [ "$c" = "$N" ] && break
    if [ "$c" != "$last" ]; then
        echo "soak: $c/$N complete after $((SECONDS - start))s"
        last=$c
    fi
    sleep 2
done
elapsed=$((SECONDS - start))
c=$(complete_jobs)
[ "$c" = "$N" ] || fail "only $c of $N jobs completed in $elapsed s"
echo "soak: $c/$N jobs complete in ${elapsed}s"

# nothing lost, nothing twice
$K get jobs -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name} {.status.succeeded} {.status.failed}{"\n"}{end}' >"$TMP/jobs"
bad=$(awk '$2 != "1" || ($3 != "" && $3 != "0")' "$TMP/jobs" | head -5)
[ -z "$bad" ] || fail "jobs with succeeded != 1 or failures: $bad"
$K get pods -A -o jsonpath='{range .items[*]}{.metadata.labels.batch\.kubernetes\.io/job-name} {.status.phase}{"\n"}{end}' >"$TMP/pods"
dups=$(awk '$2 == "Succeeded" {n[$1]++} END {for (j in n) if (n[j] != 1) print j, n[j]}' "$TMP/pods" | head -5)
[ -z "$dups" ] || fail "jobs whose pod succeeded more than once: $dups"
if [ "$AGENT" = real ]; then
    # a pod deleted by an eviction whose process had already succeeded counts for its Job (and is
    # gone): the processes themselves say what ran. Each job's process succeeded exactly once.
    sort "$SHARED/done" | uniq -c | awk '$1 != 1' | head -5 >"$TMP/twice"
    [ -s "$TMP/twice" ] && fail "jobs whose process succeeded more than once: $(cat "$TMP/twice")"
    [ "$(sort -u "$SHARED/done" | wc -l)" = "$N" ] ||
        fail "want $N jobs whose process succeeded, got $(sort -u "$SHARED/done" | wc -l)"
    echo "soak: $(awk '$2 == "Succeeded"' "$TMP/pods" | wc -l) Succeeded pods left;" \
        "$((N - $(awk '$2 == "Succeeded"' "$TMP/pods" | wc -l))) succeeded while an eviction deleted them"
elif [ "$(awk '$2 == "Succeeded"' "$TMP/pods" | wc -l)" != "$N" ]; then
    fail "want $N succeeded pods, got $(awk '$2 == "Succeeded"' "$TMP/pods" | wc -l)"
fi
$K get workloads -A -o jsonpath='{range .items[*]}{.metadata.ownerReferences[0].name} {.status.conditions[?(@.type=="Finished")].status}{"\n"}{end}' >"$TMP/wls"
[ "$(wc -l <"$TMP/wls")" = "$N" ] || fail "want $N workloads, got $(wc -l <"$TMP/wls")"
[ "$(sort -u -k1,1 "$TMP/wls" | wc -l)" = "$N" ] || fail "a job has two workloads"
[ "$(grep -c ' True$' "$TMP/wls")" = "$N" ] || fail "not every workload is Finished"
for cq in team-a team-b; do
    wait_until 10 out_is 0 $K get cq $cq -o jsonpath='{.status.pendingWorkloads}'
    wait_until 10 out_is 0 $K get cq $cq -o jsonpath='{.status.reservingWorkloads}'
    for r in nvidia.com/gpu nvidia.com/gpu.shared nvidia.com/mig-1g.18gb nvidia.com/mig-3g.71gb; do
        wait_until 10 out_is 0 cq_usage $cq h200 $r
    done
done
metrics
expect_line "$TMP/metrics" "fatia_slice_conflicts_total 0"
expect_line "$TMP/metrics" "fatia_pods_bound 0"
kill "$WATCH_PID" 2>/dev/null
[ -n "${FAKE_PID:-}" ] && kill "$FAKE_PID" 2>/dev/null
if ! python3 "$E2E_DIR/slicecheck.py" "$TMP/watch" >"$TMP/check"; then
    fail "slice history: $(cat "$TMP/check")"
fi
cat "$TMP/check"
# pods that held slices: one per job, plus at most one per eviction (a preempted job's pod)
evictions=$(awk '/^kueue_evicted_workloads_total/ {s += $2} END {print s + 0}' "$TMP/metrics")
held=$(sed -n 's/.* \([0-9]*\) pods held slices.*/\1/p' "$TMP/check")
[ "$held" -ge "$N" ] && [ "$held" -le $((N + evictions)) ] ||
    fail "$held pods held slices: want $N to $((N + evictions)) ($evictions evictions)"
echo "soak: $evictions evictions (reclamation between the teams)," \
    "$(awk '/^fatia_admission_cycles_total /{print $2}' "$TMP/metrics") admission cycles"
stop_fatiad
finish

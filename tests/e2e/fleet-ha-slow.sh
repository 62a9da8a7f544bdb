#!/bin/bash
# tests/e2e/fleet-ha-slow.sh (slow tier, 23 s in CI): the whole fleet of issue 21 at once, real
# processes on loopback: a three-member etcd, two fatiad control replicas on it (leader election, short timings:
# tests/e2e/fleet.bash) and three `fatiad --role node` processes (one simulated node each, a node
# token each, recorded in the store: apiserver/nodetoken.c, their pods in the process runtime)
# joined over HTTPS to both replicas, the leader first (`--server LEADER,FOLLOWER`, one --ca
# file holding both replicas' certificates):
#   1. every node Ready; three Jobs spread over the three nodes, each run by its node's role;
#   2. kill -9 of the leader: the other replica takes the Lease over, the node roles move to it
#      (their API's failover as well as the controllers'), the nodes stay Ready, the three Jobs
#      keep exactly one process each, and a fourth Job is admitted, placed and run by the new
#      leader;
#   3. the whole cluster restarted (node roles SIGTERM, the replica kill -9, every etcd member
#      stopped, then all started again on their data directories): the same pods Running on the
#      same nodes, each Job still exactly one process (the shims were adopted, none started
#      twice), the Workloads admitted; a deleted Job's process ends and a fifth Job takes its
#      quota and runs.
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fleet.bash"
find_kubectl
need_python3
export HOME=$TMP/home
mkdir -p "$HOME" "$TMP/fleet"
sed 's/^  count: 1$/  count: 3/' examples/fleet/00-box.yaml >"$TMP/fleet/00-box.yaml"
grep -q 'count: 3' "$TMP/fleet/00-box.yaml" || fail "could not make the three-node fleet"
export FLEET_DIR=$TMP/fleet/ FLEET_LEASE=5s FLEET_RENEW=4s
export FLEET_ARGS="--node-toleration-seconds 30 --placement-policy spread"

start_etcd fleet 3 || finish
PIDS=()
declare -A NR
pods_cleanup() {
    kill_agent_pods "$TMP"/box-*/agent/status/*.json
    return 0
}
trap 'for p in ${NR[@]}; do kill -CONT $p; kill -9 $p; done 2>/dev/null; for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; pods_cleanup; etcd_cleanup; rm -rf "$TMP"' EXIT

start_pair
echo "leader: $LEADER"
eval "LPID=\$${LEADER}_PID LURL=\$${LEADER}_URL SURL=\$${FOLLOWER}_URL K=\$${FOLLOWER}_K"
S=$FOLLOWER
$K create namespace kube-node-lease >/dev/null 2>&1 || fail "kubectl create namespace kube-node-lease"
cat "$TMP/A/tls.crt" "$TMP/B/tls.crt" >"$TMP/ca.crt"
SERVERS="$LURL,$SURL"
start_node() { # NAME: its node role, joined to both replicas (SERVERS), the first first
    "$FATIAD" --role node --server "$SERVERS" --token "$TMP/$1.token" --ca "$TMP/ca.crt" \
        --node-name "$1" --data-dir "$TMP/$1" --node-lease-duration 2 --agent runtime=process \
        --agent user=current >>"$TMP/$1.log" 2>&1 &
    NR[$1]=$!
}
for n in box-0 box-1 box-2; do
    "$FATIA" token create --node "$n" --record --output-file "$TMP/$n.token" | $K apply -f - >/dev/null ||
        fail "token for $n"
    start_node "$n"
done

ready() { $K get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}'; }
node_of() { $K get pod "$2" -n "$1" -o jsonpath='{.spec.nodeName}'; }
phase_of() { $K get pod "$2" -n "$1" -o jsonpath='{.status.phase}'; }
running_pod() { local p; p=$(pod_of_job team-a "$1") && [ -n "$p" ] && [ "$(phase_of team-a "$p")" = Running ]; }
procs() { pgrep -f "fatia-e2e-ha-$$-$1\$" | wc -l; }
all_ready() { for n in box-0 box-1 box-2; do [ "$(ready "$n")" = True ] || return 1; done; }
job() { # NAME: one whole GPU in team-a's queue (team-a's quota is 4)
    cat <<YAML | $K apply -f - >/dev/null || fail "job $1 not created"
apiVersion: batch/v1
kind: Job
metadata: {name: $1, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: gpu}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: python:3.12
        command: ["sh", "-c", "sleep 3600; : fatia-e2e-ha-$$-$1"]
        resources: {limits: {nvidia.com/gpu: 1}}
YAML
}
one_each() { # JOBS...: each runs exactly one process
    local j
    for j in "$@"; do [ "$(procs "$j")" = 1 ] || { echo "$j: $(procs "$j") processes"; return 1; }; done
}

# ---- 1. nodes Ready, three Jobs spread ----
wait_until 30 all_ready
for j in j0 j1 j2; do job "$j"; done
for j in j0 j1 j2; do wait_until 40 running_pod "$j"; done
declare -A ON POD
for j in j0 j1 j2; do
    POD[$j]=$(pod_of_job team-a "$j")
    ON[$j]=$(node_of team-a "${POD[$j]}")
done
echo "jobs on: j0 ${ON[j0]}, j1 ${ON[j1]}, j2 ${ON[j2]}"
[ "$(printf '%s\n' "${ON[@]}" | sort -u | wc -l)" = 3 ] || fail "the jobs did not spread: ${ON[*]}"
one_each j0 j1 j2 || fail "before the kill: $(one_each j0 j1 j2)"

# ---- 2. kill -9 of the leader ----
kill -9 "$LPID"
t0=$SECONDS
wait_until 20 eval "holder | grep -q _\${${FOLLOWER}_PID}_"
echo "the lease went to $FOLLOWER $((SECONDS - t0)) s after the leader's kill -9"
[ $((SECONDS - t0)) -le 15 ] || fail "failover took $((SECONDS - t0)) s (target 15)"
job j3
wait_until 40 running_pod j3
all_ready || fail "a node went NotReady across the failover"
for n in box-0 box-1 box-2; do
    grep -q "now speaking to $SURL" "$TMP/$n.log" || fail "$n's node role did not move to $SURL"
done
one_each j0 j1 j2 j3 || fail "after the failover: $(one_each j0 j1 j2 j3)"

# ---- 3. restart the whole cluster ----
POD[j3]=$(pod_of_job team-a j3)
ON[j3]=$(node_of team-a "${POD[j3]}")
for n in box-0 box-1 box-2; do kill -TERM "${NR[$n]}"; done
for n in box-0 box-1 box-2; do wait "${NR[$n]}" 2>/dev/null; done
NR=()
eval "kill -9 \$${FOLLOWER}_PID"
stop_etcd fleet
echo "everything stopped; the jobs' processes: $(one_each j0 j1 j2 j3 && echo one each)"
cp "$TMP/A.log" "$TMP/A.log.1"
cp "$TMP/B.log" "$TMP/B.log.1"
for i in 1 2 3; do ETCD_NO_WAIT=1 restart_etcd_member fleet "$i"; done
wait_until 30 etcdctl_ --dial-timeout 1s endpoint health
t0=$SECONDS
replica A
replica B
K=$A_K
# the Lease still names the replica that led before the restart until it expires (5 s)
new_holder() { holder | grep -qE "_(${A_PID}|${B_PID})_"; }
wait_until 20 new_holder
# the node roles join both replicas again (their tokens are records in the store); the
# certificates are the same (each replica keeps its tls.crt in its data directory)
cmp -s "$TMP/ca.crt" <(cat "$TMP/A/tls.crt" "$TMP/B/tls.crt") || fail "a replica's certificate changed"
SERVERS="$A_URL,$B_URL"
for n in box-0 box-1 box-2; do start_node "$n"; done
wait_until 30 all_ready
echo "the cluster serves again, every node Ready, $((SECONDS - t0)) s after the restart began"
for j in j0 j1 j2 j3; do
    p=$(pod_of_job team-a "$j")
    [ "$p" = "${POD[$j]}" ] || fail "job $j: pod $p after the restart, was ${POD[$j]}"
    [ "$(node_of team-a "$p")" = "${ON[$j]}" ] || fail "job $j moved to $(node_of team-a "$p")"
    [ "$(phase_of team-a "$p")" = Running ] || fail "job $j's pod is $(phase_of team-a "$p")"
    [ "$(wl_cond team-a "$(wl_of team-a "$j")" Admitted)" = True ] || fail "job $j's Workload is not admitted"
done
sleep 3 # a few of the node roles' ticks: nothing started twice
one_each j0 j1 j2 j3 || fail "after the restart: $(one_each j0 j1 j2 j3)"
# the new leader acts: j0 deleted, its process ends, its quota goes to j4 (team-a holds 4 of 4)
$K delete job j0 -n team-a --cascade=background >/dev/null || fail "delete job j0"
wait_until 40 eval '[ "$(procs j0)" = 0 ]' || {
    $K get pods -n team-a -o wide >&2
    $K get pod "${POD[j0]}" -n team-a -o jsonpath='{.metadata.deletionTimestamp} {.metadata.finalizers} {.status.phase}{"\n"}' >&2
    grep -h "${POD[j0]}\|error\|warning" "$TMP/${ON[j0]}.log" | tail -15 >&2
    grep -h "team-a/${POD[j0]}\|job-controller\|gc" "$TMP/A.log" "$TMP/B.log" | tail -10 >&2
}
job j4
wait_until 40 running_pod j4
one_each j1 j2 j3 j4 || fail "at the end: $(one_each j1 j2 j3 j4)"

for n in box-0 box-1 box-2; do kill -TERM "${NR[$n]}"; done
for n in box-0 box-1 box-2; do wait "${NR[$n]}" 2>/dev/null; done
NR=()
finish

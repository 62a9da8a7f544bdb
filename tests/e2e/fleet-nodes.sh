#!/bin/bash
# tests/e2e/fleet-nodes.sh: three `fatiad --role node` processes (each its own data directory,
# one simulated node each, a node token each) joined to one control fatiad (SQLite, its own agent
# off), over HTTPS (src/daemon/remote.c, docs/fleet.md "The node role"):
#   1. each node role renews its node's Lease; every node Ready
#   2. three Jobs spread (--placement-policy spread) over the three nodes, each pod Running, its
#      process started by the node role of its node and by no other
#   3. SIGSTOP of one node role: its lease goes stale, the node NotReady with the unreachable
#      taint, its pod evicted after tolerationSeconds (2 s) and the Job's replacement Running on
#      another node
#   4. SIGCONT: the node comes back Ready; the stale pod's process is killed by its node role
#      (the pod is gone), and the Job runs exactly one process
# On a 3-member etcd with two control replicas, with a failover and a restart of everything:
# tests/e2e/fleet-ha-slow.sh.
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME" "$TMP/fleet"
export FATIAD_CONTROLLERS=1
sed 's/^  count: 1$/  count: 3/' examples/fleet/00-box.yaml >"$TMP/fleet/00-box.yaml"
grep -q 'count: 3' "$TMP/fleet/00-box.yaml" || fail "could not make the three-node fleet"

start_fatiad "$TMP/data" --fleet "$TMP/fleet/" -f examples/ --job-backoff 200ms \
    --node-toleration-seconds 2 --placement-policy spread --no-agent || { finish; exit 1; }
K="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $KCFG"
wait_until 20 $K get node box-2 -o name
# the leases' namespace: fatiad's own agent makes it; a node may not (kube-apiserver makes it at
# start)
$K create namespace kube-node-lease >/dev/null 2>&1 || fail "kubectl create namespace kube-node-lease"

declare -A NR
# every pod process the node roles started, by the ids their shims recorded (the shims outlive
# fatiad by design): each pod's process group, then its shim (as tests/cli/agent.bash)
pods_cleanup() {
    kill_agent_pods "$TMP"/box-*/agent/status/*.json
    return 0
}
start_node() { # start_node NAME: its node role, on $TMP/NAME
    "$FATIAD" --role node --server "$URL" --token "$TMP/$1.token" --ca "$CA" --node-name "$1" \
        --data-dir "$TMP/$1" --node-lease-duration 2 --agent runtime=process \
        --agent user=current >"$TMP/$1.log" 2>&1 &
    NR[$1]=$!
}
for n in box-0 box-1 box-2; do
    "$FATIA" token create --data-dir "$TMP/data" --node "$n" >/dev/null 2>&1 || fail "token for $n"
    awk -v u="system:node:$n" '$2 == u {print $1; exit}' "$TMP/data/tokens" >"$TMP/$n.token"
    start_node "$n"
done
trap 'for p in ${NR[@]}; do kill -CONT $p; kill -9 $p; wait $p; done 2>/dev/null; pods_cleanup; if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID"; fi; etcd_cleanup; rm -rf "$TMP"' EXIT

ready() { $K get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}'; }
taints() { $K get node "$1" -o jsonpath='{range .spec.taints[*]}{.key}:{.effect}{" "}{end}'; }
out_is() { [ "$("${@:2}")" = "$1" ]; }
has_taint() { taints "$1" | grep -q "$2"; }
no_taint() { ! taints "$1" | grep -q "$2"; }
node_of() { $K get pod "$2" -n "$1" -o jsonpath='{.spec.nodeName}'; }
phase_of() { $K get pod "$2" -n "$1" -o jsonpath='{.status.phase}'; }
running_pod() { # running_pod JOB: its pod is Running
    local p
    p=$(pod_of_job team-a "$1") && [ -n "$p" ] && [ "$(phase_of team-a "$p")" = Running ]
}
procs() { # procs JOB: how many processes run the Job's command
    pgrep -f "fatia-e2e-job-$$-$1\$" | wc -l
}

# ---- 1. leases ----
t0=$SECONDS
for n in box-0 box-1 box-2; do
    wait_until 20 $K get lease -n kube-node-lease "$n" -o name
done
echo "three node roles renewing their leases $((SECONDS - t0)) s after start"
sleep 3 # longer than a lease
for n in box-0 box-1 box-2; do
    [ "$(ready "$n")" = True ] || fail "$n is not Ready while its node role runs: $(ready "$n")"
    no_taint "$n" unreachable || fail "$n is tainted while its node role runs"
    kill -0 "${NR[$n]}" 2>/dev/null || { fail "the node role of $n exited"; cat "$TMP/$n.log" >&2; }
done

# ---- 2. three Jobs spread, each run by its node's role ----
job1() { # job1 NAME: a Job of one whole GPU in team-a's queue (3 fit team-a's quota of 4)
    cat <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
  namespace: team-a
  labels: {kueue.x-k8s.io/queue-name: gpu}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: python:3.12
        command: ["sh", "-c", "sleep 3600; : fatia-e2e-job-$$-$1"]
        resources: {limits: {nvidia.com/gpu: 1}}
YAML
}
for j in j0 j1 j2; do
    job1 "$j" | $K apply -f - >/dev/null || fail "job $j not created"
done
for j in j0 j1 j2; do
    wait_until 40 running_pod "$j"
done
declare -A ON
for j in j0 j1 j2; do
    ON[$j]=$(node_of team-a "$(pod_of_job team-a "$j")")
    [ "$(procs "$j")" = 1 ] || fail "job $j runs $(procs "$j") processes, want 1"
done
echo "jobs on: j0 ${ON[j0]}, j1 ${ON[j1]}, j2 ${ON[j2]}"
[ "$(printf '%s\n' "${ON[@]}" | sort -u | wc -l)" = 3 ] || fail "the jobs did not spread: ${ON[*]}"
# each process is a child (through its shim) of the node role of its node's data directory
for j in j0 j1 j2; do
    grep -rqs "fatia-e2e-job-$$-$j" "$TMP/${ON[$j]}/agent" ||
        fail "job $j's pod is not in the state of ${ON[$j]}'s node role"
done

# ---- 3. a node role stopped ----
lost=${ON[j0]}
p1=$(pod_of_job team-a j0)
kill -STOP "${NR[$lost]}"
t0=$SECONDS
wait_until 15 has_taint "$lost" "node.kubernetes.io/unreachable:NoExecute"
echo "node $lost tainted $((SECONDS - t0)) s after its node role stopped (lease 2 s)"
wait_until 10 out_is Unknown ready "$lost"
wait_until 40 eval "[ \"\$(pod_of_job team-a j0)\" != $p1 ] && running_pod j0"
p2=$(pod_of_job team-a j0)
echo "job j0's replacement $p2 Running on $(node_of team-a "$p2") $((SECONDS - t0)) s after the node role stopped"
[ "$(node_of team-a "$p2")" != "$lost" ] || fail "the replacement went to the lost node"
for n in box-0 box-1 box-2; do
    [ "$n" = "$lost" ] || [ "$(ready "$n")" = True ] || fail "$n went NotReady"
done

# ---- 4. it comes back: the stale pod's process killed, not duplicated ----
kill -CONT "${NR[$lost]}"
wait_until 15 no_taint "$lost" unreachable
wait_until 15 out_is True ready "$lost"
wait_until 20 eval "[ \$(procs j0) = 1 ]"
[ "$(procs j0)" = 1 ] || fail "job j0 runs $(procs j0) processes after the node came back, want 1"
sleep 2
[ "$(procs j0)" = 1 ] || fail "job j0 runs $(procs j0) processes 2 s later, want 1"
if $K get pod "$p1" -n team-a -o name >/dev/null 2>&1; then
    fail "the evicted pod $p1 is still there: $($K get pod "$p1" -n team-a -o jsonpath='{.metadata.deletionTimestamp} {.metadata.finalizers}')"
fi
for j in j1 j2; do
    [ "$(procs "$j")" = 1 ] || fail "job $j runs $(procs "$j") processes, want 1"
done

for n in box-0 box-1 box-2; do
    kill -TERM "${NR[$n]}"
    wait "${NR[$n]}" || { fail "the node role of $n exited $? after SIGTERM"; tail -5 "$TMP/$n.log" >&2; }
done
NR=()
pods_cleanup
stop_fatiad
finish

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
# FLEET=ha (tests/e2e/fleet-walkthrough-slow.sh): the same steps and checks on issue 21's fleet:
# a three-member etcd, two control replicas electing their controllers' leader (--etcd-replica
# --leader-elect: tests/e2e/fleet.bash) and three node roles (box-0, box-1, box-2: examples/fleet/
# with count 3, each node the walkthrough's box cut the same way; --placement-policy spread),
# each with a recorded node token, joined to both replicas, running its pods in runc containers.
# kubectl (its logs -f and exec too, through the node roles' endpoints) at the leader for steps 1
# and 3, at the follower for 2 and 4; then kill -9 of the leader: the follower takes the Lease
# over, every node role moves to it, and steps 5 to 8 run there. Each container is read on its
# pod's node (that node role's runc root), slices are per node, and the walkthrough's pods must
# have run on all three nodes. The slice history is the follower's watch (it saw every event);
# fatia_slice_conflicts_total is the survivor's, counted since it took over.
# Skipped (with a message) when kubectl, runc, umoci, skopeo or busybox is missing or not root.
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fleet.bash"
find_kubectl
[ "$(id -u)" = 0 ] || skip "the walkthrough runs in containers: it needs root"
need_tools runc umoci skopeo busybox
FLEET=${FLEET:-}
LEADER= FOLLOWER=
case $FLEET in "" | ha) ;; *) fail "FLEET=$FLEET: want ha or nothing" && finish ;; esac
export HOME=$TMP/home
mkdir -p "$HOME"
export FATIAD_CONTROLLERS=1
chmod 711 "$TMP"
SHARED=$TMP/shared
mkdir -p "$SHARED"
chmod 1777 "$SHARED"
: >"$SHARED/order" # written by both teams' uids
chmod 666 "$SHARED/order"
# the nodes and the data directory of the agent that runs each one's pods: box-0 by fatiad's own
# agent, or box-N by its node role
if [ "$FLEET" = ha ]; then
    NODES="box-0 box-1 box-2"
else
    NODES=box-0
fi
agent_dir() { if [ "$FLEET" = ha ]; then echo "$TMP/$1"; else echo "$TMP/data"; fi; }
runc_root() { echo "$(agent_dir "$1")/agent/runc"; }
cleanup_ctrs() {
    local c f sh n
    for n in $NODES; do
        for f in "$(agent_dir "$n")"/agent/status/*.json; do # the pods' supervisors, by the pids they recorded
            [ -f "$f" ] || continue
            sh=$(grep -o '"shim":{"pid":[0-9]*' "$f" | head -1 | grep -o '[0-9]*$')
            [ -n "$sh" ] && [ "$sh" -gt 1 ] && kill -9 "$sh" 2>/dev/null
        done
        for c in $(runc --root "$(runc_root "$n")" list -q 2>/dev/null); do
            runc --root "$(runc_root "$n")" delete --force "$c" 2>/dev/null
        done
    done
}
# fatiad.bash's own trap, with the node roles, the containers (pods outlive fatiad) and their
# mounts first
declare -A NR
PIDS=()
trap 'for p in "${NR[@]}"; do kill -9 "$p"; done 2>/dev/null; cleanup_ctrs
      if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi
      for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
      grep -o " ${TMP}[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
      etcd_cleanup; rm -rf "$TMP"' EXIT

# at R: kubectl (K), the API's URL, TOKEN and CA of control replica R (FLEET=ha; one fatiad: its own)
at() {
    [ "$FLEET" = ha ] || return 0
    eval "K=\$${1}_K URL=\$${1}_URL"
    TOKEN=$(awk '$2 == "admin" {print $1; exit}' "$TMP/$1/tokens")
    CA=$TMP/$1/tls.crt
    echo "kubectl at replica $1${2:+ ($2)}"
}
# start_node NAME: its node role (runc containers: the agent's default runtime, auto), joined to
# both replicas (SERVERS), the first first; its endpoint for logs and exec on a free port
start_node() {
    "$FATIAD" --role node --server "$SERVERS" --token "$TMP/$1.token" --ca "$TMP/ca.crt" \
        --node-name "$1" --data-dir "$TMP/$1" --node-lease-duration 10 --node-listen 127.0.0.1:0 \
        --agent runtime=auto --agent host-path-namespaces=team-a,team-b >>"$TMP/$1.log" 2>&1 &
    NR[$1]=$!
}
published() { # NODE: its Node names the node role's endpoint, and it is Ready
    [ -n "$($K get node "$1" -o jsonpath='{.status.daemonEndpoints.kubeletEndpoint.Port}')" ] &&
        [ "$($K get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}
# the fleet: a three-member etcd, two control replicas electing their controllers' leader, three
# copies of the walkthrough's box (examples/fleet/ with count 3: box-0, box-1, box-2, each cut
# as the walkthrough's), each run by its own node role with a recorded node token; placement
# spreads (the walkthrough's pods go to all three)
start_fleet() {
    mkdir -p "$TMP/fleet"
    sed 's/^  count: 1$/  count: 3/' examples/fleet/00-box.yaml >"$TMP/fleet/00-box.yaml"
    cp examples/fleet/10-sharing.yaml "$TMP/fleet/"
    grep -q 'count: 3' "$TMP/fleet/00-box.yaml" || fail "could not make the three-node fleet"
    export FLEET_DIR=$TMP/fleet/ FLEET_LEASE=5s FLEET_RENEW=4s
    export FLEET_ARGS="--placement-policy spread"
    start_etcd fleet 3 || return 1
    start_pair
    echo "leader: $LEADER"
    at "$LEADER"
    $K create namespace kube-node-lease >/dev/null 2>&1 || fail "kubectl create namespace kube-node-lease"
    cat "$TMP/A/tls.crt" "$TMP/B/tls.crt" >"$TMP/ca.crt"
    eval "SERVERS=\$${LEADER}_URL,\$${FOLLOWER}_URL"
    local n
    for n in $NODES; do
        "$FATIA" token create --node "$n" --record --output-file "$TMP/$n.token" |
            $K apply -f - >/dev/null || fail "token for $n"
        scripts/images/load-examples "$TMP/$n" "$BUILD/bin/fatia" >"$TMP/images-$n.log" 2>&1 ||
            fail "load-examples $n: $(cat "$TMP/images-$n.log")"
        start_node "$n"
    done
    for n in $NODES; do
        wait_until 30 published "$n" || return 1
        grep -q "pods run in OCI containers" "$TMP/$n.log" ||
            fail "$n's runtime is not containers: $(grep agent: "$TMP/$n.log" | head -3)"
    done
}

if [ "$FLEET" = ha ]; then
    start_fleet || finish
    # every pod event, from both replicas (the follower's survives the fault of step 4)
    at "$LEADER" >/dev/null
    watch_pods "$TMP/watch.leader"
    WATCH_PIDS=$WATCH_PID
    PIDS+=("$WATCH_PID")
    at "$FOLLOWER" >/dev/null
    watch_pods "$TMP/watch"
    WATCH_PIDS="$WATCH_PIDS $WATCH_PID"
    PIDS+=("$WATCH_PID")
else
    # the images the examples name, as make run loads them
    scripts/images/load-examples "$TMP/data" "$BUILD/bin/fatia" >"$TMP/images.log" 2>&1 ||
        fail "load-examples: $(cat "$TMP/images.log")"
    # fatiad's default runtime (auto), as make run starts it
    FATIAD_RUNTIME=auto e2e_start --job-backoff 200ms --agent host-path-namespaces=team-a,team-b ||
        { finish; exit 1; }
    grep -q "pods run in OCI containers" "$TMP/data.log" ||
        fail "the default runtime is not containers: $(grep agent: "$TMP/data.log" | head -3)"
    watch_pods "$TMP/watch"
    WATCH_PIDS=$WATCH_PID
fi

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
# ctr_pid NS NAME: the host pid of the pod's (first) container, from runc's state of it on the
# pod's node (its agent's runc root: the node role that runs the node's pods)
ctr_pid() {
    local pod uid c node
    pod=$(pod_name "$1" "$2")
    read -r uid c node < <($K get pod "$pod" -n "$1" -o jsonpath='{.metadata.uid} {.spec.containers[0].name} {.spec.nodeName}' 2>/dev/null)
    [ -n "$uid" ] && [ -n "$c" ] && [ -n "$node" ] || return 1
    runc --root "$(runc_root "$node")" state "$uid-$c" 2>/dev/null |
        python3 -c 'import json,sys; s = json.load(sys.stdin); print(s["pid"]) if s["status"] == "running" and s["pid"] > 0 else sys.exit(1)' 2>/dev/null
}
why_not() { # NS NAME: what the pod's status and its agent's log say (a wait that failed)
    local pod
    pod=$(pod_name "$1" "$2")
    $K get pod "$pod" -n "$1" -o jsonpath='{.spec.nodeName} {.status.phase} {.status.reason} {.status.message}{"\n"}' >&2
    for n in $NODES; do grep -h "$1/$pod" "$(agent_dir "$n").log" | tail -5 >&2; done
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
    for n in $NODES; do
        [ -e "/proc/$pid/root$(agent_dir "$n")" ] && fail "$1/$2: pid $pid sees the host's $(agent_dir "$n")"
    done
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
# no_shared_slices MIN: over the live containers of the pods of every node (runc's state under
# each agent's data directory), no slice id of FATIA_SLICES belongs to two pods of one node at
# once; at least MIN pods were found
live_slices() {
    local c pid n
    for n in $NODES; do
        for c in $(runc --root "$(runc_root "$n")" list -q 2>/dev/null); do
            pid=$(runc --root "$(runc_root "$n")" state "$c" 2>/dev/null | python3 -c 'import json,sys; s = json.load(sys.stdin); print(s["pid"] if s["status"] == "running" else "")')
            [ -n "$pid" ] || continue
            tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ" | awk -v c="${c:0:36}" -v n="$n" '
                /^FATIA_SLICES=/ {s = substr($0, 14)}
                END {if (s != "") {k = split(s, a, ","); for (i = 1; i <= k; i++) print n "/" a[i], c}}'
        done
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
at "$LEADER" "steps 1 and 3"
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
at "$FOLLOWER" "steps 2 and 4"
job 11-team-a-train-2.yaml train-a2 150
wait_until 15 running team-a train-a2
wait_until 5 out_is 4 cq_usage team-a h200 nvidia.com/gpu
expect_rc 0 $K get cq team-a -o jsonpath='{.status.flavorsUsage[?(@.name=="h200")].resources[?(@.name=="nvidia.com/gpu")].borrowed}'
expect_line "$TMP/out" "2"
no_shared_slices 2

# 3. team-b takes its GPUs back: the borrower gets SIGTERM (its log, followed as the README
# says, shows the trap's message and ends with the process)
at "$LEADER"
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
at "$FOLLOWER"
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

# the fault (FLEET=ha): kill -9 of the leader; the other replica takes the controllers' Lease
# over and every node role moves to it; the walkthrough goes on there (urgent-eval ends and
# train-a1 is admitted again meanwhile, by whichever leads)
if [ "$FLEET" = ha ]; then
    eval "kill -9 \$${LEADER}_PID"
    t0=$SECONDS
    wait_until 20 eval "holder | grep -q _\${${FOLLOWER}_PID}_"
    echo "the lease went to $FOLLOWER $((SECONDS - t0)) s after the leader's kill -9"
    eval "SURL=\$${FOLLOWER}_URL"
    for n in $NODES; do
        wait_until 20 grep -q "now speaking to $SURL" "$TMP/$n.log"
        wait_until 20 published "$n"
    done
    LEADER=$FOLLOWER
    at "$LEADER" "steps 5 to 8, the survivor"
fi

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
wait_until 15 ctr_pid team-b mps-client || why_not team-b mps-client
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
runc_lists() { for n in $NODES; do runc --root "$(runc_root "$n")" list -q; done; }
wait_until 30 out_empty runc_lists

# the history: no slice held by two pods
metrics
expect_line "$TMP/metrics" "fatia_slice_conflicts_total 0"
kill $WATCH_PIDS 2>/dev/null
if ! python3 "$E2E_DIR/slicecheck.py" "$TMP/watch" >"$TMP/check"; then
    fail "slice history: $(cat "$TMP/check")"
fi
cat "$TMP/check"
if [ "$FLEET" = ha ]; then
    # where the walkthrough's pods ran: spread over the three nodes, each by its own node role
    python3 - "$TMP/watch" >"$TMP/placed" <<'PY'
import json, sys
on = {}
for line in open(sys.argv[1]):
    try:
        o = json.loads(line)["object"]
    except (ValueError, KeyError):
        continue
    if o.get("spec", {}).get("nodeName") and o["metadata"].get("namespace", "").startswith("team-"):
        on["%s/%s" % (o["metadata"]["namespace"], o["metadata"]["name"])] = o["spec"]["nodeName"]
for p in sorted(on):
    print(on[p], p)
PY
    echo "placed: $(tr '\n' ' ' <"$TMP/placed")"
    [ "$(awk '{print $1}' "$TMP/placed" | sort -u | wc -l)" = 3 ] ||
        fail "the walkthrough's pods did not use all three nodes: $(tr '\n' ' ' <"$TMP/placed")"
    for n in $NODES; do kill -TERM "${NR[$n]}"; done
    for n in $NODES; do
        wait "${NR[$n]}" || fail "$n's node role exited $? after SIGTERM"
        unset "NR[$n]"
    done
    eval "FATIAD_PID=\$${LEADER}_PID"
fi
stop_fatiad
finish

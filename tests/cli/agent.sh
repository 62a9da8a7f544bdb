#!/usr/bin/env bash
# tests/cli/agent.sh: the node agent inside a real fatiad, driven with kubectl, on pods bound by
# hand (spec.nodeName plus the fatia.dev/devices annotation, as the placement controller writes
# them: docs/agent.md). Checks phases, exit codes and reasons, restart policies, deadlines, the
# finalizer, SIGTERM then SIGKILL after the grace period, scheduling gates, Events, kubectl logs
# (-c, --tail, --previous, -f, --timestamps), what each running process really has
# (/proc/PID/environ: device ids, MPS variables, LD_PRELOAD and cap; its uid, no_new_privs,
# process group and cgroup), a slice never used by two pods at once, and the cleanup.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
agent_setup
trap 'agent_cleanup; etcd_cleanup; if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi; rm -rf "$TMP"' EXIT

D=$TMP/d
# the agent alone: pods are bound by hand here (no placement controller)
start_fatiad "$D" --no-controllers --agent restart-backoff=100ms --agent restart-backoff-max=300ms || exit 1
ME=$(id -u)
if [ "$ME" = 0 ]; then WANT_UID=200000; else WANT_UID=$ME; fi

# ---- plain pods ----
bound_pod ok "" "  restartPolicy: Never" <<EOF
  - name: main
    image: registry.example/app:1
    command: ["sh", "-c", "echo one; sleep 0.1; echo two >&2; sleep 0.1; echo three"]
EOF
bound_pod three "" "  restartPolicy: Never" <<EOF
  - name: main
    command: ["sh", "-c", "exit 3"]
EOF
bound_pod missing "" "  restartPolicy: Never" <<EOF
  - name: main
    command: ["no-such-program-in-path"]
EOF
bound_pod retry "" "  restartPolicy: OnFailure" <<EOF
  - name: main
    command: ["sh", "-c", "n=\$(cat \$HOME/n 2>/dev/null || echo 0); echo \$((n+1)) > \$HOME/n; echo run \$n; [ \$n -ge 2 ]"]
EOF
bound_pod deadline "" "  activeDeadlineSeconds: 1
  terminationGracePeriodSeconds: 1" <<EOF
  - name: main
    command: ["sleep", "60"]
EOF
bound_pod gated "" "  restartPolicy: Never
  schedulingGates:
  - name: kueue.x-k8s.io/admission" <<EOF
  - name: main
    command: ["true"]
EOF
cat >"$TMP/unbound.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: unbound}
spec:
  containers: [{name: main, command: ["true"]}]
EOF
k create -f "$TMP/unbound.yaml" >/dev/null

wait_for 10 phase_is ok Succeeded
wait_for 10 phase_is three Failed
wait_for 10 phase_is missing Failed
wait_for 15 phase_is retry Succeeded
wait_for 10 phase_is deadline Failed

[ "$(jp ok '.status.containerStatuses[0].state.terminated.reason')" = Completed ] ||
    fail "ok: reason $(jp ok '.status.containerStatuses[0].state.terminated.reason')"
[ "$(jp ok '.status.containerStatuses[0].image')" = registry.example/app:1 ] || fail "ok: image"
[ -n "$(jp ok .status.startTime)" ] || fail "ok: no startTime"
[ "$(jp ok '.status.conditions[?(@.type=="Ready")].reason')" = PodCompleted ] ||
    fail "ok: Ready condition: $(jp ok .status.conditions)"
[ "$(jp three '.status.containerStatuses[0].state.terminated.exitCode')" = 3 ] || fail "three: exit code"
[ "$(jp three '.status.containerStatuses[0].state.terminated.reason')" = Error ] || fail "three: reason"
[ "$(jp missing '.status.containerStatuses[0].state.terminated.exitCode')" = 128 ] ||
    fail "missing: exit code"
jp missing '.status.containerStatuses[0].state.terminated.message' | grep -q 'executable file not found' ||
    fail "missing: message: $(jp missing .status.containerStatuses)"
[ "$(jp retry '.status.containerStatuses[0].restartCount')" = 2 ] ||
    fail "retry: restartCount $(jp retry '.status.containerStatuses[0].restartCount')"
[ "$(jp retry '.status.containerStatuses[0].lastState.terminated.exitCode')" = 1 ] || fail "retry: lastState"
[ "$(jp deadline .status.reason)" = DeadlineExceeded ] || fail "deadline: reason $(jp deadline .status.reason)"
[ "$(jp ok '.metadata.finalizers[0]')" = fatia.dev/agent ] || fail "ok: no finalizer"

# gated and unbound pods are not run
sleep 0.3
[ -z "$(jp gated .status.phase)" ] || fail "gated pod ran: $(jp gated .status.phase)"
[ -z "$(jp gated .metadata.finalizers)" ] || fail "gated pod has a finalizer"
[ -z "$(jp unbound .status.phase)" ] || fail "unbound pod ran"
k patch pod gated --type=json -p '[{"op":"remove","path":"/spec/schedulingGates"}]' >/dev/null ||
    fail "cannot remove the gate"
wait_for 10 phase_is gated Succeeded

# ---- logs ----
expect_rc 0 k logs ok
[ "$(cat "$TMP/out")" = "one
two
three" ] || fail "logs ok: $(cat "$TMP/out")"
expect_rc 0 k logs ok --tail 1
[ "$(cat "$TMP/out")" = three ] || fail "logs --tail 1: $(cat "$TMP/out")"
expect_rc 0 k logs ok --timestamps -c main
grep -qE '^20[0-9-]+T[0-9:.]+Z one$' "$TMP/out" || fail "logs --timestamps: $(cat "$TMP/out")"
expect_rc 0 k logs retry
[ "$(cat "$TMP/out")" = "run 2" ] || fail "logs retry: $(cat "$TMP/out")"
expect_rc 0 k logs retry --previous
[ "$(cat "$TMP/out")" = "run 1" ] || fail "logs retry --previous: $(cat "$TMP/out")"
expect_rc 1 k logs ok --previous
expect_line "$TMP/err" 'previous terminated container "main" in pod "ok" not found'
expect_rc 1 k logs ok -c nope
expect_rc 0 k logs missing
expect_line "$TMP/out" 'executable file not found'

# -f follows until the container ends
bound_pod ticker "" "  restartPolicy: Never" <<EOF
  - name: main
    command: ["sh", "-c", "for i in 1 2 3 4 5; do echo tick \$i; sleep 0.2; done"]
EOF
wait_for 10 phase_is ticker Running
timeout 20 "$KUBECTL" --kubeconfig "$KCFG" logs -f ticker >"$TMP/follow" 2>&1 ||
    fail "logs -f did not end with the container"
[ "$(grep -c '^tick' "$TMP/follow")" = 5 ] || fail "logs -f: $(cat "$TMP/follow")"

# ---- events ----
k get events --field-selector involvedObject.name=ok -o custom-columns=R:.reason,M:.message \
    >"$TMP/ev" 2>&1
expect_line "$TMP/ev" "fatia runs containers as local processes; image registry.example/app:1 recorded, not pulled"
expect_line "$TMP/ev" "Started"
k get events --field-selector involvedObject.name=missing -o custom-columns=R:.reason >"$TMP/ev"
expect_line "$TMP/ev" "Failed"
k get events --field-selector involvedObject.name=retry -o custom-columns=R:.reason >"$TMP/ev"
expect_line "$TMP/ev" "BackOff"

# ---- devices: what the running processes really have ----
DEVS='[{"container":"capped","slice":"gpu-0-ts1","kind":"timeslice","gpuIndex":0,"uuid":"GPU-00000000-1111-2222-3333-444444444444","memoryBytes":4294967296},{"container":"mps","slice":"gpu-1-mps2","kind":"mps","gpuIndex":1,"uuid":"GPU-11111111-1111-2222-3333-444444444444","mps":{"threadPercentage":25,"pinnedMemoryBytes":2147483648}},{"container":"mig","slice":"gpu-2-mig-3g71gb-9-4","kind":"mig","gpuIndex":2,"uuid":"GPU-22222222-1111-2222-3333-444444444444","migUuid":"MIG-22222222-1111-2222-3333-444444444444"},{"container":"whole","slice":"gpu-3","kind":"whole","gpuIndex":3,"uuid":"GPU-33333333-1111-2222-3333-444444444444"}]'
bound_pod gpus "$DEVS" "  terminationGracePeriodSeconds: 5" <<EOF
  - name: capped
    command: ["sh", "-c", "echo \$\$\$\$ > $SHARED/capped.pid; exec sleep 60"]
  - name: mps
    command: ["sh", "-c", "echo \$\$\$\$ > $SHARED/mps.pid; exec sleep 60"]
  - name: mig
    command: ["sh", "-c", "echo \$\$\$\$ > $SHARED/mig.pid; exec sleep 60"]
  - name: whole
    env: [{name: CUDA_VISIBLE_DEVICES, value: all}]
    command: ["sh", "-c", "echo \$\$\$\$ > $SHARED/whole.pid; exec sleep 60"]
  - name: none
    command: ["sh", "-c", "echo \$\$\$\$ > $SHARED/none.pid; exec sleep 60"]
EOF
wait_for 10 phase_is gpus Running
for c in capped mps mig whole none; do
    wait_for 5 test -s "$SHARED/$c.pid"
    environ_of "$(cat "$SHARED/$c.pid")" >"$TMP/env-$c"
done
sleep 0.2
for c in capped mps mig whole none; do environ_of "$(cat "$SHARED/$c.pid")" >"$TMP/env-$c"; done
expect_line "$TMP/env-capped" "CUDA_VISIBLE_DEVICES=GPU-00000000-1111-2222-3333-444444444444"
expect_line "$TMP/env-capped" "NVIDIA_VISIBLE_DEVICES=GPU-00000000-1111-2222-3333-444444444444"
expect_line "$TMP/env-capped" "FATIA_VGPU_MEMORY_LIMIT_0=4294967296"
grep -q "^LD_PRELOAD=.*/libfatia-vgpu.so$" "$TMP/env-capped" || fail "capped: LD_PRELOAD: $(grep LD_PRELOAD "$TMP/env-capped")"
ACCT=$(sed -n 's/^FATIA_VGPU_SHARED_FILE=//p' "$TMP/env-capped")
[ -f "$ACCT" ] || fail "capped: accounting file '$ACCT' missing"
expect_line "$TMP/env-mps" "CUDA_VISIBLE_DEVICES=GPU-11111111-1111-2222-3333-444444444444"
expect_line "$TMP/env-mps" "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25"
expect_line "$TMP/env-mps" "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=2048M"
expect_line "$TMP/env-mps" "CUDA_MPS_PIPE_DIRECTORY="
# an MPS share is capped by the interposer too (MPS's own limit is per process; a pod may run
# many), at its pinned memory
expect_line "$TMP/env-mps" "FATIA_VGPU_MEMORY_LIMIT_0=2147483648"
grep -q "^LD_PRELOAD=.*/libfatia-vgpu.so$" "$TMP/env-mps" || fail "mps: LD_PRELOAD: $(grep LD_PRELOAD "$TMP/env-mps")"
expect_line "$TMP/env-mig" "CUDA_VISIBLE_DEVICES=MIG-22222222-1111-2222-3333-444444444444"
expect_line "$TMP/env-whole" "CUDA_VISIBLE_DEVICES=GPU-33333333-1111-2222-3333-444444444444"
expect_line "$TMP/env-none" "NVIDIA_VISIBLE_DEVICES=void"
grep -qx "CUDA_VISIBLE_DEVICES=" "$TMP/env-none" || fail "none: CUDA_VISIBLE_DEVICES not empty"
expect_line "$D.log" "is simulated, so no MPS daemon is started"
# one process group and one session per pod; the pod's uid; no_new_privs
PIDS=$(cat "$SHARED"/{capped,mps,mig,whole,none}.pid | paste -sd,)
[ "$(ps -o pgid= -p "$PIDS" | sort -u | wc -l)" = 1 ] || fail "containers of one pod in several process groups"
P1=$(cat "$SHARED/capped.pid")
grep -q "^Uid:[[:space:]]*$WANT_UID[[:space:]]" "/proc/$P1/status" || fail "uid: $(grep Uid "/proc/$P1/status")"
grep -q "^NoNewPrivs:[[:space:]]*1" "/proc/$P1/status" || fail "no_new_privs not set"
if grep -q "pod cgroups under" "$D.log" && ! grep -q "pod cgroups are off" "$D.log"; then
    grep -q "^0::.*/pod-$(jp gpus .metadata.uid)\$" "/proc/$P1/cgroup" ||
        fail "not in the pod's cgroup: $(cat "/proc/$P1/cgroup")"
fi

# ---- the device filter: a pod opens only its own GPUs' device nodes ----
if grep -q "gets a device filter" "$D.log" && mkdir -p "$SHARED/dev" &&
    mknod "$SHARED/dev/nvidia0" c 195 0 2>/dev/null && mknod "$SHARED/dev/nvidia3" c 195 3; then
    chmod 666 "$SHARED"/dev/nvidia*
    bound_pod filter '[{"slice":"gpu-0","kind":"whole","uuid":"GPU-f0"}]' "  restartPolicy: Never" <<EOF
  - name: main
    command: ["sh", "-c", "for d in 0 3; do (exec 3< $SHARED/dev/nvidia\$\$d) 2>&1 | sed \"s/^/\$\$d: /\"; done > $SHARED/filter.out"]
EOF
    wait_for 10 phase_is filter Succeeded
    # a node the filter lets through fails in the (absent) driver; another GPU's gets EPERM
    grep -q "^0: .*No such device" "$SHARED/filter.out" || fail "filter: own GPU: $(cat "$SHARED/filter.out")"
    grep -q "^3: .*Operation not permitted" "$SHARED/filter.out" ||
        fail "filter: another GPU: $(cat "$SHARED/filter.out")"
else
    echo "skipped: the device filter check (no filter here, or no mknod)"
fi

# ---- a slice is never used by two pods at once ----
bound_pod second "$(echo "$DEVS" | sed 's/"container":"capped"/"container":"main"/')" "  restartPolicy: Never" <<EOF
  - name: main
    command: ["true"]
EOF
sleep 0.5
[ -z "$(jp second .status.phase)" ] || [ "$(jp second .status.phase)" = Pending ] ||
    fail "second pod ran on a held slice: $(jp second .status.phase)"
k get events --field-selector involvedObject.name=second -o custom-columns=R:.reason,M:.message >"$TMP/ev"
expect_line "$TMP/ev" "SliceBusy"

# ---- deletion: SIGTERM, grace period, SIGKILL, finalizer ----
bound_pod polite "" "  terminationGracePeriodSeconds: 10" <<EOF
  - name: main
    command: ["sh", "-c", "trap 'echo got TERM > $SHARED/polite.term; exit 0' TERM; while true; do sleep 0.1; done"]
EOF
wait_for 10 phase_is polite Running
sleep 0.3
T0=$SECONDS
expect_rc 0 k delete pod polite
[ $((SECONDS - T0)) -lt 5 ] || fail "polite: deletion took $((SECONDS - T0)) s"
expect_line "$SHARED/polite.term" "got TERM"

T0=$(date +%s%N)
expect_rc 0 k delete pod gpus # grace 5 s; sleep ignores nothing, so SIGTERM ends it
for c in capped mps mig whole none; do
    kill -0 "$(cat "$SHARED/$c.pid")" 2>/dev/null && fail "gpus: $c still runs after deletion"
done
[ -e "$ACCT" ] && fail "accounting file left behind"
# the slice is free again: the waiting pod runs now
wait_for 10 phase_is second Succeeded

bound_pod stubborn "" "  terminationGracePeriodSeconds: 1" <<EOF
  - name: main
    command: ["sh", "-c", "trap '' TERM; echo \$\$\$\$ > $SHARED/stubborn.pid; while true; do sleep 0.1; done"]
EOF
wait_for 10 phase_is stubborn Running
wait_for 5 test -s "$SHARED/stubborn.pid"
T0=$(date +%s%N)
expect_rc 0 k delete pod stubborn
T1=$(( ($(date +%s%N) - T0) / 1000000 ))
[ "$T1" -ge 900 ] && [ "$T1" -lt 6000 ] || fail "stubborn: deletion took $T1 ms (grace period 1 s)"
kill -0 "$(cat "$SHARED/stubborn.pid")" 2>/dev/null && fail "stubborn: still runs"

# ---- everything goes ----
expect_rc 0 k delete pod --all
for d in pods status logs; do
    [ -z "$(ls "$D/agent/$d")" ] || fail "agent/$d not empty: $(ls "$D/agent/$d")"
done
[ -z "$(ls "$D/agent/run")" ] || fail "agent/run not empty"
stop_fatiad
finish

#!/usr/bin/env bash
# tests/cli/agent-gpuutil.sh: the node agent publishes each GPU pod's utilisation from NVML's
# per-process SM utilisation (the fake NVML's util.<gpu>.<pid> files, tests/vgpu/fake_nvml.c) as
# the pod's status condition fatia.dev/GPUUtilization, which the GPU-idleness policy reads on an
# NVML node (controller/gpuidle_util.c). A whole-GPU pod whose process uses no SM reads 0 %; one
# at 50 % reads 50 %; when its load rises to 90 % the condition follows within a window; a
# process outside every pod's cgroup (this shell) at 100 % on the idle pod's GPU does not count
# for that pod; the synthetic annotation a tenant may set is not what the agent publishes.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
FAKE=$BUILD/tests/vgpu/fake/libnvidia-ml.so.1
[ -e "$FAKE" ] || { fail "missing $FAKE (build first)"; finish; }
agent_setup
trap 'agent_cleanup; if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi; rm -rf "$TMP"' EXIT

export FAKE_NVML_PROCS=$SHARED/nvml
mkdir -p "$FAKE_NVML_PROCS"
chmod 1777 "$FAKE_NVML_PROCS"
D=$TMP/d
start_fatiad "$D" --no-controllers --agent "gpu-watch-nvml=$FAKE" --agent gpu-watch=100ms --agent gpu-util-every=500ms || finish
grep -q "GPU utilization published every 500 ms" "$D.log" || fail "no utilization: $(grep -i watchdog "$D.log")"
grep -q "pod cgroups under" "$D.log" || skip "no pod cgroups on this machine: the agent maps pids by cgroup ($(grep -i cgroup "$D.log" | head -2))"

whole() { echo "[{\"slice\":\"gpu-$1\",\"kind\":\"whole\",\"gpuIndex\":$1,\"uuid\":\"GPU-fake-$1\"}]"; }
# a process on GPU G holding 1 GiB, with SM utilisation U (no util file when U is empty)
runs() { # G [U]
    local u=
    [ -n "${2:-}" ] && u="echo $2 >$FAKE_NVML_PROCS/util.$1.\$\$\$\$; "
    echo "    command: [\"sh\", \"-c\", \"echo 1073741824 >$FAKE_NVML_PROCS/$1.\$\$\$\$; ${u}echo \$\$\$\$ >$SHARED/pid.$1; exec sleep 120\"]"
}
bound_pod idle "$(whole 0)" "  restartPolicy: Never" <<YAML
  - name: main
$(runs 0)
YAML
bound_pod half "$(whole 1)" "  restartPolicy: Never" <<YAML
  - name: main
$(runs 1 50)
YAML
wait_for 10 phase_is idle Running
wait_for 10 phase_is half Running
# a tenant's annotation is not the agent's figure
k annotate pod idle fatia.dev/synthetic-gpu-utilization=100 >/dev/null || fail "annotate"
# a process of no pod, busy on the idle pod's GPU
echo 1073741824 >"$FAKE_NVML_PROCS/0.$$"
echo 100 >"$FAKE_NVML_PROCS/util.0.$$"
cond() { k get pod "$1" -o jsonpath='{.status.conditions[?(@.type=="fatia.dev/GPUUtilization")].message}'; }
util_is() { cond "$1" | grep -q "^$2% SM utilization"; }
wait_for 10 util_is idle 0
wait_for 10 util_is half 50
k get pod half -o jsonpath='{.status.conditions[?(@.type=="fatia.dev/GPUUtilization")]}' >"$TMP/c.json"
python3 - "$TMP/c.json" <<'PY' || fail "condition: $(cat "$TMP/c.json")"
import datetime, json, sys
c = json.load(open(sys.argv[1]))
assert c["status"] == "True" and c["reason"] == "Sampled", c
t = datetime.datetime.strptime(c["lastProbeTime"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
age = (datetime.datetime.now(datetime.timezone.utc) - t).total_seconds()
assert -2 < age < 5, age
PY
# the load rises: published within a window or two
echo 90 >"$FAKE_NVML_PROCS/util.1.$(cat "$SHARED/pid.1")"
wait_for 5 util_is half 90
# and the idle pod stays at 0 while being re-published (its probe time moves)
t1=$(k get pod idle -o jsonpath='{.status.conditions[?(@.type=="fatia.dev/GPUUtilization")].lastProbeTime}')
sleep 2
t2=$(k get pod idle -o jsonpath='{.status.conditions[?(@.type=="fatia.dev/GPUUtilization")].lastProbeTime}')
[ "$t1" != "$t2" ] || fail "idle: not re-published ($t1)"
util_is idle 0 || fail "idle: $(cond idle)"
api GET /metrics
awk '$1 == "fatia_agent_gpu_utilization_published" && $2 >= 4 { ok = 1 } END { exit !ok }' "$TMP/body" || fail "published: $(grep utilization_published "$TMP/body")"
rm -f "$FAKE_NVML_PROCS/0.$$" "$FAKE_NVML_PROCS/util.0.$$"
stop_fatiad
finish

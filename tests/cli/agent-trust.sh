#!/usr/bin/env bash
# tests/cli/agent-trust.sh: the agent trusts only placement (issue 15). A pod whose
# fatia.dev/devices annotation got through (the API's admission rules refuse it from tenants; this
# check must hold without them) never runs with a device its node's inventory does not give that
# pod: a made-up slice id with another GPU's UUID and minor, a real free slice with another GPU's
# UUID or minor or kind, a MIG slice with another MIG device, an annotation copied from another
# pod (bound to that pod's uid), an annotation with no podUID. Each fails the pod (phase Failed,
# reason UnexpectedAdmissionError, an Event) and nothing of it starts. A pod bound properly runs
# with the inventory's UUID.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
agent_setup
trap 'agent_cleanup; if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi; rm -rf "$TMP"' EXIT

D=$TMP/d
start_fatiad "$D" --no-controllers || exit 1
GA=GPU-aaaaaaaa-1111-2222-3333-444444444444
GB=GPU-bbbbbbbb-1111-2222-3333-444444444444
GM=GPU-cccccccc-1111-2222-3333-444444444444
M0=MIG-00000000-1111-2222-3333-444444444444
M1=MIG-11111111-1111-2222-3333-444444444444
add_inventory "[{\"slice\":\"gpu-0\",\"kind\":\"whole\",\"uuid\":\"$GA\"},
 {\"slice\":\"gpu-1\",\"kind\":\"whole\",\"uuid\":\"$GB\"},
 {\"slice\":\"gpu-2-mig-1g18gb-19-0\",\"kind\":\"mig\",\"uuid\":\"$GM\",\"migUuid\":\"$M0\"},
 {\"slice\":\"gpu-2-mig-1g18gb-19-1\",\"kind\":\"mig\",\"uuid\":\"$GM\",\"migUuid\":\"$M1\"}]"

# another tenant's pod holds gpu-1
bound_pod victim "[{\"slice\":\"gpu-1\",\"kind\":\"whole\",\"uuid\":\"$GB\"}]" "  restartPolicy: Never" <<YAML
  - name: main
    command: ["sleep", "60"]
YAML
wait_for 10 phase_is victim Running

refused() { # NAME WHAT: the pod failed as refused, with an Event, and nothing of it ran
    local name=$1 what=$2 uid
    wait_for 10 phase_is "$name" Failed || return
    [ "$(jp "$name" .status.reason)" = UnexpectedAdmissionError ] ||
        fail "$name: reason '$(jp "$name" .status.reason)'"
    jp "$name" .status.message | grep -qF -- "$what" ||
        fail "$name: message '$(jp "$name" .status.message)' lacks '$what'"
    [ -z "$(jp "$name" '.status.containerStatuses[*].containerID')" ] ||
        fail "$name: a container ran: $(jp "$name" .status.containerStatuses)"
    uid=$(jp "$name" .metadata.uid)
    [ ! -e "$D/agent/pods/$uid" ] || fail "$name: the agent claimed the pod ($D/agent/pods/$uid)"
    if grep -q "pod default/$name started" "$D.log"; then fail "$name: started"; fi
    wait_for 5 sh -c "'$KUBECTL' --kubeconfig '$KCFG' get events --field-selector involvedObject.name=$name,reason=UnexpectedAdmissionError -o name | grep -q ."
}

# a pod created behind a gate, annotated with DEVICES (@UID@: its own uid), then ungated
make_bound() { # NAME DEVICES_JSON
    BIND_AS_IS=1 bound_pod "$1" "" "  restartPolicy: Never
  schedulingGates: [{name: test.fatia.dev/bind}]" <<YAML
  - name: main
    command: ["sh", "-c", "echo devices=\$CUDA_VISIBLE_DEVICES; sleep 30"]
YAML
    local u
    u=$(jp "$1" .metadata.uid)
    k annotate pod "$1" "fatia.dev/devices=${2//@UID@/$u}" >/dev/null || fail "cannot annotate $1"
    k patch pod "$1" --type json -p '[{"op":"remove","path":"/spec/schedulingGates"}]' >/dev/null ||
        fail "cannot ungate $1"
}

# 1. the issue's attack: a made-up slice id with the victim's GPU UUID and minor (podUID right:
#    the annotation got through)
make_bound forged "[{\"slice\":\"gpu-9-evil\",\"kind\":\"whole\",\"uuid\":\"$GB\",\"minor\":1,\"podUID\":\"@UID@\"}]"
refused forged "'gpu-9-evil' is not a slice of node 'node-0'"
# as it was in the issue: created bound, no podUID
BIND_AS_IS=1 bound_pod forged2 "[{\"slice\":\"gpu-9-evil\",\"kind\":\"whole\",\"uuid\":\"$GB\",\"minor\":1}]" "  restartPolicy: Never" <<YAML
  - name: main
    command: ["sleep", "30"]
YAML
refused forged2 "podUID: missing"

# 2. a real free slice with the victim's GPU UUID, its minor, another kind; a MIG slice with
#    the other MIG device
make_bound wronguuid "[{\"slice\":\"gpu-0\",\"kind\":\"whole\",\"uuid\":\"$GB\",\"podUID\":\"@UID@\"}]"
refused wronguuid "uuid: '$GB' is not the GPU of slice 'gpu-0'"
make_bound wrongminor "[{\"slice\":\"gpu-0\",\"kind\":\"whole\",\"uuid\":\"$GA\",\"minor\":1,\"podUID\":\"@UID@\"}]"
refused wrongminor "minor: 1 is not the device of slice 'gpu-0'"
make_bound wrongkind "[{\"slice\":\"gpu-0\",\"kind\":\"timeslice\",\"uuid\":\"$GA\",\"podUID\":\"@UID@\"}]"
refused wrongkind "slice 'gpu-0' of node 'node-0' is of type 'gpu'"
make_bound wrongmig "[{\"slice\":\"gpu-2-mig-1g18gb-19-0\",\"kind\":\"mig\",\"uuid\":\"$GM\",\"migUuid\":\"$M1\",\"podUID\":\"@UID@\"}]"
refused wrongmig "migUuid: '$M1' is not the MIG device"

# 3. the victim's annotation copied onto another pod: bound to the victim's uid
make_bound copied "$(jp victim '.metadata.annotations.fatia\.dev/devices')"
refused copied "the devices were not placed for this pod"

# the victim still runs; a pod placed properly on gpu-0 runs with the inventory's UUID
[ "$(jp victim .status.phase)" = Running ] || fail "victim: $(jp victim .status.phase)"
bound_pod good "[{\"slice\":\"gpu-0\",\"kind\":\"whole\",\"uuid\":\"$GA\"}]" "  restartPolicy: Never" <<YAML
  - name: main
    command: ["sh", "-c", "echo devices=\$CUDA_VISIBLE_DEVICES"]
YAML
wait_for 10 phase_is good Succeeded
k logs good | grep -qx "devices=$GA" || fail "good: '$(k logs good)'"
stop_fatiad
finish

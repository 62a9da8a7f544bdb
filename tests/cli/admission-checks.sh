#!/bin/bash
# tests/cli/admission-checks.sh: Kueue AdmissionChecks honoured by admission (control/checks.c,
# controller/admission.c) in a real fatiad with its controllers, with kubectl 1.33 playing the
# checks' external controller (fatia ships none) through `kubectl patch --subresource=status`:
#   - a ClusterQueue naming a missing check, then one without Active=True, is inactive
#     (AdmissionCheckNotFound, AdmissionCheckInactive) and reserves nothing; Active=True makes
#     it active;
#   - a Job's Workload gets QuotaReserved and one Pending state per check, but no Admitted
#     condition, and the Job stays suspended; once every check is Ready it is Admitted and the Job
#     is unsuspended;
#   - a check in Retry evicts it (Evicted AdmissionCheck, "At least one admission check is
#     false"), its states go back to Pending (retryCount 1), its quota is released and it is
#     reserved again; the states start Pending again and the Job stays suspended;
#   - a check Rejected deactivates it (spec.active false, Evicted DeactivatedDueToAdmissionCheck)
#     and frees its quota for the next workload;
#   - onFlavors: a check that names another flavor does not hold a workload back;
#   - hostile: Ready states written with the Workload (create, or a plain patch) do not count:
#     status is the status subresource's; a tenant of the namespace may not write that (403) and
#     its workload stays unadmitted.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
k="$KUBECTL_DIR/kubectl.1.33"
FATIAD_CONTROLLERS=1 start_fatiad "$TMP/data" || {
    finish
    exit 1
}
export KUBECONFIG=$KCFG

wait_for() { # SECS DESC CMD...
    local secs=$1 desc=$2
    shift 2
    for _ in $(seq $((secs * 5))); do
        "$@" && return 0
        sleep 0.2
    done
    fail "$desc ($secs s): $("$k" get workloads -n team -o yaml 2>&1 | grep -v '^ *\(f:\|manager\|operation\|time\|apiVersion: kueue\|fieldsType\)' | tail -150)
$(grep -i 'admission' "$TMP/data.log" | tail -20)"
    return 1
}
out_is() { # WANT CMD...: CMD's stdout is WANT
    local want=$1
    shift
    [ "$("$@" 2>/dev/null)" = "$want" ]
}
cq_active() { "$k" get cq cq -o jsonpath='{.status.conditions[?(@.type=="Active")].reason}'; }
wl_of() { # JOB: the name of its Workload
    "$k" get workloads -n team -o jsonpath="{range .items[?(@.metadata.ownerReferences[0].name==\"$1\")]}{.metadata.name}{end}"
}
wl_get() { "$k" get workload "$1" -n team -o jsonpath="$2"; }
cond() { wl_get "$1" "{.status.conditions[?(@.type==\"$2\")].status}"; }
suspended() { "$k" get job "$1" -n team -o jsonpath='{.spec.suspend}'; }
set_check() { # WL NAME STATE [MESSAGE]: the external check controller's write
    "$k" patch workload "$1" -n team --subresource=status --type=json -p "[{\"op\":\"replace\",\"path\":\"/status/admissionChecks/$(check_index "$1" "$2")\",\"value\":{\"name\":\"$2\",\"state\":\"$3\",\"message\":\"${4:-}\",\"lastTransitionTime\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"}}]" >/dev/null || fail "set_check $*"
}
check_index() { # WL NAME: index of NAME in status.admissionChecks
    wl_get "$1" '{range .status.admissionChecks[*]}{.name}{"\n"}{end}' | grep -nx "$2" | cut -d: -f1 | awk '{print $1 - 1}'
}
check_states() { wl_get "$1" '{range .status.admissionChecks[*]}{.name}={.state} {end}'; }
job() { # NAME CPU
    cat <<YAML
---
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
  namespace: team
  labels: {kueue.x-k8s.io/queue-name: lq}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: c, image: busybox, command: [sleep, "300"], resources: {requests: {cpu: "$2"}}}
YAML
}

cat >"$TMP/setup.yaml" <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: spot}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  admissionChecksStrategy:
    admissionChecks:
    - name: prov
    - name: budget
    - name: spot-capacity
      onFlavors: [spot]
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: "4"}]
    - name: spot
      resources: [{name: cpu, nominalQuota: "4"}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: team}
spec: {clusterQueue: cq}
YAML
expect_rc 0 "$k" apply -f "$TMP/setup.yaml"

# ---- 1. missing and inactive checks keep the ClusterQueue inactive ----
wait_for 10 "CQ inactive for missing checks" out_is AdmissionCheckNotFound cq_active
expect_rc 0 "$k" get cq cq -o jsonpath='{.status.conditions[?(@.type=="Active")].message}'
expect_line "$TMP/out" "Can't admit new workloads: references missing AdmissionCheck(s): prov,budget,spot-capacity"
for c in prov budget spot-capacity; do
    printf 'apiVersion: kueue.x-k8s.io/v1beta2\nkind: AdmissionCheck\nmetadata: {name: %s}\nspec: {controllerName: example.com/%s}\n' "$c" "$c" |
        "$k" apply -f - >/dev/null || fail "apply AdmissionCheck $c"
done
wait_for 10 "CQ inactive for checks without Active" out_is AdmissionCheckInactive cq_active
job early 1 | "$k" apply -f - >/dev/null
wait_for 10 "a workload for job early" test -n "$(wl_of early)"
E=$(wl_of early)
sleep 1
expect_rc 0 wl_get "$E" '{.status.admission.clusterQueue}|{.status.conditions[?(@.type=="QuotaReserved")].message}'
expect_line "$TMP/out" "|ClusterQueue cq is inactive"
activate() {
    "$k" patch admissioncheck "$1" --subresource=status --type=merge -p \
        "{\"status\":{\"conditions\":[{\"type\":\"Active\",\"status\":\"$2\",\"reason\":\"ByTest\",\"message\":\"\",\"lastTransitionTime\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"}]}}" >/dev/null
}
activate prov True
activate budget False
wait_for 10 "CQ inactive while budget is Active=False" out_is AdmissionCheckInactive cq_active
expect_rc 0 "$k" get cq cq -o jsonpath='{.status.conditions[?(@.type=="Active")].message}'
expect_line "$TMP/out" "references inactive AdmissionCheck(s): budget,spot-capacity"
activate budget True
activate spot-capacity True
wait_for 10 "CQ active once every check is Active" out_is Ready cq_active

# ---- 2. quota reserved, checks Pending: not admitted, the Job stays suspended ----
wait_for 10 "early reserves quota" out_is True cond "$E" QuotaReserved
wait_for 10 "early has Pending checks" out_is "prov=Pending budget=Pending " check_states "$E"
expect_rc 0 wl_get "$E" '{.status.conditions[?(@.type=="Admitted")].status}'
[ -s "$TMP/out" ] && fail "early has an Admitted condition before its checks are Ready: $(cat "$TMP/out")"
sleep 1
expect_rc 0 suspended early
expect_line "$TMP/out" "true"
set_check "$E" prov Ready
sleep 1
expect_rc 0 suspended early
expect_line "$TMP/out" "true"
expect_rc 0 wl_get "$E" '{.status.conditions[?(@.type=="Admitted")].status}'
[ -s "$TMP/out" ] && fail "early is Admitted with one check still Pending"
set_check "$E" budget Ready
wait_for 10 "early Admitted once every check is Ready" out_is True cond "$E" Admitted
wait_for 10 "job early unsuspended" out_is false suspended early

# ---- 3. onFlavors: default holds 1 of 4 cpu; a 3-cpu job still fits default, a 4-cpu one
# lands on spot and also needs spot-capacity ----
job fits 3 | "$k" apply -f - >/dev/null
wait_for 10 "a workload for job fits" test -n "$(wl_of fits)"
F=$(wl_of fits)
wait_for 10 "fits reserves on default" out_is default wl_get "$F" '{.status.admission.podSetAssignments[0].flavors.cpu}'
wait_for 10 "fits needs prov and budget only" out_is "prov=Pending budget=Pending " check_states "$F"
job spotty 4 | "$k" apply -f - >/dev/null
wait_for 10 "a workload for job spotty" test -n "$(wl_of spotty)"
S=$(wl_of spotty)
wait_for 10 "spotty reserves on spot" out_is spot wl_get "$S" '{.status.admission.podSetAssignments[0].flavors.cpu}'
wait_for 10 "spotty needs spot-capacity too" out_is "prov=Pending budget=Pending spot-capacity=Pending " check_states "$S"

# ---- 4. Retry: evicted, states reset, quota released, reserved again ----
set_check "$F" prov Retry "capacity not yet available"
# the eviction and its hand-off (the job controller clears the reservation of the suspended job,
# the quota is released, the workload is reserved again) take milliseconds: what stays is the
# reset states, the Evicted condition turned False by the new reservation, and the events
wait_for 10 "fits' prov reset to Pending with retryCount 1" out_is "Pending 1 Reset to Pending after eviction. Previously: Retry" \
    wl_get "$F" '{.status.admissionChecks[0].state} {.status.admissionChecks[0].retryCount} {.status.admissionChecks[0].message}'
wait_for 15 "fits reserved again" out_is "True False Previously: At least one admission check is false" \
    wl_get "$F" '{.status.conditions[?(@.type=="QuotaReserved")].status} {.status.conditions[?(@.type=="Evicted")].status} {.status.conditions[?(@.type=="Evicted")].message}'
expect_rc 0 check_states "$F"
expect_line "$TMP/out" "prov=Pending budget=Pending"
expect_rc 0 suspended fits
expect_line "$TMP/out" "true"
sleep 1
"$k" get events -n team --field-selector involvedObject.name="$F" -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}' >"$TMP/ev"
expect_line "$TMP/ev" "EvictedDueToAdmissionCheck: At least one admission check is false"
expect_line "$TMP/ev" "QuotaReserved: Quota reserved in ClusterQueue cq"
grep -q '^Admitted:' "$TMP/ev" && fail "an Admitted event for fits, whose checks were never Ready: $(cat "$TMP/ev")"

# ---- 5. Rejected: deactivated, its quota goes to the next ----
set_check "$S" spot-capacity Rejected "no spot capacity"
wait_for 10 "spotty deactivated" out_is false wl_get "$S" '{.spec.active}'
wait_for 15 "spotty evicted for the rejection, its quota released" out_is \
    "DeactivatedDueToAdmissionCheck False" wl_get "$S" '{.status.conditions[?(@.type=="Evicted")].reason} {.status.conditions[?(@.type=="QuotaReserved")].status}'
expect_rc 0 wl_get "$S" '{.status.conditions[?(@.type=="Evicted")].message}'
expect_line "$TMP/out" "The workload is deactivated due to Admission check(s): spot-capacity, were rejected"
sleep 1
expect_rc 0 wl_get "$S" '{.status.admission.clusterQueue}'
[ -s "$TMP/out" ] && fail "a Rejected workload was reserved again"
job next 4 | "$k" apply -f - >/dev/null
wait_for 10 "a workload for job next" test -n "$(wl_of next)"
N=$(wl_of next)
wait_for 15 "next takes spot" out_is spot wl_get "$N" '{.status.admission.podSetAssignments[0].flavors.cpu}'

# ---- 6. hostile: Ready states in a plain write do not count ----
cat >"$TMP/forged.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: forged, namespace: team}
spec:
  queueName: lq
  podSets:
  - name: main
    count: 1
    template: {spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "4"}}}]}}
status:
  admissionChecks:
  - {name: prov, state: Ready, message: forged, lastTransitionTime: "2026-01-01T00:00:00Z"}
  - {name: budget, state: Ready, message: forged, lastTransitionTime: "2026-01-01T00:00:00Z"}
YAML
expect_rc 0 "$k" create -f "$TMP/forged.yaml"
sleep 1
expect_rc 0 wl_get forged '{.status.admissionChecks[*].message}'
grep -q forged "$TMP/out" && fail "a create wrote status.admissionChecks: $(cat "$TMP/out")"
expect_rc 0 "$k" patch workload "$E" -n team --type=merge -p '{"status":{"admissionChecks":[{"name":"prov","state":"Rejected","message":"forged","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}'
sleep 1
expect_rc 0 wl_get "$E" '{.spec.active} {.status.conditions[?(@.type=="Admitted")].status}'
expect_line "$TMP/out" " True"
grep -q false "$TMP/out" && fail "a plain patch of status rejected an admitted workload"

# a tenant of the namespace may not play the check controller: its status write is refused (the
# tenancy rule "status") and fits stays reserved, not admitted
"$BUILD/bin/fatia" token create --data-dir "$TMP/data" --user mallory --namespace team \
    >"$TMP/mallory.kubeconfig" 2>/dev/null || fail "fatia token create"
KUBECONFIG=$TMP/mallory.kubeconfig "$k" -n team patch workload "$F" --subresource=status --type=json \
    -p '[{"op":"replace","path":"/status/admissionChecks/0/state","value":"Ready"},{"op":"replace","path":"/status/admissionChecks/1/state","value":"Ready"}]' \
    >"$TMP/out" 2>"$TMP/err" && fail "ATTACK SUCCEEDED: a tenant wrote its workload's check states"
grep -qi forbidden "$TMP/err" || fail "the tenant's status write was not a 403: $(cat "$TMP/err")"
sleep 1
expect_rc 0 check_states "$F"
expect_line "$TMP/out" "prov=Pending budget=Pending"
expect_rc 0 suspended fits
expect_line "$TMP/out" "true"

stop_fatiad
finish

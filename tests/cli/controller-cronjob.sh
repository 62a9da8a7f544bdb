#!/bin/bash
# tests/cli/controller-cronjob.sh: the CronJob controller (src/controller/cronjob.c) in a real
# fatiad with its controllers and node agent, over one minute boundary (the test waits for it:
# about 60 s):
#   - "* * * * *" (Allow): a Job <name>-<minutes since the epoch> is created at the minute, owned
#     by the CronJob, annotated with its scheduled time; it runs (a real process) and completes;
#     the CronJob's status has lastScheduleTime and lastSuccessfulTime;
#   - Forbid with an active Job of its own: no new Job;
#   - Replace with an active Job of its own: that Job is deleted and a new one created;
#   - suspend: true: nothing;
#   - history: of three finished Jobs of a CronJob with successfulJobsHistoryLimit 1, the two
#     oldest are deleted at once (no minute needed);
#   - an invalid schedule is refused at admission (the API test has more of those).
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
chmod 711 "$TMP"
k="$KUBECTL_DIR/kubectl.1.33"
FATIAD_CONTROLLERS=1 start_fatiad "$TMP/data" || { finish; exit 1; }
export KUBECONFIG=$KCFG

wait_for() {
    local secs=$1 desc=$2
    shift 2
    for _ in $(seq $((secs * 5))); do
        "$@" && return 0
        sleep 0.2
    done
    fail "$desc ($secs s): $("$k" get cj,jobs -n cj-t 2>&1 | head -30)
$(grep -v cgroup "$TMP/data.log" | tail -30)"
    return 1
}

cronjob() { # NAME POLICY SUSPEND [EXTRA]
    cat <<YAML
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: $1, namespace: cj-t}
spec:
  schedule: "* * * * *"
  concurrencyPolicy: $2
  suspend: $3
  successfulJobsHistoryLimit: 1
  jobTemplate:
    metadata: {labels: {from: $1}}
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: c, image: busybox, command: [sh, -c, "echo tick from $1"]}]
YAML
}
{
    echo 'apiVersion: v1'
    echo 'kind: Namespace'
    echo 'metadata: {name: cj-t}'
    cronjob tick Allow false
    cronjob forbid Forbid false
    cronjob replace Replace false
    cronjob paused Allow true
    cronjob history Allow true
} >"$TMP/cj.yaml"
# do not start within 8 s of a minute boundary: the setup must be done before it
while [ "$(date -u +%S | sed 's/^0//')" -ge 52 ]; do sleep 1; done
expect_rc 0 "$k" apply -f "$TMP/cj.yaml"

uid_of() { "$k" get cj "$1" -n cj-t -o jsonpath='{.metadata.uid}'; }
# owned_job CRONJOB NAME: a suspended (so active, never running) Job owned by CRONJOB
owned_job() {
    cat <<YAML | "$k" apply -f - >/dev/null || fail "owned job $2"
apiVersion: batch/v1
kind: Job
metadata:
  name: $2
  namespace: cj-t
  ownerReferences: [{apiVersion: batch/v1, kind: CronJob, name: $1, uid: "$(uid_of "$1")", controller: true}]
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox, command: ["true"]}]
YAML
}
owned_job forbid forbid-old
owned_job replace replace-old
for i in 1 2 3; do
    owned_job history "history-$i"
    sleep 1.1 # distinct creationTimestamps (seconds)
done
# finish the three history Jobs (a status write, as the job controller makes it)
for i in 1 2 3; do
    api PATCH "/apis/batch/v1/namespaces/cj-t/jobs/history-$i/status" \
        -H 'Content-Type: application/merge-patch+json' \
        -d '{"status":{"conditions":[{"type":"Complete","status":"True"}],"completionTime":"2026-01-01T00:00:0'$i'Z","succeeded":1}}'
    [ "$CODE" = 200 ] || fail "status of history-$i: $CODE $(cat "$TMP/body")"
done
only_latest() { [ "$("$k" get jobs -n cj-t -o name | grep history- | tr '\n' ' ')" = "job.batch/history-3 " ]; }
wait_for 20 "history limit 1: only history-3 kept" only_latest

# the minute: tick and replace create a Job each
tick_done() {
    "$k" get jobs -n cj-t -l from=tick -o jsonpath='{.items[*].status.conditions[*].type}' | grep -qw Complete
}
wait_for 75 "the tick Job created and complete" tick_done
job=$("$k" get jobs -n cj-t -l from=tick -o jsonpath='{.items[0].metadata.name}')
[[ "$job" =~ ^tick-[0-9]+$ ]] || fail "job name $job"
minutes=${job#tick-}
ts=$("$k" get job "$job" -n cj-t -o jsonpath='{.metadata.annotations.batch\.kubernetes\.io/cronjob-scheduled-timestamp}')
[ "$(date -u -d "$ts" +%s)" = $((minutes * 60)) ] || fail "scheduled timestamp $ts for $job"
[ "$("$k" get job "$job" -n cj-t -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}')" = CronJob/tick ] ||
    fail "the Job is not owned by its CronJob"
status_ok() {
    [ -n "$("$k" get cj tick -n cj-t -o jsonpath='{.status.lastScheduleTime}')" ] &&
        [ -n "$("$k" get cj tick -n cj-t -o jsonpath='{.status.lastSuccessfulTime}')" ]
}
wait_for 20 "the CronJob's status" status_ok
expect_rc 0 "$k" logs "job/$job" -n cj-t
expect_line "$TMP/out" "tick from tick"

replaced() {
    ! "$k" get job replace-old -n cj-t >/dev/null 2>&1 &&
        [ -n "$("$k" get jobs -n cj-t -l from=replace -o name)" ]
}
wait_for 20 "Replace: the old Job deleted and a new one created" replaced
[ -z "$("$k" get jobs -n cj-t -l from=forbid -o name)" ] || fail "Forbid: a Job was created beside the active one"
"$k" get job forbid-old -n cj-t >/dev/null 2>&1 || fail "Forbid: the active Job went"
[ -z "$("$k" get jobs -n cj-t -l from=paused -o name)" ] || fail "suspend: a Job was created"
expect_rc 0 "$k" get cj -n cj-t
tr -s ' ' <"$TMP/out" | grep -q "^paused \* \* \* \* \* <none> true 0 [0-9]" || fail "columns: $(cat "$TMP/out")"

# admission: an invalid schedule
sed 's/"\* \* \* \* \*"/"* * * *"/' "$TMP/cj.yaml" | awk 'BEGIN{RS="---"} /name: tick,/' >"$TMP/bad.yaml"
sed -i 's/name: tick,/name: bad,/' "$TMP/bad.yaml"
expect_rc 1 "$k" apply -f "$TMP/bad.yaml"
expect_line "$TMP/err" 'spec.schedule: invalid value "* * * *": expected exactly 5 fields, found 4'
stop_fatiad
finish

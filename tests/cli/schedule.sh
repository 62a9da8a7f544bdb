#!/bin/bash
# tests/cli/schedule.sh: `fatia schedule` as a user runs it: the examples schedule, the JSON has
# exactly the three lists, the table shows usage against quota, bad input and usage errors fail.
. "$(dirname "$0")/lib.bash"

G=tests/golden/control
expect_rc 0 "$FATIA" schedule -f $G/fixtures/scheduler-test.yaml \
    -f $G/0011-preempt-in-clusterqueue-and-cohort/input.yaml -o json
expect_line "$TMP/out" '"workload": "eng-alpha/borrower"'
expect_line "$TMP/out" '"reason": "InCohortReclamation"'
# without --cycles the preemptor gets in once its victims are gone
expect_line "$TMP/out" '"workload": "eng-beta/preemptor"'
json() { python3 -c "import json,sys; d=json.load(open('$TMP/out')); $1"; }
[ "$(json 'print(",".join(sorted(d)))')" = "admitted,pending,preempted" ] ||
    fail "the JSON must hold exactly admitted, pending and preempted"
json 'sys.exit(0 if "eng-beta/preemptor" in [a["workload"] for a in d["admitted"]] else 1)' ||
    fail "the preemptor is admitted in the second cycle"

expect_rc 0 "$FATIA" schedule -f $G/fixtures/scheduler-test.yaml \
    -f $G/0007-borrowing-would-overadmit-cohort/input.yaml --cycles 1
expect_line "$TMP/out" "ADMITTED (1)"
expect_line "$TMP/out" "Workload no longer fits after processing another workload"
expect_line "$TMP/out" "CLUSTERQUEUE"
grep -qE '^eng-alpha +eng +on-demand +cpu +50 +50 +45 +0$' "$TMP/out" ||
    fail "the usage table shows eng-alpha's on-demand cpu: 45 of 50, borrowing limit 50"
expect_line "$TMP/out" "1 cycle(s) at"

# the examples run (nothing to admit without workloads)
expect_rc 0 "$FATIA" schedule -f examples/ -o json
expect_line "$TMP/out" '"admitted": []'

# invalid input schedules nothing
printf 'apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: x}\nspec: {queueingStrategy: Fast}\n' >"$TMP/bad.yaml"
expect_rc 1 "$FATIA" schedule -f "$TMP/bad.yaml"
expect_line "$TMP/err" "spec.queueingStrategy: unsupported value"
expect_line "$TMP/err" "nothing was scheduled"

# Jobs and Pods are not scheduled, and the run says so (it once ignored them silently)
expect_rc 0 "$FATIA" schedule -f examples/ -f examples/jobs/ -o json
expect_line "$TMP/err" "fatia schedule: skipped 5 Jobs (team-a/train-a1, team-a/train-a2, team-b/train-b1, team-a/urgent-eval, team-b/serve-llm) and 1 Pod (team-b/notebook): fatia schedule reads Workloads only."
expect_line "$TMP/err" "kubectl get workloads -A -o yaml > workloads.yaml"
cp "$TMP/out" "$TMP/with-jobs.json"
expect_rc 0 "$FATIA" schedule -f examples/ -o json
cmp -s "$TMP/out" "$TMP/with-jobs.json" || fail "Jobs and Pods changed the schedule"
[ -s "$TMP/err" ] && fail "no Jobs, yet stderr says: $(cat "$TMP/err")"
for i in $(seq 8); do
    printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: p%s, namespace: team-a}\nspec: {containers: [{name: c, image: x}]}\n' "$i"
done >"$TMP/pods.yaml"
expect_rc 0 "$FATIA" schedule -f examples/ -f "$TMP/pods.yaml"
expect_line "$TMP/err" "skipped 8 Pods (team-a/p1, team-a/p2, team-a/p3, team-a/p4, team-a/p5, and 3 more)"
grep -q "Jobs\? (" "$TMP/err" && fail "named Jobs that are not there"

# usage
expect_rc 2 "$FATIA" schedule
expect_rc 2 "$FATIA" schedule -f examples/ --cycles 0
expect_rc 2 "$FATIA" schedule -f examples/ --cycles 1001
expect_rc 2 "$FATIA" schedule -f examples/ --now yesterday
expect_rc 0 "$FATIA" schedule --help
expect_line "$TMP/out" "Usage: fatia schedule"
finish

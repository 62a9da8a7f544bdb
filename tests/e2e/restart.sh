#!/bin/bash
# tests/e2e/restart.sh: kill -9 of fatiad while real pods run. Three Jobs run (two whole GPUs, a
# time-slice, a MIG slice); fatiad is killed with -9; one job's process exits (code 3) while
# fatiad is down; fatiad starts again on the same data directory. Checks: the processes that were
# running still run and none was started twice (each appends to $SHARED/<job>.starts); the one
# that exited while fatiad was down gets its true exit code (Failed, exitCode 3); a new Job for
# two whole GPUs lands on the two that are free, not on the held ones; every Job ends as it
# should; and tests/e2e/slicecheck.py over the pod events before and after the restart: no slice
# was ever held by two pods. Skipped (with a message) when kubectl is missing.
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
export FATIAD_CONTROLLERS=1
chmod 711 "$TMP"
SHARED=$TMP/shared
mkdir -p "$SHARED"
chmod 1777 "$SHARED"
MK="$E2E_DIR/mkjob"

e2e_start --job-backoff 200ms || { finish; exit 1; }
watch_pods "$TMP/watch1"

# mk NAME PROFILE SECONDS EXIT: a job that records its start and pid, sleeps, exits
mk() {
    $MK team-a "$1" "$2" "" \
        "echo start >> $SHARED/$1.starts; echo \$\$\$\$ > $SHARED/$1.pid; sleep $3; exit $4" |
        sed 's/^spec:$/spec:\n  backoffLimit: 0/' | $K create -f - >/dev/null || fail "create $1"
}
running() { [ -s "$SHARED/$1.pid" ] && kill -0 "$(cat "$SHARED/$1.pid")" 2>/dev/null; }

mk r1 training-2gpu 12 0
mk r2 notebook-shared 4 3
wait_until 20 running r1
wait_until 20 running r2
$K get pods -n team-a -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.annotations.fatia\.dev/slices}{"\n"}{end}' >"$TMP/before"

kill -9 "$FATIAD_PID"
wait "$FATIAD_PID" 2>/dev/null
FATIAD_PID=
kill "$WATCH_PID" 2>/dev/null
# r2 exits (code 3) while fatiad is down
wait_until 10 eval '! running r2'
running r1 || fail "r1 died with fatiad"
last_rv=$(tail -n 1 "$TMP/watch1" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["object"]["metadata"]["resourceVersion"])' 2>/dev/null || echo 0)
# started again on a relative spelling of the data directory (make run's --data-dir .fatia is
# relative): the agent works on absolute paths, so the pods it adopts are the same
start_fatiad "$(realpath --relative-to=. "$TMP/data")" --fleet examples/fleet/ -f examples/ \
    --job-backoff 200ms || { finish; exit 1; }
watch_pods "$TMP/watch2" "$last_rv"
running r1 || fail "r1 did not survive the restart"

# the exit code of a process that ended while fatiad was down
P2=$(pod_of_job team-a r2)
wait_until 20 out_is Failed $K get pod "$P2" -n team-a -o jsonpath='{.status.phase}'
expect_rc 0 $K get pod "$P2" -n team-a -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}'
expect_line "$TMP/out" "3"
wait_until 20 is_true job_cond team-a r2 Failed

# a new job for two whole GPUs gets the free pair
mk r3 training-2gpu 2 0
wait_until 20 running r3
s1=$($K get pod "$(pod_of_job team-a r1)" -n team-a -o jsonpath='{.metadata.annotations.fatia\.dev/slices}')
s3=$($K get pod "$(pod_of_job team-a r3)" -n team-a -o jsonpath='{.metadata.annotations.fatia\.dev/slices}')
[ -n "$s1" ] && [ -n "$s3" ] && [ "$s1" != "$s3" ] || fail "r3 got '$s3' while r1 holds '$s1'"
grep -q "^$(pod_of_job team-a r1)=$s1\$" "$TMP/before" || fail "r1's slices changed across the restart"

for j in r1 r3; do
    wait_until 30 is_true job_cond team-a $j Complete
done
for j in r1 r2 r3; do
    [ "$(wc -l <"$SHARED/$j.starts")" = 1 ] || fail "$j started $(wc -l <"$SHARED/$j.starts") times"
done
wait_until 10 out_is 0 cq_usage team-a h200 nvidia.com/gpu
wait_until 10 out_is 0 cq_usage team-a h200 nvidia.com/gpu.shared

kill "$WATCH_PID" 2>/dev/null
if ! python3 "$E2E_DIR/slicecheck.py" "$TMP/watch1" "$TMP/watch2" >"$TMP/check"; then
    fail "slice history: $(cat "$TMP/check")"
fi
cat "$TMP/check"
stop_fatiad
finish

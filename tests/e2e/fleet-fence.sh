#!/bin/bash
# tests/e2e/fleet-fence.sh: the fence of a deposed leader. Two control replicas on one etcd
# prefix elect a leader (--leader-elect, lease 3 s); both run with
# FATIA_TEST_LEADER_NO_STEPDOWN=1, so a leader that loses the Lease keeps its controllers
# running (what client-go warns can happen: a paused process, work in flight). The leader is
# stopped (SIGSTOP) until the other has taken the Lease over, 20 Jobs are created, and the old
# leader resumes (SIGCONT) with its controllers, which see the Jobs:
#   - every write of theirs is refused (its log counts them: "fence: a controller write
#     refused"), by its cache's Lease or, before its cache has seen the takeover, by the etcd
#     transaction's compare of the Lease's mod_revision;
#   - every Job completes exactly once (succeeded 1, one pod each), no slice is held twice
#     (slicecheck.py over the new leader's pod watch).
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fleet.bash"
find_kubectl
need_python3
export HOME=$TMP/home
mkdir -p "$HOME"
N=${FLEET_JOBS:-20}
export FATIA_TEST_LEADER_NO_STEPDOWN=1

start_etcd fleet || finish
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; etcd_cleanup; rm -rf "$TMP"' EXIT

start_pair
eval "LPID=\$${LEADER}_PID FURL=\$${FOLLOWER}_URL K=\$${FOLLOWER}_K"
FTOKEN=$(awk '$2 == "admin" {print $1; exit}' "$TMP/$FOLLOWER/tokens")
FCA=$TMP/$FOLLOWER/tls.crt
curl -s -N --cacert "$FCA" -H "Authorization: Bearer $FTOKEN" \
    "$FURL/api/v1/pods?watch=1&resourceVersion=0" >"$TMP/pods.watch" &
PIDS+=($!)
python3 "$E2E_DIR/fakeagent.py" "$FURL" "$FTOKEN" "$FCA" 300 >"$TMP/agent.log" 2>&1 &
PIDS+=($!)

# ---- the leader paused past its lease; the other takes over ----
kill -STOP "$LPID"
took_over() { h2=$(holder) && [ -n "$h2" ] && [ "$h2" != "$h" ]; }
wait_until 10 took_over
for i in $(seq "$N"); do
    "$E2E_DIR/mkjob" team-a "fence-$i" notebook-shared "" "true"
    echo ---
done >"$TMP/jobs.yaml"
$K apply -f "$TMP/jobs.yaml" >/dev/null || fail "creating the jobs"
sleep 1
kill -CONT "$LPID"

# ---- every Job completes once; the deposed leader's controllers were refused ----
complete() {
    [ "$($K get jobs -n team-a -o jsonpath='{range .items[*]}{.status.succeeded}{"\n"}{end}' |
        grep -c '^1$')" -ge "$N" ]
}
wait_until 120 complete
sleep 2 # the deposed leader's controllers have seen everything by now
kill -0 "$LPID" || fail "the deposed leader exited (the test hook keeps it running)"
grep -q "FATIA_TEST_LEADER_NO_STEPDOWN" "$TMP/$LEADER.log" || fail "the old leader never saw its loss"
grep "fence: a controller write refused" "$TMP/$LEADER.log" | head -2
grep -q "fence: a controller write refused" "$TMP/$LEADER.log" ||
    fail "the deposed leader's controllers wrote nothing that was refused (did they run?)"
$K get jobs -n team-a -o json >"$TMP/jobs.json"
$K get pods -n team-a -o json >"$TMP/pods.json"
python3 "$E2E_DIR/jobsonce.py" "$TMP/jobs.json" "$TMP/pods.json" "$N" fence || fail "a Job did not complete exactly once"
python3 "$E2E_DIR/slicecheck.py" "$TMP/pods.watch" || fail "a slice was held twice"
finish

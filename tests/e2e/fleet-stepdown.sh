#!/bin/bash
# tests/e2e/fleet-stepdown.sh: a leader that loses the Lease steps down and its API goes on
# (controller/leader.c, daemon/main.c). Two control replicas on one etcd prefix (--leader-elect,
# lease 3 s, renew deadline 2 s). The leader is stopped (SIGSTOP) until the other has taken the
# Lease over, then resumed:
#   - it is still running, says it stepped down, and its controllers are gone (freed with their
#     client: nothing of theirs is refused by the fence, unlike e2e_fleet-fence's, which go on);
#   - its API serves: 8 Jobs created through it complete, run by the new leader's controllers,
#     and the node agent (fakeagent.py) plays the node through it;
#   - kill -9 of the new leader: the stepped-down replica campaigns, takes the Lease back, and
#     fresh controllers of its own run 8 more Jobs;
#   - every Job completes exactly once, no slice is held twice (slicecheck.py over its pod
#     watch, which saw every pod from the first Job on).
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fleet.bash"
find_kubectl
need_python3
export HOME=$TMP/home
mkdir -p "$HOME"
N=${FLEET_JOBS:-8}

start_etcd fleet || finish
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done; etcd_cleanup; rm -rf "$TMP"' EXIT

start_pair
eval "LPID=\$${LEADER}_PID LURL=\$${LEADER}_URL LK=\$${LEADER}_K FPID=\$${FOLLOWER}_PID FK=\$${FOLLOWER}_K"
echo "leader: $LEADER ($h)"

# ---- the leader paused past its lease; the other takes over; the old one steps down ----
kill -STOP "$LPID"
took_over() { h2=$(holder) && [ -n "$h2" ] && [ "$h2" != "$h" ]; }
K=$FK wait_until 10 took_over || fail "the follower did not take the Lease over"
kill -CONT "$LPID"
wait_until 10 grep -q "stepped down" "$TMP/$LEADER.log" ||
    fail "the old leader does not say it stepped down: $(grep -i leader "$TMP/$LEADER.log" | tail -3)"
sleep 1
kill -0 "$LPID" || fail "the old leader exited after losing the Lease"
grep -q "fence: a controller write refused" "$TMP/$LEADER.log" &&
    fail "the stepped-down leader's controllers still wrote: $(grep fence "$TMP/$LEADER.log" | head -2)"

# ---- its API goes on: the node agent and the Jobs go through it ----
LTOKEN=$(awk '$2 == "admin" {print $1; exit}' "$TMP/$LEADER/tokens")
LCA=$TMP/$LEADER/tls.crt
curl -s -N --cacert "$LCA" -H "Authorization: Bearer $LTOKEN" \
    "$LURL/api/v1/pods?watch=1&resourceVersion=0" >"$TMP/pods.watch" &
PIDS+=($!)
python3 "$E2E_DIR/fakeagent.py" "$LURL" "$LTOKEN" "$LCA" 300 >"$TMP/agent.log" 2>&1 &
PIDS+=($!)
jobs_yaml() { # PREFIX
    for i in $(seq "$N"); do
        "$E2E_DIR/mkjob" team-a "$1-$i" notebook-shared "" "true"
        echo ---
    done
}
complete() { # PREFIX
    [ "$($LK get jobs -n team-a -o json | python3 -c 'import json,sys
print(sum(1 for j in json.load(sys.stdin)["items"] if j["metadata"]["name"].startswith(sys.argv[1] + "-") and j.get("status", {}).get("succeeded") == 1))' "$1")" -ge "$N" ]
}
jobs_yaml down | $LK apply -f - >/dev/null || fail "creating Jobs through the stepped-down replica"
wait_until 60 complete down || fail "the Jobs created through the stepped-down replica did not complete"
[ "$(K=$LK holder)" = "$h2" ] || fail "the Lease moved: $(K=$LK holder), not $h2"

# ---- kill -9 of the new leader: the stepped-down replica leads again, with fresh controllers ----
kill -9 "$FPID"
back() { [ "$(K=$LK holder)" = "$h" ]; }
wait_until 15 back || fail "the stepped-down replica did not take the Lease back: $(K=$LK holder)"
[ "$(grep -c "leads (lease" "$TMP/$LEADER.log")" = 2 ] ||
    fail "the replica does not say it leads a second time: $(grep -i lead "$TMP/$LEADER.log" | tail -4)"
jobs_yaml back | $LK apply -f - >/dev/null || fail "creating Jobs after the takeback"
wait_until 60 complete back || fail "the Jobs after the takeback did not complete"

# ---- every Job once; no slice twice ----
$LK get jobs -n team-a -o json >"$TMP/jobs.json"
$LK get pods -n team-a -o json >"$TMP/pods.json"
python3 "$E2E_DIR/jobsonce.py" "$TMP/jobs.json" "$TMP/pods.json" "$((2 * N))" down back || fail "a Job did not complete exactly once"
python3 "$E2E_DIR/slicecheck.py" "$TMP/pods.watch" || fail "a slice was held twice"
grep -E "AddressSanitizer|runtime error" "$TMP/$LEADER.log" && fail "the sanitizer reported an error"
finish

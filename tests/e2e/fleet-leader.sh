#!/bin/bash
# tests/e2e/fleet-leader.sh: two fatiad control replicas on one three-member etcd (on loopback,
# one prefix, --etcd-replica) elect the controllers' leader with a Lease (--leader-elect, short
# timings: lease 5 s, renew deadline 4 s, retry 0.5 s); during a soak of 40 Jobs the leader is
# killed with kill -9, and so is the etcd member the replicas talk to first (their writes and
# their watch streams go on on the other two):
#   - exactly one replica holds kube-system/fatia-controller-manager, and only its controllers
#     act (the other logs no "leads");
#   - a ServiceAccount token made by the leader (`kubectl create token`) authenticates on the
#     other replica (--service-account-signing-key-file: one key for both);
#   - after the kill the other takes the Lease over within 12 s (lease 5 s + retry 0.5 s, plus
#     etcd's own recovery from the member's loss and the clients' failover), with
#     leaseTransitions counted;
#   - every Job completes, exactly once: succeeded 1 and one pod per Job;
#   - no GPU slice is ever held by two pods (slicecheck.py over the survivor's pod watch, which
#     saw every pod from the start).
# The node agent's part is played by fakeagent.py (bound pods become Running, then Succeeded)
# against the surviving replica.
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fleet.bash"
find_kubectl
need_python3
export HOME=$TMP/home
mkdir -p "$HOME"
N=${FLEET_JOBS:-40}
# The renew deadline must outlast etcd's recovery from the loss of the member the survivor
# writes to first: with 2 s the survivor, having just taken the Lease over, missed it in CI
# ("lost the lease ... not renewed within the renew deadline"; fatiad then exited, as
# kube-controller-manager does, and now steps down) and the second batch of Jobs got EOF.
export FLEET_LEASE=5s FLEET_RENEW=4s

start_etcd fleet 3 || finish
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; etcd_cleanup; rm -rf "$TMP"' EXIT

start_pair
echo "leader: $LEADER ($h)"
eval "LPID=\$${LEADER}_PID FURL=\$${FOLLOWER}_URL K=\$${FOLLOWER}_K"
grep -q "leads (lease" "$TMP/$FOLLOWER.log" && fail "both replicas say they lead"
transitions0=$($K get lease -n kube-system fatia-controller-manager -o jsonpath='{.spec.leaseTransitions}')

# the survivor's view: every pod event from now on, and the agent's part
FTOKEN=$(awk '$2 == "admin" {print $1; exit}' "$TMP/$FOLLOWER/tokens")
FCA=$TMP/$FOLLOWER/tls.crt
# a ServiceAccount token made by one replica is a token for the other (one signing key)
eval "LK=\$${LEADER}_K"
wait_until 20 $LK get serviceaccount default -n team-a -o name
SAT=$($LK create token default -n team-a) || fail "kubectl create token on the leader"
code=$(curl -s -o "$TMP/sa.out" -w '%{http_code}' --cacert "$FCA" -H "Authorization: Bearer $SAT" \
    "$FURL/api/v1/namespaces/team-a/pods")
[ "$code" = 200 ] || [ "$code" = 403 ] ||
    fail "the leader's ServiceAccount token on the other replica: $code, want 200 or 403 (not 401)"
grep -q 'system:serviceaccount:team-a:default' "$TMP/sa.out" || [ "$code" = 200 ] ||
    fail "the other replica does not know the token's user: $(cat "$TMP/sa.out")"
curl -s -N --cacert "$FCA" -H "Authorization: Bearer $FTOKEN" \
    "$FURL/api/v1/pods?watch=1&resourceVersion=0" >"$TMP/pods.watch" &
PIDS+=($!)
python3 "$E2E_DIR/fakeagent.py" "$FURL" "$FTOKEN" "$FCA" 300 >"$TMP/agent.log" 2>&1 &
PIDS+=($!)

# ---- the soak: N Jobs, the leader killed a third of the way in ----
for i in $(seq "$N"); do
    "$E2E_DIR/mkjob" team-a "soak-$i" notebook-shared "" "true" >>"$TMP/jobs.yaml"
    echo --- >>"$TMP/jobs.yaml"
done
python3 - "$TMP/jobs.yaml" "$TMP" "$N" <<'PY'
import sys
docs = [d for d in open(sys.argv[1]).read().split("---\n") if d.strip()]
third = len(docs) // 3
open(sys.argv[2] + "/jobs1.yaml", "w").write("---\n".join(docs[:third]))
open(sys.argv[2] + "/jobs2.yaml", "w").write("---\n".join(docs[third:]))
PY
$K apply -f "$TMP/jobs1.yaml" >/dev/null || fail "creating the first jobs"
sleep 1
kill -9 "$LPID"
t0=$(date +%s.%N)
kill -9 "$ETCD_PID_fleet_1" # the first endpoint of both replicas
$K apply -f "$TMP/jobs2.yaml" >/dev/null || { fail "creating the jobs after the kill"; tail -25 "$TMP/$FOLLOWER.log"; }
took_over() { h2=$(holder) && [ -n "$h2" ] && [ "$h2" != "$h" ]; }
wait_until 20 took_over
t1=$(date +%s.%N)
handover=$(python3 -c "print(round($t1 - $t0, 1))")
echo "handover: $handover s after kill -9 of the leader (lease 5 s, retry 0.5 s)"
python3 -c "import sys; sys.exit(0 if $handover <= 12 else 1)" || fail "handover took $handover s"
grep -q "leads (lease" "$TMP/$FOLLOWER.log" || fail "the survivor does not say it leads"
transitions1=$($K get lease -n kube-system fatia-controller-manager -o jsonpath='{.spec.leaseTransitions}')
[ "$transitions1" -gt "$transitions0" ] || fail "leaseTransitions $transitions0 -> $transitions1"

# ---- every Job completes, exactly once ----
complete() {
    [ "$($K get jobs -n team-a -o jsonpath='{range .items[*]}{.status.succeeded}{"\n"}{end}' |
        grep -c '^1$')" -ge "$N" ]
}
wait_until 120 complete
$K get jobs -n team-a -o json >"$TMP/jobs.json"
$K get pods -n team-a -o json >"$TMP/pods.json"
python3 "$E2E_DIR/jobsonce.py" "$TMP/jobs.json" "$TMP/pods.json" "$N" soak || fail "a Job did not complete exactly once"
sleep 0.5
python3 "$E2E_DIR/slicecheck.py" "$TMP/pods.watch" || fail "a slice was held twice"
finish

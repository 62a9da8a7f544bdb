#!/bin/bash
# tests/e2e/starve.sh: no tenant starves fatiad (issue 15, "No tenant starves fatiad"). A tenant
# of team-a, with nothing but its namespace token, un-suspends its own queued over-quota Job again
# and again: each time pods are created and bound, then deleted when Kueue suspends the Job, so the
# agent's finalizer patch fails under it (422: the pod is being deleted) and the queues' status
# changes. While that runs for ATTACK_SECS:
#   - every /healthz probe answers 200 within 2 s;
#   - the writes stay bounded: ClusterQueue team-a's status is written fewer than 20 times (counted
#     on a watch of it; before the fix it flipped fairSharing.weightedShare between 500 and 0, 400-630
#     times a second, 50 under the work queue's per-key rate limit), and the log stays small
#     (retries back off, failure lines are rate-limited);
#   - then SIGTERM stops fatiad within its grace period (10 s) plus 2 s, exit status 0.
# bench/healthz.sh measures the probes' p99 under the same attack.
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
chmod 711 "$TMP"
export FATIAD_CONTROLLERS=1
ATTACK_SECS=${ATTACK_SECS:-10}
PROBE_GAP=${PROBE_GAP:-0.1} # bench/healthz.sh probes more often and keeps the times (PROBES_OUT)
# every pod process the test's fatiad started, by its process group (the shims' status files)
stop_pods() {
    local f pg sh
    for f in "$TMP"/data/agent/status/*.json; do
        [ -f "$f" ] || continue
        pg=$(grep -o '"pgid":[0-9]*' "$f" | head -1 | cut -d: -f2)
        sh=$(grep -o '"shim":{"pid":[0-9]*' "$f" | head -1 | grep -o '[0-9]*$')
        [ -n "$pg" ] && [ "$pg" -gt 1 ] && kill -9 -- "-$pg" 2>/dev/null
        [ -n "$sh" ] && [ "$sh" -gt 1 ] && kill -9 "$sh" 2>/dev/null
    done
    return 0
}
CQWATCH=
trap 'stop_pods; [ -n "$CQWATCH" ] && kill "$CQWATCH" 2>/dev/null; if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi; rm -rf "$TMP"' EXIT

e2e_start || { finish; exit 1; }
"$FATIA" token create --user mallory --namespace team-a --data-dir "$TMP/data" >"$TMP/tenant.kubeconfig" ||
    fail "cannot make a tenant token"
T="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $TMP/tenant.kubeconfig"

# two Jobs take team-a's quota and team-b's idle quota (2 + 2 GPUs); the third one waits
for j in 1 2 3; do
    sed "s/train-a1/jq$j/; s/value: \"300\"/value: \"600\"/" examples/jobs/10-team-a-train.yaml |
        $T create -f - >/dev/null || fail "tenant cannot create job jq$j"
done
wait_until 20 has_bound_pod team-a jq1
wait_until 20 has_bound_pod team-a jq2
[ "$(jp job jq3 -n team-a -o jsonpath='{.spec.suspend}')" = true ] || fail "jq3 is not suspended"
sleep 1
lines0=$(wc -l <"$TMP/data.log")
cqrv0=$(jp cq team-a -o jsonpath='{.metadata.resourceVersion}')
# every write of ClusterQueue team-a from here on, as its watch events (JSON lines)
curl -sN --cacert "$CA" -H "Authorization: Bearer $TOKEN" \
    "$URL/apis/kueue.x-k8s.io/v1beta2/clusterqueues?watch=1&fieldSelector=metadata.name%3Dteam-a&resourceVersion=$cqrv0" \
    >"$TMP/cq-watch" 2>/dev/null &
CQWATCH=$!

# the attack: un-suspend jq3 in a loop
(
    end=$((SECONDS + ATTACK_SECS))
    while [ $SECONDS -lt $end ]; do
        $T patch job jq3 -n team-a --type merge -p '{"spec":{"suspend":false}}' >>"$TMP/attack.log" 2>&1
        sleep 0.05
    done
) &
ATTACK=$!
# one ClusterQueue event that changes nothing the engine uses (the tenant's un-suspend is refused
# now, so the attack alone no longer moves team-a's queue): before the fix this alone started the
# status loop (23 writes of weightedShare 0, 24 of 500 in 10 s)
$K label cq team-a touched=yes >/dev/null || fail "cannot label ClusterQueue team-a"
# the probes: one every PROBE_GAP, each must answer 200 within 2 s
: >"$TMP/probes"
end=$((SECONDS + ATTACK_SECS))
while [ $SECONDS -lt $end ]; do
    curl -s -o /dev/null -m 2 -w '%{http_code} %{time_total}\n' --cacert "$CA" "$URL/healthz" \
        >>"$TMP/probes" || echo "timeout" >>"$TMP/probes"
    sleep "$PROBE_GAP"
done
wait "$ATTACK"
sort "$TMP/attack.log" | uniq -c | sort -rn | head -3
n=$(wc -l <"$TMP/probes")
bad=$(awk '$1 != 200 || $2 >= 2' "$TMP/probes" | wc -l)
[ "$n" -ge 20 ] || fail "only $n probes in ${ATTACK_SECS}s"
[ "$bad" = 0 ] || fail "$bad of $n /healthz probes failed or took 2 s or more: $(awk '$1 != 200 || $2 >= 2' "$TMP/probes" | head -3 | tr '\n' ' ')"
max=$(awk 'BEGIN {m = 0} $2 > m {m = $2} END {print m}' "$TMP/probes")
echo "probes: $n, slowest ${max}s"
[ -n "${PROBES_OUT:-}" ] && cp "$TMP/probes" "$PROBES_OUT"

cqrv1=$(jp cq team-a -o jsonpath='{.metadata.resourceVersion}')
# resourceVersions are global: the queue's last write is at least this many writes after rv0
writes=$((cqrv1 - cqrv0))
lines=$(($(wc -l <"$TMP/data.log") - lines0))
echo "writes during the attack: at least $writes; log lines: $lines"
[ "$writes" -lt $((ATTACK_SECS * 300)) ] || fail "$writes writes in ${ATTACK_SECS}s: something writes in a loop"
# ClusterQueue team-a's status is written when it really changes: a few times while the attack
# moves pods (pendingWorkloads, conditions), never in a loop (before the fix its echo dirtied the
# engine's tree, the next status said weightedShare 0, the cycle after it 500: ~50 writes a second
# under the work queue's rate limit, 400-630 without it)
sleep 1
kill "$CQWATCH" 2>/dev/null
wait "$CQWATCH" 2>/dev/null
cqwrites=$(python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    try:
        ev = json.loads(line)
    except ValueError:
        continue
    o = ev.get("object", {})
    if ev.get("type") == "MODIFIED" and o.get("metadata", {}).get("name") == "team-a" and \
            int(o["metadata"]["resourceVersion"]) <= int(sys.argv[2]):
        n += 1
print(n)' "$TMP/cq-watch" "$cqrv1")
shares=$(grep -o '"weightedShare":[0-9]*' "$TMP/cq-watch" | sort | uniq -c | tr '\n' ' ')
echo "ClusterQueue team-a writes during the attack (the label included): $cqwrites (weightedShare: $shares)"
[ "$cqwrites" -lt 20 ] || fail "ClusterQueue team-a's status written $cqwrites times in ${ATTACK_SECS}s (weightedShare: $shares)"
[ "$lines" -lt $((ATTACK_SECS * 100)) ] || {
    fail "$lines log lines in ${ATTACK_SECS}s"
    sort "$TMP/data.log" | cut -c29-120 | uniq -c | sort -rn | head -5 >&2
}
grep -q "cannot add the finalizer (failure [0-9]*, next try in" "$TMP/data.log" &&
    ! grep -q "cannot add the finalizer: " "$TMP/data.log" ||
    echo "note: no finalizer patch failed under the attack this time"

# SIGTERM stops fatiad within its grace period, with pods running
t0=$(date +%s%N)
kill -TERM "$FATIAD_PID"
for _ in $(seq 120); do
    kill -0 "$FATIAD_PID" 2>/dev/null || break
    sleep 0.1
done
if kill -0 "$FATIAD_PID" 2>/dev/null; then
    fail "fatiad still runs 12 s after SIGTERM"
else
    wait "$FATIAD_PID"
    rc=$?
    [ "$rc" = 0 ] || fail "fatiad exited $rc after SIGTERM"
    FATIAD_PID=
    echo "stopped $((($(date +%s%N) - t0) / 1000000)) ms after SIGTERM"
fi
finish

#!/bin/bash
# tests/e2e/starve.sh: no tenant starves fatiad (issue 15, "No tenant starves fatiad"). A tenant
# of team-a, with nothing but its namespace token, un-suspends its own queued over-quota Job again
# and again: each time pods are created and bound, then deleted when Kueue suspends the Job, so the
# agent's finalizer patch fails under it (422: the pod is being deleted) and the queues' status
# changes. While that runs for ATTACK_SECS:
#   - every /healthz probe answers 200 within 2 s;
#   - the writes stay bounded: the ClusterQueue's status is not rewritten in a loop (before the
#     fix it flipped fairSharing.weightedShare between two values ~1,000 times a second), and the
#     log stays small (retries back off, failure lines are rate-limited);
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
trap 'stop_pods; if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi; rm -rf "$TMP"' EXIT

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

# the attack: un-suspend jq3 in a loop
(
    end=$((SECONDS + ATTACK_SECS))
    while [ $SECONDS -lt $end ]; do
        $T patch job jq3 -n team-a --type merge -p '{"spec":{"suspend":false}}' >>"$TMP/attack.log" 2>&1
        sleep 0.05
    done
) &
ATTACK=$!
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

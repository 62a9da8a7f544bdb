#!/usr/bin/env bash
# tests/cli/agent-soak-slow.sh (slow tier): 600 short pods bound by hand while fatiad is killed
# with -9 every couple of seconds and started again. Every pod must end in the phase its exit
# code gives, with that exit code, having run exactly once, and nothing may be left behind.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
agent_setup
trap 'agent_cleanup; if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi; rm -rf "$TMP"' EXIT

N=${AGENT_SOAK_PODS:-600}
BATCH=50
D=$TMP/d
ARGS=(--no-controllers)
mkdir -p "$SHARED/starts"
chmod 1777 "$SHARED/starts"
start_fatiad "$D" "${ARGS[@]}" || exit 1

batch() {
    local from=$1 to=$2 i
    for ((i = from; i < to; i++)); do
        cat <<EOF
---
apiVersion: v1
kind: Pod
metadata: {name: p$i}
spec:
  nodeName: node-0
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    command: ["sh", "-c", "echo \$\$\$\$ >> $SHARED/starts/p$i; sleep 0.$((i % 7)); exit $((i % 3))"]
EOF
    done
}

kills=0
for ((b = 0; b < N; b += BATCH)); do
    batch "$b" $((b + BATCH)) >"$TMP/batch.yaml"
    k create -f "$TMP/batch.yaml" >/dev/null || fail "cannot create pods $b.."
    sleep 0.$((RANDOM % 9))
    kill -9 "$FATIAD_PID"
    wait "$FATIAD_PID" 2>/dev/null
    FATIAD_PID=
    kills=$((kills + 1))
    sleep 0.$((RANDOM % 9))
    start_fatiad "$D" "${ARGS[@]}" || exit 1
done

all_done() {
    [ "$(k get pods -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' |
        grep -cE '^(Succeeded|Failed)$')" = "$N" ]
}
wait_for 300 all_done
k get pods -o jsonpath='{range .items[*]}{.metadata.name} {.status.phase} {.status.containerStatuses[0].state.terminated.exitCode}{"\n"}{end}' >"$TMP/final"
bad=0
for ((i = 0; i < N; i++)); do
    want=$((i % 3))
    phase=Failed
    [ "$want" = 0 ] && phase=Succeeded
    if ! grep -qx "p$i $phase $want" "$TMP/final"; then
        bad=$((bad + 1))
        [ "$bad" -le 5 ] && fail "p$i: $(grep "^p$i " "$TMP/final"), want $phase $want"
    fi
    runs=$(wc -l <"$SHARED/starts/p$i" 2>/dev/null || echo 0)
    if [ "$runs" != 1 ]; then
        bad=$((bad + 1))
        [ "$bad" -le 5 ] && fail "p$i ran $runs times"
    fi
done
echo "pods: $N, kill -9 of fatiad: $kills, pods wrong: $bad"

k delete pods --all >/dev/null || fail "delete"
for d in pods status logs run; do
    [ -z "$(ls "$D/agent/$d")" ] || fail "agent/$d not empty: $(ls "$D/agent/$d" | head -3)"
done
stop_fatiad
finish

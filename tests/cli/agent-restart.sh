#!/usr/bin/env bash
# tests/cli/agent-restart.sh: kill -9 fatiad while pods run. After the restart every running
# process is found again (same pid, never started twice), a container that exited while fatiad
# was down has its true exit code, one that restarted meanwhile has its restart counted, a pod
# created just before the kill runs exactly once, deletion still stops the pods, and a killed
# supervisor (fatia-shim) is noticed: its pod fails and its processes are stopped.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
agent_setup
trap 'agent_cleanup; if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi; rm -rf "$TMP"' EXIT

D=$TMP/d
ARGS=(--no-controllers --agent restart-backoff=100ms --agent restart-backoff-max=300ms) # pods bound by hand
start_fatiad "$D" "${ARGS[@]}" || exit 1

bound_pod long "" "  terminationGracePeriodSeconds: 2" <<EOF
  - name: main
    command: ["sh", "-c", "echo start >> $SHARED/long.starts; echo \$\$\$\$ > $SHARED/long.pid; exec sleep 60"]
EOF
bound_pod exits "" "  restartPolicy: Never" <<EOF
  - name: main
    command: ["sh", "-c", "echo up; sleep 3; echo bye; exit 7"]
EOF
bound_pod flaky "" "  restartPolicy: OnFailure" <<EOF
  - name: main
    command: ["sh", "-c", "echo start >> $SHARED/flaky.starts; sleep 2; [ \$(wc -l < $SHARED/flaky.starts) -ge 2 ]"]
EOF
wait_for 30 phase_is long Running
# (long enough lives that a loaded machine still sees them Running before the kill)
wait_for 30 phase_is exits Running
wait_for 30 phase_is flaky Running
wait_for 5 test -s "$SHARED/long.pid"
LONG_PID=$(cat "$SHARED/long.pid")

# a pod created just before the kill: wherever the kill lands, it runs exactly once
bound_pod race "" "  restartPolicy: Never" <<EOF
  - name: main
    command: ["sh", "-c", "echo start >> $SHARED/race.starts; sleep 0.5"]
EOF
kill -9 "$FATIAD_PID"
wait "$FATIAD_PID" 2>/dev/null
FATIAD_PID=
sleep 4.5 # exits ends with 7 and flaky restarts while no fatiad runs

kill -0 "$LONG_PID" || fail "long: the process died with fatiad"
start_fatiad "$D" "${ARGS[@]}" || exit 1
wait_for 10 grep -q "agent: found" "$D.log" # logged once the agent has read its pods
wait_for 30 phase_is exits Failed
[ "$(jp exits '.status.containerStatuses[0].state.terminated.exitCode')" = 7 ] ||
    fail "exits: exit code $(jp exits '.status.containerStatuses[0].state.terminated.exitCode')"
expect_rc 0 k logs exits
[ "$(cat "$TMP/out")" = "up
bye" ] || fail "exits: logs: $(cat "$TMP/out")"
wait_for 30 phase_is flaky Succeeded
[ "$(jp flaky '.status.containerStatuses[0].restartCount')" = 1 ] ||
    fail "flaky: restartCount $(jp flaky '.status.containerStatuses[0].restartCount')"
wait_for 10 phase_is race Succeeded
wait_for 5 test -s "$SHARED/race.starts"
[ "$(wc -l <"$SHARED/race.starts")" = 1 ] || fail "race: started $(wc -l <"$SHARED/race.starts") times"
phase_is long Running || fail "long: phase $(jp long .status.phase)"
[ "$(cat "$SHARED/long.pid")" = "$LONG_PID" ] || fail "long: another process now"
[ "$(wc -l <"$SHARED/long.starts")" = 1 ] || fail "long: started $(wc -l <"$SHARED/long.starts") times"
[ "$(jp long '.status.containerStatuses[0].restartCount')" = 0 ] || fail "long: restarted"

# a second kill, this time with a clean restart in between: still one instance
stop_fatiad
start_fatiad "$D" "${ARGS[@]}" || exit 1
sleep 0.5
[ "$(wc -l <"$SHARED/long.starts")" = 1 ] || fail "long: started again after a clean restart"

# deletion after the restart stops the adopted process and releases the finalizer
expect_rc 0 k delete pod long
kill -0 "$LONG_PID" 2>/dev/null && fail "long: still runs after deletion"

# a supervisor killed with -9: the agent notices, stops the pod's processes, fails the pod
bound_pod victim "" "  restartPolicy: Always" <<EOF
  - name: main
    command: ["sh", "-c", "echo \$\$\$\$ > $SHARED/victim.pid; exec sleep 60"]
EOF
wait_for 10 phase_is victim Running
wait_for 5 test -s "$SHARED/victim.pid"
VUID=$(jp victim .metadata.uid)
SHIM=$(grep -o '"shim":{"pid":[0-9]*' "$D/agent/status/$VUID.json" | grep -o '[0-9]*$')
[ -n "$SHIM" ] || fail "victim: no shim pid"
kill -9 "$SHIM"
wait_for 10 phase_is victim Failed
[ "$(jp victim .status.reason)" = SupervisorLost ] || fail "victim: reason $(jp victim .status.reason)"
[ "$(jp victim '.status.containerStatuses[0].state.terminated.reason')" = ContainerStatusUnknown ] ||
    fail "victim: container state $(jp victim '.status.containerStatuses[0].state')"
wait_for 5 bash -c "! kill -0 $(cat "$SHARED/victim.pid") 2>/dev/null"

expect_rc 0 k delete pod --all
for d in pods status logs run; do
    [ -z "$(ls "$D/agent/$d")" ] || fail "agent/$d not empty: $(ls "$D/agent/$d")"
done
stop_fatiad
finish

#!/usr/bin/env bash
# tests/cli/agent-shim-orphan.sh: a pod's supervisor (fatia-shim) and its sandbox (fatia-pause)
# end with the pod's directory (src/agent/shim_dirwatch.c), and only then; the process runtime
# (containers-shim-orphan.sh: the OCI runtime and its CNI lease). fatiad runs a pod whose
# container leaves a child behind; fatiad is SIGKILLed and started again on the same data
# directory: the shim, the pause and the container live on and are found again. Then fatiad is
# SIGKILLed and its data directory removed, as the tests' cleanup does: the shim stops the pod
# and exits within a few seconds, with its pause, container and the child.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
agent_setup
D=$TMP/d
trap 'agent_cleanup; if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi
      for p in $(pgrep -f "fatia-shim $D/"); do kill -9 "$p"; done; rm -rf "$TMP"' EXIT

start_fatiad "$D" || exit 1
bound_pod orphan "" "  terminationGracePeriodSeconds: 30" <<EOF2
  - name: main
    command: ["sh", "-c", "sleep 600 & echo \$\$! > $SHARED/child.pid; echo \$\$\$\$ > $SHARED/main.pid; exec sleep 600"]
EOF2
wait_for 30 phase_is orphan Running
wait_for 5 test -s "$SHARED/main.pid"
wait_for 5 test -s "$SHARED/child.pid"
POD_UID=$(jp orphan .metadata.uid)
ST=$D/agent/status/$POD_UID.json
SHIM=$(grep -o '"shim":{"pid":[0-9]*' "$ST" | grep -o '[0-9]*$')
PAUSE=$(grep -o '"pgid":[0-9]*' "$ST" | cut -d: -f2)
MAIN=$(cat "$SHARED/main.pid")
CHILD=$(cat "$SHARED/child.pid")
PROCS="$SHIM $PAUSE $MAIN $CHILD"
for p in $PROCS; do [ "$p" -gt 1 ] || fail "no pid for the pod's processes: '$PROCS'"; done
case $(ps -o args= -p "$PAUSE") in
*/fatia-shim" $D/agent/pods/$POD_UID") ;;
*) fail "pause $PAUSE is not 'fatia-shim POD_DIR': $(ps -o args= -p "$PAUSE")" ;;
esac
# running: a process that exited is a zombie until this host's init (their parent once fatiad is
# gone) reaps it, which may take seconds here
alive() { [ -r "/proc/$1/stat" ] && [ "$(sed 's/.*) //' "/proc/$1/stat" | cut -c1)" != Z ]; }
all_alive() { for p in $PROCS; do alive "$p" || return 1; done; }
none_alive() { for p in $PROCS; do alive "$p" && return 1; done; return 0; }
all_alive || fail "the pod's processes are not all running: $PROCS"

# ---- fatiad SIGKILLed and started again: the shim is no orphan, it is adopted ----
kill -9 "$FATIAD_PID"
wait "$FATIAD_PID" 2>/dev/null
FATIAD_PID=
sleep 3 # longer than the shim needs to notice anything (test_shim: under 2 s)
all_alive || fail "the pod's processes did not survive fatiad's SIGKILL"
start_fatiad "$D" || exit 1
wait_for 10 grep -q "agent: found" "$D.log"
phase_is orphan Running || fail "after the restart: phase $(jp orphan .status.phase)"
grep -q "\"shim\":{\"pid\":$SHIM," "$ST" || fail "another shim runs the pod after the restart"
all_alive || fail "the pod's processes did not survive fatiad's restart"

# ---- fatiad SIGKILLed, its data directory removed: the pod ends with it ----
kill -9 "$FATIAD_PID"
wait "$FATIAD_PID" 2>/dev/null
FATIAD_PID=
all_alive || fail "the pod's processes did not survive fatiad's second SIGKILL"
t0=$(date +%s%N)
rm -rf "$D"
echo "rm -rf of the data directory took $((($(date +%s%N) - t0) / 1000000)) ms"
if wait_for 5 none_alive; then
    echo "shim, pause and container gone $((($(date +%s%N) - t0) / 1000000)) ms after rm -rf of the data directory"
else
    fail "still alive 5 s after the data directory's removal: $(ps -o pid=,args= -p "${PROCS// /,}")"
fi
pgrep -f "fatia-shim $D/" && fail "a fatia-shim of the removed data directory runs"
[ -e "$D" ] && fail "the data directory came back: $(find "$D" | head)"
finish

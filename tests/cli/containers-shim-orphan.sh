#!/usr/bin/env bash
# tests/cli/containers-shim-orphan.sh: the OCI runtime's side of agent-shim-orphan.sh. A pod runs
# in a runc container with a CNI address on a network index K of this test only; fatiad is
# SIGKILLed and started again: the shim, its pause and the container live on and keep the lease.
# Then fatiad is SIGKILLed and its data directory removed as the tests' cleanup does (mounts
# lazily unmounted first, so that rm -rf can remove them; runc's state goes with the directory):
# within a few seconds the shim stops the container, gives the lease back (CNI DEL while the
# network namespace exists), kills its pause and exits, and nothing recreates the directory.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || skip "containers need root"
need_tools runc umoci skopeo busybox ip iptables
need_cni
agent_setup
LEASES=/var/lib/cni/networks
K=$((2000 + ($$ + 1777) % 4000))
while ls "$LEASES/fatia-$K" 2>/dev/null | grep -q '^10\.'; do K=$((K + 1)); done
NET=10.$((K / 256)).$((K % 256))
BR=fbr$K
D=$TMP/d
cleanup() {
    agent_cleanup
    [ -n "$FATIAD_PID" ] && kill -9 "$FATIAD_PID" 2>/dev/null
    for p in $(pgrep -f "fatia-shim $D/"); do kill -9 "$p"; done
    for c in $(runc --root "$D/agent/runc" list -q 2>/dev/null); do
        runc --root "$D/agent/runc" delete --force "$c" 2>/dev/null
    done
    grep -o " $TMP[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
    [ -n "${POD_UID:-}" ] && rm -f "/run/fatia-cni/$POD_UID"
    rm -f "$LEASES/fatia-$K"/10.*
    rm -rf "$LEASES/fatia-$K"
    ip link del "$BR" 2>/dev/null
    iptables -w -D FATIA-ISOLATE -i "$BR" -o "$BR" -j RETURN 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

"$SRC/scripts/images/busybox" "$TMP/busybox.tar" || { fail "cannot build the image"; finish; }
IMG=fatia.dev/busybox:1
expect_rc 0 "$FATIA" image load -d "$D" --name $IMG "$TMP/busybox.tar"
echo "default $K" >"$D/agent/uidranges"
lease_of() { grep -l "^$1" "$LEASES/fatia-$K"/10.* 2>/dev/null | xargs -r -n1 basename; }
running() { [ "$(jp "$1" '.status.containerStatuses[0].state.running.startedAt')" != "" ]; }

start_fatiad "$D" --no-controllers --agent runtime=oci || exit 1
bound_pod orphan "" "  terminationGracePeriodSeconds: 30" <<EOF2
  - name: main
    image: $IMG
    command: ["sh", "-c", "trap '' TERM; while true; do echo pong | nc -l -p 8080; done"]
EOF2
wait_for 30 running orphan || { fail "pod orphan: $(jp orphan .status)"; finish; }
POD_UID=$(jp orphan .metadata.uid)
IP=$(jp orphan .status.podIP)
case $IP in "$NET".*) ;; *) fail "pod orphan's address $IP is not on fatia-$K ($NET.0/24)" ;; esac
[ "$(lease_of "$POD_UID")" = "$IP" ] || fail "orphan's lease file '$(lease_of "$POD_UID")', want $IP"
ST=$D/agent/status/$POD_UID.json
SHIM=$(grep -o '"shim":{"pid":[0-9]*' "$ST" | grep -o '[0-9]*$')
PAUSE=$(grep -o '"pgid":[0-9]*' "$ST" | cut -d: -f2)
CTR=$(grep -o '"pid":[0-9]*,"pidStart"' "$ST" | head -1 | grep -o '[0-9]*')
PROCS="$SHIM $PAUSE $CTR"
for p in $PROCS; do [ "$p" -gt 1 ] || fail "no pid for the pod's processes: '$PROCS'"; done
# running: a process that exited is a zombie until this host's init (their parent once fatiad is
# gone) reaps it, which may take seconds here
alive() { [ -r "/proc/$1/stat" ] && [ "$(sed 's/.*) //' "/proc/$1/stat" | cut -c1)" != Z ]; }
all_alive() { for p in $PROCS; do alive "$p" || return 1; done; }
none_alive() { for p in $PROCS; do alive "$p" && return 1; done; return 0; }
reach() { timeout 3 busybox nc -w 2 "$IP" 8080 </dev/null 2>/dev/null | grep -q pong; }
all_alive || fail "the pod's processes are not all running: $PROCS"
wait_for 10 reach || fail "orphan does not answer on $IP:8080"

# ---- fatiad SIGKILLed and started again: adopted, lease kept ----
kill -9 "$FATIAD_PID"
wait "$FATIAD_PID" 2>/dev/null
FATIAD_PID=
sleep 3
all_alive || fail "the pod's processes did not survive fatiad's SIGKILL"
start_fatiad "$D" --no-controllers --agent runtime=oci || exit 1
wait_for 10 grep -q "agent: found" "$D.log"
running orphan || fail "after the restart: $(jp orphan .status)"
grep -q "\"shim\":{\"pid\":$SHIM," "$ST" || fail "another shim runs the pod after the restart"
[ "$(lease_of "$POD_UID")" = "$IP" ] || fail "the lease went with fatiad's restart"
reach || fail "orphan does not answer on $IP:8080 after fatiad's restart"

# ---- fatiad SIGKILLed, its data directory removed ----
kill -9 "$FATIAD_PID"
wait "$FATIAD_PID" 2>/dev/null
FATIAD_PID=
all_alive || fail "the pod's processes did not survive fatiad's second SIGKILL"
t0=$(date +%s%N)
grep -o " $D[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
rm -rf "$D"
echo "rm -rf of the data directory took $((($(date +%s%N) - t0) / 1000000)) ms"
[ -e "$D" ] && fail "rm -rf left the data directory: $(find "$D" | head)"
if wait_for 5 none_alive; then
    echo "shim, pause and container gone $((($(date +%s%N) - t0) / 1000000)) ms after rm -rf of the data directory"
else
    fail "still alive 5 s after the data directory's removal: $(ps -o pid=,args= -p "${PROCS// /,}")"
fi
no_lease() { [ -z "$(lease_of "$POD_UID")" ]; }
wait_for 2 no_lease || fail "the lease $IP of the removed pod is still held"
[ -e "/run/fatia-cni/$POD_UID" ] && fail "the pin /run/fatia-cni/$POD_UID is left"
pgrep -f "fatia-shim $D/" && fail "a fatia-shim of the removed data directory runs"
reach && fail "the removed pod still answers on $IP:8080"
[ -e "$D" ] && fail "the data directory came back: $(find "$D" | head)"
finish

#!/usr/bin/env bash
# tests/cli/containers-cni-reclaim.sh: the CNI leases of sandboxes that are gone are given back
# (src/agent/cni_reclaim.c), and never those of a live sandbox of another fatiad. Two fatiads on
# one host, their namespace default on one network index K (fatia-K, fbrK: a K of this test only,
# written into each data directory's uidranges). fatiad B runs pod keep (a server on 8080);
# fatiad A runs three pods, then is SIGKILLed with their shims and containers as the tests'
# cleanup does (agent_cleanup, runc delete --force), and its data directory is removed: their
# leases are left, their veths are not (a veth dies with its namespace). A fresh fatiad C on the
# same host reclaims the three leases at its start (one info line each), keep keeps its lease and
# answers; a pod of C gets an address. Then the range is filled with leases of ids that no
# sandbox has: C's next pod's ADD finds it exhausted, C's shim reclaims and retries, the pod runs,
# and keep's lease is still there. Last, fatiad B, keep's shim and its pause are SIGKILLed while
# keep's container runs on: a fresh fatiad D leaves keep's lease (its pinned network namespace is
# still held by the container), and keep still answers.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || skip "containers need root"
need_tools runc umoci skopeo busybox ip iptables
need_cni
agent_setup
LEASES=/var/lib/cni/networks
# a network index no other test uses (theirs are the first ones, from 5): free if no lease
K=$((2000 + $$ % 4000))
while ls "$LEASES/fatia-$K" 2>/dev/null | grep -q '^10\.'; do K=$((K + 1)); done
NET=10.$((K / 256)).$((K % 256))
BR=fbr$K
PIDS=()
cleanup() {
    agent_cleanup
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    for d in "$TMP"/*/agent/runc; do
        for c in $(runc --root "$d" list -q 2>/dev/null); do runc --root "$d" delete --force "$c" 2>/dev/null; done
    done
    grep -o " $TMP[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
    for p in "$TMP"/*/agent/pods/*; do [ -d "$p" ] && rm -f "/run/fatia-cni/$(basename "$p")"; done
    rm -f "$LEASES/fatia-$K"/10.*
    rm -rf "$LEASES/fatia-$K"
    ip link del "$BR" 2>/dev/null
    iptables -w -D FATIA-ISOLATE -i "$BR" -o "$BR" -j RETURN 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

"$SRC/scripts/images/busybox" "$TMP/busybox.tar" || { fail "cannot build the image"; finish; }
IMG=fatia.dev/busybox:1
for d in a b c d; do
    expect_rc 0 "$FATIA" image load -d "$TMP/$d" --name $IMG "$TMP/busybox.tar"
    echo "default $K" >"$TMP/$d/agent/uidranges"
done
leases() { ls "$LEASES/fatia-$K" 2>/dev/null | grep -c '^10\.'; }
lease_of() { grep -l "^$1" "$LEASES/fatia-$K"/10.* 2>/dev/null | xargs -r -n1 basename; }
uid_of() { jp "$1" .metadata.uid; }
running() { [ "$(jp "$1" '.status.containerStatuses[0].state.running.startedAt')" != "" ]; }
start() { # DIR
    start_fatiad "$TMP/$1" --no-controllers --agent runtime=oci || exit 1
    PIDS+=("$FATIAD_PID")
}

# ---- fatiad B: pod keep, alive for the whole test ----
start b
B_PID=$FATIAD_PID
bound_pod keep "" "  restartPolicy: Never" <<EOF2
  - name: main
    image: $IMG
    command: ["sh", "-c", "while true; do echo pong | nc -l -p 8080; done"]
EOF2
wait_for 30 running keep
KEEP_UID=$(uid_of keep)
KEEP_IP=$(jp keep .status.podIP)
case $KEEP_IP in "$NET".*) ;; *) fail "pod keep's address $KEEP_IP is not on fatia-$K ($NET.0/24)" ;; esac
KEEP_LEASE=$(lease_of "$KEEP_UID")
[ "$KEEP_LEASE" = "$KEEP_IP" ] || fail "keep's lease file '$KEEP_LEASE', want $KEEP_IP"
reach_keep() { timeout 3 busybox nc -w 2 "$KEEP_IP" 8080 </dev/null | grep -q pong; }
wait_for 10 reach_keep || fail "keep does not answer on $KEEP_IP:8080"

# ---- fatiad A: three pods, then SIGKILLed as the tests' cleanup does ----
start a
A_PID=$FATIAD_PID
for n in 1 2 3; do
    bound_pod "gone$n" "" "  restartPolicy: Never" <<EOF2
  - name: main
    image: $IMG
    command: ["sleep", "600"]
EOF2
done
GONE=()
for n in 1 2 3; do
    wait_for 30 running "gone$n"
    GONE+=("$(uid_of "gone$n")")
done
[ "$(leases)" = 4 ] || fail "fatia-$K has $(leases) leases with 4 pods running, want 4"
veths_running=$(ip -br link show master "$BR" | grep -c '^veth')
[ "$veths_running" = 4 ] || fail "$BR has $veths_running veths with 4 pods running"
kill -9 "$A_PID"
for f in "$TMP"/a/agent/status/*.json; do
    pg=$(grep -o '"pgid":[0-9]*' "$f" | head -1 | cut -d: -f2)
    sh=$(grep -o '"shim":{"pid":[0-9]*' "$f" | head -1 | grep -o '[0-9]*$')
    [ -n "$pg" ] && [ "$pg" -gt 1 ] && kill -9 -- "-$pg"
    [ -n "$sh" ] && [ "$sh" -gt 1 ] && kill -9 "$sh"
done
for c in $(runc --root "$TMP/a/agent/runc" list -q 2>/dev/null); do
    runc --root "$TMP/a/agent/runc" delete --force "$c" 2>/dev/null
done
gone_procs() { ! pgrep -f "fatia-shim $TMP/a/" >/dev/null; }
wait_for 10 gone_procs || fail "fatiad A's shims or pause processes live on"
grep -o " $TMP/a[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
rm -rf "$TMP/a"
# what a SIGKILL leaves: the leases; the veths go with their namespaces
for u in "${GONE[@]}"; do
    [ -n "$(lease_of "$u")" ] || fail "the lease of $u went without any reclaim: the test proves nothing"
done
veths_after=$(ip -br link show master "$BR" | grep -c '^veth')
echo "veths on $BR: $veths_running with 4 pods, $veths_after after the SIGKILL of 3 sandboxes"
[ "$veths_after" = 1 ] || fail "$BR has $veths_after veths after the SIGKILL, want 1 (keep's)"

# ---- fatiad C, fresh: reclaims at its start ----
# Every agent reclaims host-wide at its start, so under `ctest -j` another test's fatiad starting
# at this moment may take some of these leases first (seen once in CI): then its log has the
# line and C's has fewer. What must hold either way: the leases are gone, C's lines name only
# them, and keep's lease stays (below). Alone, nothing but C reclaims them: without the reclaim
# the first check fails.
# (the reclaim runs on a thread of its own from the agent's start: the API does not wait for it)
start c
gone_released() {
    local u
    for u in "${GONE[@]}"; do [ -z "$(lease_of "$u")" ] || return 1; done
}
wait_for 30 gone_released || fail "a lease of a gone pod is still there 30 s after fatiad C started"
sleep 1 # the line of the last lease follows its DEL; the counts below read one copy of the log
cp "$TMP/c.log" "$TMP/c-reclaim.log"
n_c=$(grep -c "cni: reclaimed $NET\." "$TMP/c-reclaim.log")
n_gone=0
for u in "${GONE[@]}"; do
    grep -q "cni: reclaimed $NET\.[0-9]* of $u (its sandbox is gone)" "$TMP/c-reclaim.log" && n_gone=$((n_gone + 1))
done
[ "$n_c" = "$n_gone" ] || fail "fatiad C reclaimed $n_c leases of fatia-$K, only $n_gone of them the gone pods'"
[ "$n_c" = 3 ] || echo "fatiad C reclaimed $n_c of the 3 (another fatiad started meanwhile took the rest)"
grep -q "cni: reclaimed .* of $KEEP_UID" "$TMP"/*.log && fail "the lease of live pod keep (fatiad B) was reclaimed"
[ "$(lease_of "$KEEP_UID")" = "$KEEP_IP" ] || fail "keep lost its lease $KEEP_IP"
reach_keep || fail "keep does not answer on $KEEP_IP:8080 after fatiad C's reclaim"
t0=$(date +%s%N)
bound_pod fresh "" "  restartPolicy: Never" <<EOF2
  - name: main
    image: $IMG
    command: ["sh", "-c", "nc -w 2 $KEEP_IP 8080 </dev/null > /tmp/got; exec sleep 600"]
EOF2
wait_for 30 running fresh
echo "fatia-$K with free addresses: pod fresh running $((($(date +%s%N) - t0) / 1000000)) ms after its create"
case $(jp fresh .status.podIP) in "$NET".*) ;; *) fail "pod fresh has no address on fatia-$K: $(jp fresh .status.podIP)" ;; esac

# ---- an exhausted range: C's shim reclaims and retries ----
# every free address leased to an id that no sandbox has (host-local's own file format)
n_fill=0
for i in $(seq 2 254); do
    f="$LEASES/fatia-$K/$NET.$i"
    [ -e "$f" ] && continue
    printf 'stale-%s-%d\r\neth0' "$$" "$i" >"$f"
    n_fill=$((n_fill + 1))
done
[ "$(leases)" = 253 ] || fail "fatia-$K has $(leases) leases after the fill, want 253 (full)"
t0=$(date +%s%N)
bound_pod late "" "  restartPolicy: Never" <<EOF2
  - name: main
    image: $IMG
    command: ["sleep", "600"]
EOF2
wait_for 60 running late || fail "pod late: $(jp late .status)"
echo "exhausted fatia-$K ($n_fill stale leases): pod late running $((($(date +%s%N) - t0) / 1000000)) ms after its create"
case $(jp late .status.podIP) in "$NET".*) ;; *) fail "pod late has no address on fatia-$K: $(jp late .status.podIP)" ;; esac
[ "$(lease_of "$KEEP_UID")" = "$KEEP_IP" ] || fail "keep lost its lease $KEEP_IP in the exhausted range's reclaim"
[ -n "$(lease_of "$(uid_of fresh)")" ] || fail "fresh (fatiad C, running) lost its lease"
left=$(grep -l '^stale-' "$LEASES/fatia-$K"/10.* 2>/dev/null | wc -l)
[ "$left" = 0 ] || fail "$left of the $n_fill stale leases are left after the retry"
# the shim's reclaim logs its lines (unless, as above, another fatiad starting meanwhile took
# every stale lease before the ADD found the range full)
grep -rqs "cni: reclaimed $NET\.[0-9]* of stale-$$-[0-9]* (its sandbox is gone)" "$TMP/c" "$TMP/c.log" ||
    echo "no reclaim line for the stale leases in C's logs: another fatiad started meanwhile took them"
reach_keep || fail "keep does not answer on $KEEP_IP:8080 after the exhausted range's reclaim"

# ---- keep's container outlives its shim and pause: its pinned namespace keeps the lease ----
kill -9 "$B_PID" # fatiad B first (it would release the pod of a lost shim)
f=$TMP/b/agent/status/$KEEP_UID.json
pg=$(grep -o '"pgid":[0-9]*' "$f" | head -1 | cut -d: -f2)
sh=$(grep -o '"shim":{"pid":[0-9]*' "$f" | head -1 | grep -o '[0-9]*$')
[ -n "$pg" ] && [ -n "$sh" ] || fail "no pause or shim pid for keep in $f"
kill -9 "$pg" "$sh"
no_keep_shim() { ! pgrep -f "fatia-shim $TMP/b/agent/pods/$KEEP_UID" >/dev/null; }
wait_for 10 no_keep_shim || fail "keep's shim or pause lives on"
reach_keep || fail "keep's container did not outlive its shim: the check below proves nothing"
start d
grep -q "cni: reclaimed .* of $KEEP_UID" "$TMP/d.log" &&
    fail "fatiad D reclaimed the lease of keep, whose container still holds its network namespace"
[ "$(lease_of "$KEEP_UID")" = "$KEEP_IP" ] || fail "keep lost its lease $KEEP_IP (its container runs)"
reach_keep || fail "keep does not answer on $KEEP_IP:8080 at the end"
finish

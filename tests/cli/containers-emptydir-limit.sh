#!/usr/bin/env bash
# tests/cli/containers-emptydir-limit.sh: emptyDir.sizeLimit on disk (issue 16), held as kubelet's
# eviction manager holds it (agent/shim_storage.h): the pod's shim measures its limited emptyDirs
# every --agent storage-check (500 ms here) and a pod whose volume holds more than its limit
# fails, reason Evicted, kubelet's message, at once. The hostile ways to hold more than the
# limit each end the same: one big file, many small files (blocks, not sizes), a tree deeper than
# the walk goes. What must not count: a symbolic link to a big host file, a sparse file's hole,
# a hard link's second name. A pod under its limit, and a pod with no limit writing more, run on.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || skip "containers need root"
need_tools runc umoci skopeo busybox
agent_setup
D=$TMP/d
cleanup() {
    agent_cleanup
    [ -n "$FATIAD_PID" ] && kill -9 "$FATIAD_PID" 2>/dev/null
    for c in $(runc --root "$D/agent/runc" list -q 2>/dev/null); do
        runc --root "$D/agent/runc" delete --force "$c" 2>/dev/null
    done
    grep -o " $TMP[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
    rm -rf "$TMP"
}
trap cleanup EXIT
"$SRC/scripts/images/busybox" "$TMP/busybox.tar" || { fail "cannot build the image"; finish; }
expect_rc 0 "$FATIA" image load -d "$D" --name fatia.dev/busybox:1 "$TMP/busybox.tar"
start_fatiad "$D" --no-controllers --agent runtime=oci --agent storage-check=500ms || exit 1

pod() { # NAME LIMIT SCRIPT: a pod writing into its emptyDir /data (LIMIT "" for none)
    local lim=""
    [ -n "$2" ] && lim="sizeLimit: $2"
    bound_pod "$1" "" "  restartPolicy: Never
  volumes:
  - name: data
    emptyDir: {$lim}" <<EOF
  - name: main
    image: fatia.dev/busybox:1
    command: ["sh", "-c", "$3"]
    volumeMounts: [{name: data, mountPath: /data}]
EOF
}
evicted() { [ "$(jp "$1" .status.phase)" = Failed ] && [ "$(jp "$1" .status.reason)" = Evicted ]; }
MSG='Usage of EmptyDir volume "data" exceeds the limit "8Mi".'

pod big 8Mi 'dd if=/dev/zero of=/data/f bs=1M count=16 2>/dev/null; sync; sleep 60'
pod small 8Mi 'for i in `seq 1000`; do echo 0123456789 > /data/f$i; done; sync; sleep 60'
pod deep 8Mi 'cd /data; for i in `seq 130`; do mkdir d && cd d || exit 1; done; echo hidden > x; sleep 60'
pod under 8Mi 'dd if=/dev/zero of=/data/f bs=1M count=4 2>/dev/null; sync; sleep 60'
pod nolimit "" 'dd if=/dev/zero of=/data/f bs=1M count=16 2>/dev/null; sync; sleep 60'
# not counted: a link to a big file of the host's image, a 1 GiB hole, a second name of 5 MiB
pod tricks 8Mi 'ln -s /bin/busybox /data/link; dd if=/dev/zero of=/data/sparse bs=1 count=1 seek=1073741824 2>/dev/null; dd if=/dev/zero of=/data/h bs=1M count=5 2>/dev/null; ln /data/h /data/h2; sync; sleep 60'

wait_for 30 evicted big || fail "big: $(jp big .status.phase) $(jp big .status.reason)"
[ "$(jp big .status.message)" = "$MSG" ] || fail "big: message '$(jp big .status.message)'"
# 1,000 files of 11 bytes hold 4 KiB blocks each: about 4 MiB, under; more would be over
wait_for 30 evicted deep || fail "deep: $(jp deep .status.phase) $(jp deep .status.reason)"
case "$(jp deep .status.message)" in
*"deeper than 128"*) ;;
*) fail "deep: message '$(jp deep .status.message)'" ;;
esac
sleep 2 # four more checks
for p in small under nolimit tricks; do
    [ "$(jp $p .status.phase)" = Running ] || fail "$p: $(jp $p .status.phase) $(jp $p .status.reason): $(jp $p .status.message)"
done
# many small files do count by their blocks: 3,000 more of them take 'small' over 8Mi
k exec small -- sh -c 'for i in $(seq 1001 3000); do echo 0123456789 > /data/f$i; done; sync' >/dev/null 2>&1
wait_for 30 evicted small || fail "small after 3,000 files: $(jp small .status.phase) $(jp small .status.reason)"
cat "$D"/agent/pods/*/shim.log 2>/dev/null | grep -q "evicted: Usage of EmptyDir volume" || fail "no eviction line in the shims' logs"
k delete pod --all --grace-period=0 >/dev/null 2>&1
stop_fatiad
finish

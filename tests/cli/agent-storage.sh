#!/usr/bin/env bash
# tests/cli/agent-storage.sh: what pods write lives under the pod directory (--agent pod-dir),
# which may be another filesystem than the store's, and per-pod ephemeral-storage limits are
# enforced by eviction as kubelet does (issue 15, "The store outlives a full disk").
#   1. --agent pod-dir=DIR: a pod's working directory and logs are under DIR, not the data dir
#   2. a pod writing past its ephemeral-storage limit is evicted: phase Failed, reason Evicted,
#      a Warning Event Evicted, its processes gone; a pod under its limit runs on
#   3. as root, with the pod directory on a small tmpfs made by the test: a pod with no limit
#      fills it; the API still writes (the store is elsewhere), and the admin can delete the pod
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
agent_setup
PODS=$TMP/pods
MOUNTED=
trap 'agent_cleanup; if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi; [ -n "$MOUNTED" ] && umount -l "$PODS"; rm -rf "$TMP"' EXIT
mkdir -p "$PODS"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=64m,mode=0711 tmpfs "$PODS" 2>/dev/null; then
    MOUNTED=1
elif [ "${CI:-}" = true ]; then
    fail "CI runs as root: the tmpfs for part 3 (a full pod filesystem) must mount"
else
    echo "note: not root or no tmpfs: part 3 (a full pod filesystem) is not run"
fi

D=$TMP/d
start_fatiad "$D" --no-controllers --agent pod-dir="$PODS" || exit 1

# ---- 1. the pod directory ----
bound_pod where "" "  restartPolicy: Never" <<EOF
  - name: main
    command: ["sh", "-c", "pwd; echo data > here"]
EOF
wait_for 10 phase_is where Succeeded
uid=$(jp where .metadata.uid)
case "$(k logs where)" in
"$(readlink -f "$PODS")/run/$uid/work") ;;
*) fail "where: working directory '$(k logs where)', want under $PODS" ;;
esac
[ -f "$PODS/run/$uid/work/here" ] || fail "where: its file is not under $PODS/run"
ls "$PODS/logs" | grep -q "default_where_$uid" || fail "where: its logs are not under $PODS/logs"
[ ! -e "$D/agent/run/$uid" ] || fail "where: a working directory under the data dir"

# ---- 2. eviction over the limit ----
bound_pod hog "" "  restartPolicy: Always" <<EOF
  - name: main
    resources: {limits: {ephemeral-storage: 4Mi}}
    command: ["sh", "-c", "dd if=/dev/zero of=big bs=1M count=12 2>/dev/null; echo written; sleep 60"]
EOF
bound_pod modest "" "  restartPolicy: Never" <<EOF
  - name: main
    resources: {limits: {ephemeral-storage: 8Mi}}
    command: ["sh", "-c", "dd if=/dev/zero of=small bs=1M count=1 2>/dev/null; sleep 60"]
EOF
wait_for 15 phase_is hog Failed
[ "$(jp hog .status.reason)" = Evicted ] || fail "hog: reason '$(jp hog .status.reason)'"
jp hog .status.message | grep -q "ephemeral local storage usage exceeds the total limit of containers 4194304 bytes" ||
    fail "hog: message '$(jp hog .status.message)'"
k get events --field-selector involvedObject.name=hog,reason=Evicted -o name | grep -q . ||
    fail "hog: no Evicted Event"
[ "$(jp hog '.status.containerStatuses[0].restartCount')" = 0 ] || fail "hog: restarted after eviction"
[ "$(jp modest .status.phase)" = Running ] || fail "modest: $(jp modest .status.phase) (under its limit)"

# ---- 3. a pod that fills the pod filesystem does not stop the API ----
if [ -n "$MOUNTED" ]; then
    bound_pod filler "" "  restartPolicy: Never" <<EOF
  - name: main
    command: ["sh", "-c", "dd if=/dev/zero of=fill bs=1M count=200 2>/dev/null; echo full; sleep 60"]
EOF
    wait_for 15 sh -c "[ \$(df --output=avail '$PODS' | tail -1) -lt 1024 ]"
    printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: still-writable}\n' >"$TMP/ns.yaml"
    k create -f "$TMP/ns.yaml" >/dev/null || fail "the API refused a write with the pod filesystem full"
    k delete pod filler --grace-period=0 --force >/dev/null 2>&1 || k delete pod filler --wait=false >/dev/null ||
        fail "the admin cannot delete the pod that filled the disk"
    wait_for 20 sh -c "! '$KUBECTL' --kubeconfig '$KCFG' get pod filler -o name"
fi
k delete pod hog modest where >/dev/null
stop_fatiad
finish

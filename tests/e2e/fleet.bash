# tests/e2e/fleet.bash: what the fleet tests share.
# Two control replicas (fleet-leader.sh, fleet-fence.sh, fleet-nodetoken.sh): `replica NAME`
# starts a fatiad control replica on the test's etcd (one prefix, --etcd-replica, leader election
# with short timings: lease FLEET_LEASE (3 s), renew deadline FLEET_RENEW (2 s), retry 0.5 s; one
# ServiceAccount signing key for both, $TMP/sa.key; the
# fleet from FLEET_DIR (examples/fleet/), more flags in FLEET_ARGS) and sets NAME_PID, NAME_URL
# and NAME_K (its kubectl); `start_pair` starts A and B and sets K, h (the lease's holder),
# LEADER and FOLLOWER. Needs lib.bash, fatiad.bash, start_etcd and PIDS.
# One node role: `node_role_cleanup` (below).

# replica NAME: a control replica with its controllers under leader election
replica() {
    local name=$1
    : >"$TMP/$name.log"
    [ -f "$TMP/sa.key" ] || head -c 32 /dev/urandom >"$TMP/sa.key" # the replicas' shared key
    "$FATIAD" --data-dir "$TMP/$name" --listen 127.0.0.1:0 --no-agent --store etcd \
        --etcd-endpoints "$ETCD_URLS" --etcd-max-request-bytes 10Mi --etcd-max-txn-ops 10240 \
        --etcd-prefix /fleet/registry --etcd-replica \
        --leader-elect --leader-elect-lease-duration "${FLEET_LEASE:-3s}" \
        --leader-elect-renew-deadline "${FLEET_RENEW:-2s}" \
        --leader-elect-retry-period 500ms --job-backoff 200ms \
        --service-account-signing-key-file "$TMP/sa.key" \
        --fleet "${FLEET_DIR:-examples/fleet/}" -f examples/ ${FLEET_ARGS:-} >"$TMP/$name.log" 2>&1 &
    eval "${name}_PID=$!"
    PIDS+=($!)
    for _ in $(seq 1000); do
        grep -q "serving the Kubernetes API at" "$TMP/$name.log" && break
        kill -0 "$!" 2>/dev/null || { cat "$TMP/$name.log" >&2; fail "$name exited at start"; finish; }
        sleep 0.02
    done
    eval "${name}_URL=$(grep -o 'https://127.0.0.1:[0-9]*' "$TMP/$name.log" | tail -1)"
    eval "${name}_K='$KUBECTL_DIR/kubectl.1.33 --kubeconfig $TMP/$name/kubeconfig'"
}

start_pair() {
    replica A
    replica B
    K=$A_K
    wait_until 20 $K get node box-0 -o name
    wait_until 10 holder
    h=$(holder)
    case "$h" in
    *_"$A_PID"_*) LEADER=A FOLLOWER=B ;;
    *_"$B_PID"_*) LEADER=B FOLLOWER=A ;;
    *) fail "the lease holder '$h' is neither replica"; finish ;;
    esac
}

holder() { $K get lease -n kube-system fatia-controller-manager -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }

# node_role_cleanup: the EXIT trap of the tests with one node role of runc containers in
# $TMP/box-0 (fleet-satoken.sh, fleet-satoken-renew-slow.sh): the node role ($NR), its pods and
# containers, the control fatiad ($FATIAD_PID), the mounts under $TMP, etcd
node_role_cleanup() {
    local c
    [ -n "$NR" ] && kill -9 "$NR" 2>/dev/null
    kill_agent_pods "$TMP"/box-0/agent/status/*.json
    for c in $(runc --root "$TMP/box-0/agent/runc" list -q 2>/dev/null); do
        runc --root "$TMP/box-0/agent/runc" delete --force "$c" 2>/dev/null
    done
    [ -n "$FATIAD_PID" ] && kill -9 "$FATIAD_PID" 2>/dev/null
    grep -o " ${TMP}[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
    etcd_cleanup
    rm -rf "$TMP"
}

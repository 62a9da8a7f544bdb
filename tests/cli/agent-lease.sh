#!/usr/bin/env bash
# tests/cli/agent-lease.sh: fatiad's own node agent renews its nodes' Leases (agent/lease.c,
# docs/fleet.md): on a fleet of two simulated nodes with --agent nodes=box-0, box-0 gets
# kube-node-lease/box-0 (holder box-0, the configured duration) renewed every quarter of it, and
# stays Ready; box-1, which no agent serves, gets no lease and is never judged (no taint); a
# Lease with a bad duration is refused, naming the field.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
need_python3
mkdir -p "$TMP/fleet"
sed 's/^  count: 1$/  count: 2/' examples/fleet/00-box.yaml >"$TMP/fleet/00-box.yaml"
FATIAD_CONTROLLERS=1 start_fatiad "$TMP/d" --fleet "$TMP/fleet/" --node-lease-duration 2 \
    --agent nodes=box-0 || finish
renew_time() {
    api GET /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/box-0
    [ "$CODE" = 200 ] || return 1
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["spec"]; print(s["renewTime"], s["holderIdentity"], s["leaseDurationSeconds"])' "$TMP/body"
}
for _ in $(seq 100); do renew_time >/dev/null && break; sleep 0.1; done
first=$(renew_time) || fail "no lease for box-0"
case "$first" in *" box-0 2") ;; *) fail "lease of box-0: '$first', want holder box-0, duration 2" ;; esac
sleep 1.5
second=$(renew_time)
[ "${first%% *}" != "${second%% *}" ] || fail "the lease was not renewed within 1.5 s: $first / $second"
api GET /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/box-1
[ "$CODE" = 404 ] || fail "box-1 (no agent serves it) has a lease: $CODE"
sleep 3 # past a lease duration: box-1 is not judged, box-0 is renewed
for n in box-0 box-1; do
    api GET /api/v1/nodes/$n
    grep -q 'node.kubernetes.io/unreachable' "$TMP/body" && fail "$n got the unreachable taint"
done
python3 -c 'import json,sys; n=json.load(open(sys.argv[1])); print([c["status"] for c in n["status"]["conditions"] if c["type"]=="Ready"][0])' "$TMP/body" >"$TMP/ready"
expect_line "$TMP/ready" True
api POST /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases \
    -H 'Content-Type: application/json' \
    -d '{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"bad"},"spec":{"leaseDurationSeconds":0}}'
[ "$CODE" = 422 ] || fail "a lease of 0 s was not refused: $CODE"
expect_line "$TMP/body" "spec.leaseDurationSeconds"
stop_fatiad
finish

#!/bin/bash
# tests/cli/store-etcd-nospace.sh: etcd's NOSPACE alarm under fatiad (docs/fleet.md): a tenant of
# the cluster fills etcd's quota (16 MiB here) with large objects; the write that hits it fails,
# fatiad raises its own alarm (/readyz 503, fatia_store_nospace_alarm 1), refuses later writes
# with 507 and keeps serving reads; once the operator gives etcd a larger quota and disarms it,
# fatiad clears its alarm by itself within seconds and writes are accepted again, with every
# object written before the alarm intact.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
need_python3
export FATIA_TEST_STORE=etcd
ETCD_FLAGS+=(--quota-backend-bytes 16777216)
start_etcd full || finish
FATIAD_ETCD=$ETCD_URL
start_fatiad "$TMP/d" --no-agent || finish
big=$(python3 -c 'print("x" * 200000)')
pod() {
    echo "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$1\",\"annotations\":{\"blob\":\"$big\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}" >"$TMP/pod.json"
}
ok=0 hit=
for i in $(seq 200); do
    pod "p$i"
    api POST /api/v1/namespaces/default/pods -H 'Content-Type: application/json' --data-binary @"$TMP/pod.json"
    if [ "$CODE" = 201 ]; then
        ok=$((ok + 1))
        continue
    fi
    hit=$CODE
    break
done
[ -n "$hit" ] || fail "200 writes of 200 KB fit a 16 MiB quota"
echo "etcd's quota reached after $ok acknowledged writes (answer $hit)"
expect_line "$TMP/d.log" "NOSPACE alarm raised"
api GET /readyz
[ "$CODE" = 503 ] || fail "/readyz under the alarm: $CODE"
api GET /metrics
expect_line "$TMP/body" "fatia_store_nospace_alarm 1"
pod after
api POST /api/v1/namespaces/default/pods -H 'Content-Type: application/json' --data-binary @"$TMP/pod.json"
[ "$CODE" = 507 ] || fail "a write under the alarm: $CODE, want 507"
api GET /api/v1/namespaces/default/pods/p1
[ "$CODE" = 200 ] || fail "a read under the alarm: $CODE"
# the operator's recovery: a larger quota (etcd restarted with it), then the alarm disarmed;
# fatiad keeps its alarm while etcd is down, and clears it once etcd raises none
restart_etcd_member full 1 --quota-backend-bytes 67108864 || finish
etcdctl_ alarm disarm >/dev/null 2>&1
for _ in $(seq 100); do
    api GET /readyz
    [ "$CODE" = 200 ] && break
    sleep 0.1
done
[ "$CODE" = 200 ] || fail "fatiad did not clear its alarm after etcd's was disarmed"
expect_line "$TMP/d.log" "NOSPACE cleared"
api DELETE /api/v1/namespaces/default/pods/p1
[ "$CODE" = 200 ] || fail "a delete after the recovery: $CODE"
pod after2
api POST /api/v1/namespaces/default/pods -H 'Content-Type: application/json' --data-binary @"$TMP/pod.json"
[ "$CODE" = 201 ] || fail "a write after the recovery: $CODE"
stop_fatiad
start_fatiad "$TMP/d" --no-agent || finish
api GET /api/v1/namespaces/default/pods
n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["items"]))' "$TMP/body")
[ "$n" = "$ok" ] || fail "$n pods after a restart, want $ok ($ok acknowledged, one deleted, one added)"
stop_fatiad
finish

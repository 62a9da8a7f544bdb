#!/bin/bash
# tests/cli/store-etcd.sh: fatiad on the etcd store backend (docs/fleet.md), against real etcd
# processes on loopback: objects under kube-apiserver's key layout (read back with etcdctl),
# each value the object the API serves; a restart keeps every object and the resourceVersion;
# a second fatiad on the same prefix fences the first (its next write is refused and nothing of
# it reaches etcd); a fatiad on another prefix is another cluster; periodic compaction removes
# etcd's old revisions and nothing of fatia's state; a three-member etcd loses the
# member fatiad talks to (kill -9) while 4 writers write, and an independent checker finds every
# acknowledged write after a restart, and again after kill -9 of fatiad and of every member and
# a restart of all.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
need_python3
export FATIA_TEST_STORE=etcd

# ---- the layout, one member ----
start_etcd one || finish
FATIAD_ETCD=$ETCD_URL
start_fatiad "$TMP/a" --no-agent -f examples/ || finish
api POST /api/v1/namespaces/team-a/pods -H 'Content-Type: application/json' \
    -d '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}'
[ "$CODE" = 201 ] || fail "pod create: $CODE $(cat "$TMP/body")"
rv=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"]["resourceVersion"])' "$TMP/body")
etcdctl_ get --prefix --keys-only /a/registry/ | grep -v '^$' >"$TMP/keys"
for k in /a/registry/pods/team-a/p1 /a/registry/namespaces/team-a \
    /a/registry/kueue.x-k8s.io/clusterqueues/team-a /a/registry/kueue.x-k8s.io/localqueues/team-a/gpu \
    /a/registry/resourceclaimtemplates/team-a/shared-gpu-mps; do
    grep -qx -- "$k" "$TMP/keys" || fail "no key $k in etcd (kube-apiserver's layout)"
done
etcdctl_ get --print-value-only /a/registry/pods/team-a/p1 >"$TMP/val"
python3 - "$TMP/val" "$rv" <<'PY' || fail "the stored pod is not the one the API answered"
import json, sys
o = json.load(open(sys.argv[1]))
assert o["kind"] == "Pod" and o["metadata"]["name"] == "p1", o
assert o["metadata"]["resourceVersion"] == sys.argv[2], (o["metadata"]["resourceVersion"], sys.argv[2])
PY
etcdctl_ get --print-value-only /a/registry_fatia/rv >"$TMP/rvkey"
[ "$(cat "$TMP/rvkey")" -ge "$rv" ] || fail "the rv key $(cat "$TMP/rvkey") is behind $rv"
api GET /api/v1/namespaces
n_before=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["items"]))' "$TMP/body")
stop_fatiad

# ---- a restart keeps everything ----
start_fatiad "$TMP/a" --no-agent || finish
expect_line "$TMP/a.log" "resourceVersion $(cat "$TMP/rvkey")"
api GET /api/v1/namespaces/team-a/pods/p1
[ "$CODE" = 200 ] || fail "the pod did not survive the restart: $CODE"
api GET /api/v1/namespaces
n_after=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["items"]))' "$TMP/body")
[ "$n_before" = "$n_after" ] || fail "namespaces: $n_before before the restart, $n_after after"

# ---- a second fatiad on the same prefix fences the first ----
A_URL=$URL A_TOKEN=$TOKEN A_CA=$CA A_PID=$FATIAD_PID
FATIAD_PID=
"$FATIAD" --data-dir "$TMP/b" --listen 127.0.0.1:0 --no-controllers --no-agent --store etcd \
    --etcd-endpoints "$ETCD_URL" --etcd-prefix /a/registry >"$TMP/b.log" 2>&1 &
B_PID=$!
for _ in $(seq 500); do grep -q "serving the Kubernetes API" "$TMP/b.log" && break; sleep 0.02; done
B_URL=$(grep -o 'https://127.0.0.1:[0-9]*' "$TMP/b.log" | tail -1)
B_TOKEN=$(awk '$2 == "admin" {print $1; exit}' "$TMP/b/tokens")
ns() { echo "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$1\"}}"; }
code=$(curl -s -o "$TMP/bb" -w '%{http_code}' --cacert "$TMP/b/tls.crt" -H "Authorization: Bearer $B_TOKEN" \
    -H 'Content-Type: application/json' -X POST "$B_URL/api/v1/namespaces" -d "$(ns by-b)")
[ "$code" = 201 ] || fail "the second fatiad's write: $code $(cat "$TMP/bb")"
code=$(curl -s -o "$TMP/ab" -w '%{http_code}' --cacert "$A_CA" -H "Authorization: Bearer $A_TOKEN" \
    -H 'Content-Type: application/json' -X POST "$A_URL/api/v1/namespaces" -d "$(ns by-stale-a)")
[ "$code" = 201 ] && fail "the fenced fatiad's write was acknowledged"
expect_line "$TMP/a.log" "another fatiad writes prefix /a/registry"
etcdctl_ get --keys-only /a/registry/namespaces/by-stale-a | grep -q . &&
    fail "the fenced fatiad's write reached etcd"
etcdctl_ get --keys-only /a/registry/namespaces/by-b | grep -q . || fail "the second fatiad's write is not in etcd"
kill -TERM "$B_PID" "$A_PID"
wait "$B_PID" "$A_PID" 2>/dev/null

# ---- another prefix is another cluster ----
start_fatiad "$TMP/c" --no-agent || finish
api GET /api/v1/namespaces/team-a
[ "$CODE" = 404 ] || fail "prefix /c/registry sees /a/registry's namespace ($CODE)"
stop_fatiad

# ---- periodic compaction: etcd's history below one interval ago is gone, ours is not ----
start_fatiad "$TMP/e" --no-agent --etcd-compaction-interval 1s || finish
for i in $(seq 12); do
    api POST /api/v1/namespaces -H 'Content-Type: application/json' -d "$(ns "compact-$i")"
    [ "$CODE" = 201 ] || fail "namespace compact-$i: $CODE"
    sleep 0.25
done
expect_line "$TMP/e.log" "store: etcd compacted to revision"
etcdctl_ get --rev=2 /e/registry/namespaces/default >"$TMP/out" 2>&1 &&
    fail "etcd still serves revision 2 after compactions"
expect_line "$TMP/out" "compacted"
stop_fatiad
start_fatiad "$TMP/e" --no-agent || finish
api GET /api/v1/namespaces/compact-12
[ "$CODE" = 200 ] || fail "an object written between compactions is gone after a restart: $CODE"
stop_fatiad
stop_etcd one

# ---- three members; kill -9 of the one fatiad talks to, during writes ----
start_etcd three 3 || finish
FATIAD_ETCD=$ETCD_URLS
start_fatiad "$TMP/d" --no-agent || finish
python3 tests/cli/durability.py write "$URL" "$CA" "$TOKEN" "$TMP/acks" 4 "$TMP/stop" \
    >"$TMP/writer.out" 2>&1 &
wpid=$!
acks() { local n; n=$(grep -c '^ACK' "$TMP/acks" 2>/dev/null); echo "${n:-0}"; }
for _ in $(seq 300); do [ "$(acks)" -ge 200 ] && break; sleep 0.05; done
kill -9 "$ETCD_PID_three_1"
wait "$ETCD_PID_three_1" 2>/dev/null
killed_at=$(acks)
for _ in $(seq 600); do [ "$(acks)" -ge $((killed_at + 300)) ] && break; sleep 0.05; done
[ "$(acks)" -ge $((killed_at + 300)) ] || fail "writes did not go on after one of three members died ($(acks) acks)"
touch "$TMP/stop"
wait "$wpid"
stop_fatiad
start_fatiad "$TMP/d" --no-agent || finish
python3 tests/cli/durability.py check "$URL" "$CA" "$TOKEN" "$TMP/acks" >"$TMP/check.out" 2>&1 ||
    fail "the checker found lost or wrong writes after the member's death"
cat "$TMP/check.out"
echo "etcd member killed after $killed_at acknowledged writes; $(acks) in all"
# ---- the whole cluster down (kill -9 of fatiad and of every member), then up: state intact ----
kill -9 "$FATIAD_PID"
wait "$FATIAD_PID" 2>/dev/null
FATIAD_PID=
for i in 2 3; do
    eval "p=\$ETCD_PID_three_$i"
    { kill -9 "$p" && wait "$p"; } 2>/dev/null
done
for i in 1 2 3; do
    ETCD_NO_WAIT=1 restart_etcd_member three "$i"
done
wait_members() {
    for _ in $(seq 400); do
        etcdctl_ --dial-timeout 1s endpoint health >/dev/null 2>&1 && return 0
        sleep 0.05
    done
    return 1
}
wait_members || fail "the three members did not come back"
start_fatiad "$TMP/d" --no-agent || finish
python3 tests/cli/durability.py check "$URL" "$CA" "$TOKEN" "$TMP/acks" >"$TMP/check.out" 2>&1 ||
    fail "the checker found lost or wrong writes after the whole cluster restarted"
tail -1 "$TMP/check.out"
stop_fatiad
finish

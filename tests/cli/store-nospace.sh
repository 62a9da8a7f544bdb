#!/bin/bash
# tests/cli/store-nospace.sh: the store outlives a full disk (etcd's NOSPACE alarm). fatiad's
# data directory on a small tmpfs made here (root: mount -t tmpfs), filled by a file: reads
# work, writes answer 507 with a message, the admin's DELETEs work (the reserve pays for them),
# and once the file is removed writes work again by themselves. /metrics' gauges
# (fatia_store_nospace_alarm, fatia_store_reserve_bytes) and /readyz (503 under the alarm,
# /healthz and /livez 200) follow the alarm.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
FS=$TMP/fs
mkdir -p "$FS"
if ! mount -t tmpfs -o size=40m tmpfs "$FS" 2>"$TMP/err"; then
    fail "cannot mount a tmpfs (this test needs root): $(cat "$TMP/err")"
    finish
fi
trap 'if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; wait "$FATIAD_PID" 2>/dev/null; fi; umount "$FS"; rm -rf "$TMP"' EXIT

start_fatiad "$FS/data" --no-agent --store-reserve 4Mi || finish
[ "$(stat -c %s "$FS/data/store.db.reserve")" = $((4 << 20)) ] || fail "no 4 MiB reserve file"
json() { api "$1" "$2" -H 'Content-Type: application/json' --data-binary "$3"; }
# metric NAME: its value in /metrics, or "missing"
metric() {
    api GET /metrics
    [ "$CODE" = 200 ] || fail "GET /metrics: $CODE"
    awk -v n="$1" '$1 == n { v = $2 } END { print (v == "" ? "missing" : v) }' "$TMP/body"
}
health() {
    CODE=$(curl -s -o "$TMP/hbody" -w '%{http_code}' --cacert "$CA" "$URL$1")
}
[ "$(metric fatia_store_nospace_alarm)" = 0 ] || fail "alarm gauge before the alarm: $(metric fatia_store_nospace_alarm)"
[ "$(metric fatia_store_reserve_bytes)" = $((4 << 20)) ] || fail "reserve gauge before the alarm: $(metric fatia_store_reserve_bytes)"
[ "$(metric fatia_store_reserve_target_bytes)" = $((4 << 20)) ] || fail "reserve target gauge: $(metric fatia_store_reserve_target_bytes)"
health /readyz
[ "$CODE" = 200 ] || fail "readyz before the alarm: $CODE"
json POST /api/v1/namespaces '{"metadata":{"name":"a"}}'
[ "$CODE" = 201 ] || fail "namespace a: $CODE"
# pods of 64 KiB (an annotation), so that the store's WAL outgrows what it had
ann=$(head -c 65536 /dev/zero | tr '\0' x)
pod() { echo "{\"metadata\":{\"name\":\"$1\",\"annotations\":{\"pad\":\"$ann\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}"; }
pod keep >"$TMP/pod.json"
api POST /api/v1/namespaces/a/pods -H 'Content-Type: application/json' --data-binary @"$TMP/pod.json"
[ "$CODE" = 201 ] || fail "pod keep: $CODE"

echo '{"metadata":{"name":"held","finalizers":["example.com/hold"]},"spec":{"containers":[{"name":"c","image":"x"}]}}' >"$TMP/held.json"
api POST /api/v1/namespaces/a/pods -H 'Content-Type: application/json' --data-binary @"$TMP/held.json"
[ "$CODE" = 201 ] || fail "pod held: $CODE"

# fill the filesystem
dd if=/dev/zero of="$FS/filler" bs=1M 2>/dev/null
[ "$(df --output=avail -B1 "$FS" | tail -1)" -lt 65536 ] || fail "the filesystem is not full"

# writes go on until the store needs space it has not got, then 507
got507=0
for i in $(seq 400); do
    pod "p$i" >"$TMP/pod.json"
    api POST /api/v1/namespaces/a/pods -H 'Content-Type: application/json' --data-binary @"$TMP/pod.json"
    if [ "$CODE" = 507 ]; then
        got507=$i
        break
    fi
    [ "$CODE" = 201 ] || fail "create p$i before the alarm: $CODE"
done
[ "$got507" -gt 0 ] || fail "no 507 after 400 creates on a full disk"
expect_line "$TMP/body" '"reason":"InsufficientStorage"'
expect_line "$TMP/body" "NOSPACE alarm"
expect_line "$FS/data.log" "NOSPACE alarm raised"
echo "507 after $got507 creates on the full disk"
[ "$(metric fatia_store_nospace_alarm)" = 1 ] || fail "alarm gauge under the alarm: $(metric fatia_store_nospace_alarm)"
# no token needed, as kube-apiserver's; a sub-check too
for p in /readyz /readyz/etcd; do
    health $p
    [ "$CODE" = 503 ] || fail "$p under the alarm: $CODE"
    expect_line "$TMP/hbody" "NOSPACE alarm"
done
for p in /healthz /livez; do
    health $p
    [ "$CODE" = 200 ] || fail "$p under the alarm: $CODE"
done
# every create is refused now, at once, even a small one
json POST /api/v1/namespaces '{"metadata":{"name":"b"}}'
[ "$CODE" = 507 ] || fail "a small create under the alarm: $CODE"
# reads work
api GET /api/v1/namespaces/a/pods/keep
[ "$CODE" = 200 ] || fail "read under the alarm: $CODE"
api GET /api/v1/namespaces/a/pods
[ "$CODE" = 200 ] || fail "list under the alarm: $CODE"
# a DELETE that marks an object a finalizer holds works; growing it then does not (a tenant
# would spend the reserve so); removing the finalizer does
api DELETE /api/v1/namespaces/a/pods/held
[ "$CODE" = 200 ] || fail "DELETE held under the alarm: $CODE"
expect_line "$TMP/body" "deletionTimestamp"
api PATCH /api/v1/namespaces/a/pods/held -H 'Content-Type: application/merge-patch+json' \
    --data-binary "{\"metadata\":{\"annotations\":{\"grow\":\"$ann\"}}}"
[ "$CODE" = 507 ] || fail "growing a terminating pod under the alarm: $CODE"
api PATCH /api/v1/namespaces/a/pods/held -H 'Content-Type: application/merge-patch+json' \
    --data-binary '{"metadata":{"finalizers":null}}'
[ "$CODE" = 200 ] || fail "removing the finalizer under the alarm: $CODE $(cat "$TMP/body")"
api GET /api/v1/namespaces/a/pods/held
[ "$CODE" = 404 ] || fail "held after its finalizer went: $CODE"
# the admin's DELETEs work (ten of them)
api DELETE /api/v1/namespaces/a/pods/keep
[ "$CODE" = 200 ] || fail "DELETE under the alarm: $CODE $(cat "$TMP/body")"
api GET /api/v1/namespaces/a/pods/keep
[ "$CODE" = 404 ] || fail "keep after its DELETE: $CODE"
for i in $(seq 1 $((got507 - 1))); do
    [ "$i" -gt 10 ] && break
    api DELETE "/api/v1/namespaces/a/pods/p$i"
    [ "$CODE" = 200 ] || fail "DELETE p$i under the alarm: $CODE"
done
api GET /healthz
[ "$CODE" = 200 ] || fail "healthz under the alarm: $CODE"
# the deletes spent part of the reserve, and the gauge says so
spent=$(metric fatia_store_reserve_bytes)
[ "$spent" != missing ] && [ "$spent" -lt $((4 << 20)) ] || fail "reserve gauge after deletes under the alarm: $spent"
[ "$(metric fatia_store_reserve_bytes)" = "$(stat -c %b "$FS/data/store.db.reserve" | awk -v b="$(stat -c %B "$FS/data/store.db.reserve")" '{ print $1 * b }')" ] ||
    fail "reserve gauge $(metric fatia_store_reserve_bytes) is not the reserve file's allocation"

# space freed: writes come back by themselves
rm -f "$FS/filler"
ok=0
for _ in $(seq 100); do
    json POST /api/v1/namespaces '{"metadata":{"name":"b"}}'
    if [ "$CODE" = 201 ]; then
        ok=1
        break
    fi
    [ "$CODE" = 507 ] || fail "create while recovering: $CODE"
    sleep 0.1
done
[ "$ok" = 1 ] || fail "writes did not come back within 10 s of freeing space"
expect_line "$FS/data.log" "NOSPACE alarm cleared"
[ "$(stat -c %s "$FS/data/store.db.reserve")" = $((4 << 20)) ] || fail "the reserve was not re-created"
[ "$(metric fatia_store_nospace_alarm)" = 0 ] || fail "alarm gauge after recovery: $(metric fatia_store_nospace_alarm)"
[ "$(metric fatia_store_reserve_bytes)" = $((4 << 20)) ] || fail "reserve gauge after recovery: $(metric fatia_store_reserve_bytes)"
health /readyz
[ "$CODE" = 200 ] || fail "readyz after recovery: $CODE"
pod again >"$TMP/pod.json"
api POST /api/v1/namespaces/a/pods -H 'Content-Type: application/json' --data-binary @"$TMP/pod.json"
[ "$CODE" = 201 ] || fail "a pod after recovery: $CODE"
stop_fatiad
finish

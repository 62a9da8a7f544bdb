#!/bin/bash
# tests/cli/store-etcd-limits.sh: fatiad on an etcd of small request limits (--max-request-bytes
# 256 KiB, --max-txn-ops 128: etcd's default), told them (--etcd-max-request-bytes,
# --etcd-max-txn-ops): 64 clients write 16 KB ConfigMaps at once, more than one request may
# hold, and every write is acknowledged (the group commit is cut between API transactions into
# requests etcd takes), all in etcd, no NOSPACE alarm; then one ConfigMap too large for one
# request fails alone with 413 naming it, and the next write succeeds.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
need_python3
export FATIA_TEST_STORE=etcd
ETCD_FLAGS+=(--max-request-bytes 262144 --max-txn-ops 128)
start_etcd small || finish
FATIAD_ETCD=$ETCD_URL
start_fatiad "$TMP/l" --no-agent --etcd-max-request-bytes 256Ki --etcd-max-txn-ops 128 || finish
python3 - "$URL" "$TOKEN" "$CA" <<'PY' || fail "concurrent writes were refused"
import json, ssl, sys, threading, urllib.request
url, token, ca = sys.argv[1:4]
ctx = ssl.create_default_context(cafile=ca)
codes, lock = {}, threading.Lock()
def create(i):
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "cm-%d" % i}, "data": {"blob": "x" * 16000}}).encode()
    req = urllib.request.Request(url + "/api/v1/namespaces/default/configmaps", data=body,
                                 method="POST", headers={"Authorization": "Bearer " + token,
                                                         "Content-Type": "application/json"})
    try:
        code = urllib.request.urlopen(req, context=ctx, timeout=60).status
    except urllib.error.HTTPError as e:
        code = "%d %s" % (e.code, e.read()[:300])
    with lock:
        codes[i] = code
def client(k):
    for i in range(k, 640, 64):
        create(i)
ts = [threading.Thread(target=client, args=(k,)) for k in range(64)]
for t in ts: t.start()
for t in ts: t.join()
bad = {i: c for i, c in codes.items() if c != 201}
assert len(codes) == 640 and not bad, (len(codes), list(bad.items())[:5])
PY
grep -q "NOSPACE alarm raised" "$TMP/l.log" && fail "a NOSPACE alarm without a full etcd"
grep -q "store commit failed" "$TMP/l.log" && fail "a commit failed: $(grep 'store commit failed' "$TMP/l.log" | head -3)"
n=$(etcdctl_ get --prefix --keys-only /l/registry/configmaps/default/ | grep -c '^/l/registry/configmaps/default/cm-')
[ "$n" = 640 ] || fail "$n ConfigMaps in etcd, want 640"

# one write too large for one request (its commit holds the object and its log row): 413 alone
big=$(python3 -c 'print("x" * 150000)')
echo "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"huge\"},\"data\":{\"blob\":\"$big\"}}" >"$TMP/huge.json"
api POST /api/v1/namespaces/default/configmaps -H 'Content-Type: application/json' --data-binary @"$TMP/huge.json"
[ "$CODE" = 413 ] || fail "a write over etcd's request limit: $CODE, want 413: $(head -c 300 "$TMP/body")"
expect_line "$TMP/body" "larger than the store's limit"
expect_line "$TMP/body" "huge"
api POST /api/v1/namespaces/default/configmaps -H 'Content-Type: application/json' \
    -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"after"},"data":{"a":"b"}}'
[ "$CODE" = 201 ] || fail "the write after the refused one: $CODE"
grep -q "NOSPACE alarm raised" "$TMP/l.log" && fail "a request too large raised the NOSPACE alarm"
stop_fatiad
stop_etcd small
finish

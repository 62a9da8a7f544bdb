#!/bin/bash
# tests/cli/tokens-audit.sh: token expiry and revocation, and the audit log, against a real
# fatiad (docs/apiserver.md, "Tokens" and "Audit").
#   1. `fatia token create --ttl 2s`: the token works, then is refused (401) once expired
#   2. `fatia token revoke --user U` and `--id ID`: refused within ~1 s, other tokens untouched;
#      an unknown user or id is an error and changes nothing; a bad --ttl is refused
#   3. creates and revokes racing each other (16 at once): no line lost, none resurrected
#   4. the audit log: every HTTP write (allowed or refused, status writes included: a tenant's is
#      refused by the tenant rules, which hold without the controllers too) is one
#      audit.k8s.io/v1 Event line (user, verb, objectRef, responseStatus.code), mode 0600;
#      reads are not recorded
#   5. rotation by size (--audit-log-maxsize): FILE.1 .. FILE.5, none past the size, the newest
#      lines in FILE
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"

D=$TMP/data
start_fatiad "$D" -f examples/ --audit-log-maxsize 20000 || { finish; exit 1; }
F="$BUILD/bin/fatia"

tok_of() { awk -v u="$1" '$2 == u {print $1; exit}' "$D/tokens"; }
# code_as TOKEN: GET of team-a's LocalQueues as that token
code_as() {
    curl -s -o /dev/null -w '%{http_code}' --cacert "$CA" -H "Authorization: Bearer $1" \
        "$URL/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues"
}

# ---- 1. expiry ----
expect_rc 0 "$F" token create --data-dir "$D" --user shortlived --namespace team-a --ttl 2s
expect_line "$TMP/err" "token id "
grep -q "shortlived .* expires=20" "$D/tokens" || fail "no expires= field: $(grep shortlived "$D/tokens")"
T1=$(tok_of shortlived)
[ "$(code_as "$T1")" = 200 ] || fail "a fresh token with a ttl is refused"
sleep 3
[ "$(code_as "$T1")" = 401 ] || fail "an expired token still works"
expect_rc 2 "$F" token create --data-dir "$D" --user x --namespace team-a --ttl -5m
expect_rc 2 "$F" token create --data-dir "$D" --user x --namespace team-a --ttl soon

# ---- 2. revocation ----
expect_rc 0 "$F" token create --data-dir "$D" --user bob --namespace team-a
expect_rc 0 "$F" token create --data-dir "$D" --user bob --namespace team-b
expect_rc 0 "$F" token create --data-dir "$D" --user carol --namespace team-a
CID=$(sed -n 's/^token id \([0-9a-f]*\).*/\1/p' "$TMP/err")
[ -n "$CID" ] || fail "no token id printed"
expect_rc 0 "$F" token create --data-dir "$D" --user dave --namespace team-a
B=$(tok_of bob) C=$(tok_of carol) DV=$(tok_of dave)
[ "$(code_as "$B")" = 200 ] && [ "$(code_as "$C")" = 200 ] || fail "fresh tokens refused"
expect_rc 0 "$F" token revoke --data-dir "$D" --user bob
expect_line "$TMP/err" "revoked 2 tokens"
expect_rc 0 "$F" token revoke --data-dir "$D" --id "$CID"
expect_line "$TMP/err" "revoked 1 token"
sleep 1.2
[ "$(code_as "$B")" = 401 ] || fail "a revoked token (by user) still works"
[ "$(code_as "$C")" = 401 ] || fail "a revoked token (by id) still works"
[ "$(code_as "$DV")" = 200 ] || fail "revoking others' tokens broke dave's"
[ "$(code_as "$TOKEN")" = 200 ] || fail "revoking broke the admin's token"
grep -q " bob " "$D/tokens" && fail "bob's lines are still in the tokens file"
[ "$(stat -c %a "$D/tokens")" = 600 ] || fail "tokens file mode $(stat -c %a "$D/tokens") after a revocation"
cp "$D/tokens" "$TMP/tokens.before"
expect_rc 1 "$F" token revoke --data-dir "$D" --user nobody
expect_rc 1 "$F" token revoke --data-dir "$D" --id ffffffffffff
cmp -s "$D/tokens" "$TMP/tokens.before" || fail "a revocation of nothing changed the tokens file"
expect_rc 2 "$F" token revoke --data-dir "$D"

# ---- 3. creates and revokes at once ----
pids=
for i in $(seq 8); do
    "$F" token create --data-dir "$D" --user "keep$i" --namespace team-a >/dev/null 2>&1 &
    pids="$pids $!"
    "$F" token create --data-dir "$D" --user "gone$i" --namespace team-a >/dev/null 2>&1 &
    pids="$pids $!"
done
wait $pids # not the bare wait: fatiad is a child too
pids=
for i in $(seq 8); do
    "$F" token create --data-dir "$D" --user "keep-late$i" --namespace team-a >/dev/null 2>&1 &
    pids="$pids $!"
    "$F" token revoke --data-dir "$D" --user "gone$i" >/dev/null 2>&1 &
    pids="$pids $!"
done
wait $pids
for i in $(seq 8); do
    [ -n "$(tok_of "keep$i")" ] || fail "token of keep$i lost in the race"
    [ -n "$(tok_of "keep-late$i")" ] || fail "token of keep-late$i lost in the race"
    [ -z "$(tok_of "gone$i")" ] || fail "token of gone$i survived its revocation"
done
[ "$(code_as "$TOKEN")" = 200 ] || fail "the admin's token lost in the race"

# ---- 4. the audit log ----
DT=$DV
lq() { printf '{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"LocalQueue","metadata":{"name":"%s"},"spec":{"clusterQueue":"team-a"}}' "$1"; }
AS_TOKEN=$DT api POST /apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues \
    -H 'Content-Type: application/json' -d "$(lq audited)"
[ "$CODE" = 201 ] || fail "create as dave: $CODE $(cat "$TMP/body")"
AS_TOKEN=$DT api POST /apis/kueue.x-k8s.io/v1beta2/namespaces/team-b/localqueues \
    -H 'Content-Type: application/json' -d "$(lq intruder)"
[ "$CODE" = 403 ] || fail "create in team-b as dave: $CODE"
AS_TOKEN=$DT api PATCH /apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues/audited/status \
    -H 'Content-Type: application/merge-patch+json' -d '{"status":{"pendingWorkloads":3}}'
[ "$CODE" = 403 ] || fail "status write as dave (a tenant: rule status, with or without controllers): $CODE"
AS_TOKEN=$DT api DELETE /apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues/audited
[ "$CODE" = 200 ] || fail "delete as dave: $CODE"
AS_TOKEN=$DT api GET /apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues
[ "$(stat -c %a "$D/audit.log")" = 600 ] || fail "audit log mode $(stat -c %a "$D/audit.log")"
python3 - "$D/audit.log" <<'PY' || fail "audit log content"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
mine = [e for e in ev if e["user"]["username"] == "dave"]
got = [(e["verb"], e["objectRef"].get("namespace"), e["objectRef"].get("name"),
        e["objectRef"].get("subresource"), e["responseStatus"]["code"]) for e in mine]
want = [("create", "team-a", "audited", None, 201), ("create", "team-b", "intruder", None, 403),
        ("patch", "team-a", "audited", "status", 403), ("delete", "team-a", "audited", None, 200)]
if got != want:
    sys.exit("dave's events: %s, want %s" % (got, want))
for e in mine:
    assert e["apiVersion"] == "audit.k8s.io/v1" and e["kind"] == "Event" and e["level"] == "Metadata", e
    assert e["objectRef"]["resource"] == "localqueues" and e["objectRef"]["apiGroup"] == "kueue.x-k8s.io", e
    assert e["sourceIPs"] == ["127.0.0.1"] and e["auditID"] and e["requestURI"].startswith("/apis/"), e
    assert e["requestReceivedTimestamp"] <= e["stageTimestamp"], e
assert mine[1]["responseStatus"]["reason"] == "Forbidden", mine[1]
PY

# ---- 5. rotation ----
for i in $(seq 150); do
    AS_TOKEN=$DT api PATCH /apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues/gpu \
        -H 'Content-Type: application/merge-patch+json' -d "{\"metadata\":{\"labels\":{\"n\":\"$i\"}}}"
done
[ -f "$D/audit.log.1" ] || fail "the audit log was not rotated"
[ -f "$D/audit.log.6" ] && fail "more than 5 rotated audit logs kept"
for f in "$D"/audit.log*; do
    [ "$(stat -c %s "$f")" -le 20000 ] || fail "$f is $(stat -c %s "$f") bytes, past --audit-log-maxsize"
    [ "$(stat -c %a "$f")" = 600 ] || fail "$f mode $(stat -c %a "$f")"
done
python3 -c "
import json,sys
last = json.loads(open(sys.argv[1]).read().splitlines()[-1])
assert last['verb'] == 'patch' and last['objectRef']['name'] == 'gpu', last
" "$D/audit.log" || fail "the newest event is not last in audit.log"
stop_fatiad
finish

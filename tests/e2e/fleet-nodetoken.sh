#!/bin/bash
# tests/e2e/fleet-nodetoken.sh (fast tier): a node token recorded in the shared store
# (apiserver/nodetoken.c) is valid on every replica, and a node role given both replicas'
# addresses survives the loss of the one it speaks to. One etcd member (the fast tier's budget;
# the three-member case is fleet-ha-slow.sh's), two control replicas A and B (tests/e2e/fleet.bash),
# one `fatiad --role node --server A,B` for box-0 with a token made by `fatia token create --node
# box-0 --record` and applied through A: in neither replica's tokens file. The node role's --ca is
# the two replicas' certificates in one file (each replica makes its own, self-signed).
#   hostile: a tenant of team-a cannot read the records; a forged token is 401 on both
#     replicas; the node token cannot create a record; a token of every namespace (ClusterRole
#     admin in kube-system too, not system:masters) cannot create one nor delete one (the
#     node-token-records admission rule); nor can an admin record a user that is not a node's;
#     a record's expiry (--ttl) ends its token (401);
#   1. the node is Ready, its token authenticates on A and on B;
#   2. kill -9 of A: the node role moves to B ("now speaking to"), the Lease is renewed through
#      B, the node stays Ready, and a new Job's pod bound to box-0 runs there;
#   3. A restarted (the token valid there, from the store); the record deleted through B: the
#      token is 401 on A within 3 s (its watch of the store), on B, and the node role's own
#      calls get 401.
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fleet.bash"
find_kubectl
need_python3
export HOME=$TMP/home
mkdir -p "$HOME"
start_etcd fleet 1 || finish
PIDS=()
NRPID=
trap '[ -n "$NRPID" ] && kill -9 $NRPID 2>/dev/null; for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; kill_agent_pods "$TMP"/box-0/agent/status/*.json; etcd_cleanup; rm -rf "$TMP"' EXIT

start_pair
echo "leader: $LEADER"
cat "$TMP/A/tls.crt" "$TMP/B/tls.crt" >"$TMP/ca.crt"
K=$A_K
$K create namespace kube-node-lease >/dev/null 2>&1 || fail "kubectl create namespace kube-node-lease"
"$FATIA" token create --node box-0 --record --output-file "$TMP/box-0.token" >"$TMP/rec.json" ||
    fail "fatia token create --record"
$K apply -f "$TMP/rec.json" >/dev/null || fail "the admin could not apply the record"
TOK=$(cat "$TMP/box-0.token")
grep -q "$TOK" "$TMP/A/tokens" "$TMP/B/tokens" && fail "the token is in a tokens file"
# revoke, a command on the tokens file, does not pretend: it names the record's delete
"$FATIA" token revoke --user system:node:box-0 --data-dir "$TMP/A" 2>"$TMP/revoke.err" &&
    fail "fatia token revoke of a recorded token succeeded"
grep -q "delete secret -l fatia.dev/node=box-0" "$TMP/revoke.err" ||
    fail "revoke of a recorded token does not say how: $(cat "$TMP/revoke.err")"
grep -q "$TOK" "$TMP/rec.json" && fail "the record holds the token itself"
code() { # URL TOKEN [curl args]: the HTTP status of GET URL/api/v1/nodes/box-0 with TOKEN
    local u=$1 t=$2
    shift 2
    curl -s -o /dev/null -w '%{http_code}' --cacert "$TMP/ca.crt" -H "Authorization: Bearer $t" \
        "$@" "$u/api/v1/nodes/box-0"
}

# ---- hostile ----
"$FATIA" token create --data-dir "$TMP/A" --user alice --namespace team-a >"$TMP/alice.kc" 2>/dev/null
"$FATIA" token create --data-dir "$TMP/A" --user ops --namespace '*' >"$TMP/ops.kc" 2>/dev/null
KA="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $TMP/alice.kc"
KO="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $TMP/ops.kc"
REC=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"]["name"])' "$TMP/rec.json")
$KA get secrets -n kube-system >/dev/null 2>&1 && fail "a tenant listed kube-system's Secrets"
$KA get secret "$REC" -n kube-system >/dev/null 2>&1 && fail "a tenant read a node token's record"
FORGED=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
[ "$(code "$A_URL" "$FORGED")" = 401 ] || fail "a forged token is not 401 on A"
[ "$(code "$B_URL" "$FORGED")" = 401 ] || fail "a forged token is not 401 on B"
"$FATIA" token create --node box-9 --record --output-file "$TMP/box-9.token" >"$TMP/rec9.json"
c=$(curl -s -o "$TMP/out" -w '%{http_code}' --cacert "$TMP/ca.crt" -H "Authorization: Bearer $TOK" \
    -H 'Content-Type: application/json' --data-binary @"$TMP/rec9.json" \
    "$B_URL/api/v1/namespaces/kube-system/secrets")
[ "$c" = 403 ] || fail "the node token creating a record: $c, not 403 ($(cat "$TMP/out"))"
$KO apply -f "$TMP/rec9.json" >"$TMP/out" 2>&1 && fail "a token of every namespace created a record"
grep -q "fatia.dev/node-token" "$TMP/out" || fail "ops refused, but not by the rule: $(cat "$TMP/out")"
$KO get secret -n kube-system "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"]["name"])' "$TMP/rec9.json")" >/dev/null 2>&1 &&
    fail "a record of ops' exists"
$KO delete secret -n kube-system "$REC" >"$TMP/out" 2>&1 && fail "a token of every namespace deleted a record"
$K get secret -n kube-system "$REC" >/dev/null 2>&1 || fail "box-0's record is gone"
python3 - "$TMP/rec9.json" >"$TMP/rec-admin.json" <<'EOF'
import base64, json, sys
r = json.load(open(sys.argv[1]))
r["data"]["user"] = base64.b64encode(b"admin").decode()
print(json.dumps(r))
EOF
$K apply -f "$TMP/rec-admin.json" >"$TMP/out" 2>&1 && fail "a record of user admin was admitted"
grep -q "system:node:NAME" "$TMP/out" || fail "the admin record refused, but not by the rule: $(cat "$TMP/out")"

# a record's expiry: valid, then 401 once passed
"$FATIA" token create --node box-8 --record --ttl 3s --output-file "$TMP/box-8.token" | $K apply -f - >/dev/null ||
    fail "a record with --ttl"
[ "$(code "$B_URL" "$(cat "$TMP/box-8.token")")" = 200 ] || fail "a record with --ttl 3s is not valid at once"
wait_until 6 eval '[ "$(code "$B_URL" "$(cat "$TMP/box-8.token")")" = 401 ]' || fail "an expired record is still valid"

# ---- 1. Ready, and valid on both replicas ----
"$FATIAD" --role node --server "$A_URL" --server "$B_URL" --token "$TMP/box-0.token" \
    --ca "$TMP/ca.crt" --node-name box-0 --data-dir "$TMP/box-0" --node-lease-duration 2 \
    --agent runtime=process --agent user=current >"$TMP/box-0.log" 2>&1 &
NRPID=$!
ready() { $1 get node box-0 -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null; }
renewed() { $K get lease -n kube-node-lease box-0 -o jsonpath='{.spec.renewTime}' 2>/dev/null; }
wait_until 20 eval '[ -n "$(renewed)" ]' || fail "box-0's Lease was never renewed"
r0=$(renewed)
wait_until 10 eval '[ "$(renewed)" != "$r0" ]' || fail "box-0's Lease is not renewed"
[ "$(ready "$A_K")" = True ] || fail "box-0 not Ready"
[ "$(code "$A_URL" "$TOK")" = 200 ] || fail "the recorded token is not valid on A"
[ "$(code "$B_URL" "$TOK")" = 200 ] || fail "the recorded token is not valid on B"

# ---- 2. kill -9 of A ----
kill -9 "$A_PID"
K=$B_K
t0=$SECONDS
r0=$(renewed)
wait_until 15 eval '[ "$(renewed)" != "$r0" ]' || fail "the Lease was not renewed through B"
echo "lease renewed through B $((SECONDS - t0)) s after A's kill -9"
grep -q "now speaking to $B_URL" "$TMP/box-0.log" || fail "the node role did not say it moved to B"
wait_until 15 eval 'holder | grep -q _${B_PID}_' || fail "B did not take the controllers' Lease"
cat <<YAML | $K apply -f - >/dev/null || fail "job not created"
apiVersion: batch/v1
kind: Job
metadata: {name: after, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: gpu}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: python:3.12
        command: ["sh", "-c", "sleep 3600; : fatia-e2e-nt-$$"]
        resources: {limits: {nvidia.com/gpu: 1}}
YAML
running() { local p; p=$(pod_of_job team-a after) && [ -n "$p" ] &&
    [ "$($K get pod "$p" -n team-a -o jsonpath='{.status.phase}/{.spec.nodeName}')" = Running/box-0 ]; }
wait_until 30 running || fail "the Job's pod did not run on box-0 after A's loss"
[ "$(ready "$B_K")" = True ] || fail "box-0 went NotReady after A's loss"
pgrep -f "fatia-e2e-nt-$$\$" >/dev/null || fail "no process of the Job's pod"

# ---- 3. revocation: the record deleted through B, seen live by A (restarted) ----
replica A
[ "$(code "$A_URL" "$TOK")" = 200 ] || fail "the recorded token is not valid on A restarted"
$K delete secret -n kube-system -l fatia.dev/node=box-0 >/dev/null || fail "delete the record"
t0=$(date +%s%N)
wait_until 3 eval '[ "$(code "$A_URL" "$TOK")" = 401 ]' || fail "the token is still valid on A"
echo "revoked on A (the other replica) $((($(date +%s%N) - t0) / 1000000)) ms after the delete"
[ "$(code "$B_URL" "$TOK")" = 401 ] || fail "the token is still valid on B"
wait_until 10 grep -qE "Unauthorized|: 401" "$TMP/box-0.log" || { tail -20 "$TMP/box-0.log" >&2; fail "the node role's calls did not get 401"; }
kill -TERM "$NRPID"
wait "$NRPID" 2>/dev/null
NRPID=
finish

#!/bin/bash
# tests/cli/apiserver-protobuf.sh: application/vnd.kubernetes.protobuf against a real fatiad.
#   - the C tables are what scripts/pb-gen makes of third_party/k8s-api-proto (not hand-edited);
#   - kubectl 1.33 (protobuf bodies and answers for built-in kinds) and 1.27 (JSON) create the
#     same objects with `create namespace`, `create job` and `run`; errors come back as Status;
#   - bodies made by hand from the wire rules (tests/cli/pbbody.py): decoded (an inline field
#     included), answered in protobuf when Accept says so, in JSON when Accept prefers JSON;
#   - a watch in protobuf: length-prefixed WatchEvent frames read by hand (tests/cli/pbwatch.py);
#   - a hostile client: a truncated body is 400, a custom resource in protobuf 415, a body of
#     20,000 labels is held to the JSON limits (422), a tenant's protobuf write meets the same
#     tenant rules as JSON (403).
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
need_python3
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
PB=application/vnd.kubernetes.protobuf
HERE=$(dirname "$0")

# ---- generated tables ----
if command -v clang-format >/dev/null; then
    python3 scripts/pb-gen third_party/k8s-api-proto "$TMP/pb_schema.c" ||
        fail "scripts/pb-gen failed"
    cmp -s "$TMP/pb_schema.c" src/apiserver/pb_schema.c ||
        fail "src/apiserver/pb_schema.c differs from scripts/pb-gen's output: run scripts/pb-gen"
fi

# comparable form of a stored object: no uid, times, versions, managers
norm() {
    python3 -c '
import json, sys
o = json.load(sys.stdin)
m = o["metadata"]
for k in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"):
    m.pop(k, None)
m["name"] = "X"
def walk(v):
    if isinstance(v, dict):
        for k in list(v):
            if k in ("uid", "controller-uid", "batch.kubernetes.io/controller-uid") or v[k] is None:
                v.pop(k)
            else:
                walk(v[k])
    elif isinstance(v, list):
        for e in v:
            walk(e)
walk(o)
o.pop("status", None)
print(json.dumps(o, sort_keys=True, indent=1))'
}

start_fatiad "$TMP/data" || exit 1
export KUBECONFIG=$KCFG
for v in 1.27 1.33; do
    k="$KUBECTL_DIR/kubectl.$v"
    n=${v/./-}
    expect_rc 0 "$k" create namespace "ns-$n"
    expect_line "$TMP/out" "namespace/ns-$n created"
    expect_rc 0 "$k" create job "job-$n" -n "ns-$n" --image=busybox -- echo hi
    expect_line "$TMP/out" "job.batch/job-$n created"
    expect_rc 0 "$k" run "pod-$n" -n "ns-$n" --image=nginx --port=80 --env=A=1 --labels=app=web \
        --restart=Never
    expect_line "$TMP/out" "pod/pod-$n created"
    # the answer to a failed create is a Status, whichever form it came in
    expect_rc 1 "$k" create namespace "ns-$n"
    expect_line "$TMP/err" "Error from server (AlreadyExists): namespaces \"ns-$n\" already exists"
    for o in "namespace/ns-$n" "job/job-$n" "pod/pod-$n"; do
        "$k" get -n "ns-$n" "$o" -o json | norm | sed "s/ns-$n/NS/g; s/job-$n/JOB/g; s/pod-$n/POD/g" >"$TMP/$v-${o%%/*}.json"
    done
done
for o in namespace job pod; do
    diff -u "$TMP/1.27-$o.json" "$TMP/1.33-$o.json" >"$TMP/diff" ||
        fail "$o made by kubectl 1.33 (protobuf) differs from 1.27's (JSON): $(cat "$TMP/diff")"
done
# kubectl 1.33 really spoke protobuf, both ways
"$KUBECTL_DIR/kubectl.1.33" create namespace traced -v=8 >"$TMP/trace" 2>&1
grep -A1 '"Request Body"' "$TMP/trace" | grep -q "6b 38 73 00" ||
    fail "kubectl 1.33 did not send protobuf: $(grep -A2 '"Request Body"' "$TMP/trace")"
grep -A4 '"Response" status=' "$TMP/trace" | grep -qi "Content-Type: $PB" ||
    fail "the answer to kubectl 1.33 was not protobuf: $(grep -A4 '"Response" status=' "$TMP/trace")"

# ---- bodies by hand ----
python3 "$HERE/pbbody.py" namespace by-hand 3 >"$TMP/ns.pb"
api POST /api/v1/namespaces -H "Content-Type: $PB" -H "Accept: $PB, application/json" \
    --data-binary @"$TMP/ns.pb" -D "$TMP/hdr"
[ "$CODE" = 201 ] || fail "protobuf create: $CODE $(cat "$TMP/body")"
grep -qi "^content-type: $PB" "$TMP/hdr" || fail "Accept protobuf answered: $(grep -i content-type "$TMP/hdr")"
head -c 4 "$TMP/body" | od -An -tx1 | grep -q "6b 38 73 00" || fail "the answer lacks the k8s\\0 magic"
api GET /api/v1/namespaces/by-hand -H "Accept: application/json, $PB"
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["metadata"]["labels"]["k2"] == "v2", o' \
    "$TMP/body" || fail "Accept JSON first: $(head -c 300 "$TMP/body")"
api GET /api/v1/namespaces/by-hand -H "Accept: application/json;q=0.5, $PB"
head -c 4 "$TMP/body" | od -An -tx1 | grep -q "6b 38 73 00" || fail "q=0.5 JSON, protobuf 1: not protobuf"
api GET /api/v1/namespaces -H "Accept: $PB"
head -c 4 "$TMP/body" | od -An -tx1 | grep -q "6b 38 73 00" || fail "a list in protobuf: $(head -c 200 "$TMP/body")"
python3 "$HERE/pbbody.py" pod by-hand web >"$TMP/pod.pb"
api POST /api/v1/namespaces/by-hand/pods -H "Content-Type: $PB" --data-binary @"$TMP/pod.pb"
[ "$CODE" = 201 ] || fail "protobuf pod: $CODE $(cat "$TMP/body")"
python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))["spec"]["containers"][0]
p = c["readinessProbe"]
assert p == {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 7}, p' "$TMP/body" ||
    fail "the inline probe handler: $(cat "$TMP/body")"

# ---- a watch in protobuf: length-prefixed WatchEvent frames ----
api GET "/api/v1/namespaces?watch=1&timeoutSeconds=2&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan" \
    -H "Accept: $PB, application/json" -D "$TMP/hdr"
grep -qi "^content-type: $PB;stream=watch" "$TMP/hdr" || fail "protobuf watch: $(grep -i content-type "$TMP/hdr")"
python3 "$HERE/pbwatch.py" "$TMP/body" >"$TMP/events" || fail "protobuf watch frames: $(cat "$TMP/events")"
grep -qx "ADDED Namespace by-hand" "$TMP/events" || fail "protobuf watch: $(cat "$TMP/events")"
grep -q "^BOOKMARK Namespace" "$TMP/events" || fail "protobuf watch, the initial-events bookmark: $(cat "$TMP/events")"
# a watch that prefers JSON stays JSON
api GET "/api/v1/namespaces?watch=1&timeoutSeconds=1" -H "Accept: application/json, $PB"
grep -q '"type":"ADDED"' "$TMP/body" || fail "JSON watch: $(head -c 200 "$TMP/body")"

# ---- hostile bodies ----
python3 "$HERE/pbbody.py" truncated >"$TMP/cut.pb"
api POST /api/v1/namespaces -H "Content-Type: $PB" --data-binary @"$TMP/cut.pb"
[ "$CODE" = 400 ] && grep -q "error decoding protobuf body" "$TMP/body" ||
    fail "a truncated body: $CODE $(cat "$TMP/body")"
python3 "$HERE/pbbody.py" cr >"$TMP/cr.pb"
api POST /apis/kueue.x-k8s.io/v1beta2/clusterqueues -H "Content-Type: $PB" --data-binary @"$TMP/cr.pb"
[ "$CODE" = 415 ] || fail "a custom resource in protobuf: $CODE $(cat "$TMP/body")"
python3 "$HERE/pbbody.py" namespace many 20000 >"$TMP/many.pb"
api POST /api/v1/namespaces -H "Content-Type: $PB" --data-binary @"$TMP/many.pb"
[ "$CODE" = 422 ] && grep -q "metadata.labels" "$TMP/body" ||
    fail "20,000 labels in protobuf: $CODE $(head -c 300 "$TMP/body")"
api GET /api/v1/namespaces/many
[ "$CODE" = 404 ] || fail "the refused namespace exists: $CODE"

expect_rc 0 "$FATIA" token create --data-dir "$TMP/data" --user mallory --namespace ns-1-33
TENANT=$(awk '$1 == "token:" {gsub(/"/, "", $2); print $2; exit}' "$TMP/out")
for _ in $(seq 50); do
    AS_TOKEN=$TENANT api GET /api/v1/namespaces/ns-1-33/pods
    [ "$CODE" = 401 ] || break
    sleep 0.1
done
python3 "$HERE/pbbody.py" namespace mallorys >"$TMP/m.pb"
AS_TOKEN=$TENANT api POST /api/v1/namespaces -H "Content-Type: $PB" --data-binary @"$TMP/m.pb"
[ "$CODE" = 403 ] || fail "a tenant's protobuf namespace: $CODE $(cat "$TMP/body")"
python3 "$HERE/pbbody.py" pod by-hand sneaky >"$TMP/sneaky.pb"
AS_TOKEN=$TENANT api POST /api/v1/namespaces/by-hand/pods -H "Content-Type: $PB" --data-binary @"$TMP/sneaky.pb"
[ "$CODE" = 403 ] || fail "a tenant's protobuf pod in another namespace: $CODE $(cat "$TMP/body")"

stop_fatiad
finish

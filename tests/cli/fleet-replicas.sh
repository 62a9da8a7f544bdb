#!/bin/bash
# tests/cli/fleet-replicas.sh: two fatiad replicas on one etcd prefix (--etcd-replica,
# docs/fleet.md "Replicas") both serve the API, each from its own cache fed by etcd's watch:
# a write on one is read on the other at the same resourceVersion, which is the etcd key's
# mod_revision; a watch on one sees the other's writes; 2 x 25 read-modify-write increments of
# one ConfigMap, alternating replicas, with 409 retries, end at 50 (no update lost to a stale
# cache: the per-object compare-and-swap); 20 creates of one name raced on both replicas give
# exactly one success each; a delete on one is gone on the other; kill -9 of one replica, the
# other goes on writing, and the restarted one loads the same objects; a group commit that
# another replica's write refuses fails only the writes that conflict, the rest go again, and a
# failed unconditional write runs again on the winner's version (a conditional one gets 409); a
# write built on a failing transaction's version fails with it and runs again.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
need_python3

start_etcd fleet || finish
PREFIX=/fleet/registry
REPLICA_PIDS=()
trap 'for p in "${REPLICA_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; etcd_cleanup; rm -rf "$TMP"' EXIT

# start_replica NAME [ARGS]: fatiad NAME on the shared prefix; NAME_URL, NAME_TOKEN, NAME_CA
start_replica() {
    local name=$1
    shift
    : >"$TMP/$name.log"
    "$FATIAD" --data-dir "$TMP/$name" --listen 127.0.0.1:0 --no-controllers --no-agent \
        --store etcd --etcd-endpoints "$ETCD_URLS" --etcd-prefix $PREFIX --etcd-replica "$@" \
        >"$TMP/$name.log" 2>&1 &
    eval "${name}_PID=$!"
    REPLICA_PIDS+=($!)
    for _ in $(seq 1000); do
        if grep -q "serving the Kubernetes API at" "$TMP/$name.log"; then
            eval "${name}_URL=$(grep -o 'https://127.0.0.1:[0-9]*' "$TMP/$name.log" | tail -1)"
            eval "${name}_TOKEN=$(awk '$2 == "admin" {print $1; exit}' "$TMP/$name/tokens")"
            eval "${name}_CA=$TMP/$name/tls.crt"
            return 0
        fi
        sleep 0.02
    done
    cat "$TMP/$name.log" >&2
    fail "replica $name did not start"
    finish
}

# on NAME METHOD PATH [curl args]: body in $TMP/body, status in $CODE ($CT: the body's type)
on() {
    local name=$1 method=$2 path=$3 url token ca
    shift 3
    eval "url=\$${name}_URL token=\$${name}_TOKEN ca=\$${name}_CA"
    CODE=$(curl -s -o "$TMP/body" -w '%{http_code}' --cacert "$ca" -X "$method" \
        -H "Authorization: Bearer $token" -H "Content-Type: ${CT:-application/json}" "$@" "$url$path")
}

field() { python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$TMP/body" "$1"; }

# wait_on NAME PATH CODE: until NAME answers PATH with CODE (5 s)
wait_on() {
    for _ in $(seq 100); do
        on "$1" GET "$2"
        [ "$CODE" = "$3" ] && return 0
        sleep 0.05
    done
    fail "$1: GET $2 answers $CODE, not $3, after 5 s"
}

start_replica A -f examples/
start_replica B

# ---- a write on A, read on B at the same resourceVersion: the key's mod_revision ----
on A POST /api/v1/namespaces/team-a/configmaps \
    -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","annotations":{"n":"0"}},"data":{"k":"v"}}'
[ "$CODE" = 201 ] || fail "create on A: $CODE $(cat "$TMP/body")"
rv=$(field 'o["metadata"]["resourceVersion"]')
mod=$(etcdctl_ get $PREFIX/configmaps/team-a/c -w json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["kvs"][0]["mod_revision"])')
[ "$rv" = "$mod" ] || fail "resourceVersion $rv is not the key's mod_revision $mod"
wait_on B /api/v1/namespaces/team-a/configmaps/c 200
[ "$(field 'o["metadata"]["resourceVersion"]')" = "$rv" ] || fail "B serves another rv: $(cat "$TMP/body")"
# B's list is at least at that revision
on B GET /api/v1/namespaces/team-a/configmaps
[ "$(field 'o["metadata"]["resourceVersion"]')" -ge "$rv" ] || fail "B's list is behind $rv"

# ---- a watch on B sees A's update ----
eval "curl -s -N --max-time 6 --cacert $B_CA -H 'Authorization: Bearer $B_TOKEN' \
    '$B_URL/api/v1/namespaces/team-a/configmaps?watch=1&resourceVersion=$rv'" >"$TMP/watch" &
WATCH=$!
sleep 0.5
CT=application/merge-patch+json on A PATCH /api/v1/namespaces/team-a/configmaps/c \
    -d '{"data":{"k":"w"}}'
[ "$CODE" = 200 ] || fail "patch on A: $CODE $(cat "$TMP/body")"
rv2=$(field 'o["metadata"]["resourceVersion"]')
wait "$WATCH"
python3 - "$TMP/watch" "$rv2" <<'PY' || fail "B's watch: $(cat "$TMP/watch")"
import json, sys
evs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
mods = [e for e in evs if e["type"] == "MODIFIED" and e["object"]["metadata"]["name"] == "c"]
assert len(mods) == 1, evs
assert mods[0]["object"]["metadata"]["resourceVersion"] == sys.argv[2], mods
assert mods[0]["object"]["data"]["k"] == "w", mods
PY

# ---- no lost update: 2 x 25 increments, each writer alternating replicas ----
python3 - "$A_URL" "$A_TOKEN" "$A_CA" "$B_URL" "$B_TOKEN" "$B_CA" <<'PY' || fail "increments"
import json, ssl, sys, threading, urllib.request, urllib.error
reps = [(sys.argv[1], sys.argv[2], sys.argv[3]), (sys.argv[4], sys.argv[5], sys.argv[6])]
ctx = [ssl.create_default_context(cafile=r[2]) for r in reps]
path = "/api/v1/namespaces/team-a/configmaps/c"
conflicts = [0]
def req(i, method, body=None):
    url, tok, _ = reps[i]
    r = urllib.request.Request(url + path, method=method, data=body,
                               headers={"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
    with urllib.request.urlopen(r, context=ctx[i], timeout=10) as resp:
        return json.load(resp)
def worker(w):
    for k in range(25):
        i = (w + k) % 2
        while True:
            o = req(i, "GET")
            o["metadata"]["annotations"]["n"] = str(int(o["metadata"]["annotations"]["n"]) + 1)
            try:
                req(i, "PUT", json.dumps(o).encode())
                break
            except urllib.error.HTTPError as e:
                assert e.code == 409, e.code
                conflicts[0] += 1
ts = [threading.Thread(target=worker, args=(w,)) for w in range(2)]
[t.start() for t in ts]
[t.join() for t in ts]
import time
for i in range(2):
    for _ in range(100):
        n = int(req(i, "GET")["metadata"]["annotations"]["n"])
        if n == 50:
            break
        time.sleep(0.05)
    assert n == 50, ("replica", i, "n =", n)
print("increments: 50, conflicts retried:", conflicts[0])
PY

# ---- creates of one name raced on both replicas: one wins each ----
python3 - "$A_URL" "$A_TOKEN" "$A_CA" "$B_URL" "$B_TOKEN" "$B_CA" <<'PY' || fail "create races"
import json, ssl, sys, threading, urllib.request, urllib.error
reps = [(sys.argv[1], sys.argv[2], sys.argv[3]), (sys.argv[4], sys.argv[5], sys.argv[6])]
ctx = [ssl.create_default_context(cafile=r[2]) for r in reps]
def create(i, name, out):
    url, tok, _ = reps[i]
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                       "data": {"by": str(i)}}).encode()
    r = urllib.request.Request(url + "/api/v1/namespaces/team-a/configmaps", method="POST", data=body,
                               headers={"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(r, context=ctx[i], timeout=10) as resp:
            out[i] = resp.status
    except urllib.error.HTTPError as e:
        out[i] = e.code
for n in range(20):
    out = [0, 0]
    ts = [threading.Thread(target=create, args=(i, "race-%d" % n, out)) for i in range(2)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert sorted(out) == [201, 409], (n, out)
PY

# ---- a delete on B is gone on A ----
on B DELETE /api/v1/namespaces/team-a/configmaps/race-3
[ "$CODE" = 200 ] || fail "delete on B: $CODE"
wait_on A /api/v1/namespaces/team-a/configmaps/race-3 404

# ---- kill -9 of A; B writes on; A restarted loads the same ----
kill -9 "$A_PID"
wait "$A_PID" 2>/dev/null
on B POST /api/v1/namespaces/team-a/configmaps -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"after"}}'
[ "$CODE" = 201 ] || fail "B alone: create $CODE"
start_replica A
on A GET /api/v1/namespaces/team-a/configmaps
names_a=$(field '" ".join(sorted(i["metadata"]["name"] for i in o["items"]))')
on B GET /api/v1/namespaces/team-a/configmaps
names_b=$(field '" ".join(sorted(i["metadata"]["name"] for i in o["items"]))')
[ "$names_a" = "$names_b" ] || fail "after A's restart: A has [$names_a], B has [$names_b]"
case " $names_a " in *" after "*) ;; *) fail "A restarted lacks B's write: $names_a" ;; esac
kill -9 "$A_PID"
wait "$A_PID" 2>/dev/null

# ---- a group commit that B's writes refuse: only the conflicting writes fail there ----
# A's writer is held (FATIA_TEST_ETCD_HOLD) with one create in it, so that A's next writes wait
# in one batch: an unconditional patch of x and a patch of w with a resourceVersion
# precondition, both of which B then changes, a create of y and a patch of y built on it, and a
# create of z, a name B then takes. etcd refuses the batch for x, w and z; y's writes go again
# and succeed (kube-apiserver never fails a write for another request's conflict). x and w run
# again once A's cache has B's versions (GuaranteedUpdate's retry, rerun.c): x's patch applies
# on top of B's (both keys kept: no update lost), w's precondition now fails (409 Conflict),
# and z is AlreadyExists.
FATIA_TEST_ETCD_HOLD=$TMP/hold start_replica A
for o in x w; do
    on A POST /api/v1/namespaces/team-a/configmaps -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"'$o'"},"data":{"by":"none"}}'
    [ "$CODE" = 201 ] || fail "create $o on A: $CODE"
    wait_on B /api/v1/namespaces/team-a/configmaps/$o 200
done
w_rv=$(field 'o["metadata"]["resourceVersion"]')
# bg_on NAME TAG METHOD PATH [curl args]: in the background; the status into $TMP/TAG.code
bg_on() {
    local name=$1 tag=$2 method=$3 path=$4 url token ca
    shift 4
    eval "url=\$${name}_URL token=\$${name}_TOKEN ca=\$${name}_CA"
    curl -s -o "$TMP/$tag.body" -w '%{http_code}' --cacert "$ca" -X "$method" \
        -H "Authorization: Bearer $token" -H "Content-Type: ${CT:-application/json}" "$@" \
        "$url$path" >"$TMP/$tag.code" &
    BG+=($!)
}
BG=()
touch "$TMP/hold"
bg_on A d POST /api/v1/namespaces/team-a/configmaps -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d"}}'
sleep 0.3
CT=application/merge-patch+json bg_on A x PATCH /api/v1/namespaces/team-a/configmaps/x -d '{"data":{"a":"A"}}'
CT=application/merge-patch+json bg_on A w PATCH /api/v1/namespaces/team-a/configmaps/w -d '{"metadata":{"resourceVersion":"'"$w_rv"'"},"data":{"a":"A"}}'
sleep 0.2
bg_on A y POST /api/v1/namespaces/team-a/configmaps -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"y"},"data":{"n":"1"}}'
sleep 0.2
CT=application/merge-patch+json bg_on A y2 PATCH /api/v1/namespaces/team-a/configmaps/y -d '{"data":{"n":"2"}}'
bg_on A z POST /api/v1/namespaces/team-a/configmaps -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"z"},"data":{"by":"A"}}'
sleep 0.2
for o in x w; do
    CT=application/merge-patch+json on B PATCH /api/v1/namespaces/team-a/configmaps/$o -d '{"data":{"b":"B"}}'
    [ "$CODE" = 200 ] || fail "patch $o on B: $CODE $(cat "$TMP/body")"
done
on B POST /api/v1/namespaces/team-a/configmaps -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"z"},"data":{"by":"B"}}'
[ "$CODE" = 201 ] || fail "create z on B: $CODE $(cat "$TMP/body")"
rm -f "$TMP/hold"
wait "${BG[@]}"
want="d=201 x=200 w=409 y=201 y2=200 z=409"
got="d=$(cat "$TMP/d.code") x=$(cat "$TMP/x.code") w=$(cat "$TMP/w.code") y=$(cat "$TMP/y.code") y2=$(cat "$TMP/y2.code") z=$(cat "$TMP/z.code")"
[ "$got" = "$want" ] ||
    fail "writes queued behind B's: $got (want $want); x: $(cat "$TMP/x.body"); w: $(cat "$TMP/w.body"); y: $(cat "$TMP/y.body")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["data"]; assert d["a"] == "A" and d["b"] == "B", d' \
    "$TMP/x.body" || fail "x's rerun did not apply on B's version: $(cat "$TMP/x.body")"
grep -q '"reason":"Conflict"' "$TMP/w.body" || fail "w's 409 is not a Conflict: $(cat "$TMP/w.body")"
grep -q '"reason":"AlreadyExists"' "$TMP/z.body" || fail "z's 409 is not AlreadyExists: $(cat "$TMP/z.body")"
on A GET /metrics
for m in 'conflict_transactions_total{outcome="retried"} 2' 'conflict_transactions_total{outcome="failed"} 3' \
    'write_reruns_total 2' 'write_reruns_exhausted_total 0'; do
    grep -qF "fatia_apiserver_$m" "$TMP/body" || fail "A's metrics lack $m: $(grep -E 'conflict|rerun' "$TMP/body")"
done
wait_on B /api/v1/namespaces/team-a/configmaps/y 200
[ "$(field 'o["data"]["n"]')" = 2 ] || fail "B serves y as $(cat "$TMP/body")"
wait_on B /api/v1/namespaces/team-a/configmaps/x 200
[ "$(field 'o["data"]["a"]+o["data"]["b"]')" = AB ] || fail "B serves x as $(cat "$TMP/body")"
on A GET /api/v1/namespaces/team-a/configmaps/w
[ "$(field 'o["data"].get("a","-")+o["data"]["b"]')" = -B ] || fail "A serves w as $(cat "$TMP/body")"
on A GET /api/v1/namespaces/team-a/configmaps/z
[ "$(field 'o["data"]["by"]')" = B ] || fail "A serves z as $(cat "$TMP/body")"

# ---- a write built on a failing transaction fails with it, and both run again ----
# DELETE of namespace dt is one transaction of three writes: m1 deleted, m2 (a finalizer)
# marked, dt marked Terminating. B's patch of m1 refuses it; A's patch of dt, queued behind it,
# was built on dt's Terminating version, which is never committed: it must fail too (it writes
# an object the failing transaction wrote), not be committed on that version. Both run again
# on B's versions and succeed: m1 gone, m2 marked, dt Terminating with A's label.
on A POST /api/v1/namespaces -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"dt"}}'
[ "$CODE" = 201 ] || fail "create namespace dt on A: $CODE $(cat "$TMP/body")"
on A POST /api/v1/namespaces/dt/configmaps -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m1"}}'
[ "$CODE" = 201 ] || fail "create dt/m1 on A: $CODE $(cat "$TMP/body")"
on A POST /api/v1/namespaces/dt/configmaps -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m2","finalizers":["example.com/keep"]}}'
[ "$CODE" = 201 ] || fail "create dt/m2 on A: $CODE $(cat "$TMP/body")"
wait_on B /api/v1/namespaces/dt/configmaps/m2 200
BG=()
touch "$TMP/hold"
bg_on A d2 POST /api/v1/namespaces/team-a/configmaps -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d2"}}'
sleep 0.3
bg_on A nsdel DELETE /api/v1/namespaces/dt
sleep 0.2
CT=application/merge-patch+json bg_on A nspatch PATCH /api/v1/namespaces/dt -d '{"metadata":{"labels":{"p":"A"}}}'
sleep 0.2
CT=application/merge-patch+json on B PATCH /api/v1/namespaces/dt/configmaps/m1 -d '{"data":{"b":"B"}}'
[ "$CODE" = 200 ] || fail "patch dt/m1 on B: $CODE $(cat "$TMP/body")"
rm -f "$TMP/hold"
wait "${BG[@]}"
got="d2=$(cat "$TMP/d2.code") nsdel=$(cat "$TMP/nsdel.code") nspatch=$(cat "$TMP/nspatch.code")"
[ "$got" = "d2=201 nsdel=200 nspatch=200" ] ||
    fail "writes on a failing transaction: $got; $(cat "$TMP/nsdel.body"); $(cat "$TMP/nspatch.body")"
on A GET /metrics
for m in 'conflict_transactions_total{outcome="retried"} 2' 'conflict_transactions_total{outcome="failed"} 5' \
    'write_reruns_total 4' 'write_reruns_exhausted_total 0'; do
    grep -qF "fatia_apiserver_$m" "$TMP/body" || fail "A's metrics after dt lack $m: $(grep -E 'conflict|rerun' "$TMP/body")"
done
for r in A B; do
    wait_on $r /api/v1/namespaces/dt/configmaps/m1 404
    on $r GET /api/v1/namespaces/dt
    [ "$(field 'o["status"]["phase"]+","+o["metadata"]["labels"]["p"]')" = Terminating,A ] ||
        fail "$r serves dt as $(cat "$TMP/body")"
    on $r GET /api/v1/namespaces/dt/configmaps/m2
    [ "$(field '"deletionTimestamp" in o["metadata"]')" = True ] || fail "$r serves dt/m2 as $(cat "$TMP/body")"
done
for p in "$A_PID" "$B_PID"; do
    kill -TERM "$p"
    wait "$p" || fail "a replica exited $? after SIGTERM"
done
REPLICA_PIDS=()
finish

#!/bin/bash
# tests/cli/apiserver-deletecollection.sh: deletecollection keeps every rule DELETE has (issue 15
# item 6), tried as a hostile tenant and a careless admin would, with curl and the real kubectl
# against a real fatiad: the protected namespaces (by a label selector naming them, and by a bare
# deletecollection that would take every namespace), dry runs, preconditions, finalizers (the
# object is marked, not removed), and authorization per object (a tenant token deleting pods
# across namespaces, in another tenant's namespace, read-only). A refused deletecollection deletes
# nothing: each check below also looks at what is still there.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
k=$KUBECTL_DIR/kubectl.1.33

start_fatiad "$TMP/data" || exit 1
export KUBECONFIG=$KCFG

cat >"$TMP/objs.yaml" <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: kube-system}
---
apiVersion: v1
kind: Namespace
metadata: {name: kube-public}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-a, labels: {tier: tenant}}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b, labels: {tier: tenant}}
---
apiVersion: v1
kind: Namespace
metadata: {name: scratch-1, labels: {tier: scratch}}
---
apiVersion: v1
kind: Namespace
metadata: {name: scratch-2, labels: {tier: scratch}}
---
apiVersion: v1
kind: Pod
metadata: {name: a1, namespace: team-a, labels: {app: x}}
spec: {containers: [{name: c, image: busybox}]}
---
apiVersion: v1
kind: Pod
metadata: {name: a2, namespace: team-a, labels: {app: "y"}}
spec: {containers: [{name: c, image: busybox}]}
---
apiVersion: v1
kind: Pod
metadata: {name: held, namespace: team-a, labels: {app: x}, finalizers: [example.com/hold]}
spec: {containers: [{name: c, image: busybox}]}
---
apiVersion: v1
kind: Pod
metadata: {name: b1, namespace: team-b, labels: {app: x}}
spec: {containers: [{name: c, image: busybox}]}
---
apiVersion: v1
kind: Pod
metadata: {name: p1, namespace: scratch-1}
spec: {containers: [{name: c, image: busybox}]}
YAML
expect_rc 0 "$k" create -f "$TMP/objs.yaml"

# names NS RESOURCE: the sorted names of a collection (NS "" for cluster-scoped or every one)
names() {
    if [ -n "$1" ]; then
        "$k" get "$2" -n "$1" -o name 2>&1 | sort | tr '\n' ' '
    else
        "$k" get "$2" -o name 2>&1 | sort | tr '\n' ' '
    fi
}
ALL_NS="namespace/default namespace/kube-public namespace/kube-system namespace/scratch-1 namespace/scratch-2 namespace/team-a namespace/team-b "
expect_names() { # WHAT NS RESOURCE WANT
    local got
    got=$(names "$2" "$3")
    [ "$got" = "$4" ] || fail "$1: $3 in '${2:-*}' are '$got', want '$4'"
}
expect_names "start" "" namespaces "$ALL_NS"

# 1. a label selector naming a protected namespace: 403, as DELETE of it is
for ns in default kube-system kube-public; do
    api DELETE "/api/v1/namespaces?labelSelector=kubernetes.io/metadata.name%3D$ns"
    [ "$CODE" = 403 ] || fail "deletecollection of namespace $ns: $CODE, want 403: $(cat "$TMP/body")"
    expect_line "$TMP/body" "namespaces \\\"$ns\\\" is forbidden: this namespace may not be deleted"
done
expect_names "selector naming default" "" namespaces "$ALL_NS"

# ... and by a field selector
api DELETE "/api/v1/namespaces?fieldSelector=metadata.name%3Dkube-system"
[ "$CODE" = 403 ] || fail "deletecollection by fieldSelector metadata.name=kube-system: $CODE, want 403"
expect_names "field selector naming kube-system" "" namespaces "$ALL_NS"

# 2. a bare deletecollection (every namespace): refused whole, nothing deleted
api DELETE "/api/v1/namespaces"
[ "$CODE" = 403 ] || fail "bare deletecollection of namespaces: $CODE, want 403: $(cat "$TMP/body")"
expect_names "bare deletecollection" "" namespaces "$ALL_NS"
expect_names "bare deletecollection" team-a pods "pod/a1 pod/a2 pod/held "
# ... and as a dry run: the same answer (the rules run before the dry run stops)
api DELETE "/api/v1/namespaces?dryRun=All"
[ "$CODE" = 403 ] || fail "dry-run deletecollection of namespaces: $CODE, want 403"
# a selector matching a protected namespace among others: refused whole
api DELETE "/api/v1/namespaces?labelSelector=kubernetes.io/metadata.name+in+(default,scratch-1)"
[ "$CODE" = 403 ] || fail "deletecollection of {default, scratch-1}: $CODE, want 403: $(cat "$TMP/body")"
expect_names "{default, scratch-1}" "" namespaces "$ALL_NS"

# 3. a selector matching unprotected namespaces only: they go (with what is in them)
api DELETE "/api/v1/namespaces?labelSelector=tier%3Dscratch&dryRun=All"
[ "$CODE" = 200 ] || fail "dry-run deletecollection tier=scratch: $CODE: $(cat "$TMP/body")"
expect_names "dry run" "" namespaces "$ALL_NS"
api DELETE "/api/v1/namespaces?labelSelector=tier%3Dscratch"
[ "$CODE" = 200 ] || fail "deletecollection tier=scratch: $CODE: $(cat "$TMP/body")"
expect_names "tier=scratch" "" namespaces "namespace/default namespace/kube-public namespace/kube-system namespace/team-a namespace/team-b "
expect_names "tier=scratch" scratch-1 pods ""

# 4. preconditions apply to each object, as for DELETE
api DELETE "/api/v1/namespaces/team-a/pods?labelSelector=app%3Dy" -H 'Content-Type: application/json' \
    -d '{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"not-the-uid"}}'
[ "$CODE" = 409 ] || fail "deletecollection with a uid precondition: $CODE, want 409: $(cat "$TMP/body")"
expect_names "uid precondition" team-a pods "pod/a1 pod/a2 pod/held "

# 5. a tenant token (team-a, read-write)
expect_rc 0 "$FATIA" token create --data-dir "$TMP/data" --user mallory --namespace team-a
cp "$TMP/out" "$TMP/mallory.kubeconfig"
TENANT=$(awk '$1 == "token:" {gsub(/"/, "", $2); print $2; exit}' "$TMP/mallory.kubeconfig")
[ -n "$TENANT" ] || fail "no token in the tenant kubeconfig"
# fatiad re-reads the tokens file at most once a second
for _ in $(seq 50); do
    AS_TOKEN=$TENANT api GET /api/v1/namespaces/team-a/pods
    [ "$CODE" = 401 ] || break
    sleep 0.1
done
[ "$CODE" = 200 ] || fail "the tenant token does not work: $CODE"
AS_TOKEN=$TENANT api DELETE "/api/v1/pods"
[ "$CODE" = 403 ] || fail "tenant deletecollection of pods in every namespace: $CODE, want 403"
AS_TOKEN=$TENANT api DELETE "/api/v1/namespaces/team-b/pods"
[ "$CODE" = 403 ] || fail "tenant deletecollection of team-b's pods: $CODE, want 403"
AS_TOKEN=$TENANT api DELETE "/api/v1/namespaces?labelSelector=tier%3Dtenant"
[ "$CODE" = 403 ] || fail "tenant deletecollection of namespaces: $CODE, want 403"
AS_TOKEN=$TENANT api DELETE "/api/v1/namespaces/team-a/pods?labelSelector=kubernetes.io/metadata.name%3Dteam-b"
[ "$CODE" = 200 ] || fail "tenant deletecollection selecting nothing: $CODE"
expect_rc 1 "$k" --kubeconfig "$TMP/mallory.kubeconfig" delete pods --all -A
expect_line "$TMP/err" "Forbidden"
expect_rc 1 "$k" --kubeconfig "$TMP/mallory.kubeconfig" delete pods --all -n team-b
expect_line "$TMP/err" "forbidden"
expect_names "tenant across namespaces" team-b pods "pod/b1 "
expect_names "tenant across namespaces" team-a pods "pod/a1 pod/a2 pod/held "
# a read-only token deletes nothing, even in its namespace
expect_rc 0 "$FATIA" token create --data-dir "$TMP/data" --user reader --namespace team-a --read-only
RO=$(awk '$1 == "token:" {gsub(/"/, "", $2); print $2; exit}' "$TMP/out")
for _ in $(seq 50); do
    AS_TOKEN=$RO api GET /api/v1/namespaces/team-a/pods
    [ "$CODE" = 401 ] || break
    sleep 0.1
done
[ "$CODE" = 200 ] || fail "the read-only token does not work: $CODE"
AS_TOKEN=$RO api DELETE "/api/v1/namespaces/team-a/pods"
[ "$CODE" = 403 ] || fail "read-only deletecollection: $CODE, want 403"
expect_names "read-only" team-a pods "pod/a1 pod/a2 pod/held "

# 6. the tenant in its own namespace, by label: the pod with a finalizer is marked, not removed
AS_TOKEN=$TENANT api DELETE "/api/v1/namespaces/team-a/pods?labelSelector=app%3Dx"
[ "$CODE" = 200 ] || fail "tenant deletecollection app=x in team-a: $CODE: $(cat "$TMP/body")"
expect_names "app=x" team-a pods "pod/a2 pod/held "
expect_names "app=x" team-b pods "pod/b1 "
api GET /api/v1/namespaces/team-a/pods/held
expect_line "$TMP/body" '"deletionTimestamp"'
expect_line "$TMP/body" '"deletionGracePeriodSeconds":30'
# again: the marked pod is left as it is (as a second DELETE leaves it)
AS_TOKEN=$TENANT api DELETE "/api/v1/namespaces/team-a/pods"
[ "$CODE" = 200 ] || fail "second tenant deletecollection in team-a: $CODE"
expect_names "second" team-a pods "pod/held "
# removing the finalizer completes the deletion
api PATCH /api/v1/namespaces/team-a/pods/held -H 'Content-Type: application/merge-patch+json' \
    -d '{"metadata":{"finalizers":null}}'
[ "$CODE" = 200 ] || fail "finalizer removal: $CODE: $(cat "$TMP/body")"
expect_names "finalizer removed" team-a pods ""

# 6b. a terminating namespace waits for its content: an update of it while a held object is
# left is a plain update (it once deleted the namespace and orphaned the object); the held
# object's last finalizer gone, both go
api POST /api/v1/namespaces -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"t3"}}'
[ "$CODE" = 201 ] || fail "create t3: $CODE: $(cat "$TMP/body")"
api POST /api/v1/namespaces/t3/configmaps \
    -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kept","finalizers":["example.com/hold"]}}'
[ "$CODE" = 201 ] || fail "create t3/kept: $CODE: $(cat "$TMP/body")"
api DELETE /api/v1/namespaces/t3
[ "$CODE" = 200 ] || fail "delete t3: $CODE: $(cat "$TMP/body")"
api PATCH /api/v1/namespaces/t3 -H 'Content-Type: application/merge-patch+json' \
    -d '{"metadata":{"labels":{"p":"q"}}}'
[ "$CODE" = 200 ] || fail "patch terminating t3: $CODE: $(cat "$TMP/body")"
api GET /api/v1/namespaces/t3
[ "$CODE" = 200 ] || fail "t3 went with t3/kept still in it: $CODE"
expect_line "$TMP/body" '"phase":"Terminating"'
expect_line "$TMP/body" '"p":"q"'
expect_names "t3 terminating" t3 configmaps "configmap/kept "
api PATCH /api/v1/namespaces/t3/configmaps/kept -H 'Content-Type: application/merge-patch+json' \
    -d '{"metadata":{"finalizers":null}}'
[ "$CODE" = 200 ] || fail "t3/kept finalizer removal: $CODE: $(cat "$TMP/body")"
api GET /api/v1/namespaces/t3
[ "$CODE" = 404 ] || fail "t3 outlived its last object: $CODE: $(cat "$TMP/body")"

# 7. kubectl delete ns --all (one DELETE per namespace): the protected ones stay
expect_rc 1 "$k" delete ns --all --wait=false
expect_line "$TMP/err" 'namespaces "default" is forbidden'
expect_names "delete ns --all" "" namespaces "namespace/default namespace/kube-public namespace/kube-system "
stop_fatiad
finish

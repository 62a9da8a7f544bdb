#!/bin/bash
# tests/cli/apiserver-rbac.sh: RBAC evaluated by fatiad (src/apiserver/authz.c), with kubectl 1.27
# and 1.33 as tenants:
#   1. a token's namespaces are a binding of ClusterRole admin (rw) or view (ro): writes in its
#      namespace only, no ResourceQuota write, no Secret read for view, cluster-scoped reads
#   2. a token with no namespace ("-") holds only what stored bindings grant: a Role and a
#      RoleBinding (User, Group, ServiceAccount subjects, the system:serviceaccounts groups),
#      resourceNames, a ClusterRole bound in one namespace, a ClusterRoleBinding
#   3. aggregation: a ClusterRole labelled aggregate-to-view counts for view at once
#   4. escalation (hostile tenant): a Role, a binding, an edit of a bound Role, a binding in a
#      namespace the tenant does not hold, ClusterRoleBindings: refused with upstream's message
#   5. kubectl auth can-i (SelfSubjectAccessReview, non-resource URLs too), can-i --list
#      (SelfSubjectRulesReview), SubjectAccessReview for the admin only
#   6. a tenant bound to cluster-admin is still held to the tenant rules (status, reserved, bind,
#      GPU work without the controllers)
#   7. the default ClusterRoles survive a restart with their uids, and an admin's edit of one
#      annotated autoupdate=false is kept
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
D=$TMP/data
start_fatiad "$D" || { finish; exit 1; }
ADM="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $KCFG"

tok() { # tok USER ARGS...: a kubeconfig in $TMP/USER.kc
    local u=$1
    shift
    "$FATIA" token create --data-dir "$D" --user "$u" "$@" >"$TMP/$(echo "$u" | tr : _).kc" 2>/dev/null ||
        fail "fatia token create --user $u $*"
}
allowed() { # allowed CMD...: must succeed
    "$@" >"$TMP/out" 2>"$TMP/err" || fail "refused: $*: $(cat "$TMP/err")"
}
refused() { # refused WANT CMD...: must fail with a 403 whose message holds WANT
    local want=$1
    shift
    if "$@" >"$TMP/out" 2>"$TMP/err"; then
        fail "ATTACK SUCCEEDED: $*"
        return
    fi
    grep -qi "forbidden" "$TMP/err" || fail "not a 403: $*: $(cat "$TMP/err")"
    grep -qF -- "$want" "$TMP/err" || fail "the refusal of '$*' does not say '$want': $(cat "$TMP/err")"
}
cani() { # cani WANT(yes|no) ARGS...: kubectl auth can-i's answer
    local want=$1 got
    shift
    got=$("$@" 2>/dev/null)
    [ "$got" = "$want" ] || fail "auth can-i: '$*' answered '$got', want '$want'"
}

allowed $ADM create namespace team-a
allowed $ADM create namespace team-b
allowed $ADM create configmap one -n team-a --from-literal=k=v
allowed $ADM create configmap two -n team-a --from-literal=k=v
allowed $ADM create secret generic s -n team-a --from-literal=k=v

# ---- 0. the default roles ----
for r in cluster-admin admin edit view system:basic-user fatia:cluster-reader; do
    allowed $ADM get clusterrole "$r"
done
$ADM get clusterrole admin -o jsonpath='{.rules[*].resources}' | grep -q rolebindings ||
    fail "the aggregated admin role was not stored with its rules"
[ "$($ADM get clusterrolebinding cluster-admin -o jsonpath='{.subjects[0].name}')" = system:masters ] ||
    fail "cluster-admin is not bound to system:masters"

tok alice --namespace team-a
tok rosa --namespace team-a --read-only
tok bob --namespace -
tok carol --namespace - --group devs
tok system:serviceaccount:team-a:bot --namespace -
tok mallory --namespace team-b

for V in 1.27 1.33; do
    K=$KUBECTL_DIR/kubectl.$V
    A="$K --kubeconfig $TMP/alice.kc -n team-a"
    R="$K --kubeconfig $TMP/rosa.kc -n team-a"
    B="$K --kubeconfig $TMP/bob.kc -n team-a"
    C="$K --kubeconfig $TMP/carol.kc -n team-a"
    S="$K --kubeconfig $TMP/system_serviceaccount_team-a_bot.kc -n team-a"
    v=${V/./}

    # ---- 1. token grants: admin (rw), view (ro) ----
    allowed $A create configmap "a$v" --from-literal=k=v
    allowed $A get secret s
    allowed $A get nodes
    allowed $A get namespace team-a
    refused 'User "alice" cannot create resource "configmaps" in API group "" in the namespace "team-b"' \
        $A create configmap x -n team-b --from-literal=k=v
    refused 'cannot list resource "configmaps" in API group "" at the cluster scope' $A get configmaps -A
    refused 'cannot create resource "resourcequotas"' $A create quota "q$v" --hard=pods=1
    refused 'cannot delete resource "namespaces"' $A delete namespace team-a
    refused 'cannot create resource "clusterroles"' $K --kubeconfig "$TMP/alice.kc" create clusterrole "x$v" --verb=get --resource=pods
    allowed $R get configmap one
    refused 'User "rosa" cannot create resource "configmaps"' $R create configmap "r$v" --from-literal=k=v
    refused 'cannot get resource "secrets"' $R get secret s

    # ---- 2. stored bindings only ----
    refused 'User "bob" cannot list resource "pods"' $B get pods
    allowed $ADM create role "pod-reader$v" -n team-a --verb=get,list,watch --resource=pods
    allowed $ADM create rolebinding "bob-pods$v" -n team-a --role="pod-reader$v" --user=bob --group=devs \
        --serviceaccount=team-a:bot
    allowed $B get pods
    allowed $C get pods
    allowed $S get pods
    refused 'cannot list resource "configmaps"' $B get configmaps
    refused 'in the namespace "team-b"' $B get pods -n team-b
    refused 'cannot create resource "pods"' $B run p --image=busybox
    # resourceNames: one ConfigMap by name, not the list, not another
    # (and the list narrowed to that name by a field selector, as upstream's RequestInfo names it)
    allowed $ADM create role "cm-one$v" -n team-a --verb=get,list --resource=configmaps --resource-name=one
    allowed $ADM create rolebinding "bob-cm$v" -n team-a --role="cm-one$v" --user=bob
    allowed $B get configmap one
    refused 'cannot get resource "configmaps"' $B get configmap two
    refused 'cannot list resource "configmaps"' $B get configmaps
    allowed $B get configmaps --field-selector metadata.name=one
    grep -q '^one ' "$TMP/out" || fail "the narrowed list lacks one: $(cat "$TMP/out")"
    refused 'cannot list resource "configmaps"' $B get configmaps --field-selector metadata.name=two
    refused 'cannot list resource "configmaps"' $B get configmaps --field-selector metadata.name!=two
    allowed $ADM delete rolebinding "bob-cm$v" -n team-a
    refused 'cannot get resource "configmaps"' $B get configmap one
    allowed $ADM delete rolebinding "bob-pods$v" -n team-a
    refused 'cannot list resource "pods"' $B get pods
    # the group of every service account of the namespace, a ClusterRole bound in one namespace
    allowed $ADM create rolebinding "sas$v" -n team-a --clusterrole=view --group=system:serviceaccounts:team-a
    allowed $S get configmaps
    refused 'in the namespace "team-b"' $S get configmaps -n team-b
    allowed $ADM delete rolebinding "sas$v" -n team-a
    refused 'cannot list resource "configmaps"' $S get configmaps
    # a ClusterRoleBinding reaches every namespace and the list across them
    allowed $ADM create clusterrolebinding "bob-view$v" --clusterrole=view --user=bob
    allowed $B get configmaps -A
    allowed $B get configmaps -n team-b
    allowed $ADM delete clusterrolebinding "bob-view$v"
    refused 'cannot list resource "configmaps"' $B get configmaps -A

    # ---- 3. aggregation: leases are not in view until a ClusterRole aggregates them ----
    refused 'cannot list resource "leases"' $R get leases
    allowed $ADM create clusterrole "lease-view$v" --verb=get,list --resource=leases.coordination.k8s.io
    allowed $ADM label clusterrole "lease-view$v" rbac.authorization.k8s.io/aggregate-to-view=true
    allowed $R get leases
    allowed $ADM delete clusterrole "lease-view$v"
    refused 'cannot list resource "leases"' $R get leases

    # ---- 4. escalation (alice holds admin in team-a, nothing in team-b) ----
    allowed $A create role "mine$v" --verb=get,list --resource=pods
    refused 'is attempting to grant RBAC permissions not currently held' \
        $A create role "all$v" --verb='*' --resource='*.*'
    grep -qF '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}' "$TMP/err" ||
        fail "the escalation refusal does not list the rule: $(cat "$TMP/err")"
    refused 'not currently held' $A create role "quota$v" --verb=create --resource=resourcequotas
    allowed $A create rolebinding "bob-admin$v" --clusterrole=admin --user=bob
    allowed $B create configmap "b$v" --from-literal=k=v
    allowed $A delete rolebinding "bob-admin$v"
    refused 'not currently held' $A create rolebinding "bob-ca$v" --clusterrole=cluster-admin --user=bob
    refused 'not currently held' $A create rolebinding "me-ca$v" --clusterrole=cluster-admin --user=alice
    refused 'cannot create resource "rolebindings"' \
        $A create rolebinding "me-b$v" -n team-b --clusterrole=admin --user=alice
    refused 'cannot create resource "clusterrolebindings"' \
        $K --kubeconfig "$TMP/alice.kc" create clusterrolebinding "me$v" --clusterrole=cluster-admin --user=alice
    # growing a Role that someone is bound to is granting it
    allowed $A create rolebinding "bob-mine$v" --role="mine$v" --user=bob
    refused 'not currently held' $A patch role "mine$v" --type=json \
        -p '[{"op":"add","path":"/rules/-","value":{"apiGroups":[""],"resources":["resourcequotas"],"verbs":["create"]}}]'
    refused 'cannot create resource "resourcequotas"' $B create quota "bq$v" --hard=pods=1
    # the admin may grant what a tenant may not; bind lets a user bind without holding the role
    allowed $ADM create role "binder$v" -n team-a --verb=bind --resource=clusterroles.rbac.authorization.k8s.io \
        --resource-name=edit
    allowed $ADM create rolebinding "bob-binder$v" -n team-a --role="binder$v" --user=bob
    allowed $ADM create role "rb$v" -n team-a --verb=create,delete --resource=rolebindings.rbac.authorization.k8s.io
    allowed $ADM create rolebinding "bob-rb$v" -n team-a --role="rb$v" --user=bob
    allowed $B create rolebinding "carol-edit$v" --clusterrole=edit --user=carol
    refused 'not currently held' $B create rolebinding "carol-admin$v" --clusterrole=admin --user=carol
    allowed $C create configmap "c$v" --from-literal=k=v
    for o in rolebinding/bob-binder$v rolebinding/bob-rb$v rolebinding/carol-edit$v rolebinding/bob-mine$v; do
        allowed $ADM delete -n team-a "$o"
    done

    # ---- 5. kubectl auth can-i ----
    cani yes $A auth can-i create pods
    cani no $A auth can-i create pods -n team-b
    cani no $A auth can-i create resourcequotas
    cani yes $A auth can-i get pods --subresource=log
    cani no $A auth can-i update pods --subresource=status
    cani yes $A auth can-i create pods/eviction
    cani yes $A auth can-i list nodes
    cani no $A auth can-i delete nodes
    cani yes $A auth can-i get /metrics
    cani no $A auth can-i get /debug
    cani no $B auth can-i list pods
    cani yes $ADM auth can-i '*' '*'
    $A auth can-i --list >"$TMP/list" 2>"$TMP/err" || fail "can-i --list: $(cat "$TMP/err")"
    grep -q '^configmaps ' "$TMP/list" || fail "can-i --list does not list configmaps: $(cat "$TMP/list")"
    grep -q 'rolebindings.rbac.authorization.k8s.io' "$TMP/list" || fail "can-i --list: no rolebindings"
    grep -q '/metrics' "$TMP/list" || fail "can-i --list: no /metrics"
    $B auth can-i --list >"$TMP/list" 2>"$TMP/err" || fail "can-i --list as bob: $(cat "$TMP/err")"
    grep -q '^pods ' "$TMP/list" && fail "can-i --list as bob lists pods"
done

# a status write is authorized as pods/status (edit reads it only), before the pod is looked up
AS_TOKEN=$(awk '$2 == "alice" {print $1}' "$D/tokens") api PATCH /api/v1/namespaces/team-a/pods/nope/status \
    -H 'Content-Type: application/merge-patch+json' -d '{"status":{}}'
[ "$CODE" = 403 ] && grep -qF 'cannot patch resource \"pods/status\"' "$TMP/body" ||
    fail "alice's status patch: $CODE $(cat "$TMP/body")"

# SubjectAccessReview: the admin asks about others; a tenant may not
SAR='{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"alice","resourceAttributes":{"verb":"create","resource":"configmaps","namespace":"team-a"}}}'
api POST /apis/authorization.k8s.io/v1/subjectaccessreviews -H 'Content-Type: application/json' -d "$SAR"
[ "$CODE" = 201 ] && grep -q '"allowed":true' "$TMP/body" || fail "SAR for alice in team-a: $CODE $(cat "$TMP/body")"
grep -q 'fatia:token:alice' "$TMP/body" || fail "SAR's reason does not name the token's binding: $(cat "$TMP/body")"
api POST /apis/authorization.k8s.io/v1/subjectaccessreviews -H 'Content-Type: application/json' \
    -d "${SAR/team-a/team-b}"
grep -q '"allowed":false' "$TMP/body" || fail "SAR for alice in team-b: $(cat "$TMP/body")"
AS_TOKEN=$(awk '$2 == "alice" {print $1}' "$D/tokens") api POST /apis/authorization.k8s.io/v1/subjectaccessreviews \
    -H 'Content-Type: application/json' -d "$SAR"
[ "$CODE" = 403 ] || fail "a tenant's SubjectAccessReview: $CODE, want 403"
AS_TOKEN=$(awk '$2 == "alice" {print $1}' "$D/tokens") api POST \
    /apis/authorization.k8s.io/v1/namespaces/team-a/localsubjectaccessreviews -H 'Content-Type: application/json' \
    -d '{"kind":"LocalSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{"user":"bob","resourceAttributes":{"verb":"get","resource":"pods","namespace":"team-a"}}}'
[ "$CODE" = 201 ] && grep -q '"allowed":false' "$TMP/body" || fail "alice's LocalSubjectAccessReview: $CODE $(cat "$TMP/body")"

# ---- 6. cluster-admin bound to a tenant: the tenant rules still refuse ----
M="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $TMP/mallory.kc -n team-b"
allowed $ADM create clusterrolebinding mallory-ca --clusterrole=cluster-admin --user=mallory
allowed $M get secrets -n team-a
allowed $M create configmap m --from-literal=k=v
allowed $M run p --image=busybox --restart=Never
refused 'rule: status' $M patch pod p --subresource=status --type=merge -p '{"status":{"phase":"Running"}}'
refused 'rule: reserved' $M annotate pod p fatia.dev/devices=gpu-0:GPU-x
refused 'rule: reserved' $M patch pod p --type=merge -p '{"metadata":{"finalizers":["fatia.dev/agent"]}}'
cat >"$TMP/gpu.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: gpu, namespace: team-b}
spec:
  nodeName: box-0
  containers:
  - name: c
    image: busybox
    resources: {limits: {nvidia.com/gpu: "1"}}
EOF
refused 'rule: bind' $M create -f "$TMP/gpu.yaml"
sed -i '/nodeName/d' "$TMP/gpu.yaml"
refused 'rule: door' $M create -f "$TMP/gpu.yaml"
allowed $ADM delete clusterrolebinding mallory-ca
refused 'cannot list resource "secrets"' $M get secrets -n team-a

# ---- 7. restart: the defaults keep their uids; an admin's opt-out of autoupdate is kept ----
UID0=$($ADM get clusterrole admin -o jsonpath='{.metadata.uid}')
allowed $ADM annotate clusterrole view rbac.authorization.kubernetes.io/autoupdate=false --overwrite
allowed $ADM label clusterrole view rbac.authorization.k8s.io/aggregate-to-edit-
stop_fatiad
start_fatiad "$D" || { finish; exit 1; }
ADM="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $KCFG"
[ "$($ADM get clusterrole admin -o jsonpath='{.metadata.uid}')" = "$UID0" ] || fail "admin's uid changed at restart"
[ -z "$($ADM get clusterrole view -o jsonpath='{.metadata.labels.rbac\.authorization\.k8s\.io/aggregate-to-edit}')" ] ||
    fail "the admin's edit of view (autoupdate=false) was overwritten"
# view no longer aggregates into edit (and so into admin): alice's reads of ConfigMaps came from it
refused 'cannot list resource "configmaps"' $KUBECTL_DIR/kubectl.1.33 --kubeconfig "$TMP/alice.kc" --server "$URL" \
    -n team-a get configmaps
stop_fatiad
finish

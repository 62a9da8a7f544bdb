#!/bin/bash
# tests/cli/apiserver-nodeauth.sh: the Node authorizer and node-restriction
# (src/apiserver/nodeauth.c), attacked with the token of node n1 (`fatia token create --node n1`)
# as a compromised node would:
#   1. Nodes: n1 reads every Node, writes only its own; no taint change, no label under
#      node-restriction.kubernetes.io/ or other *.kubernetes.io / *.k8s.io keys; no Node made
#      under another name
#   2. Leases: kube-node-lease/n1 only
#   3. Pods: no create, no binding (pods/binding, or an update setting spec.nodeName); status,
#      finalizers and delete only of pods bound to n1; no label or spec change of its own pods
#   4. Secrets, ConfigMaps, PVCs: one by name, only while a pod bound to n1 uses it (the grant
#      comes with the pod and goes with it); no list; service-account tokens bound to a pod of
#      n1 only (with its uid), for the audiences and no longer than its projection asks
#   5. ResourceSlices of n1 only; Events; nothing else (ClusterQueues, Namespaces, RBAC)
#   6. an unknown node (system:nodes with another user name) is refused everything; a user named
#      system:node:n1 outside the group is no node
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
D=$TMP/data
start_fatiad "$D" --no-agent || { finish; exit 1; }

J='Content-Type: application/json'
M='Content-Type: application/merge-patch+json'
S='Content-Type: application/strategic-merge-patch+json'
ok() { # ok WANT-CODE METHOD PATH [CURL ARGS]: as $AS_TOKEN (admin when unset)
    local want=$1
    shift
    api "$@"
    [ "$CODE" = "$want" ] || fail "$1 $2 as ${WHO:-admin}: $CODE, want $want: $(head -c 400 "$TMP/body")"
}
refused() { # refused WANT-TEXT METHOD PATH [CURL ARGS]: a 403 whose message holds WANT-TEXT
    local want=$1
    shift
    api "$@"
    if [ "$CODE" != 403 ]; then
        fail "ATTACK SUCCEEDED? $1 $2 as ${WHO:-admin}: $CODE, want 403: $(head -c 400 "$TMP/body")"
        return
    fi
    grep -qF -- "$want" "$TMP/body" || fail "$1 $2: the 403 does not say '$want': $(cat "$TMP/body")"
}
as_node() { # as_node USER: the token of USER from the tokens file
    WHO=$1
    AS_TOKEN=$(awk -v u="$1" '$2 == u {print $1; exit}' "$D/tokens")
    [ -n "$AS_TOKEN" ] || fail "no token for $1"
}
as_admin() { WHO=admin; AS_TOKEN=; }

# ---- the token command ----
expect_rc 0 "$FATIA" token create --data-dir "$D" --node n1 --output-file "$TMP/n1.kc"
grep -q "system:node:n1 .*system:nodes" "$D/tokens" || fail "the node token's line: $(grep node "$D/tokens")"
expect_rc 2 "$FATIA" token create --data-dir "$D" --node n1 --group system:masters
expect_line "$TMP/err" "--node takes no --user, --namespace, --group"
expect_rc 2 "$FATIA" token create --data-dir "$D" --node 'N1:x'
"$FATIA" token create --data-dir "$D" --user mallory --group system:nodes --namespace - >/dev/null 2>&1 ||
    fail "token for mallory"
"$FATIA" token create --data-dir "$D" --user system:node:n1 --namespace - >/dev/null 2>&1 ||
    fail "token for a look-alike user"

# ---- the objects, as admin ----
as_admin
for n in n1 n2; do
    ok 201 POST /api/v1/nodes -H "$J" -d '{"apiVersion":"v1","kind":"Node","metadata":{"name":"'$n'","labels":{"node-restriction.kubernetes.io/pool":"a"}},"spec":{"taints":[{"key":"gpu","effect":"NoSchedule"}]}}'
done
ok 201 POST /api/v1/namespaces -H "$J" -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}}'
ok 201 POST /api/v1/namespaces -H "$J" -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kube-node-lease"}}'
for s in s-used s-env s-pull s-other; do
    ok 201 POST /api/v1/namespaces/team-a/secrets -H "$J" -d '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"'$s'"},"stringData":{"k":"v"}}'
done
for c in cm-used cm-other; do
    ok 201 POST /api/v1/namespaces/team-a/configmaps -H "$J" -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"'$c'"},"data":{"k":"v"}}'
done
for c in claim-used claim-other; do
    ok 201 POST /api/v1/namespaces/team-a/persistentvolumeclaims -H "$J" -d '{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"'$c'"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Mi"}}}}'
done
pod() { # pod NAME NODE VOLUMES-JSON [ENVFROM-JSON]: a pod bound to NODE ("" unbound)
    local bind=
    [ -n "$2" ] && bind='"nodeName":"'$2'",'
    ok 201 POST /api/v1/namespaces/team-a/pods -H "$J" -d '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"'$1'","labels":{"app":"x"}},"spec":{'"$bind"'"volumes":'"$3"',"imagePullSecrets":[{"name":"'"${5:-none}"'"}],"containers":[{"name":"c","image":"busybox","command":["sleep","3600"],"envFrom":'"${4:-[]}"'}]}}'
}
pod p1 n1 '[{"name":"s","secret":{"secretName":"s-used"}},{"name":"d","persistentVolumeClaim":{"claimName":"claim-used"}},{"name":"c","projected":{"sources":[{"configMap":{"name":"cm-used"}}]}}]' '[{"secretRef":{"name":"s-env"}}]' s-pull
pod p2 n2 '[{"name":"s","secret":{"secretName":"s-other"}},{"name":"c","configMap":{"name":"cm-other"}},{"name":"d","persistentVolumeClaim":{"claimName":"claim-other"}}]'
pod p3 "" '[]'

as_node system:node:n1
# ---- 1. Nodes ----
ok 200 GET /api/v1/nodes/n1
ok 200 GET /api/v1/nodes/n2
ok 200 GET /api/v1/nodes
ok 200 PATCH /api/v1/nodes/n1 -H "$M" -d '{"metadata":{"labels":{"kubernetes.io/hostname":"n1","topology.kubernetes.io/zone":"z1","x.node.kubernetes.io/ok":"1","team":"a"}}}'
ok 200 PATCH /api/v1/nodes/n1/status -H "$M" -d '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}]}}'
refused "node authorizer" PATCH /api/v1/nodes/n2 -H "$M" -d '{"metadata":{"labels":{"team":"evil"}}}'
refused "node authorizer" PATCH /api/v1/nodes/n2/status -H "$M" -d '{"status":{"conditions":[{"type":"Ready","status":"False"}]}}'
refused "node authorizer" DELETE /api/v1/nodes/n2
refused "metadata.labels" PATCH /api/v1/nodes/n1 -H "$M" -d '{"metadata":{"labels":{"node-restriction.kubernetes.io/pool":"b"}}}'
refused "metadata.labels" PATCH /api/v1/nodes/n1 -H "$M" -d '{"metadata":{"labels":{"node-restriction.kubernetes.io/pool":null}}}'
refused "metadata.labels" PATCH /api/v1/nodes/n1 -H "$M" -d '{"metadata":{"labels":{"gpu.k8s.io/class":"h200"}}}'
refused "metadata.labels" PATCH /api/v1/nodes/n1 -H "$M" -d '{"metadata":{"labels":{"x.topology.kubernetes.io/zone":"z"}}}'
refused "spec.taints" PATCH /api/v1/nodes/n1 -H "$M" -d '{"spec":{"taints":[]}}'
refused "metadata.name" POST /api/v1/nodes -H "$J" -d '{"apiVersion":"v1","kind":"Node","metadata":{"name":"n3"}}'
as_admin
ok 200 GET /api/v1/nodes/n1
[ "$(jq -r '.metadata.labels["node-restriction.kubernetes.io/pool"]' "$TMP/body")" = a ] ||
    fail "a refused write changed n1's labels: $(cat "$TMP/body")"
[ "$(jq -r '.spec.taints | length' "$TMP/body")" = 1 ] || fail "n1's taints changed"
ok 200 GET /api/v1/nodes/n2
[ "$(jq -r '.metadata.labels.team // "none"' "$TMP/body")" = none ] || fail "n1 labelled n2"

# ---- 2. Leases ----
as_node system:node:n1
L='{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"NAME"},"spec":{"holderIdentity":"NAME","leaseDurationSeconds":40}}'
ok 201 POST /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases -H "$J" -d "${L//NAME/n1}"
ok 200 GET /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1
ok 200 PATCH /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1 -H "$M" -d '{"spec":{"renewTime":"2026-01-01T00:00:00.000000Z"}}'
refused "metadata.name" POST /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases -H "$J" -d "${L//NAME/n2}"
refused "node authorizer" POST /apis/coordination.k8s.io/v1/namespaces/team-a/leases -H "$J" -d "${L//NAME/n1}"
as_admin
ok 201 POST /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases -H "$J" -d "${L//NAME/n2}"
as_node system:node:n1
refused "node authorizer" PATCH /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2 -H "$M" -d '{"spec":{"renewTime":"2026-01-01T00:00:00.000000Z"}}'
refused "node authorizer" GET /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2
refused "node authorizer" GET /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases

# ---- 3. Pods ----
ok 200 GET /api/v1/namespaces/team-a/pods
ok 200 GET /api/v1/namespaces/team-a/pods/p2
ok 200 PATCH /api/v1/namespaces/team-a/pods/p1/status -H "$S" -d '{"status":{"phase":"Running"}}'
ok 200 PATCH /api/v1/namespaces/team-a/pods/p1 -H "$S" -d '{"metadata":{"finalizers":["fatia.dev/agent"]}}'
# pods/binding: refused, or not served at all (fatiad binds through spec.nodeName)
api POST /api/v1/namespaces/team-a/pods/p3/binding -H "$J" -d '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p3"},"target":{"kind":"Node","name":"n1"}}'
case $CODE in 403 | 404) ;; *) fail "ATTACK SUCCEEDED? pods/binding as n1: $CODE" ;; esac
refused "node authorizer" PATCH /api/v1/namespaces/team-a/pods/p3 -H "$M" -d '{"spec":{"nodeName":"n1"}}'
refused "node authorizer" PATCH /api/v1/namespaces/team-a/pods/p2 -H "$M" -d '{"spec":{"nodeName":"n1"}}'
refused "node authorizer" PATCH /api/v1/namespaces/team-a/pods/p2/status -H "$S" -d '{"status":{"phase":"Failed"}}'
refused "node authorizer" DELETE /api/v1/namespaces/team-a/pods/p2
refused "node authorizer" POST /api/v1/namespaces/team-a/pods/p2/eviction -H "$J" -d '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p2","namespace":"team-a"}}'
refused "a node neither creates nor binds pods" POST /api/v1/namespaces/team-a/pods -H "$J" -d '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"mine"},"spec":{"nodeName":"n1","containers":[{"name":"c","image":"busybox"}]}}'
refused "metadata.labels" PATCH /api/v1/namespaces/team-a/pods/p1 -H "$M" -d '{"metadata":{"labels":{"app":"y"}}}'
# a status write carries no label change (the label is checked below)
api PATCH /api/v1/namespaces/team-a/pods/p1/status -H "$M" -d '{"metadata":{"labels":{"app":"y"}},"status":{"phase":"Running"}}'
refused "metadata.annotations" PATCH /api/v1/namespaces/team-a/pods/p1 -H "$M" -d '{"metadata":{"annotations":{"fatia.dev/slices":"x"}}}'
refused "spec" PATCH /api/v1/namespaces/team-a/pods/p1 -H "$M" -d '{"spec":{"activeDeadlineSeconds":5}}'
as_admin
ok 200 GET /api/v1/namespaces/team-a/pods/p3
[ "$(jq -r '.spec.nodeName // ""' "$TMP/body")" = "" ] || fail "n1 bound p3: $(cat "$TMP/body")"
ok 200 GET /api/v1/namespaces/team-a/pods/p2
[ "$(jq -r '.status.phase // ""' "$TMP/body")" != Failed ] || fail "n1 wrote p2's status"
ok 200 GET /api/v1/namespaces/team-a/pods/p1
[ "$(jq -r '.metadata.labels.app' "$TMP/body")" = x ] || fail "p1's label changed"
[ "$(jq -r '.status.phase' "$TMP/body")" = Running ] || fail "n1's status write of p1 is not there"

# ---- 4. Secrets, ConfigMaps, PVCs ----
as_node system:node:n1
for s in s-used s-env s-pull; do ok 200 GET /api/v1/namespaces/team-a/secrets/$s; done
refused "node authorizer" GET /api/v1/namespaces/team-a/secrets/s-other
refused "node authorizer" GET /api/v1/namespaces/team-a/secrets
# a list or watch narrowed to one name is that name's read (upstream's RequestInfo); the answer
# holds that one object only, and another name, or a selector that does not require one, is refused
ok 200 GET "/api/v1/namespaces/team-a/secrets?fieldSelector=metadata.name%3Ds-used"
grep -q '"name":"s-used"' "$TMP/body" || fail "the narrowed list lacks s-used: $(head -c 300 "$TMP/body")"
grep -q '"name":"s-other"\|"name":"s-env"' "$TMP/body" && fail "the narrowed list holds more than s-used"
ok 200 GET "/api/v1/namespaces/team-a/configmaps?fieldSelector=metadata.name%3D%3Dcm-used"
ok 200 GET "/api/v1/namespaces/team-a/secrets?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3Ds-used" -m 5
refused "node authorizer" GET "/api/v1/namespaces/team-a/secrets?fieldSelector=metadata.name%3Ds-other"
refused "node authorizer" GET "/api/v1/namespaces/team-a/secrets?watch=1&fieldSelector=metadata.name%3Ds-other" -m 5
refused "node authorizer" GET "/api/v1/namespaces/team-a/secrets?fieldSelector=metadata.name!%3Ds-other"
refused "node authorizer" GET "/api/v1/secrets?fieldSelector=metadata.name%3Ds-used"
refused "node authorizer" GET /api/v1/secrets
refused "node authorizer" PUT /api/v1/namespaces/team-a/secrets/s-used -H "$J" -d '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s-used"},"stringData":{"k":"w"}}'
ok 200 GET /api/v1/namespaces/team-a/configmaps/cm-used
refused "node authorizer" GET /api/v1/namespaces/team-a/configmaps/cm-other
ok 200 GET /api/v1/namespaces/team-a/persistentvolumeclaims/claim-used
refused "node authorizer" GET /api/v1/namespaces/team-a/persistentvolumeclaims/claim-other
refused "serviceaccounts/token" POST /api/v1/namespaces/team-a/serviceaccounts/other/token -H "$J" -d '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}'
# the grant comes with a pod bound to n1 and goes with it
as_admin
pod p4 n1 '[{"name":"s","secret":{"secretName":"s-other"}}]'
as_node system:node:n1
ok 200 GET /api/v1/namespaces/team-a/secrets/s-other
as_admin
ok 200 DELETE "/api/v1/namespaces/team-a/pods/p4?gracePeriodSeconds=0"
for _ in $(seq 50); do
    api GET /api/v1/namespaces/team-a/pods/p4
    [ "$CODE" = 404 ] && break
    sleep 0.1
done
[ "$CODE" = 404 ] || fail "p4 not deleted: $CODE"
as_node system:node:n1
refused "node authorizer" GET /api/v1/namespaces/team-a/secrets/s-other

# ---- 4b. TokenRequests: bound to a pod of n1 (its uid), for what its projection asks ----
as_admin
ok 201 POST /api/v1/namespaces/team-a/serviceaccounts -H "$J" -d '{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"runner"}}'
TV='[{"name":"t","projected":{"sources":[{"serviceAccountToken":{"path":"token","expirationSeconds":3607}},{"serviceAccountToken":{"path":"v","audience":"vault-ok"}}]}}]'
tpod() { # tpod NAME NODE: a pod of runner with the token volume TV
    ok 201 POST /api/v1/namespaces/team-a/pods -H "$J" -d '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"'$1'"},"spec":{"nodeName":"'$2'","serviceAccountName":"runner","volumes":'"$TV"',"containers":[{"name":"c","image":"busybox"}]}}'
    jq -r .metadata.uid "$TMP/body"
}
T1=$(tpod t1 n1)
T2=$(tpod t2 n2)
tr() { printf '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":%s}' "$1"; }
ref() { printf '{"kind":"Pod","apiVersion":"v1","name":"%s","uid":"%s"}' "$1" "$2"; }
TR=/api/v1/namespaces/team-a/serviceaccounts/runner/token
as_node system:node:n1
ok 201 POST $TR -H "$J" -d "$(tr '{"boundObjectRef":'"$(ref t1 "$T1")"',"expirationSeconds":3607}')"
ok 201 POST $TR -H "$J" -d "$(tr '{"boundObjectRef":'"$(ref t1 "$T1")"',"audiences":["vault-ok"],"expirationSeconds":3600}')"
refused "bound to a pod scheduled on a different node" POST $TR -H "$J" -d "$(tr '{"boundObjectRef":'"$(ref t2 "$T2")"'}')"
refused "node requested token not bound to a pod" POST $TR -H "$J" -d "$(tr '{}')"
refused "node requested token with a pod binding without a uid" POST $TR -H "$J" -d "$(tr '{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"t1"}}')"
refused 'does not have access to the audience \"vault\"' POST $TR -H "$J" -d "$(tr '{"boundObjectRef":'"$(ref t1 "$T1")"',"audiences":["vault"]}')"
refused "longer than the pod's projection asks for (3600)" POST $TR -H "$J" -d "$(tr '{"boundObjectRef":'"$(ref t1 "$T1")"',"audiences":["vault-ok"],"expirationSeconds":3607}')"
refused "longer than the pod's projection asks for (3607)" POST $TR -H "$J" -d "$(tr '{"boundObjectRef":'"$(ref t1 "$T1")"',"expirationSeconds":86400}')"

# ---- 5. ResourceSlices, Events, nothing else ----
RS='{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"NODE-gpu"},"spec":{"driver":"gpu.nvidia.com","nodeName":"NODE","pool":{"name":"NODE","generation":1,"resourceSliceCount":1},"devices":[]}}'
ok 201 POST /apis/resource.k8s.io/v1/resourceslices -H "$J" -d "${RS//NODE/n1}"
refused "spec.nodeName" POST /apis/resource.k8s.io/v1/resourceslices -H "$J" -d "${RS//NODE/n2}"
as_admin
ok 201 POST /apis/resource.k8s.io/v1/resourceslices -H "$J" -d "${RS//NODE/n2}"
as_node system:node:n1
refused "spec.nodeName" DELETE /apis/resource.k8s.io/v1/resourceslices/n2-gpu
refused "spec.nodeName" PATCH /apis/resource.k8s.io/v1/resourceslices/n1-gpu -H "$M" -d '{"spec":{"nodeName":"n2"}}'
ok 201 POST /api/v1/namespaces/team-a/events -H "$J" -d '{"apiVersion":"v1","kind":"Event","metadata":{"name":"e1"},"involvedObject":{"kind":"Pod","namespace":"team-a","name":"p1"},"reason":"Started","message":"m","type":"Normal"}'
refused "node authorizer" GET /apis/kueue.x-k8s.io/v1beta1/clusterqueues
refused "node authorizer" GET /api/v1/namespaces
refused "node authorizer" POST /api/v1/namespaces -H "$J" -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"evil"}}'
refused "node authorizer" GET /apis/rbac.authorization.k8s.io/v1/clusterroles
refused "node authorizer" POST /apis/rbac.authorization.k8s.io/v1/clusterrolebindings -H "$J" -d '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"evil"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"system:node:n1"}]}'
ok 200 GET /api

# a ClusterRoleBinding made by the admin does not widen a node (the authorizer decides first)
as_admin
ok 201 POST /apis/rbac.authorization.k8s.io/v1/clusterrolebindings -H "$J" -d '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"nodes-admin"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},"subjects":[{"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"system:nodes"}]}'
as_node system:node:n1
refused "node authorizer" GET /api/v1/namespaces/team-a/secrets/s-other

# ---- 6. an unknown node, a look-alike ----
as_node mallory
refused "unknown node" GET /api/v1/nodes
as_node system:node:n1
ok 200 GET /api/v1/nodes
WHO=look-alike
AS_TOKEN=$(awk '$2 == "system:node:n1" && $0 !~ /system:nodes/ {print $1; exit}' "$D/tokens")
refused "forbidden" GET /api/v1/namespaces/team-a/secrets/s-used

stop_fatiad
finish

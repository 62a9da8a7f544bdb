#!/bin/bash
# tests/cli/apiserver-core-kinds.sh: every core kind of issue #18, every verb, table-driven, with
# the real kubectl 1.27 and 1.33 against a real fatiad. Per kind (one row below, one manifest
# tests/data/core-kinds/KIND.yaml and one invalid KIND.bad.yaml):
#   create (one kubectl create -f of all of them), list (-A, all kinds in one get), get by name
#   (by short name where there is one) with the columns kubectl prints, label (a patch), get -o
#   yaml, replace (update), the invalid
#   manifest refused naming the object and the field path (and the stored object unchanged: a
#   rejected write changes nothing), delete, and get after delete (NotFound).
# Then the behaviour that is not a plain verb: a Secret's stringData stored base64 in data and
# never served back; a Service's targetPort defaulted; `kubectl create` subcommands (when the
# server speaks protobuf, which `kubectl create deployment|configmap|...` sends: skipped in that
# part, with a message, until then) and kubectl api-resources listing every kind.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
D=$(cd "$(dirname "$0")/../data/core-kinds" && pwd)

# file|resource|short|name|namespaced|header (fixed string)|error of the .bad manifest
ROWS=$(
    cat <<'EOF'
configmap|configmaps|cm|cfg|y|NAME   DATA   AGE|data[bad key]: a valid config key
secret|secrets||creds|y|NAME    TYPE     DATA   AGE|data[user]: illegal base64 data
serviceaccount|serviceaccounts|sa|runner|y|NAME     SECRETS   AGE|automountServiceAccountToken: expected boolean
service|services|svc|web|y|NAME   TYPE        CLUSTER-IP   EXTERNAL-IP   PORT(S)          AGE|must be less than or equal to 65535
endpoints|endpoints|ep|web|y|NAME   ENDPOINTS                     AGE|subsets[0].addresses[0].ip: required field is missing
endpointslice|endpointslices.discovery.k8s.io||web-abc|y|NAME      ADDRESSTYPE   PORTS   ENDPOINTS   AGE|addressType: unsupported value "IPv5"
persistentvolumeclaim|persistentvolumeclaims|pvc|data|y|NAME   STATUS   VOLUME   CAPACITY   ACCESS MODES   STORAGECLASS   AGE|spec.accessModes[0]: unsupported value "ReadWriteSometimes"
persistentvolume|persistentvolumes|pv|pv-one|n|NAME     CAPACITY   ACCESS MODES   RECLAIM POLICY   STATUS   CLAIM   STORAGECLASS   REASON   AGE|may not specify more than 1 volume type
storageclass|storageclasses.storage.k8s.io|sc|local-path|n|NAME         PROVISIONER            RECLAIMPOLICY   VOLUMEBINDINGMODE      ALLOWVOLUMEEXPANSION   AGE|reclaimPolicy: unsupported value "Recycle"
deployment|deployments.apps|deploy|web|y|NAME   READY   UP-TO-DATE   AVAILABLE   AGE|`selector` does not match template `labels`
replicaset|replicasets.apps|rs|web-rs|y|NAME     DESIRED   CURRENT   READY   AGE|spec.replicas: must be greater than or equal to 0
statefulset|statefulsets.apps|sts|db|y|NAME   READY   AGE|spec.podManagementPolicy: unsupported value "Random"
daemonset|daemonsets.apps|ds|agent|y|NAME    DESIRED   CURRENT   READY   UP-TO-DATE   AVAILABLE   NODE SELECTOR   AGE|spec.template.spec.restartPolicy: unsupported value "Never"
cronjob|cronjobs.batch|cj|nightly|y|NAME      SCHEDULE      TIMEZONE   SUSPEND   ACTIVE   LAST SCHEDULE   AGE|spec.schedule: invalid value "61 * * * *"
role|roles.rbac.authorization.k8s.io||reader|y|NAME     CREATED AT|namespaced rules cannot apply to non-resource URLs
clusterrole|clusterroles.rbac.authorization.k8s.io||core-t-viewer|n|NAME            CREATED AT|rules[0].verbs: required field is missing
rolebinding|rolebindings.rbac.authorization.k8s.io||read-pods|y|NAME        ROLE          AGE|subjects[0].kind: unsupported value "Robot"
clusterrolebinding|clusterrolebindings.rbac.authorization.k8s.io||core-t-viewers|n|NAME             ROLE                        AGE|roleRef.kind: unsupported value "Role"
poddisruptionbudget|poddisruptionbudgets.policy|pdb|web-pdb|y|NAME      MIN AVAILABLE   MAX UNAVAILABLE   ALLOWED DISRUPTIONS   AGE|minAvailable and maxUnavailable cannot be both set
resourcequota|resourcequotas|quota|gpus|y|NAME AGE REQUEST LIMIT|spec.hard[pods]
limitrange|limitranges|limits|defaults|y|NAME       CREATED AT|default[cpu]: must be less than or equal to max value
priorityclass|priorityclasses.scheduling.k8s.io|pc|core-t-high|n|NAME          VALUE    GLOBAL-DEFAULT   PREEMPTIONPOLICY   AGE|value: maximum allowed value of a user defined priority is 1000000000
EOF
)

for v in 1.27 1.33; do
    k="$KUBECTL_DIR/kubectl.$v"
    start_fatiad "$TMP/data-$v" || break
    export KUBECONFIG=$KCFG
    echo '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"core-t"}}' >"$TMP/ns.json"
    expect_rc 0 "$k" apply -f "$TMP/ns.json"

    # create every kind in one kubectl call, then list them all across namespaces in one
    files=() all=
    while IFS='|' read -r file res _ _ _ _ _; do
        files+=(-f "$D/$file.yaml")
        all=${all:+$all,}$res
    done <<<"$ROWS"
    expect_rc 0 "$k" create "${files[@]}"
    cp "$TMP/out" "$TMP/created"
    expect_rc 0 "$k" get "$all" -A -o name
    cp "$TMP/out" "$TMP/listed"

    while IFS='|' read -r file res short name nsd header bad; do
        nsf=()
        [ "$nsd" = y ] && nsf=(-n core-t)
        what="kubectl $v $file"
        expect_line "$TMP/created" "/$name created"
        expect_line "$TMP/listed" "/$name"
        # get by name (by its short name where it has one): the columns kubectl prints
        expect_rc 0 "$k" get "${short:-$res}" "$name" "${nsf[@]}"
        got=$(head -1 "$TMP/out" | tr -s ' ')
        [ "$got" = "$(echo "$header" | tr -s ' ')" ] || fail "$what: header '$(head -1 "$TMP/out")', want '$header'"
        grep -q "^$name " "$TMP/out" || fail "$what: no row for $name: $(cat "$TMP/out")"
        # label: a patch; then replace: an update of what get returned
        expect_rc 0 "$k" label "$res" "$name" "${nsf[@]}" tier=test
        expect_rc 0 "$k" get "$res" "$name" "${nsf[@]}" -o yaml
        cp "$TMP/out" "$TMP/$file.got.yaml"
        expect_line "$TMP/$file.got.yaml" "tier: test"
        sed -i 's/tier: test/tier: replaced/' "$TMP/$file.got.yaml"
        expect_rc 0 "$k" replace -f "$TMP/$file.got.yaml"
        expect_rc 0 "$k" get "$res" "$name" "${nsf[@]}" -o jsonpath='{.metadata.labels.tier} {.metadata.resourceVersion}'
        read -r tier rv <"$TMP/out"
        [ "$tier" = replaced ] || fail "$what: replace did not store: $(cat "$TMP/out")"
        # the invalid manifest: refused, naming the object and the field, nothing changed
        expect_rc 1 "$k" apply -f "$D/$file.bad.yaml"
        grep -qF -- "$bad" "$TMP/err" || fail "$what: bad manifest error lacks '$bad': $(cat "$TMP/err")"
        grep -qF -- "$name" "$TMP/err" || fail "$what: bad manifest error does not name $name"
        rv2=$("$k" get "$res" "$name" "${nsf[@]}" -o jsonpath='{.metadata.resourceVersion}')
        [ "$rv" = "$rv2" ] || fail "$what: the refused write changed the object ($rv -> $rv2)"
        # delete, then gone
        expect_rc 0 "$k" delete "$res" "$name" "${nsf[@]}"
        expect_rc 1 "$k" get "$res" "$name" "${nsf[@]}"
        expect_line "$TMP/err" "NotFound"
    done <<<"$ROWS"

    # Secret: stringData is merged into data (base64) and never stored or served
    expect_rc 0 "$k" apply -f "$D/secret.yaml"
    expect_rc 0 "$k" get secret creds -n core-t -o json
    python3 - "$TMP/out" <<'PY' || fail "kubectl $v: secret stringData not merged"
import base64, json, sys
s = json.load(open(sys.argv[1]))
assert "stringData" not in s, s
assert base64.b64decode(s["data"]["password"]) == b"s3cr3t-pw", s["data"]
assert base64.b64decode(s["data"]["user"]) == b"admin", s["data"]
assert s["type"] == "Opaque"
PY
    grep -q "s3cr3t-pw" "$TMP/data-$v/audit.log" && fail "kubectl $v: the secret's value is in audit.log"
    # Service defaults: targetPort = port, type ClusterIP, protocol TCP
    expect_rc 0 "$k" apply -f "$D/service.yaml"
    expect_rc 0 "$k" get svc web -n core-t -o jsonpath='{.spec.type} {.spec.ports[1].targetPort} {.spec.ports[0].targetPort} {.spec.ports[0].protocol}'
    [ "$(cat "$TMP/out")" = "ClusterIP 443 8080 TCP" ] || fail "kubectl $v: service defaults: $(cat "$TMP/out")"
    expect_rc 0 "$k" get svc web -n core-t
    expect_line "$TMP/out" "80/TCP,443/TCP"
    # wide columns of a Deployment
    expect_rc 0 "$k" apply -f "$D/deployment.yaml"
    expect_rc 0 "$k" get deploy web -n core-t -o wide
    tr -s ' ' <"$TMP/out" | grep -q "^web 0/3 0 0 [0-9a-z]* srv nginx:1.25 app=web$" ||
        fail "kubectl $v: deployment -o wide: $(cat "$TMP/out")"
    # kubectl cluster-info lists Services (it failed with "the server doesn't have a resource
    # type services" before they were served)
    expect_rc 0 "$k" cluster-info
    expect_line "$TMP/out" "is running at"
    expect_line "$TMP/out" "$URL" # 1.27 colours the words and the address apart
    # every kind is discoverable
    expect_rc 0 "$k" api-resources
    for r in configmaps secrets serviceaccounts services endpoints endpointslices persistentvolumeclaims \
        persistentvolumes storageclasses deployments replicasets statefulsets daemonsets cronjobs roles \
        clusterroles rolebindings clusterrolebindings poddisruptionbudgets resourcequotas limitranges \
        priorityclasses; do
        grep -q "^$r " "$TMP/out" || fail "kubectl $v: api-resources lacks $r"
    done
    # `kubectl create` subcommands send protobuf for built-in kinds: run them once the server
    # speaks it (issue #19), through --dry-run=client | apply until then
    expect_rc 0 "$k" create configmap made --from-literal=a=1 -n core-t --dry-run=client -o yaml
    "$k" apply -f "$TMP/out" >/dev/null 2>&1 || fail "kubectl $v: create configmap | apply"
    expect_rc 0 "$k" create secret generic made-s --from-literal=k=v -n core-t --dry-run=client -o yaml
    "$k" apply -f "$TMP/out" >/dev/null 2>&1 || fail "kubectl $v: create secret | apply"
    expect_rc 0 "$k" get cm made -n core-t -o jsonpath='{.data.a}'
    [ "$(cat "$TMP/out")" = 1 ] || fail "kubectl $v: configmap from literal: $(cat "$TMP/out")"
    stop_fatiad
done
finish

#!/bin/bash
# tests/cli/kubectl-create.sh: `kubectl create <subcommand>` for the served kinds, run directly
# (kubectl sends built-in kinds as protobuf), with kubectl 1.27 and 1.33 against a real fatiad:
# namespace, deployment, configmap, secret (generic, tls and docker-registry), service
# (clusterip, nodeport), serviceaccount, role, rolebinding, clusterrole, clusterrolebinding,
# cronjob, job (from an image and from a CronJob), poddisruptionbudget, quota, priorityclass,
# `kubectl run` and `kubectl expose`; each object read back with the fields the subcommand sets;
# each also through `--dry-run=client -o yaml | kubectl apply` (JSON); a kind fatiad does not
# serve (Ingress) is refused naming the kind; `kubectl create token` makes a ServiceAccount token.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"

for v in 1.27 1.33; do
    k="$KUBECTL_DIR/kubectl.$v"
    start_fatiad "$TMP/data-$v" || break
    export KUBECONFIG=$KCFG
    expect_rc 0 "$k" create namespace mk
    expect_line "$TMP/out" "namespace/mk created"
    [ "$("$k" get ns mk -o jsonpath='{.status.phase}')" = Active ] || fail "kubectl $v: namespace mk not Active"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMP/tls.key" -out "$TMP/tls.crt" \
        -subj /CN=mk -days 1 >/dev/null 2>&1 || fail "openssl"

    # name|kubectl create arguments (the object in namespace mk)|jsonpath|expected
    while IFS='|' read -r res args jp expect; do
        [ -n "$res" ] || continue
        # shellcheck disable=SC2086
        if ! "$k" create $args -n mk --dry-run=client -o yaml >"$TMP/obj.yaml" 2>"$TMP/err"; then
            fail "kubectl $v create $args: $(cat "$TMP/err")"
            continue
        fi
        expect_rc 0 "$k" apply -f "$TMP/obj.yaml"
        name=$(awk '/^  name:/ {print $2; exit}' "$TMP/obj.yaml")
        expect_rc 0 "$k" get "$res" "$name" -n mk -o jsonpath="$jp"
        [ "$(cat "$TMP/out")" = "$expect" ] || fail "kubectl $v create $args: $jp is '$(cat "$TMP/out")', want '$expect'"
        # and directly (protobuf), read back again
        expect_rc 0 "$k" delete "$res" "$name" -n mk
        # shellcheck disable=SC2086
        expect_rc 0 "$k" create $args -n mk
        expect_line "$TMP/out" "created"
        expect_rc 0 "$k" get "$res" "$name" -n mk -o jsonpath="$jp"
        [ "$(cat "$TMP/out")" = "$expect" ] || fail "kubectl $v create $args (direct): $jp is '$(cat "$TMP/out")', want '$expect'"
    done <<EOT
deployments|deployment web --image=nginx:1.25 --replicas=2 --port=80|{.spec.replicas} {.spec.template.spec.containers[0].image} {.spec.selector.matchLabels.app}|2 nginx:1.25 web
configmaps|configmap cfg --from-literal=a=1 --from-literal=b=two|{.data.a} {.data.b}|1 two
secrets|secret generic pw --from-literal=password=s3cr3t|{.type} {.data.password}|Opaque czNjcjN0
secrets|secret tls cert --cert=$TMP/tls.crt --key=$TMP/tls.key|{.type}|kubernetes.io/tls
secrets|secret docker-registry reg --docker-server=r.example --docker-username=u --docker-password=p|{.type}|kubernetes.io/dockerconfigjson
services|service nodeport np --tcp=81:8081 --node-port=30081|{.spec.type} {.spec.ports[0].nodePort} {.spec.selector.app}|NodePort 30081 np
services|service clusterip web --tcp=80:8080|{.spec.type} {.spec.ports[0].port} {.spec.ports[0].targetPort} {.spec.selector.app}|ClusterIP 80 8080 web
serviceaccounts|serviceaccount runner|{.metadata.name}|runner
roles|role reader --verb=get,list --resource=pods,configmaps|{.rules[0].verbs}|["get","list"]
rolebindings|rolebinding read --role=reader --user=alice --serviceaccount=mk:runner|{.roleRef.kind}/{.roleRef.name} {.subjects[0].name} {.subjects[1].kind}|Role/reader alice ServiceAccount
cronjobs|cronjob nightly --image=busybox --schedule=@daily|{.spec.schedule}|@daily
poddisruptionbudgets|poddisruptionbudget web-pdb --selector=app=web --min-available=1|{.spec.minAvailable}|1
resourcequotas|quota gpus --hard=requests.nvidia.com/gpu=4,count/deployments.apps=3|{.spec.hard.requests\.nvidia\.com/gpu}|4
EOT
    # the rest directly (protobuf)
    expect_rc 0 "$k" create job once -n mk --image=busybox -- true
    expect_line "$TMP/out" "job.batch/once created"
    [ "$("$k" get job once -n mk -o jsonpath='{.spec.template.spec.containers[0].image} {.spec.template.spec.restartPolicy}')" = "busybox Never" ] ||
        fail "kubectl $v: job read back"
    expect_rc 0 "$k" create job from-cron -n mk --from=cronjob/nightly
    [ "$("$k" get job from-cron -n mk -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}')" = CronJob/nightly ] ||
        fail "kubectl $v: job --from=cronjob read back"
    expect_rc 0 "$k" create priorityclass direct-pc --value=7 -o name
    expect_line "$TMP/out" "priorityclass.scheduling.k8s.io/direct-pc"
    expect_rc 0 "$k" create clusterrole direct-cr --verb=list --resource=pods
    expect_rc 0 "$k" create clusterrolebinding direct-crb --clusterrole=direct-cr --user=bob
    [ "$("$k" get clusterrolebinding direct-crb -o jsonpath='{.roleRef.name} {.subjects[0].name}')" = "direct-cr bob" ] ||
        fail "kubectl $v: clusterrolebinding (direct) read back"
    expect_rc 0 "$k" run solo -n mk --image=busybox --labels=app=solo --env=A=1 --port=8080 -- sleep 1
    expect_line "$TMP/out" "pod/solo created"
    [ "$("$k" get pod solo -n mk -o jsonpath='{.spec.containers[0].image} {.metadata.labels.run}{.metadata.labels.app} {.spec.containers[0].env[0].value} {.spec.containers[0].args}')" = 'busybox solo 1 ["sleep","1"]' ] ||
        fail "kubectl $v: run read back: $("$k" get pod solo -n mk -o json)"
    expect_rc 0 "$k" expose pod solo -n mk --port=80 --target-port=8080
    expect_line "$TMP/out" "service/solo exposed"
    [ "$("$k" get svc solo -n mk -o jsonpath='{.spec.selector.app} {.spec.ports[0].port} {.spec.ports[0].targetPort}')" = "solo 80 8080" ] ||
        fail "kubectl $v: expose pod read back"
    expect_rc 0 "$k" expose deployment web -n mk --port=9090 --target-port=80 --name=web-direct
    [ "$("$k" get svc web-direct -n mk -o jsonpath='{.spec.selector.app} {.spec.ports[0].port}')" = "web 9090" ] ||
        fail "kubectl $v: expose deployment (direct) read back"
    # a direct create that the server refuses changes nothing
    expect_rc 1 "$k" create cronjob bad2 -n mk --image=busybox --schedule="61 * * * *"
    expect_line "$TMP/err" 'spec.schedule: invalid value "61 * * * *"'
    expect_rc 1 "$k" get cronjob bad2 -n mk
    # cluster-scoped ones
    expect_rc 0 "$k" create priorityclass high --value=1000 --description=urgent --dry-run=client -o yaml
    "$k" apply -f "$TMP/out" >/dev/null 2>&1 || fail "kubectl $v: priorityclass"
    [ "$("$k" get pc high -o jsonpath='{.value} {.preemptionPolicy}')" = "1000 PreemptLowerPriority" ] || fail "kubectl $v: priorityclass read back"
    expect_rc 0 "$k" create clusterrole viewer --verb=get --resource=deployments.apps --dry-run=client -o yaml
    "$k" apply -f "$TMP/out" >/dev/null 2>&1 || fail "kubectl $v: clusterrole"
    expect_rc 0 "$k" create clusterrolebinding viewers --clusterrole=viewer --group=viewers --dry-run=client -o yaml
    "$k" apply -f "$TMP/out" >/dev/null 2>&1 || fail "kubectl $v: clusterrolebinding"
    [ "$("$k" get clusterrolebinding viewers -o jsonpath='{.roleRef.name} {.subjects[0].kind}')" = "viewer Group" ] || fail "kubectl $v: clusterrolebinding read back"
    # a schedule with spaces (quoted: the table above splits on spaces), and an invalid one
    expect_rc 0 "$k" create cronjob weekdays -n mk --image=busybox --schedule="30 6 * * 1-5" --dry-run=client -o yaml -- true
    cp "$TMP/out" "$TMP/cj.yaml"
    expect_rc 0 "$k" apply -f "$TMP/cj.yaml"
    [ "$("$k" get cj weekdays -n mk -o jsonpath='{.spec.schedule}')" = "30 6 * * 1-5" ] || fail "kubectl $v: cronjob schedule"
    expect_rc 0 "$k" create cronjob bad -n mk --image=busybox --schedule="61 * * * *" --dry-run=client -o yaml -- true
    cp "$TMP/out" "$TMP/cj.yaml"
    expect_rc 1 "$k" apply -f "$TMP/cj.yaml"
    expect_line "$TMP/err" 'spec.schedule: invalid value "61 * * * *"'
    # expose: a Service for the Deployment, its selector and port from it
    expect_rc 0 "$k" expose deployment web -n mk --port=8080 --target-port=80 --name=web-exposed --dry-run=client -o yaml
    "$k" apply -f "$TMP/out" >/dev/null 2>&1 || fail "kubectl $v: expose"
    [ "$("$k" get svc web-exposed -n mk -o jsonpath='{.spec.selector.app} {.spec.ports[0].port} {.spec.ports[0].targetPort}')" = "web 8080 80" ] ||
        fail "kubectl $v: expose read back"
    # a kind fatiad does not serve: refused, naming it
    expect_rc 0 "$k" create ingress web -n mk --rule=example.com/=web:80 --dry-run=client -o yaml
    cp "$TMP/out" "$TMP/ing.yaml"
    expect_rc 1 "$k" apply -f "$TMP/ing.yaml"
    grep -q 'Ingress' "$TMP/err" || fail "kubectl $v: an unserved kind not named: $(cat "$TMP/err")"
    expect_rc 1 "$k" create ingress web -n mk --rule=example.com/=web:80
    grep -q -i 'ingress' "$TMP/err" || fail "kubectl $v: an unserved kind (direct) not named: $(cat "$TMP/err")"
    # a TokenRequest (served since RBAC: tests/cli/apiserver-satoken.sh has the rest)
    expect_rc 0 "$k" create token runner -n mk
    [ "$(tr -cd . <"$TMP/out" | wc -c)" = 2 ] || fail "kubectl $v: create token is not a JWT: $(cat "$TMP/out")"
    stop_fatiad
done
finish

#!/usr/bin/env bash
# tests/cli/containers-tenant.sh: the runtime rule (src/controller/tenancy.c): a tenant's pod or
# Job that names the fatia-process RuntimeClass (host processes, outside any container) is
# refused with 422 on spec.runtimeClassName, unless the admin annotated its Namespace
# fatia.dev/process-runtime: allowed; the admin's own pods are not held to it.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
trap 'if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi; rm -rf "$TMP"' EXIT

D=$TMP/d
FATIAD_CONTROLLERS=1 start_fatiad "$D" --no-agent || exit 1
K="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $KCFG"
for ns in team-a team-b; do
    echo "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$ns\"}}" | $K create -f - >/dev/null ||
        fail "create namespace $ns"
    "$BUILD/bin/fatia" token create --data-dir "$D" --user "m-$ns" --namespace "$ns" \
        >"$TMP/$ns.kubeconfig" 2>/dev/null || fail "fatia token create"
done
$K annotate namespace team-b fatia.dev/process-runtime=allowed >/dev/null || fail "annotate team-b"
sleep 1 # the door reads Namespaces from the controllers' cache

pod() { # NAME [RUNTIMECLASS]
    printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s"},"spec":{%s"containers":[{"name":"main","image":"x","command":["true"]}]}}' \
        "$1" "${2:+\"runtimeClassName\":\"$2\",}" >"$TMP/$1.json"
    echo "$TMP/$1.json"
}
job() {
    printf '{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"%s"},"spec":{"template":{"spec":{"restartPolicy":"Never","runtimeClassName":"fatia-process","containers":[{"name":"main","image":"x","command":["true"]}]}}}}' \
        "$1" >"$TMP/$1.json"
    echo "$TMP/$1.json"
}
TA="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $TMP/team-a.kubeconfig -n team-a"
TB="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $TMP/team-b.kubeconfig -n team-b"

if $TA create -f "$(pod proc fatia-process)" >"$TMP/out" 2>"$TMP/err"; then
    fail "ATTACK SUCCEEDED: a tenant's pod runs as host processes in team-a"
fi
expect_line "$TMP/err" "spec.runtimeClassName"
grep -q "Invalid\|422\|Unsupported value" "$TMP/err" || fail "not a 422: $(cat "$TMP/err")"
if $TA create -f "$(job pjob)" >"$TMP/out" 2>"$TMP/err"; then
    fail "ATTACK SUCCEEDED: a tenant's Job template names fatia-process in team-a"
fi
expect_line "$TMP/err" "spec.template.spec.runtimeClassName"
$TA create -f "$(pod plain)" >"$TMP/out" 2>"$TMP/err" || fail "a plain pod refused: $(cat "$TMP/err")"
$TB create -f "$(pod allowed fatia-process)" >"$TMP/out" 2>"$TMP/err" ||
    fail "refused in the allowed namespace team-b: $(cat "$TMP/err")"
$K -n team-a create -f "$(pod admin fatia-process)" >"$TMP/out" 2>"$TMP/err" ||
    fail "the admin's pod refused: $(cat "$TMP/err")"
finish

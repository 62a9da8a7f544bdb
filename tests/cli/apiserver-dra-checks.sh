#!/bin/bash
# tests/cli/apiserver-dra-checks.sh: fatiad refuses what `fatia validate` refuses. The demand
# layer's checks (CEL selectors of DeviceClasses, ResourceClaims and ResourceClaimTemplates,
# NVIDIA opaque configs) are passed to the API server by fatiad's wiring (demand/demand.h): a
# write with a selector that does not compile is answered 422 naming the field, on create, on
# update and on patch (a tenant who creates a valid claim and then patches a bad selector in),
# and with the same message as `fatia validate`. A valid object of each kind is created (201), so
# a server that refused everything would fail too.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"

start_fatiad "$TMP/data" --no-agent || exit 1
api POST /api/v1/namespaces -H 'Content-Type: application/json' \
    -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns1"}}'
[ "$CODE" = 201 ] || fail "namespace ns1: $CODE $(cat "$TMP/body")"

DC=/apis/resource.k8s.io/v1/deviceclasses
RC=/apis/resource.k8s.io/v1/namespaces/ns1/resourceclaims
RCT=/apis/resource.k8s.io/v1/namespaces/ns1/resourceclaimtemplates

class() { # class NAME EXPR
    printf '{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":"%s"},"spec":{"selectors":[{"cel":{"expression":"%s"}}]}}' "$1" "$2"
}
claim_spec() { # claim_spec EXPR
    printf '{"devices":{"requests":[{"name":"g","exactly":{"deviceClassName":"k","selectors":[{"cel":{"expression":"%s"}}]}}]}}' "$1"
}
claim() { # claim NAME EXPR
    printf '{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"%s","namespace":"ns1"},"spec":%s}' "$1" "$(claim_spec "$2")"
}
template() { # template NAME EXPR
    printf '{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate","metadata":{"name":"%s","namespace":"ns1"},"spec":{"spec":%s}}' "$1" "$(claim_spec "$2")"
}
# expect_422 WHAT FIELD MESSAGE: the last answer was 422 and its message names FIELD and MESSAGE
expect_422() {
    if [ "$CODE" != 422 ]; then
        fail "$1: answered $CODE, want 422: $(cat "$TMP/body")"
        return
    fi
    expect_line "$TMP/body" "$2"
    expect_line "$TMP/body" "$3"
}

BAD="device.driver == 'x' && devcie.y"
GOOD="device.driver == 'gpu.nvidia.com'"

# DeviceClass: bad selector refused, valid one created
api POST $DC -H 'Content-Type: application/json' -d "$(class bad "$BAD")"
expect_422 "deviceclass bad" "spec.selectors[0].cel.expression" \
    "compilation failed: 1:25: undeclared reference to 'devcie'"
api GET $DC/bad
[ "$CODE" = 404 ] || fail "deviceclass bad was stored: GET answered $CODE"
api POST $DC -H 'Content-Type: application/json' -d "$(class k "$GOOD")"
[ "$CODE" = 201 ] || fail "deviceclass k: $CODE $(cat "$TMP/body")"
# too expensive: the cost estimate, not only the syntax
L='[0,1,2,3,4,5,6,7,8,9]'
api POST $DC -H 'Content-Type: application/json' \
    -d "$(class costly "$L.all(a, $L.all(b, $L.all(c, $L.all(d, $L.all(e, $L.all(f, true))))))")"
expect_422 "deviceclass costly" "spec.selectors[0].cel.expression" "too complex, exceeds cost limit"
# not a bool
api POST $DC -H 'Content-Type: application/json' -d "$(class notbool "device.driver")"
expect_422 "deviceclass notbool" "spec.selectors[0].cel.expression" "must evaluate to bool"

# ResourceClaim: bad selector refused on create; valid one created, then an update and a merge
# patch that bring a bad selector in are refused too
api POST $RC -H 'Content-Type: application/json' -d "$(claim bad "device.attributes['x'].y ==")"
expect_422 "resourceclaim bad" "spec.devices.requests[0].exactly.selectors[0].cel.expression" \
    "compilation failed: 1:28: syntax error: unexpected end of input"
api POST $RC -H 'Content-Type: application/json' -d "$(claim c "$GOOD")"
[ "$CODE" = 201 ] || fail "resourceclaim c: $CODE $(cat "$TMP/body")"
api PUT $RC/c -H 'Content-Type: application/json' -d "$(claim c "$BAD")"
expect_422 "resourceclaim c update" "spec.devices.requests[0].exactly.selectors[0].cel.expression" \
    "undeclared reference to 'devcie'"
api PATCH $RC/c -H 'Content-Type: application/merge-patch+json' \
    -d "{\"spec\":$(claim_spec "$BAD")}"
expect_422 "resourceclaim c patch" "spec.devices.requests[0].exactly.selectors[0].cel.expression" \
    "undeclared reference to 'devcie'"
api GET $RC/c
expect_line "$TMP/body" "device.driver == 'gpu.nvidia.com'"

# ResourceClaimTemplate: the path inside spec.spec
api POST $RCT -H 'Content-Type: application/json' -d "$(template t "$BAD")"
expect_422 "resourceclaimtemplate t" \
    "spec.spec.devices.requests[0].exactly.selectors[0].cel.expression" "undeclared reference"

# an NVIDIA opaque config is checked the same way
api POST $RC -H 'Content-Type: application/json' -d '{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"cfg","namespace":"ns1"},"spec":{"devices":{"requests":[{"name":"g","exactly":{"deviceClassName":"k"}}],"config":[{"opaque":{"driver":"gpu.nvidia.com","parameters":{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","bogus":1}}}]}}}'
if [ "$CODE" != 422 ]; then fail "resourceclaim cfg: answered $CODE, want 422"; fi
expect_line "$TMP/body" "spec.devices.config[0].opaque.parameters"

# the CLI says the same about the same object
class bad "$BAD" >"$TMP/bad.json"
expect_rc 1 "$FATIA" validate -f "$TMP/bad.json"
expect_line "$TMP/out" "spec.selectors[0].cel.expression: compilation failed: 1:25: undeclared reference to 'devcie'"
stop_fatiad
finish

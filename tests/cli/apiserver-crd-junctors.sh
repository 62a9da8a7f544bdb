#!/bin/bash
# tests/cli/apiserver-crd-junctors.sh: the value validations inside a CRD schema's anyOf, allOf,
# oneOf and not (src/apiserver/crd_junctors.c) over raw HTTP against a real fatiad: the V cases of
# apiserver_crd_cases.py (noxu's anyOf "delta" of apiextensions-apiserver's integration test, then
# one case per junctor after kube-openapi's schema_props.go), each create accepted or refused with
# 422 and every expected message. Apart from apiserver-crd-user.sh, which is at the slow tier's
# two minutes already.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
need_python3
start_fatiad "$TMP/data" || {
    finish
    exit 1
}
python3 tests/cli/apiserver_crd_cases.py "$URL" "$CA" "$TOKEN" V >"$TMP/cases.out" 2>&1 ||
    fail "apiserver_crd_cases.py: $(cat "$TMP/cases.out")"
grep -q '^13 cases, 0 failed$' "$TMP/cases.out" || fail "cases: $(tail -1 "$TMP/cases.out")"
stop_fatiad
finish

#!/bin/bash
# tests/supply/golden.sh: the supply planner's golden cases. Each tests/golden/supply/NAME.yaml
# (fleet + policies) is planned on the simulated inventory; NAME.json is the expected
# `fatia plan -o json` document, or NAME.err the expected stderr of a rejected input (exit 1,
# nothing on stdout: nothing half-applied). The walkthrough fleet (examples/fleet/) is a case too.
# UPDATE=1 rewrites the expected files from the current output (review the diff before committing).
. "$(dirname "$0")/../cli/lib.bash"
DIR=tests/golden/supply

check_case() { # name input...
    name=$1
    shift
    args=()
    for i in "$@"; do args+=(-f "$i"); done
    "$FATIA" plan --inventory sim -o json "${args[@]}" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ -f "$DIR/$name.err" ] || { [ "${UPDATE:-}" = 1 ] && [ "$rc" != 0 ]; }; then
        [ "${UPDATE:-}" = 1 ] && cp "$TMP/err" "$DIR/$name.err"
        [ "$rc" = 1 ] || fail "$name: exit $rc, want 1"
        [ -s "$TMP/out" ] && fail "$name: output on stdout although the input was rejected"
        if ! diff -u "$DIR/$name.err" "$TMP/err" >"$TMP/diff"; then
            fail "$name: stderr differs"
            cat "$TMP/diff" >&2
        fi
        return
    fi
    [ "${UPDATE:-}" = 1 ] && python3 -m json.tool --indent 1 "$TMP/out" >"$DIR/$name.json"
    if [ "$rc" != 0 ]; then
        fail "$name: exit $rc"
        cat "$TMP/err" >&2
        return
    fi
    if ! python3 - "$DIR/$name.json" "$TMP/out" <<'PY'; then
import json, sys, difflib
want = json.load(open(sys.argv[1]))
got = json.load(open(sys.argv[2]))
if want != got:
    a = json.dumps(want, indent=1, sort_keys=True).splitlines()
    b = json.dumps(got, indent=1, sort_keys=True).splitlines()
    sys.stderr.write("\n".join(list(difflib.unified_diff(a, b, "want", "got", lineterm=""))[:80]) + "\n")
    sys.exit(1)
PY
        fail "$name: plan differs from $DIR/$name.json"
    fi
}

n=0
for f in "$DIR"/*.yaml; do
    check_case "$(basename "$f" .yaml)" "$f"
    n=$((n + 1))
done
check_case walkthrough examples/fleet/00-box.yaml examples/fleet/10-sharing.yaml
[ "$n" -ge 19 ] || fail "only $n golden cases found"
finish

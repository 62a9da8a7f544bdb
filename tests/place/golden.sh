#!/bin/bash
# tests/place/golden.sh: the placement golden cases. Each tests/golden/place/CASE/ holds input.yaml
# (a fleet, its sharing policies, ResourceFlavors, Pods and Workloads), optionally `args` (extra
# options of `fatia place` on one line, e.g. --placement spread), and either expected.txt (the
# table `fatia place` prints) or expected.err (its stderr when the input is rejected: exit 1,
# nothing on stdout). Every case also runs with -o json, which must parse and agree with the table
# on which workloads were placed.
# UPDATE=1 rewrites the expected files from the current output (review the diff before committing).
. "$(dirname "$0")/../cli/lib.bash"
DIR=tests/golden/place

check_case() { # dir
    d=$1
    name=$(basename "$d")
    args=()
    [ -f "$d/args" ] && read -r -a args <"$d/args"
    "$FATIA" place -f "$d/input.yaml" "${args[@]}" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ -f "$d/expected.err" ] || { [ "${UPDATE:-}" = 1 ] && [ "$rc" != 0 ]; }; then
        [ "${UPDATE:-}" = 1 ] && cp "$TMP/err" "$d/expected.err"
        [ "$rc" = 1 ] || fail "$name: exit $rc, want 1"
        [ -s "$TMP/out" ] && fail "$name: output on stdout although the input was rejected"
        if ! diff -u "$d/expected.err" "$TMP/err" >"$TMP/diff"; then
            fail "$name: stderr differs"
            cat "$TMP/diff" >&2
        fi
        return
    fi
    [ "${UPDATE:-}" = 1 ] && cp "$TMP/out" "$d/expected.txt"
    if [ "$rc" != 0 ]; then
        fail "$name: exit $rc"
        cat "$TMP/err" >&2
        return
    fi
    [ -s "$TMP/err" ] && { fail "$name: unexpected stderr"; cat "$TMP/err" >&2; }
    if ! diff -u "$d/expected.txt" "$TMP/out" >"$TMP/diff"; then
        fail "$name: placement differs from $d/expected.txt"
        cat "$TMP/diff" >&2
    fi
    "$FATIA" place -f "$d/input.yaml" "${args[@]}" -o json >"$TMP/json" 2>"$TMP/err" ||
        fail "$name: -o json exited $?"
    placed_json=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(1 for p in d["placements"] if p["placed"]))' "$TMP/json") ||
        fail "$name: -o json does not parse"
    placed_table=$(grep -c "not placed" "$d/expected.txt")
    total=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["placements"]))' "$TMP/json")
    [ "$((total - placed_table))" = "$placed_json" ] ||
        fail "$name: json says $placed_json placed, table $((total - placed_table))"
}

n=0
for d in "$DIR"/*/; do
    check_case "${d%/}"
    n=$((n + 1))
done
[ "$n" -ge 12 ] || fail "only $n golden cases found"
finish

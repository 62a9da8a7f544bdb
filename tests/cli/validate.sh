#!/bin/bash
# tests/cli/validate.sh: `fatia validate` as a user runs it: the examples are valid, the four
# classic mistakes give four precise errors, stdin and JSON output work, usage errors exit 2.
. "$(dirname "$0")/lib.bash"

expect_rc 0 "$FATIA" validate -f examples/
expect_line "$TMP/out" "ok clusterqueue/team-a"
expect_line "$TMP/out" "ok localqueue/team-b/gpu"
expect_line "$TMP/out" "ok hardwareprofile/gpu-catalog/training-2gpu"
expect_line "$TMP/err" "0 invalid, 0 warnings"

F=tests/data/invalid/four-errors.yaml
expect_rc 1 "$FATIA" validate -f $F
expect_line "$TMP/out" "$F:14:23: error: clusterqueue/team-a: spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: invalid quantity \"12x\""
expect_line "$TMP/out" "$F:21:1: error: localqueue/team-a/gpu: spec.clusterQueue: required field is missing"
expect_line "$TMP/out" "$F:23:13: error: resourceflavor/h200: apiVersion: unsupported value \"kueue.x-k8s.io/v1\": ResourceFlavor is served as kueue.x-k8s.io/v1beta2"
expect_line "$TMP/out" "$F:28:1: error: clusterqueue/team-a: metadata.name: duplicate object: team-a is also defined at $F:2"
[ "$(grep -c ': error: ' "$TMP/out")" = 4 ] || fail "want exactly 4 errors"

# stdin, JSON output
expect_rc 0 sh -c "cat examples/40-priorities.yaml | $FATIA validate -f - -o json"
expect_line "$TMP/out" '"object": "workloadpriorityclass/urgent"'
expect_line "$TMP/out" '"valid": 3'

# a file that is not YAML at all, and one that does not exist
printf 'a: [1, 2\n' >"$TMP/broken.yaml"
expect_rc 1 "$FATIA" validate -f "$TMP/broken.yaml" -f "$TMP/missing.yaml"
expect_line "$TMP/out" "broken.yaml:2:1: error:"
expect_line "$TMP/out" "missing.yaml: error: cannot open: No such file or directory"

# usage errors
expect_rc 2 "$FATIA" validate
expect_rc 2 "$FATIA" validate -f examples -o xml
expect_rc 2 "$FATIA" no-such-command
expect_rc 0 "$FATIA" validate --help
expect_line "$TMP/out" "Usage: fatia validate"
finish

#!/bin/bash
# tests/cli/profiles.sh: `fatia profiles` as a user runs it: the example catalog as a table and
# as JSON, filters by namespace and dashboard feature, a Node profile, invalid input, usage.
. "$(dirname "$0")/lib.bash"

expect_rc 0 "$FATIA" profiles -f examples/
expect_line "$TMP/out" "NAME                           DISPLAY NAME"
expect_line "$TMP/out" "gpu-catalog/notebook-shared    Notebook (shared slice)       cpu 2 (1-4), memory 16Gi (4Gi-32Gi), nvidia.com/gpu.shared 1    queue gpu, priority interactive   enabled   workbench"
expect_line "$TMP/out" "gpu-catalog/training-2gpu"
[ "$(wc -l <"$TMP/out")" = 4 ] || fail "want a header and 3 profiles"

expect_rc 0 "$FATIA" profiles -f examples/ --feature model-serving -o json
expect_line "$TMP/out" '"name": "inference-mig-3g"'
expect_line "$TMP/out" '"default": "32Gi"'
expect_line "$TMP/out" '"localQueue": "gpu"'
grep -q notebook-shared "$TMP/out" && fail "a workbench-only profile is offered for model serving"

expect_rc 0 "$FATIA" profiles -f examples/ -n nowhere
expect_line "$TMP/err" "no hardware profiles found"

cat >"$TMP/node.yaml" <<'YAML'
apiVersion: infrastructure.opendatahub.io/v1
kind: HardwareProfile
metadata:
  name: h100-mig
  namespace: cat
  annotations: {opendatahub.io/disabled: "true", opendatahub.io/display-name: H100 MIG 3g.40gb}
spec:
  identifiers:
  - {displayName: CPU, identifier: cpu, minCount: 2, defaultCount: 4}
  scheduling:
    type: Node
    node:
      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
YAML
expect_rc 0 "$FATIA" profiles -f "$TMP/node.yaml"
expect_line "$TMP/out" "cat/h100-mig   H100 MIG 3g.40gb   cpu 4 (2-)   nodes nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3; tolerates nvidia.com/gpu:NoSchedule   disabled   all"

# invalid input is reported and fails the command; the valid profiles are still listed
printf 'apiVersion: infrastructure.opendatahub.io/v1\nkind: HardwareProfile\nmetadata: {name: bad, namespace: cat}\nspec:\n  identifiers: [{displayName: C, identifier: cpu, minCount: 4, defaultCount: 2}]\n' >"$TMP/bad.yaml"
expect_rc 1 "$FATIA" profiles -f "$TMP/bad.yaml" -f examples/
expect_line "$TMP/err" "hardwareprofile/cat/bad: spec.identifiers[0].defaultCount: must be greater than or equal to minCount"
expect_line "$TMP/out" "gpu-catalog/notebook-shared"

expect_rc 2 "$FATIA" profiles
expect_rc 2 "$FATIA" profiles -f examples/ --feature gaming
expect_rc 0 "$FATIA" profiles --help
expect_line "$TMP/out" "Usage: fatia profiles"
finish

#!/bin/bash
# tests/cli/usage.sh: `fatia usage` against the hand-computed fixtures of
# tests/data/usage/records.yaml (the arithmetic is in its comment): every --by (user too), a window, a
# running record counted up to --now, table, CSV and JSON, stdin, invalid records and usage.
. "$(dirname "$0")/lib.bash"
R=tests/data/usage/records.yaml
NOW=--now=2026-12-01T12:00:00Z

expect_rc 0 "$FATIA" usage -f $R $NOW
expect_line "$TMP/out" "team-a      nvidia.com/gpu           4.000000            2"
expect_line "$TMP/out" "team-a      cpu                      0.750000            1"
expect_line "$TMP/out" "team-a      memory                   1610612736.000000   1"
expect_line "$TMP/out" "team-b      nvidia.com/gpu.shared    0.005556            1"
expect_line "$TMP/out" "team-b      nvidia.com/mig-3g.71gb   1.500000            1"
expect_line "$TMP/out" "team-b      cpu                      0.000750            1"
[ "$(wc -l <"$TMP/out")" = 7 ] || fail "want a header and 6 rows"

expect_rc 0 "$FATIA" usage -f $R $NOW --by profile -o csv
cat >"$TMP/want.csv" <<'CSV'
profile,resource,hours,records
,nvidia.com/gpu,1.000000,1
gpu-catalog/inference-mig-3g,cpu,0.000750,1
gpu-catalog/inference-mig-3g,nvidia.com/mig-3g.71gb,1.500000,1
gpu-catalog/notebook-shared,nvidia.com/gpu.shared,0.005556,1
gpu-catalog/training-2gpu,cpu,0.750000,1
gpu-catalog/training-2gpu,memory,1610612736.000000,1
gpu-catalog/training-2gpu,nvidia.com/gpu,3.000000,1
CSV
diff "$TMP/want.csv" "$TMP/out" >&2 || fail "--by profile -o csv differs"

# per user: the creator each record names (none: "-"), summed across namespaces
expect_rc 0 "$FATIA" usage -f $R $NOW --by user -o csv
cat >"$TMP/want.csv" <<'CSV'
user,resource,hours,records
,nvidia.com/gpu.shared,0.005556,1
dora,cpu,0.750750,2
dora,memory,1610612736.000000,1
dora,nvidia.com/gpu,3.000000,1
dora,nvidia.com/mig-3g.71gb,1.500000,1
erik,nvidia.com/gpu,1.000000,1
CSV
diff "$TMP/want.csv" "$TMP/out" >&2 || fail "--by user -o csv differs"
expect_rc 0 "$FATIA" usage -f $R $NOW --by user
expect_line "$TMP/out" "-      nvidia.com/gpu.shared    0.005556            1"
expect_line "$TMP/out" "dora   cpu                      0.750750            2"

# the window [11:00, 11:15): 15 min of train-a and of serve-a
cat $R | "$FATIA" usage -f - $NOW --since 2026-12-01T11:00:00Z --until 2026-12-01T11:15:00Z --by queue -o json >"$TMP/out" ||
    fail "usage from stdin"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
rows = {(r["group"], r["resource"]): r["hours"] for r in d["usage"]}
want = {("team-a", "nvidia.com/gpu"): "0.750000", ("team-a", "cpu"): "0.125000",
        ("team-a", "memory"): "268435456.000000"}
sys.exit(0 if d["by"] == "queue" and rows == want else "got %r" % rows)' "$TMP/out" || fail "window by queue"

# a running record counts up to --now; a duration before now for --since
expect_rc 0 "$FATIA" usage -f $R --now 2026-12-01T13:00:00Z --since 1h -o csv
expect_line "$TMP/out" "team-a,nvidia.com/gpu,1.000000,1"

printf 'apiVersion: fatia.dev/v1alpha1\nkind: UsageRecord\nmetadata: {name: bad, namespace: x}\nspec: {workload: w, workloadUID: u, start: "2026-12-01T10:00:00Z", end: "2026-12-01T09:00:00Z"}\n' >"$TMP/bad.yaml"
expect_rc 1 "$FATIA" usage -f "$TMP/bad.yaml" $NOW
expect_line "$TMP/err" "spec.end: must not be before start"
# CSV fields are RFC 4180: a user with a comma and a quote is quoted, its quotes doubled
printf 'apiVersion: fatia.dev/v1alpha1\nkind: UsageRecord\nmetadata: {name: q, namespace: x}\nspec: {workload: w, workloadUID: u, user: %s, start: "2026-12-01T10:00:00Z", end: "2026-12-01T10:30:00Z", resources: {nvidia.com/gpu: "1"}}\n' "'O\"Brien, Pat'" >"$TMP/q.yaml"
expect_rc 0 "$FATIA" usage -f "$TMP/q.yaml" $NOW --by user -o csv
expect_line "$TMP/out" '"O""Brien, Pat",nvidia.com/gpu,0.500000,1'
# start and end are compared as instants, not as text: 12:30+02:00 (10:30Z) to 11:00Z is 30 min;
# 10:00Z to 11:00+05:00 (06:00Z) ends before it starts
printf 'apiVersion: fatia.dev/v1alpha1\nkind: UsageRecord\nmetadata: {name: tz, namespace: x}\nspec: {workload: w, workloadUID: u, start: "2026-12-01T12:30:00+02:00", end: "2026-12-01T11:00:00Z", resources: {nvidia.com/gpu: "1"}}\n' >"$TMP/tz.yaml"
expect_rc 0 "$FATIA" usage -f "$TMP/tz.yaml" $NOW -o csv
expect_line "$TMP/out" "x,nvidia.com/gpu,0.500000,1"
printf 'apiVersion: fatia.dev/v1alpha1\nkind: UsageRecord\nmetadata: {name: tz, namespace: x}\nspec: {workload: w, workloadUID: u, start: "2026-12-01T10:00:00Z", end: "2026-12-01T11:00:00+05:00"}\n' >"$TMP/tz.yaml"
expect_rc 1 "$FATIA" usage -f "$TMP/tz.yaml" $NOW
expect_line "$TMP/err" "spec.end: must not be before start"
expect_rc 2 "$FATIA" usage -f $R --by owner
expect_rc 2 "$FATIA" usage -f $R --since yesterday
expect_rc 0 "$FATIA" usage --help
expect_line "$TMP/out" "Usage: fatia usage"
finish

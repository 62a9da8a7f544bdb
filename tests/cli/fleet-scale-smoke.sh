#!/usr/bin/env bash
# tests/cli/fleet-scale-smoke.sh: the fleet scale harness (bench/fleet-scale.sh, docs/fleet-scale.md)
# at a size CI affords, so that it keeps working: 5 simulated nodes x 8 GPUs, 60 pods at 5 pods/s
# through Kueue admission and placement, played as no-ops. Every pod must be bound, run and
# succeed, leases be renewed (5 nodes every 10 s: at most 0.5 a second once steady; a 13 s run sees fewer), and no call fail.
. "$(dirname "$0")/lib.bash"
OUT=$TMP/scale.json bash bench/fleet-scale.sh "$BUILD" 5 60 5 >"$TMP/out" 2>"$TMP/err" ||
    { fail "fleet-scale.sh failed: $(tail -5 "$TMP/err")"; finish; }
python3 - "$TMP/scale.json" <<'PY' || fail "scale result: $(cat "$TMP/scale.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["pods_created"] == 60 and d["pods_bound"] == 60, d
assert d["pods_running"] == 60 and d["pods_succeeded"] == 60, d
assert 0.1 <= d["lease_renewals_per_s"] <= 1.0, d["lease_renewals_per_s"]
for verb, a in d["api"].items():
    assert a["errors"] == 0, (verb, a)
for verb in ("create", "patch", "delete", "get", "list"):
    assert d["api"][verb]["n"] > 0, verb
assert d["admission_to_bind_ms"]["p99"] > 0, d
assert all(p["rss_peak_mib"] > 0 for p in d["processes"].values()), d["processes"]
PY
finish

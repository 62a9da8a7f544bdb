#!/bin/bash
# bench/api-ab.sh OLD_BUILD NEW_BUILD [N]: bench/api.sh (make bench-api) on two builds, old and
# new alternated N times (default 5), then the median of each figure per build and the change.
# Each BUILD needs bin/fatiad, bin/fatia-shim, lib/libfatia-vgpu.so and bench_api_fanout (cc -O2
# -Isrc -o BUILD/bench_api_fanout bench/api_fanout.c): BENCH_PREBUILT runs them as they are.
set -eu
old=$1 new=$2 n=${3:-5}
cd "$(dirname "$0")/.."
out=$(mktemp /tmp/fatia-api-ab.XXXXXX)
for i in $(seq "$n"); do
    for v in old new; do
        b=$old
        [ $v = new ] && b=$new
        echo "=== run $i $v" >>"$out"
        BENCH_PREBUILT=1 bash bench/api.sh "$b" >>"$out" 2>&1
    done
done
python3 - "$out" <<'PY'
import re, statistics, sys
runs, cur = [], None
for line in open(sys.argv[1]):
    m = re.match(r"=== run \d+ (old|new)", line)
    if m:
        cur = {"v": m.group(1)}
        runs.append(cur)
        continue
    m = re.match(r"(\w+): ([0-9.]+)", line)
    if m and cur is not None:
        cur[m.group(1)] = float(m.group(2))
keys = [k for k in runs[0] if k != "v"]
for k in keys:
    o = [r[k] for r in runs if r["v"] == "old" and k in r]
    n = [r[k] for r in runs if r["v"] == "new" and k in r]
    mo, mn = statistics.median(o), statistics.median(n)
    ch = (mn - mo) / mo * 100 if mo else 0
    print(f"{k:34s} old {mo:10.2f}  new {mn:10.2f}  ({ch:+.0f}%)")
PY
rm -f "$out"

#!/bin/bash
# bench/create-cost.sh BUILD [OLD_BUILD N]: the cost of a create in fatiad (docs/perf-create.md).
#   One build: fatiad's CPU per create (user + system from /proc, over the unpaced runs), p50/p99
#   of creates at about 2,000/s (40 connections, each pausing 19 ms: wrk's closed loop), p50/p90/
#   p99 of creates arriving at exactly BENCH_RATE/s (default 2,000; bench/api_openloop.c: an open
#   loop, latency from the moment each request was due), the unpaced create rate (32
#   connections), each the median of 3 runs of BENCH_SECS seconds (default 5).
#   Two builds (NEW first, then OLD, then N, default 5): the two alternated N times, the median of
#   each figure per build and the change (same machine, same run).
# fatiad runs pinned to core 0, plain HTTP, no controllers, no node agent, --sync full (BENCH_SYNC=normal to
# drop the fsync), SQLite (BENCH_STORE=etcd as in bench/api.sh); wrk pinned to core 1. Objects are
# LocalQueues of about 2 KB (bench/api_write.lua), as in bench/api.sh.
# BENCH_PERF=FILE runs fatiad under `perf record --call-graph dwarf` (into FILE; its figures then
# carry perf's overhead) and prints the flat profile (`perf report --no-children`) to stderr.
# Needs BUILD/bin/fatiad (cmake --build BUILD --target fatiad), wrk (scripts/setup), perf for
# BENCH_PERF, cc for the open-loop client (or BENCH_OPENLOOP=PROGRAM, built elsewhere, on a
# machine with no compiler).
set -eu
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "create-cost: wrk not found (scripts/setup installs it)" >&2; exit 1; }
OPENLOOP=${BENCH_OPENLOOP:-}
if [ -z "$OPENLOOP" ]; then
    OPENLOOP=$(mktemp /tmp/fatia-openloop.XXXXXX)
    trap 'rm -f "$OPENLOOP"' EXIT
    cc -O2 -Wall -o "$OPENLOOP" bench/api_openloop.c
fi

one() { # BUILD: the figures of one build
    local B=$1 D PID URL secs=${BENCH_SECS:-5}
    D=$(mktemp -d /tmp/fatia-create.XXXXXX)
    local PERF=()
    [ -n "${BENCH_PERF:-}" ] && PERF=(perf record -e cpu-clock -F 999 --call-graph dwarf,16384 -o "$BENCH_PERF" --)
    "${PERF[@]}" taskset -c 0 "$B/bin/fatiad" --data-dir "$D/data" --listen 127.0.0.1:0 --no-tls \
        --no-controllers --no-agent --sync "${BENCH_SYNC:-full}" -f examples/ >"$D/log" 2>&1 &
    PID=$!
    for _ in $(seq 600); do
        grep -q "serving the Kubernetes API" "$D/log" 2>/dev/null && break
        sleep 0.05
    done
    URL=$(grep -o 'http://127.0.0.1:[0-9]*' "$D/log" | head -1)
    [ -n "$URL" ] || { echo "create-cost: fatiad did not start:" >&2; cat "$D/log" >&2; exit 1; }
    export FATIA_TOKEN
    FATIA_TOKEN=$(awk '$2 == "admin" {print $1; exit}' "$D/data/tokens")
    # a namespace per wrk run: one namespace holds at most 50,000 objects (--max-namespace-objects)
    for i in 1 2 3 4 5 6 7 8 9; do
        curl -sf -o /dev/null -X POST -H "Authorization: Bearer $FATIA_TOKEN" \
            -H 'Content-Type: application/json' "$URL/api/v1/namespaces" \
            -d "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"bench-$i\"}}"
    done
    local W="taskset -c 1 wrk -t1 --latency"
    local FPID=$PID
    [ -n "${BENCH_PERF:-}" ] && FPID=$(pgrep -P "$PID" fatiad)
    cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) * 1000 / hz}' "/proc/$FPID/stat"; }
    median() {
        grep '^RESULT' | sed -n "s/.* $1=\([0-9.]*\).*/\1/p" | sort -g |
            awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'
    }
    for i in 1 2 3; do $W -c40 -d"${secs}s" -s bench/api_write.lua "$URL" -- "bench-$i" 19; done >"$D/paced"
    for i in 7 8 9; do
        taskset -c 1 "$OPENLOOP" 127.0.0.1 "${URL##*:}" "$FATIA_TOKEN" "bench-$i" "${BENCH_RATE:-2000}" "$secs"
    done >"$D/open"
    local c0 c1 n
    c0=$(cpu_ms)
    for i in 4 5 6; do $W -c32 -d"${secs}s" -s bench/api_write.lua "$URL" -- "bench-$i" 0; done >"$D/max"
    c1=$(cpu_ms)
    # the creates that were answered 201 (wrk's requests less its non-2xx and socket errors)
    n=$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' "$D/max" | awk '{s += $1} END {print s}')
    n=$((n - $(sed -n 's/.*non2xx=\([0-9]*\) errors=\([0-9]*\).*/\1 \2/p' "$D/max" | awk '{s += $1 + $2} END {print s + 0}')))
    echo "create_fixed_rate: $(median rps <"$D/paced") req/s"
    echo "create_p50_at_fixed_rate: $(median p50 <"$D/paced") ms"
    echo "create_p99_at_fixed_rate: $(median p99 <"$D/paced") ms"
    echo "create_open_rate: $(median rate <"$D/open") req/s"
    echo "create_open_p50: $(median p50 <"$D/open") ms"
    echo "create_open_p90: $(median p90 <"$D/open") ms"
    echo "create_open_p99: $(median p99 <"$D/open") ms"
    echo "create_open_non201: $(median non201 <"$D/open") requests"
    echo "create_max_rate: $(median rps <"$D/max") req/s"
    echo "create_server_cpu: $(awk -v a="$c0" -v b="$c1" -v n="$n" 'BEGIN {printf "%.1f", (b - a) * 1000 / n}') us"
    echo "create_errors: $(sed -n 's/.*non2xx=\([0-9]*\) errors=\([0-9]*\).*/\1 \2/p' "$D/paced" "$D/max" |
        awk '{s += $1 + $2} END {print s + 0}') requests"
    echo "load_average: $(cut -d' ' -f1 /proc/loadavg)"
    if [ -n "${BENCH_PERF:-}" ]; then
        kill -INT "$(pgrep -P "$PID" fatiad)" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
        perf report -i "$BENCH_PERF" --no-children --stdio --percent-limit 0.7 --sort dso,symbol \
            -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -60 >&2
    fi
    kill "$PID" 2>/dev/null
    wait "$PID" 2>/dev/null || true
    rm -rf "$D"
}

if [ $# -lt 2 ]; then
    one "${1:-build}"
    exit 0
fi
new=$1 old=$2 n=${3:-5}
out=$(mktemp /tmp/fatia-create-ab.XXXXXX)
for i in $(seq "$n"); do
    for v in old new; do
        b=$old
        [ $v = new ] && b=$new
        echo "=== run $i $v" >>"$out"
        one "$b" >>"$out"
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
for k in [k for k in runs[0] if k != "v"]:
    o = [r[k] for r in runs if r["v"] == "old" and k in r]
    n = [r[k] for r in runs if r["v"] == "new" and k in r]
    mo, mn = statistics.median(o), statistics.median(n)
    ch = (mn - mo) / mo * 100 if mo else 0
    print(f"{k:28s} old {mo:10.2f}  new {mn:10.2f}  ({ch:+.0f}%)   old runs {o}  new runs {n}")
PY
rm -f "$out"

#!/bin/sh
# bench/control.sh: the admission engine's benchmark (make bench-control).
#
#   bench/control.sh [BUILD_DIR] [SCENARIO...]
#
# Scenarios (bench/control_bench.c has the details): main, main600 (the main scenario with its
# arrivals spread over 600 instead of 300 virtual seconds: less contention), baseline, large,
# scale10k, scale100k, scale1m, schedule (the generator's manifests through `fatia schedule`).
# Default: all of them.
# Each runs BENCH_RUNS times (default 3) and every `name: value unit` line is printed with the
# median value over the runs: the machine is shared, so single runs are noisy.
# BENCH_PHASES=1 adds the per-phase breakdown of cycle time (four clock reads per cycle).
# BENCH_REQUEUE_BATCH_MS (default 1000, Kueue's requeueBatchPeriod) batches the requeue of
# inadmissible workloads per root cohort; 0 requeues at each capacity event.
set -eu

build=${1:-build}
[ $# -gt 0 ] && shift
runs=${BENCH_RUNS:-3}
bin="$build/bench/bench_control"
fatia="$build/bin/fatia"

if [ ! -x "$bin" ]; then
    echo "bench/control.sh: $bin is missing (make build)" >&2
    exit 2
fi
scenarios=${*:-"main main600 baseline large scale10k scale100k scale1m schedule"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# median of each line's numeric value over the run files; the rest of the line from the first run
median() {
    awk '
        FNR == 1 { file++ }
        /^[A-Za-z0-9_.]+: -?[0-9]/ {
            key = $1
            if (!(key in first)) { first[key] = $0; order[++n] = key }
            vals[key, ++cnt[key]] = $2
        }
        END {
            for (i = 1; i <= n; i++) {
                k = order[i]; m = cnt[k]
                for (a = 1; a <= m; a++) v[a] = vals[k, a] + 0
                for (a = 1; a <= m; a++)
                    for (b = a + 1; b <= m; b++)
                        if (v[b] < v[a]) { t = v[a]; v[a] = v[b]; v[b] = t }
                med = (m % 2) ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
                line = first[k]
                sub(/: -?[0-9][0-9.e+-]*/, ": " med, line)
                print line
            }
        }' "$@"
}

run() {
    name=$1
    shift
    i=1
    while [ "$i" -le "$runs" ]; do
        "$@" >"$tmp/$name.$i" || { echo "bench/control.sh: $name failed" >&2; exit 1; }
        i=$((i + 1))
    done
    median "$tmp/$name".*
}

echo "# fatia admission engine, $(date -u +%Y-%m-%dT%H:%M:%SZ), $runs runs per scenario, medians"
echo "# times are engine CPU seconds (see cpu_share); rates are per engine CPU second"
for s in $scenarios; do
    case $s in
    main) run main "$bin" main ;;
    main600)
        run main600 sh -c 'BENCH_ARRIVAL_S=600 "$0" main | sed "s/^main\./main600./"' "$bin"
        ;;
    baseline) run baseline "$bin" baseline ;;
    large) run large "$bin" large ;;
    scale10k) run scale10k "$bin" scale 10000 ;;
    scale100k) run scale100k "$bin" scale 100000 ;;
    scale1m) run scale1m "$bin" scale 1000000 ;;
    schedule)
        # end to end: 10,000 generated manifests (the main topology) through `fatia schedule`
        "$bin" gen 10000 "$tmp/gen.yaml"
        i=1
        while [ "$i" -le "$runs" ]; do
            /usr/bin/env time -f "%e %U %M" -o "$tmp/time.$i" \
                "$fatia" schedule -f "$tmp/gen.yaml" -o json >"$tmp/out.json"
            awk '{ printf "schedule.wall: %s s\nschedule.user_cpu: %s s\nschedule.peak_rss: %.1f MiB\n", $1, $2, $3 / 1024 }' \
                "$tmp/time.$i" >"$tmp/schedule.$i"
            python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("schedule.admitted: %d count\nschedule.pending: %d count\nschedule.preempted: %d count" % (len(d["admitted"]), len(d["pending"]), len(d["preempted"])))' \
                "$tmp/out.json" >>"$tmp/schedule.$i"
            i=$((i + 1))
        done
        echo "schedule.workloads: 10000 count"
        median "$tmp"/schedule.*
        ;;
    *)
        echo "bench/control.sh: unknown scenario $s" >&2
        exit 2
        ;;
    esac
done

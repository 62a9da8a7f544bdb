#!/bin/bash
# bench/fgd.sh BUILD_DIR: the FGD experiment (Weng et al., ATC '23) on the Alibaba GPU-sharing
# trace, as docs/sim.md describes it. The cluster is openb_node_list_gpu_node.csv (1,213 nodes,
# 6,212 GPUs, every GPU shared in fractions); pods are drawn from a pod list at random with
# replacement (seed $SEED, default 42), no departures, until the GPUs requested reach 130 % of the
# cluster's; at 80, 90, ..., 130 % of requested load it reports the share of GPUs left unallocated
# and the fragmented GPUs (the FGD measure against the request mix seen so far), for binpack,
# best-fit, spread, fatia's fragmentation policy, the FGD artifact's scheduler (fgd) and fgdpack,
# on the default, gpushare100 and multigpu50 pod lists, unchanged (one seed; bench/fgd_seeds.py
# runs many). Then the time one simulation takes (median of $RUNS runs, wall clock and CPU: the
# machine may be shared).
# Data: ${FATIA_SHARED:-../shared}/data/alibaba-gpu-2023 (never copied into the repository).
set -u
BUILD=${1:-build}
SEED=${SEED:-42}
RUNS=${RUNS:-3}
DATA=${FATIA_SHARED:-../shared}/data/alibaba-gpu-2023
cmake --build "$BUILD" --target fatia >/dev/null || exit 1
FATIA=$BUILD/bin/fatia
[ -f "$DATA/openb_node_list_gpu_node.csv" ] || {
    echo "bench/fgd.sh: no Alibaba trace under $DATA (set FATIA_SHARED)" >&2
    exit 1
}
OUT=$(mktemp -d /tmp/fatia-fgd.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

for trace in default gpushare100 multigpu50; do
    for policy in binpack bestfit spread fragmentation fgd fgdpack; do
        "$FATIA" sim --trace-format alibaba2023 --nodes "$DATA/openb_node_list_gpu_node.csv" \
            --trace "$DATA/openb_pod_list_$trace.csv" --fill 130 --seed "$SEED" \
            --placement "$policy" -o json >"$OUT/$trace-$policy.json" 2>"$OUT/$trace-$policy.err" || {
            cat "$OUT/$trace-$policy.err" >&2
            exit 1
        }
    done
done
for policy in binpack bestfit spread fragmentation fgd fgdpack; do
    for i in $(seq "$RUNS"); do
        "$FATIA" sim --trace-format alibaba2023 --nodes "$DATA/openb_node_list_gpu_node.csv" \
            --trace "$DATA/openb_pod_list_default.csv" --placement "$policy" -o json \
            >/dev/null 2>>"$OUT/time-replay-$policy.err"
        "$FATIA" sim --trace-format alibaba2023 --nodes "$DATA/openb_node_list_gpu_node.csv" \
            --trace "$DATA/openb_pod_list_default.csv" --fill 130 --seed "$SEED" \
            --placement "$policy" -o json >/dev/null 2>>"$OUT/time-fill-$policy.err"
    done
done

python3 - "$OUT" "$SEED" <<'PY'
import json, re, statistics, sys
out, seed = sys.argv[1], sys.argv[2]
policies = ["binpack", "bestfit", "spread", "fragmentation", "fgd", "fgdpack"]
lines = []
for trace in ["default", "gpushare100", "multigpu50"]:
    reps = {p: json.load(open(f"{out}/{trace}-{p}.json")) for p in policies}
    r0 = reps["binpack"]
    print(f"\n{trace}: {r0['totalGpus']} GPUs, {r0['drawnPods']} pods drawn (seed {seed}), "
          f"{r0['requestTypes']} request types")
    loads = [c["loadPct"] for c in r0["checkpoints"]]
    print("unallocated GPUs (share of the cluster) at requested load")
    print(f"  {'policy':<14}" + "".join(f"{l:>9}%" for l in loads))
    for p in policies:
        print(f"  {p:<14}" + "".join(f"{100 * c['unallocatedShare']:>9.2f}%" for c in reps[p]["checkpoints"]))
    print("fragmented GPUs (FGD measure) at requested load")
    print(f"  {'policy':<14}" + "".join(f"{l:>9}%" for l in loads))
    for p in policies:
        print(f"  {p:<14}" + "".join(f"{c['fragmentedGpus']:>10.1f}" for c in reps[p]["checkpoints"]))
    bf = reps["bestfit"]["checkpoints"][-1]["unallocatedGpus"]
    fg = reps["fgd"]["checkpoints"][-1]["unallocatedGpus"]
    fp = reps["fgdpack"]["checkpoints"][-1]["unallocatedGpus"]
    red = 100 * (bf - fg) / bf
    print(f"at {loads[-1]}%: fgd leaves {fg:.1f} GPUs unallocated, best-fit {bf:.1f}: "
          f"{red:.1f}% fewer (the paper: 33% fewer than its BestFit); fgdpack {fp:.1f}")
    for p in policies:
        c = reps[p]["checkpoints"][-1]
        lines.append(f"fgd_{trace}_{p}_unallocated_{loads[-1]}: {100 * c['unallocatedShare']:.2f} %")
        lines.append(f"fgd_{trace}_{p}_fragmented_{loads[-1]}: {c['fragmentedGpus']:.1f} GPUs")
    lines.append(f"fgd_{trace}_fewer_unallocated_than_bestfit: {red:.1f} %")
print("\ntime of one simulation (median of runs; wall clock, then CPU)")
for mode in ["replay", "fill"]:
    for p in policies:
        wall, cpu = [], []
        for l in open(f"{out}/time-{mode}-{p}.err"):
            m = re.search(r"simulated in ([0-9.]+) s \(([0-9.]+) s of CPU\)", l)
            if m:
                wall.append(float(m.group(1)))
                cpu.append(float(m.group(2)))
        w, c = statistics.median(wall), statistics.median(cpu)
        what = "the trace (8,152 pods)" if mode == "replay" else "the fill to 130%"
        print(f"  {p:<14} {what:<24} {w:7.3f} s wall {c:7.3f} s CPU")
        lines.append(f"sim_{mode}_{p}_wall: {w:.3f} s")
        lines.append(f"sim_{mode}_{p}_cpu: {c:.3f} s")
print()
print("\n".join(lines))
PY

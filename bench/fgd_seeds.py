#!/usr/bin/env python3
"""bench/fgd_seeds.py: the FGD experiment over many seeds, mean and 95 % interval per load point.

    bench/fgd_seeds.py --fatia build/bin/fatia --data DIR [--seeds 42-51] [--jobs 2]
        [--trace default] [--policy NAME=ARGS ...] [--csv OUT.csv] [--points 80,90,...]

Every policy is a name and the `fatia sim` arguments that select it ("fgd=--placement fgd",
"frag=--placement fragmentation", "frag+ties=--placement fragmentation --fgd ties"); without
--policy, binpack, bestfit, fragmentation and fgd. Each (policy, seed) is one `fatia sim --fill
130` run (pods drawn with replacement, never leaving: docs/sim.md); the table gives, per load point
(the GPUs asked for as a share of the fleet's), the mean over seeds of the unallocated GPUs as a
share of the fleet and the half-width of its 95 % interval (Student's t, n - 1 degrees of freedom),
then the same for the fragmented GPUs. --csv writes the same, one row per (trace, policy, load).
The CPU time of every run (fatia's own report on stderr) is summed per policy. --paired A,B adds,
per load point, the paired difference A - B over the seeds (the same draws for both) with its
95 % interval, the sharper test of which policy leaves fewer.
"""
import argparse
import concurrent.futures as cf
import json
import math
import re
import statistics
import subprocess
import sys

# two-sided 95 % Student t quantiles by degrees of freedom
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
       10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 19: 2.093, 29: 2.045}


def t95(df):
    if df in T95:
        return T95[df]
    ks = sorted(k for k in T95 if k <= df)
    return T95[ks[-1]] if ks else 12.706


def seeds_of(spec):
    out = []
    for part in spec.split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


def run_one(fatia, nodes, trace, seed, args, points):
    cmd = [fatia, "sim", "--trace-format", "alibaba2023", "--nodes", nodes, "--trace", trace,
           "--fill", "130", "--seed", str(seed), "--checkpoints", points, "-o", "json"] + args
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr}")
    m = re.search(r"\(([0-9.]+) s of CPU\)", p.stderr)
    return json.loads(p.stdout), float(m.group(1)) if m else 0.0


def mean_ci(xs):
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, 0.0
    return m, t95(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fatia", default="build/bin/fatia")
    ap.add_argument("--data", default="../shared/data/alibaba-gpu-2023")
    ap.add_argument("--nodes", default=None)
    ap.add_argument("--trace", action="append", default=None,
                    help="a pod list: a name under --data (default), or a path")
    ap.add_argument("--seeds", default="42-51")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--policy", action="append", default=None)
    ap.add_argument("--points", default="80,90,100,110,120,130")
    ap.add_argument("--csv", default=None)
    ap.add_argument("--json", default=None, help="every run's checkpoints, for the plot")
    ap.add_argument("--paired", action="append", default=None,
                    help="A,B: per load point, the mean over seeds of A's unallocated share minus "
                    "B's (the same draws: a paired difference) and its 95 %% interval")
    a = ap.parse_args()
    nodes = a.nodes or f"{a.data}/openb_node_list_gpu_node.csv"
    traces = a.trace or ["default"]
    pols = a.policy or ["binpack=--placement binpack", "bestfit=--placement bestfit",
                        "fragmentation=--placement fragmentation", "fgd=--placement fgd"]
    pols = [(p.split("=", 1)[0], p.split("=", 1)[1].split()) for p in pols]
    seeds = seeds_of(a.seeds)
    rows, dump = [], {}
    with cf.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        for trace in traces:
            path = trace if "/" in trace else f"{a.data}/openb_pod_list_{trace}.csv"
            tname = re.sub(r"^openb_pod_list_|\.csv$", "", trace.split("/")[-1])
            futs = {(name, s): ex.submit(run_one, a.fatia, nodes, path, s, args, a.points)
                    for name, args in pols for s in seeds}
            print(f"\n{tname}: {len(seeds)} seeds ({a.seeds}); unallocated GPUs, share of the "
                  f"fleet: mean ± 95 % interval")
            loads = [int(x) for x in a.points.split(",")]
            print(f"  {'policy':<18}" + "".join(f"{l:>16}%" for l in loads) + "    CPU s")
            frag_lines = []
            for name, _ in pols:
                res = [futs[(name, s)].result() for s in seeds]
                cpu = sum(c for _, c in res)
                dump.setdefault(tname, {})[name] = [r["checkpoints"] for r, _ in res]
                cells, fcells = [], []
                for k, load in enumerate(loads):
                    u = [100 * r["checkpoints"][k]["unallocatedShare"] for r, _ in res]
                    f = [r["checkpoints"][k]["fragmentedGpus"] for r, _ in res]
                    um, uc = mean_ci(u)
                    fm, fc = mean_ci(f)
                    cells.append(f"{um:8.2f} ±{uc:5.2f}")
                    fcells.append(f"{fm:8.1f} ±{fc:5.1f}")
                    rows.append((tname, name, load, um, uc, fm, fc, len(seeds)))
                print(f"  {name:<18}" + "".join(f"{c:>17}" for c in cells) + f"  {cpu:7.1f}")
                frag_lines.append(f"  {name:<18}" + "".join(f"{c:>17}" for c in fcells))
            print("fragmented GPUs (FGD measure of each run's own mix): mean ± 95 % interval")
            print("\n".join(frag_lines))
            for pair in a.paired or []:
                pa, pb = pair.split(",")
                ra = [futs[(pa, s)].result()[0] for s in seeds]
                rb = [futs[(pb, s)].result()[0] for s in seeds]
                cells = []
                for k, load in enumerate(loads):
                    d = [100 * (x["checkpoints"][k]["unallocatedShare"] -
                                y["checkpoints"][k]["unallocatedShare"]) for x, y in zip(ra, rb)]
                    m, c = mean_ci(d)
                    cells.append(f"{m:+8.3f} ±{c:6.3f}")
                    rows.append((tname, f"{pa}-{pb}", load, m, c, 0.0, 0.0, len(seeds)))
                print(f"paired: {pa} minus {pb}, unallocated (points of the fleet): mean ± 95 % "
                      f"interval (negative: {pa} leaves fewer)")
                print(f"  {pa + '-' + pb:<18}" + "".join(f"{c:>17}" for c in cells))
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("trace,policy,load_pct,unallocated_pct_mean,unallocated_pct_ci95,"
                    "fragmented_gpus_mean,fragmented_gpus_ci95,seeds\n")
            for r in rows:
                f.write(f"{r[0]},{r[1]},{r[2]},{r[3]:.3f},{r[4]:.3f},{r[5]:.1f},{r[6]:.1f},{r[7]}\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dump, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())

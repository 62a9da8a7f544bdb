#!/usr/bin/env python3
"""bench/autoscale_runs.py OUT RUNS: bench/autoscale.sh's summary over its runs.

Reads OUT/run<i>/{burst,fixed}.txt (the `fatia serve bench` lines) and
OUT/run<i>/{burst,fixed}.replicas.tsv (engine seconds, desired, ready: samples every 0.5 s of
wall time), prints per run and then the median, min and max over the runs of: SLO attainment
(and strict), TTFT p50/p90/p99, ITL p99, GPU-hours (the integral of desired replicas, each one
H200) of the autoscaled and the fixed deployment, the saving, the peak, the mean ready replicas
and the replica changes; writes OUT/replicas.tsv: per 5 engine seconds, the median, min and max
over the runs of the autoscaled desired replicas and the median of the ready ones (a run's value
at t is its last sample at or before t), which bench/autoscale_plot.sh draws.
"""
import statistics
import sys

out, runs = sys.argv[1], int(sys.argv[2])


def lines(path, name):
    d = {}
    for line in open(path):
        p = line.split()
        if len(p) >= 2 and p[0].startswith(name + "."):
            try:
                d[p[0][len(name) + 1:-1]] = float(p[1])
            except ValueError:
                pass
    return d


def samples(path):
    rows = []
    for line in open(path):
        p = line.rstrip("\n").split("\t")
        if len(p) == 3 and p[1]:
            rows.append((float(p[0]), int(p[1] or 0), int(p[2] or 0)))
    return rows


def gpu_hours(rows):
    return sum((b[0] - a[0]) * a[1] for a, b in zip(rows, rows[1:])) / 3600


def mean_ready(rows):
    span = rows[-1][0] - rows[0][0] if len(rows) > 1 else 0
    return sum((b[0] - a[0]) * a[2] for a, b in zip(rows, rows[1:])) / span if span else 0


def changes(rows):
    return sum(1 for a, b in zip(rows, rows[1:]) if a[1] != b[1])


def at(rows, t):
    v = None
    for r in rows:
        if r[0] > t:
            break
        v = r
    return v


per = []
burst_rows = []
for i in range(1, runs + 1):
    d = f"{out}/run{i}"
    b, f = lines(f"{d}/burst.txt", "burst"), lines(f"{d}/fixed.txt", "fixed")
    rb, rf = samples(f"{d}/burst.replicas.tsv"), samples(f"{d}/fixed.replicas.tsv")
    if not rb or not rf:
        print(f"run {i}: no replica samples", file=sys.stderr)
        continue
    burst_rows.append(rb)
    hb, hf = gpu_hours(rb), gpu_hours(rf)
    per.append({
        "attain": b.get("slo_attainment", 0), "strict": b.get("slo_attainment_strict", 0),
        "ttft_p50": b.get("ttft_p50", 0), "ttft_p90": b.get("ttft_p90", 0),
        "ttft_p99": b.get("ttft_p99", 0), "itl_p99": b.get("itl_p99", 0),
        "fixed_attain": f.get("slo_attainment", 0), "fixed_strict": f.get("slo_attainment_strict", 0),
        "fixed_ttft_p90": f.get("ttft_p90", 0), "fixed_itl_p99": f.get("itl_p99", 0),
        "gpuh": hb, "fixed_gpuh": hf, "saved_pct": (1 - hb / hf) * 100 if hf else 0,
        "peak": max(r[1] for r in rb), "mean_ready": mean_ready(rb), "changes": changes(rb),
        "failed": b.get("failed", 0) + f.get("failed", 0),
    })

keys = ["attain", "strict", "ttft_p50", "ttft_p90", "ttft_p99", "itl_p99", "fixed_attain",
        "fixed_strict", "fixed_ttft_p90", "fixed_itl_p99", "gpuh", "fixed_gpuh", "saved_pct",
        "peak", "mean_ready", "changes", "failed"]
print(f"== autoscaling over {len(per)} runs (engine time; SLO TTFT <= 2 s, TPOT <= 100 ms)")
print("%-15s" % "metric" + "".join("%10s" % f"run{i + 1}" for i in range(len(per))) +
      "%10s %10s %10s" % ("median", "min", "max"))
for k in keys:
    v = [p[k] for p in per]
    if not v:
        break
    print("%-15s" % k + "".join("%10.3f" % x for x in v) +
          "%10.3f %10.3f %10.3f" % (statistics.median(v), min(v), max(v)))
for k in keys:
    v = [p[k] for p in per]
    if v:
        print("autoscale_runs.%s_median: %.3f" % (k, statistics.median(v)))

if burst_rows:
    end = max(r[-1][0] for r in burst_rows)
    with open(f"{out}/replicas.tsv", "w") as fh:
        t = 0.0
        while t <= end:
            vals = [at(r, t) for r in burst_rows]
            vals = [v for v in vals if v]
            if vals:
                d = [v[1] for v in vals]
                fh.write("%.0f\t%g\t%d\t%d\t%g\n" % (t, statistics.median(d), min(d), max(d),
                                                     statistics.median(v[2] for v in vals)))
            t += 5

#!/usr/bin/env python3
"""bench/density.py BUILD_DIR: the density experiment (docs/sim.md, "The density experiment").

A day of notebook and small-inference users on one 8 x H200 box, under five ways of sharing the
GPUs: whole GPUs 1:1, time-slicing with memory caps, MPS, MIG (re-laid on demand) and fractions.
Users come from the distribution below (fixed seed); each sharing policy serves them through
`fatia sim` (placement, and the slowdown model of docs/sim.md); a user is served when they waited
at most MAX_WAIT seconds for their GPU and their GPU work was slowed by sharing at most
MAX_SLOWDOWN times on average. For each policy and each setting of its one knob (replicas, the
fraction size), the largest arrival rate at which at least SERVED of the users are served is
found by bisection (the same users, arriving faster: common random numbers); the figure compared
is the mean number of users running at that rate, against whole GPUs 1:1. Placement spreads
users over the GPUs (--placement spread): sharing a GPU only when the others are taken is what
any policy that cares about slowdown does; binpack would co-locate users on an idle box.

The distribution (written down before any run; not fitted to anything):
  arrivals         Poisson, constant rate, over 24 h; sessions run to their end
  70 % notebooks   GPU memory lognormal, median 8 GiB, sigma 0.5, clipped to 1..60 GiB;
                   duty cycle uniform 0.02..0.15; SM share 0.06 (8 blocks of 132 SMs, the
                   measured kernel of reference/h200-facts.md); session lognormal, median 1 h,
                   sigma 0.6, clipped to 10 min..8 h; 2 CPUs, 16 GiB
  30 % inference   GPU memory uniform 14..24 GiB (a 7B model in fp16 and its KV cache); duty
                   cycle uniform 0.2..0.5; SM share uniform 0.1..0.3; session lognormal,
                   median 3 h, sigma 0.5, clipped to 30 min..12 h; 4 CPUs, 32 GiB
How each policy serves a user:
  whole            nvidia.com/gpu: 1
  timeslice-R      nvidia.com/gpu.shared: 1 when the GPU memory fits the replica's cap
                   ((143771 MiB - R x 530 MiB) / R, DESIGN section 7); a user who does not fit
                   cannot be served (asks for a resource no node has)
  mps-R            nvidia.com/gpu.shared: 1 when it fits the pinned memory limit (memory / R);
                   each share runs at most 100/R % of the SMs; users are in 8 teams
                   (namespaces) and an MPS GPU serves one namespace at a time (DESIGN section 7);
                   mps1ns-R puts every user in one namespace to show what that rule costs
  mig              the smallest H200 profile with memory >= need + 530 MiB and SMs >= the user's
                   share (so MIG itself never slows them), GPUs re-laid on demand
                   (--dynamic-mig free), starting all-1g.18gb
  fractions-k      fatia.dev/gpu-memory: need, fatia.dev/gpu-milli: k x duty x 1000 (k = 0:
                   memory only, no compute reserved)
"""
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile

SEED = int(os.environ.get("SEED", "7"))
MAX_WAIT = float(os.environ.get("MAX_WAIT", "120"))
MAX_SLOWDOWN = float(os.environ.get("MAX_SLOWDOWN", "1.5"))
SERVED = float(os.environ.get("SERVED", "0.95"))
PLACEMENT = os.environ.get("PLACEMENT", "spread")
DAY = 24 * 3600
GIB = 1024.0
H200_MIB = 143771
CTX_MIB = 530
SMS = 132
MIG = [("1g.18gb", 16384, 16), ("1g.35gb", 33280, 26), ("2g.35gb", 33280, 32),
       ("3g.71gb", 71424, 60), ("4g.71gb", 71424, 64), ("7g.141gb", 143360, 132)]

BOX = """apiVersion: fatia.dev/v1alpha1
kind: NodePool
metadata: {name: box}
spec:
  resources: {cpu: "128", memory: 2Ti, pods: "512"}
  gpus: [{product: NVIDIA H200, count: 8}]
  nvlinkIslands: [[0, 1, 2, 3], [4, 5, 6, 7]]
"""


def fleet(policy, knob):
    pol = ""
    if policy == "timeslice":
        pol = f"""timeSlicing: {{renameByDefault: true, resources: [{{name: nvidia.com/gpu, replicas: {knob}}}]}}"""
    elif policy in ("mps", "mps1ns"):
        pol = f"""mps: {{renameByDefault: true, resources: [{{name: nvidia.com/gpu, replicas: {knob}}}]}}"""
    elif policy == "mig":
        pol = "mig: {strategy: mixed, config: all-1g.18gb}"
    elif policy == "fractions":
        pol = "fractional: {}"
    if not pol:
        return BOX
    return BOX + f"""---
apiVersion: fatia.dev/v1alpha1
kind: GPUSharingPolicy
metadata: {{name: share}}
spec: {{{pol}}}
"""


def users(seed):
    """The day's users at unit rate (one per hour): arrival hours and attributes."""
    rng = random.Random(seed)
    t, out = 0.0, []
    while True:
        t += rng.expovariate(1.0)  # hours, at one user per hour
        if t > 24 * 400:  # enough for rates up to 400 users/h
            break
        if rng.random() < 0.7:
            mem = min(60.0, max(1.0, math.exp(rng.gauss(math.log(8.0), 0.5))))
            u = dict(kind="nb", mem=mem, duty=rng.uniform(0.02, 0.15), sm=0.06,
                     dur=min(8 * 3600, max(600, 3600 * math.exp(rng.gauss(0, 0.6)))),
                     cpu=2, hostmem=16)
        else:
            u = dict(kind="inf", mem=rng.uniform(14.0, 24.0), duty=rng.uniform(0.2, 0.5),
                     sm=rng.uniform(0.1, 0.3),
                     dur=min(12 * 3600, max(1800, 3 * 3600 * math.exp(rng.gauss(0, 0.5)))),
                     cpu=4, hostmem=32)
        u["t"] = t
        out.append(u)
    return out


def request(u, policy, knob):
    base = f"cpu={u['cpu']};memory={u['hostmem']}Gi"
    need = u["mem"] * GIB  # MiB
    if policy == "whole":
        return base + ";nvidia.com/gpu=1"
    if policy == "timeslice":
        cap = (H200_MIB - knob * CTX_MIB) // knob
        return base + (";nvidia.com/gpu.shared=1" if need <= cap else ";fatia.dev/does-not-fit=1")
    if policy in ("mps", "mps1ns"):
        cap = H200_MIB // knob
        return base + (";nvidia.com/gpu.shared=1" if need <= cap else ";fatia.dev/does-not-fit=1")
    if policy == "mig":
        for name, mib, sms in MIG:
            if need + CTX_MIB <= mib and u["sm"] <= sms / SMS:
                return base + f";nvidia.com/mig-{name}=1"
        return base + ";fatia.dev/does-not-fit=1"
    if policy == "fractions":
        milli = min(999, int(math.ceil(knob * u["duty"] * 1000)))
        req = base + f";fatia.dev/gpu-memory={int(math.ceil(need))}Mi"
        return req + (f";fatia.dev/gpu-milli={milli}" if milli > 0 else "")
    raise ValueError(policy)


def namespace(i, policy):
    """Users belong to 8 teams (namespaces); mps-1ns puts everyone in one namespace, to show what
    MPS's one-uid-per-GPU rule (DESIGN section 7) costs."""
    return "team0" if policy == "mps1ns" else f"team{i % 8}"


def unfit(us, policy, knob):
    """Share of the users this setting cannot serve at all (their memory does not fit)."""
    return sum("does-not-fit" in request(u, policy, knob) for u in us) / len(us)


def run(fatia, tmp, policy, knob, rate, us):
    """Simulates the users arriving at `rate` per hour; returns the report."""
    fl = os.path.join(tmp, f"fleet-{policy}-{knob}.yaml")
    if not os.path.exists(fl):
        with open(fl, "w") as f:
            f.write(fleet(policy, knob))
    tr = os.path.join(tmp, "trace.csv")
    with open(tr, "w") as f:
        f.write("time,namespace,name,resources,duration,dutyCycle,smShare\n")
        for i, u in enumerate(us):
            t = u["t"] / rate * 3600
            if t > DAY:
                break
            f.write(f"{t:.1f},{namespace(i, policy)},user-{i},{request(u, policy, knob)},"
                    f"{u['dur']:.0f},"
                    f"{u['duty']:.4f},{u['sm']:.4f}\n")
    args = [fatia, "sim", "-f", fl, "--trace", tr, "--max-wait", str(MAX_WAIT),
            "--max-slowdown", str(MAX_SLOWDOWN), "-o", "json", "--sample-every", "60s",
            "--placement", PLACEMENT]
    if policy == "mig":
        args += ["--dynamic-mig", "free"]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"fatia sim failed: {p.stderr}")
    rep = json.loads(p.stdout)
    m = re.search(r"\(([0-9.]+) s of CPU\)", p.stderr)
    rep["_cpu"] = float(m.group(1)) if m else 0.0
    return rep


def capacity(fatia, tmp, policy, knob, us):
    """The largest rate (users/h) with >= SERVED served, by bisection on a log scale; 0 when the
    setting cannot serve that share of the users at any rate (their memory does not fit)."""
    if unfit(us, policy, knob) > 1 - SERVED:
        return 0.0, None
    lo, hi = 0.5, 400.0
    rep_lo = None
    for _ in range(14):
        mid = math.sqrt(lo * hi)
        rep = run(fatia, tmp, policy, knob, mid, us)
        if rep["users"]["servedShare"] >= SERVED:
            lo, rep_lo = mid, rep
        else:
            hi = mid
        if hi / lo < 1.03:
            break
    if rep_lo is None:
        rep_lo = run(fatia, tmp, policy, knob, lo, us)
    return lo, rep_lo


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    fatia = os.path.join(build, "bin", "fatia")
    us = users(SEED)
    configs = [("whole", 1)] + [("timeslice", r) for r in (2, 3, 4, 6, 8)] + \
              [("mps", r) for r in (2, 4, 8, 16)] + [("mps1ns", r) for r in (2, 4, 8)] + \
              [("mig", 0)] + \
              [("fractions", k) for k in (0, 1, 2, 3, 4)]
    rows = []
    with tempfile.TemporaryDirectory(prefix="fatia-density.") as tmp:
        for policy, knob in configs:
            rate, rep = capacity(fatia, tmp, policy, knob, us)
            if rep is None:
                rows.append(dict(policy=policy, knob=knob, rate=0.0, conc=0.0, served=0.0,
                                 total=0, per_gpu=0.0, p90=0.0,
                                 unfit=unfit(us, policy, knob)))
                print(f"  {policy:<10} {knob:>3}: cannot serve {100 * SERVED:.0f}%: "
                      f"{100 * unfit(us, policy, knob):.0f}% of the users do not fit",
                      file=sys.stderr)
                continue
            u = rep["users"]
            conc = rep["concurrency"]
            per_gpu = next(iter(conc.values()))["podsPerBusyGpu"] if conc else 0
            rows.append(dict(policy=policy, knob=knob, rate=rate, conc=u["meanConcurrent"],
                             served=u["servedShare"], total=u["total"], per_gpu=per_gpu,
                             p90=max(q["waitSeconds"]["p90"] for q in rep["queues"].values()),
                             unfit=unfit(us, policy, knob)))
            print(f"  {policy:<10} {knob:>3}: {rate:7.1f} users/h, {u['meanConcurrent']:6.1f} "
                  f"concurrent, {100 * u['servedShare']:5.1f}% served", file=sys.stderr)
    base = rows[0]["conc"]
    print(f"\ndensity: 8 x H200, a day of users (seed {SEED}); served = wait <= {MAX_WAIT:.0f} s "
          f"and mean slowdown <= {MAX_SLOWDOWN}; capacity = the highest arrival rate with >= "
          f"{100 * SERVED:.0f}% served")
    print(f"  {'policy':<12}{'knob':>6}{'users/h':>10}{'concurrent':>12}{'vs 1:1':>8}"
          f"{'pods/busy GPU':>15}{'served':>9}{'do not fit':>12}")
    for r in rows:
        knob = {"whole": "-", "mig": "dyn"}.get(r["policy"], str(r["knob"]))
        if not r["rate"]:
            print(f"  {r['policy']:<12}{knob:>6}{'-':>10}{'-':>12}{'-':>8}{'-':>15}{'-':>9}"
                  f"{100 * r['unfit']:>11.0f}%")
            continue
        print(f"  {r['policy']:<12}{knob:>6}{r['rate']:>10.1f}{r['conc']:>12.1f}"
              f"{r['conc'] / base:>7.2f}x{r['per_gpu']:>15.2f}{100 * r['served']:>8.1f}%"
              f"{100 * r['unfit']:>11.0f}%")
    best = {}
    for r in rows:
        if r["policy"] not in best or r["conc"] > best[r["policy"]]["conc"]:
            best[r["policy"]] = r
    print("\nbest setting per policy")
    for p, r in best.items():
        knob = {"whole": "-", "mig": "dyn"}.get(p, str(r["knob"]))
        print(f"  {p:<12}{knob:>6}{r['conc']:>12.1f} concurrent users  {r['conc'] / base:5.2f}x 1:1")
    print()
    for p, r in best.items():
        print(f"density_{p}_concurrent_users: {r['conc']:.1f} users")
        print(f"density_{p}_vs_whole: {r['conc'] / base:.2f} x")
    claim = max(r["conc"] for p, r in best.items() if p != "whole") / base
    print(f"density_best_sharing_vs_whole: {claim:.2f} x (seed claim: 4 x to 7 x)")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""bench/fgd_variants.py: the fixed list of variants of the Alibaba openb default pod list on which
an improvement over FGD must win (docs/sim.md, "Beyond FGD"). Fixed before any tuning (the
commit that adds this file precedes the improvement's); never change a variant to suit a result:
add a new one.

    bench/fgd_variants.py --data DIR --out OUTDIR     # writes OUTDIR/openb_pod_list_<name>.csv

Every variant starts from openb_pod_list_default.csv (8,152 pods: 1,088 CPU-only, 3,078 asking for a
fraction of one GPU, 3,911 for one whole GPU, 75 for 2-8 GPUs, none constrained to a GPU model)
and changes one property, drawn with Python's random.Random(SEED) (Mersenne Twister, seed 2026):

  spec25     GPU-type constraints: 25 % of the GPU pods may run on one GPU model only, drawn in
             proportion to the models' share of the fleet's GPUs (the artifact's gpuspec25 idea);
  spec50x2   50 % of the GPU pods may run on two models only ("A|B", both drawn as above);
  share25    sharing ratio: fractional pods down from 44 % to 25 % of the single-GPU pods (the
             others ask for the whole GPU);
  share75    fractional pods up to 75 % of the single-GPU pods: whole-GPU pods turned into
             fractions whose gpu_milli is drawn from the trace's own fractional pods;
  cpu0       CPU-only share: no CPU-only pods;
  cpu25      CPU-only pods are 25 % of the pods (13 % in the trace): copies of the trace's own
             CPU-only pods added;
  cpuheavy   every GPU pod asks for 1.5x its CPU (nodes run out of CPU before GPUs).

The artifact's own variants in ../shared (gpushare100, multigpu50) are used as they are.
"""
import argparse
import csv
import os
import random

SEED = 2026
VARIANTS = ["spec25", "spec50x2", "share25", "share75", "cpu0", "cpu25", "cpuheavy"]


def model_weights(nodes_csv):
    w = {}
    with open(nodes_csv) as f:
        for r in csv.DictReader(f):
            w[r["model"]] = w.get(r["model"], 0) + int(r["gpu"])
    return sorted(w), [w[m] for m in sorted(w)]


def variant(name, pods, models, weights, rng):
    out = [dict(p) for p in pods]
    gpu = [p for p in out if int(p["num_gpu"]) > 0]
    single = [p for p in out if int(p["num_gpu"]) == 1]
    fracs = [int(p["gpu_milli"]) for p in pods if int(p["num_gpu"]) == 1 and int(p["gpu_milli"]) < 1000]
    if name == "spec25":
        for p in gpu:
            if rng.random() < 0.25:
                p["gpu_spec"] = rng.choices(models, weights)[0]
    elif name == "spec50x2":
        for p in gpu:
            if rng.random() < 0.50:
                a = rng.choices(models, weights)[0]
                b = a
                while b == a:
                    b = rng.choices(models, weights)[0]
                p["gpu_spec"] = f"{a}|{b}"
    elif name == "share25":
        frac = [p for p in single if int(p["gpu_milli"]) < 1000]
        keep = int(0.25 * len(single))
        rng.shuffle(frac)
        for p in frac[keep:]:
            p["gpu_milli"] = "1000"
    elif name == "share75":
        whole = [p for p in single if int(p["gpu_milli"]) >= 1000]
        need = int(0.75 * len(single)) - (len(single) - len(whole))
        rng.shuffle(whole)
        for p in whole[:max(need, 0)]:
            p["gpu_milli"] = str(rng.choice(fracs))
    elif name == "cpu0":
        out = [p for p in out if int(p["num_gpu"]) > 0]
    elif name == "cpu25":
        cpu = [p for p in out if int(p["num_gpu"]) == 0]
        n_gpu = len(out) - len(cpu)
        want = int(round(n_gpu / 0.75)) - n_gpu  # CPU-only pods for a 25 % share
        for i in range(want - len(cpu)):
            q = dict(rng.choice(cpu))
            q["name"] = f"{q['name']}-c{i}"
            out.append(q)
    elif name == "cpuheavy":
        for p in gpu:
            p["cpu_milli"] = str(int(int(p["cpu_milli"]) * 1.5))
    else:
        raise SystemExit(f"unknown variant {name}")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data/alibaba-gpu-2023")
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", action="append", default=None)
    a = ap.parse_args()
    models, weights = model_weights(os.path.join(a.data, "openb_node_list_gpu_node.csv"))
    with open(os.path.join(a.data, "openb_pod_list_default.csv")) as f:
        rd = csv.DictReader(f)
        fields = rd.fieldnames
        pods = list(rd)
    os.makedirs(a.out, exist_ok=True)
    for name in a.only or VARIANTS:
        rng = random.Random(f"{SEED}-{name}")
        out = variant(name, pods, models, weights, rng)
        path = os.path.join(a.out, f"openb_pod_list_{name}.csv")
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            w.writerows(out)
        n = len(out)
        cpu = sum(int(p["num_gpu"]) == 0 for p in out)
        single = [p for p in out if int(p["num_gpu"]) == 1]
        frac = sum(int(p["gpu_milli"]) < 1000 for p in single)
        spec = sum(bool(p["gpu_spec"]) for p in out)
        print(f"{name:<10} {n:6d} pods, CPU-only {100 * cpu / n:5.1f} %, fractional "
              f"{100 * frac / max(len(single), 1):5.1f} % of single-GPU pods, constrained "
              f"{spec:5d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

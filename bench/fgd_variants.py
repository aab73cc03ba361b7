#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Pod lists fgd-fill was not tuned on, made from the trace's default list (issue 17).

The shared folder holds the default list and its CPU and GPU-sharing variants, but not the
trace's two other families: lists where a share of the pods name a GPU model (gpu_spec), and
lists with more multi-GPU pods. This writes our own lists of both kinds, deterministically from
a seed, so placement claims are checked on workloads nobody tuned to:

  gpuspecNN   NN % of the GPU pods get a gpu_spec: a model drawn by the fleet's GPU count per
              model among the models whose nodes can hold the pod; a V100 spec names both V100
              models half of the time ("V100M16|V100M32")
  multigpuNN  single-GPU pods are turned into 2-, 4- or 8-GPU pods (drawn as the default list's
              own multi-GPU pods are: 16 : 15 : 44) until NN % of the GPU pods ask for more than
              one GPU; each takes CPU and memory of a real pod of that size from the list
  mixNN-MM    both: gpuspecNN of multigpuMM
  short       the default list with only name,cpu_milli,memory_mib,num_gpu,gpu_milli (the
              trace publishes files of that shape; fgd_bench reads columns by header)

Usage: fgd_variants.py [--data DIR] [--out DIR] [--seed N] [--spec A,B] [--multi A,B]
                       [--mix S-M,...] [--suffix TEXT]
Prints the path of each list it wrote. The defaults (seed 17, gpuspec 10/20/33, multigpu 20/30/50,
mix 20-30 and 33-20) are the family fgd-fill was tuned on; bench/fgd_lists.sh also writes a
second family (seed 23, gpuspec 15/25, multigpu 25/40, mix 15-25 and 25-40, suffix=-s23)
that is only evaluated, never tuned on.
"""
import argparse
import csv
import os
import random
import sys

SPEC_SHARES = (10, 20, 33)
MULTI_SHARES = (20, 30, 50)
MIXES = ((20, 30), (33, 20))
MULTI_WEIGHTS = {2: 16, 4: 15, 8: 44}


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return rows


def fleet_models(nodes):
    """GPUs per model and the most GPUs one node of the model has."""
    gpus, widest = {}, {}
    for n in nodes:
        m, g = n["model"], int(n["gpu"])
        gpus[m] = gpus.get(m, 0) + g
        widest[m] = max(widest.get(m, 0), g)
    return gpus, widest


def with_spec(pods, share, gpus, widest, rng):
    out = []
    for p in pods:
        q = dict(p)
        n = int(q["num_gpu"])
        if n > 0 and rng.random() * 100 < share:
            fit = [m for m in sorted(gpus) if widest[m] >= n]
            m = rng.choices(fit, weights=[gpus[x] for x in fit])[0]
            spec = m
            if m.startswith("V100") and rng.random() < 0.5:
                spec = "|".join(x for x in ("V100M16", "V100M32") if widest.get(x, 0) >= n)
            q["gpu_spec"] = spec
        out.append(q)
    return out


def with_multi(pods, share, rng):
    gpu_pods = [i for i, p in enumerate(pods) if int(p["num_gpu"]) > 0]
    multi = [i for i in gpu_pods if int(pods[i]["num_gpu"]) > 1]
    single = [i for i in gpu_pods if int(pods[i]["num_gpu"]) == 1]
    by_size = {}
    for i in multi:
        by_size.setdefault(int(pods[i]["num_gpu"]), []).append(pods[i])
    want = int(len(gpu_pods) * share / 100) - len(multi)
    out = [dict(p) for p in pods]
    sizes = sorted(MULTI_WEIGHTS)
    for i in rng.sample(single, max(0, min(want, len(single)))):
        k = rng.choices(sizes, weights=[MULTI_WEIGHTS[s] for s in sizes])[0]
        model = rng.choice(by_size[k])
        out[i].update(num_gpu=str(k), gpu_milli="1000", cpu_milli=model["cpu_milli"],
                      memory_mib=model["memory_mib"])
    return out


def write(path, fields, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print(path)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(here, "..", "..", "shared", "data",
                                                    "alibaba-gpu-v2023"))
    ap.add_argument("--out", default="fgd-variants")
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--spec", default=",".join(map(str, SPEC_SHARES)))
    ap.add_argument("--multi", default=",".join(map(str, MULTI_SHARES)))
    ap.add_argument("--mix", default=",".join(f"{s}-{m}" for s, m in MIXES))
    ap.add_argument("--suffix", default="")
    ap.add_argument("--no-short", action="store_true")
    a = ap.parse_args()
    spec_shares = [int(x) for x in a.spec.split(",") if x]
    multi_shares = [int(x) for x in a.multi.split(",") if x]
    mixes = [tuple(int(y) for y in x.split("-")) for x in a.mix.split(",") if x]
    nodes = read_csv(os.path.join(a.data, "openb_node_list_gpu_node.csv"))
    pods = read_csv(os.path.join(a.data, "openb_pod_list_default.csv"))
    if not pods or not nodes:
        sys.exit("fgd_variants: empty node or pod list in " + a.data)
    fields = list(pods[0].keys())
    gpus, widest = fleet_models(nodes)
    os.makedirs(a.out, exist_ok=True)
    sfx = a.suffix
    for s in spec_shares:
        rng = random.Random(a.seed * 1000 + s)
        write(os.path.join(a.out, f"gpuspec{s}{sfx}.csv"), fields,
              with_spec(pods, s, gpus, widest, rng))
    for s in multi_shares:
        rng = random.Random(a.seed * 1000 + 100 + s)
        write(os.path.join(a.out, f"multigpu{s}{sfx}.csv"), fields, with_multi(pods, s, rng))
    for s, m in mixes:
        rng = random.Random(a.seed * 1000 + 200 + s * 3 + m)
        mixed = with_spec(with_multi(pods, m, rng), s, gpus, widest, rng)
        write(os.path.join(a.out, f"mix{s}-{m}{sfx}.csv"), fields, mixed)
    if not a.no_short:
        write(os.path.join(a.out, "short.csv"), fields[:5], pods)


if __name__ == "__main__":
    main()

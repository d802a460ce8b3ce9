#!/usr/bin/env python3
"""Wall-time model of seed 003's Table 3 (DEI-MCMC: 12 NUTS chains per split, 3 splits, six UCI data
sets) on C = 12, 48, 96 cores, for the 1000-draw configuration (100 warmup + 1000 draws) and the long
one (10,000 warmup + 8,000 draws). Prints the markdown tables of docs/scaling.md.

Inputs (all measured on this machine; docs/scaling.md states where each comes from):
  g[d]     single-thread CPU seconds per gradient, float32, Table 3's 2x16 ReLU network on the training
           rows (docs/dei-mcmc.md, bench/dei_gradient_vs_jax.sh);
  L[d]     gradients (leapfrog steps) per NUTS iteration, warmup and sampling (docs/dei-mcmc.md's
           Table 3 runs; bike sharing and protein, never run, take airfoil's, the largest);
  f_run    in-run factor: CPU per gradient inside the 12-chain run / the micro-benchmark (1.2);
  a(S)     cost of the rank-ordered sum of one gradient over S shards: a_1 = 0, a_S = the measured
           all_reduce_sum latency at the gradient's size for S = 2 (bench/results/mpi_scaling.jsonl),
           times ceil(log2 S) (a tree; more ranks = more rounds), times 4 off a node (network);
  the ensemble (12 members x 5000 full-batch epochs, one gradient each, members in parallel).
Model: the 36 chains of a data set (3 splits x 12) are independent tasks; with C cores, each chain
uses S shards (S in 1, 2, 4, 8; S ranks per chain, one core each), so C // S chains run at once and
a chain's gradient costs g f_run / S + a(S) (rows split evenly; the prior and the sampler's own
work are negligible at these sizes). Wall = ensemble + ceil(36 / (C // S)) x chain time, minimised
over S. Data sets run one after another; 'packed' = total CPU / C, the bound if all six shared
the machine at once.
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import cpu_model  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# CPU seconds per gradient, float32, one thread (docs/dei-mcmc.md, measured 2026-11-23, idle machine).
g = {"yacht": 5.81e-6, "energy": 14.3e-6, "concrete": 18.6e-6, "airfoil": 24.4e-6,
     "bike_sharing": 356e-6, "protein": 1.04e-3}
# Leapfrog steps per iteration (warmup, sampling): docs/dei-mcmc.md's runs (upper ends of the ranges).
L = {"yacht": (875, 740), "energy": (878, 783), "concrete": (894, 693), "airfoil": (963, 1002),
     "bike_sharing": (1000, 1000), "protein": (1000, 1000)}
N = {"yacht": 246, "energy": 614, "concrete": 824, "airfoil": 1202, "bike_sharing": 13903, "protein": 36584}
F_RUN = 1.2
CHAINS, SPLITS, MEMBERS, EPOCHS = 12, 3, 12, 5000
CONFIGS = {"1000-draw (100 + 1000)": (100, 1000), "long (10,000 + 8,000)": (10000, 8000)}
CORES_PER_NODE = 48


def allreduce_latency():
    """The measured all_reduce_sum latency at the gradient's size (467 doubles), 2 ranks."""
    path = os.path.join(HERE, "results", "mpi_scaling.jsonl")
    best = None
    if os.path.exists(path):
        for line in open(path):
            r = json.loads(line)
            if r.get("what") == "all_reduce_sum" and r.get("doubles") == 467:
                best = r["seconds_per_call"] if best is None else min(best, r["seconds_per_call"])
    return best if best is not None else 5e-6


def a(S, a2, C):
    if S == 1:
        return 0.0
    off_node = 4.0 if C > CORES_PER_NODE else 1.0
    return a2 * math.ceil(math.log2(S)) * off_node


def wall(d, C, warmup, draws, a2):
    best = None
    for S in (1, 2, 4, 8):
        # Per-row cost is constant down to ~250 rows (yacht 23.6 ns/row, airfoil 20.3 ns/row): no
        # shard smaller than that.
        if S > C or (S > 1 and N[d] / S < 250):
            continue
        per_gradient = g[d] * F_RUN / S + a(S, a2, C)
        chain = (warmup * L[d][0] + draws * L[d][1]) * per_gradient
        concurrent = C // S
        ensemble = math.ceil(MEMBERS * SPLITS / C) * EPOCHS * g[d] * F_RUN
        t = ensemble + math.ceil(CHAINS * SPLITS / concurrent) * chain
        if best is None or t < best[0]:
            best = (t, S)
    return best


def cpu(d, warmup, draws):
    return CHAINS * SPLITS * (warmup * L[d][0] + draws * L[d][1]) * g[d] * F_RUN + MEMBERS * SPLITS * EPOCHS * g[d] * F_RUN


def human(s):
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def main():
    print(f"CPU: {cpu_model()}\n")
    a2 = allreduce_latency()
    print(f"all_reduce_sum latency at 467 doubles, 2 ranks: {a2 * 1e6:.1f} us\n")
    for name, (warmup, draws) in CONFIGS.items():
        print(f"**{name}**, 3 splits x 12 chains per data set (S = shards per chain chosen by the model):\n")
        print("| data | N train | CPU total | 2 cores (now) | 12 cores | 48 cores | 96 cores |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        totals = {C: 0.0 for C in (2, 12, 48, 96)}
        total_cpu = 0.0
        for d in ("airfoil", "bike_sharing", "concrete", "energy", "protein", "yacht"):
            cells = []
            for C in (2, 12, 48, 96):
                t, S = wall(d, C, warmup, draws, a2)
                totals[C] += t
                cells.append(f"{human(t)}" + (f" (S={S})" if S > 1 else ""))
            total_cpu += cpu(d, warmup, draws)
            print(f"| {d} | {N[d]} | {human(cpu(d, warmup, draws))} | " + " | ".join(cells) + " |")
        print(f"| all six, one after another | | {human(total_cpu)} | " +
              " | ".join(human(totals[C]) for C in (2, 12, 48, 96)) + " |")
        print("| all six, packed (CPU / cores) | | | " +
              " | ".join(human(total_cpu / C) for C in (2, 12, 48, 96)) + " |\n")


if __name__ == "__main__":
    sys.exit(main())

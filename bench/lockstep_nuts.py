#!/usr/bin/env python3
"""NUTS on B1 with and without --lockstep, one run: CPU time per gradient and the ratio (issue 19
item 3). Every configuration runs build/bench/samplers_bench twice, pinned to one core, the chains on
one thread (one lockstep group). Prints the CPU model and a Markdown table.

Usage: bench/lockstep_nuts.py [--build build] [--core 1]"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import cpu_model  # noqa: E402

CONFIGS = [(4, 1000, "float64"), (4, 1000, "float32"), (12, 300, "float64"), (12, 300, "float32")]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    ap.add_argument("--core", default="1")
    args = ap.parse_args()
    binary = os.path.join(args.build, "bench", "samplers_bench")
    print(f"CPU: {cpu_model()}\n")
    print("| chains on the thread | warmup = draws | precision | without (us per gradient) | with --lockstep | speed-up |")
    print("| --- | --- | --- | --- | --- | --- |")
    for chains, length, precision in CONFIGS:
        per_gradient = []
        for flags in ([], ["--lockstep"]):
            out = subprocess.run(["taskset", "-c", args.core, binary, "nuts", "--problem", "B1", "--chains", str(chains),
                                  "--threads", "1", "--warmup", str(length), "--draws", str(length), "--precision",
                                  precision] + flags, check=True, capture_output=True, text=True).stdout
            r = json.loads(out)
            per_gradient.append(1e6 * r["cpu_seconds"] / r["gradients"])
        print(f"| {chains} | {length} | {precision} | {per_gradient[0]:.3g} | {per_gradient[1]:.3g} | "
              f"{per_gradient[0] / per_gradient[1]:.2f}x |", flush=True)


if __name__ == "__main__":
    main()

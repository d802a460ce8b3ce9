#!/usr/bin/env python3
"""Cost of a fit against the parameter count K, from 1,000 to 1,000,000 (issue 19, item 6).

Every method that is not O(K^2) by design (a full Laplace, a dense metric, the coordinate-wise
slice sampler) should cost O(K) per step in time and memory. This runs `uqnn fit` on 200 rows of
a 1-D regression with a 1-w-w-1 tanh network (K = w^2 + 4w + 1) for each method at each K, twice:
with d and 2d steps (d ~ 2e7 / K, at least 50). The difference gives the time per step without the
fixed costs (start-up, laplace's curvature, writing the files); both runs keep the same 10 draws
(MCMC thins to 10), so the output does not grow with the steps. The first run's peak resident
memory (from wait4, per child) is the memory. Linear cost means the time per step and the memory
grow 10x from K = 100k to K = 1M; quadratic cost would be 100x.

Usage: bench/k_scaling.py [--build DIR] [--methods m1,m2] [--sizes 1e3,1e4,1e5,1e6]
Writes bench/results/k_scaling.jsonl (one line per method and K) and prints a Markdown table.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import cpu_model  # noqa: E402

HERE = Path(__file__).resolve().parent

# Hidden width w for each target K: K = w^2 + 4w + 1 (1 input, 1 output, two hidden layers).
WIDTHS = {1_000: 30, 10_000: 98, 100_000: 314, 1_000_000: 998}

# Per method: the options of one run and the option that sets its number of steps. Chains start
# from the network's initialisation (no MAP fit), one chain; approximate methods keep 10 draws (ens
# and rms: their 10 members); swag's rate is given (its default estimates the Hessian's largest
# eigenvalue, a fixed cost of Hessian-vector products that would blur the steps).
COMMON_MCMC = ["--chain-init", "random", "--chains", "1", "--warmup", "0"]
METHODS = {
    "map": (["--optimizer", "adam"], "--epochs"),
    "vi": (["--num-samples", "10"], "--epochs"),
    "ens": ([], "--epochs"),
    "rms": (["--optimizer", "adam"], "--epochs"),  # (its default L-BFGS stops when converged)
    "dropout": (["--num-samples", "10"], "--epochs"),
    "laplace": (["--laplace-structure", "diag", "--optimizer", "adam", "--num-samples", "10"], "--epochs"),
    "swag": (["--epochs", "2", "--swag-members", "1", "--num-samples", "10", "--swag-lr", "1e-4"], "--swag-steps"),
    "hmc": (COMMON_MCMC + ["--num-steps", "3"], "--draws"),
    "mala": (COMMON_MCMC, "--draws"),
    "amcmc": (COMMON_MCMC, "--draws"),
    "mclmc": (COMMON_MCMC, "--draws"),
    "sgld": (COMMON_MCMC + ["--step-size", "1e-7"], "--draws"),
}
KEPT_DRAWS = 10


def write_data(path):
    # 200 points of sin(x) + noise on [-3, 3], without NumPy (the bench needs only Python).
    import math
    import random

    rng = random.Random(0)
    with open(path, "w") as f:
        f.write("x,y\n")
        for _ in range(200):
            x = rng.uniform(-3, 3)
            f.write(f"{x!r},{math.sin(x) + 0.1 * rng.gauss(0, 1)!r}\n")


def run(cmd):
    """Wall seconds and peak resident MB of one child process (wait4 reports it per child)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{err}")
    return wall, usage.ru_maxrss / 1024.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.environ.get("BUILD_DIR", str(HERE.parent / "build")))
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--sizes", default="1e3,1e4,1e5,1e6")
    args = ap.parse_args()
    uqnn = Path(args.build) / "uqnn"
    if not uqnn.exists():
        sys.exit(f"{uqnn}: not built (cmake --build {args.build} --target uqnn_cli)")
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    methods = args.methods.split(",")
    print(f"CPU: {cpu_model()}; 1 thread; uqnn {uqnn}", flush=True)
    results_dir = HERE / "results"
    results_dir.mkdir(exist_ok=True)
    out_path = results_dir / "k_scaling.jsonl"
    rows = {}
    with tempfile.TemporaryDirectory() as tmp, open(out_path, "a") as log:
        data = Path(tmp) / "sine200.csv"
        write_data(data)
        for method in methods:
            options, step_flag = METHODS[method]
            for k in sizes:
                w = WIDTHS[k]
                # Enough steps that their time stands out from the fixed costs and the file system's noise.
                d = max(50, 20_000_000 // k)
                base = [str(uqnn), "fit", "--data", str(data), "--method", method, "--arch", f"{w},{w}", "--threads", "1",
                        "--figure", "none", "--quiet", "--out", str(Path(tmp) / "run")] + options

                def steps(n):
                    thin = ["--thin", str(n // KEPT_DRAWS)] if step_flag == "--draws" else []
                    return base + [step_flag, str(n)] + thin

                t1, peak = run(steps(d))
                t2, _ = run(steps(2 * d))
                n1, extra = d, d
                per_step = (t2 - t1) / extra
                row = {"method": method, "K": w * w + 4 * w + 1, "width": w, "steps": [n1, n1 + extra], "step_flag": step_flag,
                       "wall_s": [t1, t2], "per_step_ms": 1e3 * per_step, "fixed_s": t1 - n1 * per_step, "peak_mb": peak,
                       "cpu": cpu_model(), "date": time.strftime("%Y-%m-%d")}
                log.write(json.dumps(row) + "\n")
                log.flush()
                rows[(method, k)] = row
                print(f"{method:8s} K={row['K']:>9,d}  per step {row['per_step_ms']:10.3f} ms  fixed {row['fixed_s']:7.2f} s  "
                      f"peak {peak:9.1f} MB", flush=True)

    print()
    head = " | ".join(f"K = {WIDTHS[k] ** 2 + 4 * WIDTHS[k] + 1:,}" for k in sizes)
    print(f"| method | step | per step (ms) at {head} | growth 100k to 1M | peak MB at {head} | growth 100k to 1M |")
    print("|" + " --- |" * (2 * len(sizes) + 4))
    for method in methods:
        if not all((method, k) in rows for k in sizes):
            continue
        times = [rows[(method, k)]["per_step_ms"] for k in sizes]
        peaks = [rows[(method, k)]["peak_mb"] for k in sizes]
        growth = lambda v: f"{v[-1] / v[-2]:.1f}x" if len(v) >= 2 and v[-2] > 0 else "-"
        print(f"| {method} | {METHODS[method][1]} | " + " | ".join(f"{t:.3g}" for t in times) + f" | {growth(times)} | " +
              " | ".join(f"{p:.0f}" for p in peaks) + f" | {growth(peaks)} |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""One log-posterior + gradient evaluation on B1-B3 (data/bench/README.md): uqnn (C++, from the
JSON of bench/gradient_bench) against PyTorch variants and JAX, all in double precision on one thread.

Driven by bench/gradient_vs_torch_jax.sh, which sets up bench/.venv, pins everything to one core and
runs the C++ benchmark first. Each framework runs in its own subprocess (`--framework torch|jax`) so
that thread settings apply before the library is imported; each prints JSON with per-variant median
times and checks its gradient against the golden gradref (a wrong gradient is not timed).

Log posterior (BENCHMARKS.md, constants dropped):
    -0.5 / sigma^2 * sum_i (y_i - f(x_i))^2 - 0.5 * sum_j theta_j^2
with f(x) = W3 tanh(W2 tanh(W1 x + b1) + b2) + b3, theta in PyTorch nn.Linear order.
"""
import argparse
import warnings
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import cpu_model  # noqa: E402

PROBLEMS = {  # id: (widths, sigma)
    "B1": ([1, 10, 10, 1], 0.05),
    "B2": ([5, 16, 16, 1], 0.1),
    "B3": ([1, 100, 100, 1], 0.5),
}


def load(shared_bench, pid):
    import numpy as np

    def arr(name):
        return np.loadtxt(os.path.join(shared_bench, f"{pid}_{name}.csv"), delimiter=",", ndmin=1)

    widths, sigma = PROBLEMS[pid]
    X = arr("X").reshape(-1, widths[0])  # [N, d]: one row per example
    y = arr("y").reshape(-1, 1)
    return dict(X=X, y=y, theta=arr("theta_ref"), gradref=arr("gradref"), lpref=float(arr("lpref")[0]),
                widths=widths, sigma=sigma)


def time_median(fn, min_seconds):
    """Median over 7 repeats of the mean CPU time per call within a batch of calls (seconds).

    Process CPU time (all threads, so JAX's dispatch thread counts too), like the C++ side's CPU time:
    time other processes take from the pinned core is not counted."""
    for _ in range(3):
        fn()
    n, t = 1, 0.0
    while True:  # batch size so that one batch takes about min_seconds / 7
        t0 = time.process_time()
        for _ in range(n):
            fn()
        t = time.process_time() - t0
        if t >= min_seconds / 7 or n >= 1 << 20:
            break
        n *= 2
    samples = []
    for _ in range(7):
        t0 = time.process_time()
        for _ in range(n):
            fn()
        samples.append((time.process_time() - t0) / n)
    return statistics.median(samples)


def check(pid, p, lp, grad, tolerance=1e-10):
    import numpy as np
    gerr = float(np.linalg.norm(np.asarray(grad, dtype=np.float64) - p["gradref"]) / np.linalg.norm(p["gradref"]))
    lerr = abs(float(lp) - p["lpref"]) / abs(p["lpref"])
    if not (gerr < tolerance and lerr < tolerance):
        raise SystemExit(f"{pid}: wrong result (gradient rel. error {gerr:.2e}, value {lerr:.2e})")
    return gerr


# ---------------------------------------------------------------------------------------------- torch
def run_torch(shared_bench, min_seconds):
    import torch

    warnings.filterwarnings("ignore", category=FutureWarning)  # torch.jit.script is deprecated, still timed

    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    out = {"version": torch.__version__, "problems": {}}
    for pid in PROBLEMS:
        p = load(shared_bench, pid)
        widths, sigma = p["widths"], p["sigma"]
        X = torch.tensor(p["X"])
        y = torch.tensor(p["y"])
        theta0 = torch.tensor(p["theta"])
        inv_var = 1.0 / sigma ** 2
        shapes = [(widths[i + 1], widths[i]) for i in range(len(widths) - 1)]

        def unflatten(theta):
            params, k = [], 0
            for fo, fi in shapes:
                W = theta[k:k + fo * fi].view(fo, fi)
                k += fo * fi
                b = theta[k:k + fo]
                k += fo
                params.append((W, b))
            return params

        def logpost_manual(theta):
            h = X
            params = unflatten(theta)
            for l, (W, b) in enumerate(params):
                h = torch.addmm(b, h, W.t())
                if l + 1 < len(params):
                    h = torch.tanh(h)
            return -0.5 * inv_var * torch.sum((y - h) ** 2) - 0.5 * torch.sum(theta * theta)

        def manual():
            theta = theta0.detach().requires_grad_(True)
            lp = logpost_manual(theta)
            (g,) = torch.autograd.grad(lp, theta)
            return lp, g

        layers = []
        for l, (fo, fi) in enumerate(shapes):
            layers.append(torch.nn.Linear(fi, fo))
            if l + 1 < len(shapes):
                layers.append(torch.nn.Tanh())
        net = torch.nn.Sequential(*layers)
        names = [n for n, _ in net.named_parameters()]  # PyTorch order: weight, bias per layer

        def functional():
            theta = theta0.detach().requires_grad_(True)
            params = {}
            for (W, b), i in zip(unflatten(theta), range(0, len(names), 2)):
                params[names[i]] = W
                params[names[i + 1]] = b
            f = torch.func.functional_call(net, params, (X,))
            lp = -0.5 * inv_var * torch.sum((y - f) ** 2) - 0.5 * torch.sum(theta * theta)
            (g,) = torch.autograd.grad(lp, theta)
            return lp, g

        grad_and_value = torch.func.grad_and_value(logpost_manual)

        def func_grad():
            g, lp = grad_and_value(theta0)
            return lp, g

        offsets = []
        k = 0
        for fo, fi in shapes:
            offsets.append((k, fo, fi))
            k += fo * fi + fo

        @torch.jit.script
        def logpost_script(theta: torch.Tensor, X: torch.Tensor, y: torch.Tensor, inv_var: float,
                           offsets: list[tuple[int, int, int]]) -> torch.Tensor:
            h = X
            L = len(offsets)
            for l in range(L):
                k, fo, fi = offsets[l]
                W = theta[k:k + fo * fi].view(fo, fi)
                b = theta[k + fo * fi:k + fo * fi + fo]
                h = torch.addmm(b, h, W.t())
                if l + 1 < L:
                    h = torch.tanh(h)
            return -0.5 * inv_var * torch.sum((y - h) ** 2) - 0.5 * torch.sum(theta * theta)

        def script():
            theta = theta0.detach().requires_grad_(True)
            lp = logpost_script(theta, X, y, inv_var, offsets)
            (g,) = torch.autograd.grad(lp, theta)
            return lp, g

        res = {}
        for name, fn in [("manual matmuls", manual), ("functional_call", functional),
                         ("torch.func.grad_and_value", func_grad), ("TorchScript", script)]:
            lp, g = fn()
            err = check(pid, p, lp.item(), g.numpy())
            res[name] = {"seconds": time_median(fn, min_seconds), "grad_rel_err": err}
        out["problems"][pid] = res
    return out


# ------------------------------------------------------------------------------------------------ jax
def run_jax(shared_bench, min_seconds):
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    def timed(pid, p, dtype):
        """Median time of the jitted value and gradient in `dtype`, checked against the golden values."""
        widths, sigma = p["widths"], p["sigma"]
        X = jnp.asarray(p["X"], dtype=dtype)
        y = jnp.asarray(p["y"], dtype=dtype)
        theta0 = jnp.asarray(p["theta"], dtype=dtype)
        inv_var = 1.0 / sigma ** 2
        shapes = [(widths[i + 1], widths[i]) for i in range(len(widths) - 1)]

        def logpost(theta):
            h, k = X, 0
            for l, (fo, fi) in enumerate(shapes):
                W = theta[k:k + fo * fi].reshape(fo, fi)
                k += fo * fi
                b = theta[k:k + fo]
                k += fo
                h = h @ W.T + b
                if l + 1 < len(shapes):
                    h = jnp.tanh(h)
            return -0.5 * inv_var * jnp.sum((y - h) ** 2) - 0.5 * jnp.sum(theta * theta)

        vg = jax.jit(jax.value_and_grad(logpost))

        def fn():
            lp, g = vg(theta0)
            g.block_until_ready()
            return lp, g

        lp, g = fn()
        # float32: the log density sums N squared residuals in single precision (B2: 1200 of them).
        err = check(pid, p, float(lp), g, 1e-10 if dtype == "float64" else 1e-3)
        return {"seconds": time_median(fn, min_seconds), "grad_rel_err": err}

    out = {"version": jax.__version__, "problems": {}}
    for pid in PROBLEMS:
        p = load(shared_bench, pid)
        out["problems"][pid] = {"jit value_and_grad": timed(pid, p, "float64"),
                                "jit value_and_grad float32": timed(pid, p, "float32")}
    return out


# ------------------------------------------------------------------------------------------- driver
def single_thread_env():
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
               JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="2")
    return env


def uqnn_times(path, prefix="BM_Gradient<"):
    """Median CPU time per evaluation (s) and counters of each benchmark named prefix... in the JSON,
    as res[problem][kind] for a benchmark named "kind/problem"."""
    with open(path) as f:
        data = json.load(f)
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    res = {}
    for b in data["benchmarks"]:
        # Run with --benchmark_repetitions and aggregates only: take the median of the repetitions.
        if not b["name"].startswith(prefix) or b.get("aggregate_name") != "median":
            continue
        kind, pid = b["run_name"].split("/")
        res.setdefault(pid, {})[kind] = dict(b, seconds=b["cpu_time"] * scale[b["time_unit"]])
    return res, data.get("context", {})


def fmt_time(s):
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} us"


def emit_table(table, out):
    """Prints the markdown table and, when `out` is given, writes it there."""
    if out:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(out, "w") as fh:
            fh.write(table)
    print(table)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="the data directory (holds bench/B1_X.csv ...)")
    ap.add_argument("--framework", choices=["torch", "jax"], help="internal: time one framework, print JSON")
    ap.add_argument("--uqnn-json", help="JSON output of gradient_bench")
    ap.add_argument("--out", help="markdown table written here")
    ap.add_argument("--min-seconds", type=float, default=1.0, help="timing budget per variant and problem")
    args = ap.parse_args()
    shared_bench = os.path.join(args.data, "bench")

    if args.framework:
        run = run_torch if args.framework == "torch" else run_jax
        json.dump(run(shared_bench, args.min_seconds), sys.stdout)
        return

    results = {}
    for fw in ("torch", "jax"):
        proc = subprocess.run([sys.executable, __file__, "--data", args.data, "--framework", fw,
                               "--min-seconds", str(args.min_seconds)],
                              env=single_thread_env(), stdout=subprocess.PIPE, check=True, text=True)
        results[fw] = json.loads(proc.stdout)
    ours, context = uqnn_times(args.uqnn_json)

    lines = [
        "| problem | uqnn double | uqnn float | best PyTorch (variant) | JAX double | JAX float | uqnn double vs best PyTorch | "
        "uqnn double vs JAX double | uqnn float vs JAX float | FLOP lower bound | uqnn double / bound |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    detail = ["", "All PyTorch variants (median per evaluation):", ""]
    for pid in PROBLEMS:
        d = ours[pid]["BM_Gradient<double>"]
        f = ours[pid]["BM_Gradient<float>"]
        torch_variants = results["torch"]["problems"][pid]
        best = min(torch_variants, key=lambda k: torch_variants[k]["seconds"])
        tb = torch_variants[best]["seconds"]
        jx = results["jax"]["problems"][pid]["jit value_and_grad"]["seconds"]
        jf = results["jax"]["problems"][pid]["jit value_and_grad float32"]["seconds"]
        bound = d["flop_bound_us"] * 1e-6
        lines.append(f"| {pid} | {fmt_time(d['seconds'])} | {fmt_time(f['seconds'])} | {fmt_time(tb)} ({best}) | "
                     f"{fmt_time(jx)} | {fmt_time(jf)} | {tb / d['seconds']:.1f}x | {jx / d['seconds']:.1f}x | "
                     f"{jf / f['seconds']:.1f}x | {fmt_time(bound)} | {d['seconds'] / bound:.2f} |")
        detail.append(f"- {pid}: " + ", ".join(f"{k} {fmt_time(v['seconds'])}" for k, v in torch_variants.items()))
    d3 = ours["B3"]["BM_Gradient<double>"]
    notes = [
        "",
        f"Double precision unless noted, one thread, pinned to one core (taskset); CPU time per evaluation. "
        f"uqnn: Google Benchmark, median of 5 repetitions; Python: median of 7 batches. PyTorch {results['torch']['version']}, JAX {results['jax']['version']}. "
        f"Machine rates measured in the same run: dgemm {d3['dgemm_gflops']:.1f} GFLOP/s (best of the problems' "
        f"GEMM shapes and 256^3), tanh {d3['tanh_gps']:.3f} G/s (uqnn's vectorised double tanh). "
        f"FLOP lower bound = 3 x 2 x N x sum(fan_in x fan_out) / dgemm rate + N x sum(hidden) / tanh rate. "
        f"CPU: {cpu_model()}, {context.get('num_cpus', '?')} CPUs at "
        f"{context.get('mhz_per_cpu', '?')} MHz.",
    ]
    emit_table("\n".join(lines + detail + notes) + "\n", args.out)


if __name__ == "__main__":
    main()

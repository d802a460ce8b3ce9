#!/usr/bin/env python3
"""One log-posterior + gradient evaluation of seed 003's Table 3 model (2x16 ReLU network, outputs
mean and log sigma, heteroscedastic Gaussian likelihood, unit Gaussian prior) on the standardised
training part of each UCI data set: uqnn (float64 and float32, from the JSON of
bench/dei_gradient_bench) against JAX in the same precisions, one thread.

Driven by bench/dei_gradient_vs_jax.sh, which runs the C++ benchmark first with --export DIR: the
training sets, the parameter point and uqnn's float64 log density and gradient. JAX is checked
against them (float64: relative error < 1e-10; float32: < 1e-3) before it is timed.

JAX is timed the way NumPyro's NUTS spends it: the gradient inside one compiled loop (a
jax.lax.fori_loop of gradient steps on the parameters, as leapfrog steps are), so Python's per-call
dispatch (~10 us, as long as a yacht gradient) is not counted against JAX; per gradient = loop time /
steps. The paper (seed 003) ran NumPyro in JAX's default float32.

Log density (both sides, constants included):
    sum_i [-(y_i - m_i)^2 exp(-2 s_i) / 2 - s_i - log(2 pi) / 2] - |theta|^2 / 2 - P log(2 pi) / 2
with (m, s) = W3 relu(W2 relu(W1 x + b1) + b2) + b3, theta in PyTorch nn.Linear order.
"""
import argparse
import json
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import cpu_model  # noqa: E402
from gradient_vs_torch_jax import emit_table, fmt_time, single_thread_env, time_median, uqnn_times  # noqa: E402

DATA_SETS = ["yacht", "energy", "concrete", "airfoil", "bike_sharing", "protein"]
STEPS = 200  # gradient evaluations per compiled loop


def load(export_dir, name):
    import numpy as np

    def arr(what):
        return np.loadtxt(os.path.join(export_dir, f"{name}_{what}.csv"), delimiter=",", ndmin=1)

    X = arr("X")
    X = X.reshape(X.shape[0], -1)  # [N, d]
    return dict(X=X, y=arr("y").reshape(-1), theta=arr("theta"), grad=arr("grad"), lp=float(arr("lp")[0]))


def run_jax(export_dir, names, min_seconds):
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np

    out = {"version": jax.__version__, "data": {}}
    for name in names:
        p = load(export_dir, name)
        d = p["X"].shape[1]
        shapes = [(16, d), (16, 16), (2, 16)]
        res = {}
        for dtype, tolerance in (("float64", 1e-10), ("float32", 1e-3)):
            X = jnp.asarray(p["X"], dtype=dtype)
            y = jnp.asarray(p["y"], dtype=dtype)
            theta0 = jnp.asarray(p["theta"], dtype=dtype)
            half_log_2pi = 0.5 * math.log(2 * math.pi)

            def logpost(theta, X=X, y=y):
                h, k = X, 0
                for l, (fo, fi) in enumerate(shapes):
                    W = theta[k:k + fo * fi].reshape(fo, fi)
                    k += fo * fi
                    h = h @ W.T + theta[k:k + fo]
                    k += fo
                    if l + 1 < len(shapes):
                        h = jax.nn.relu(h)
                mean, log_sigma = h[:, 0], h[:, 1]
                lik = jnp.sum(-0.5 * (y - mean) ** 2 * jnp.exp(-2 * log_sigma) - log_sigma - half_log_2pi)
                return lik - 0.5 * jnp.sum(theta * theta) - theta.size * half_log_2pi

            vg = jax.jit(jax.value_and_grad(logpost))
            lp, g = vg(theta0)
            gerr = float(np.linalg.norm(np.asarray(g, dtype=np.float64) - p["grad"]) / np.linalg.norm(p["grad"]))
            lerr = abs(float(lp) - p["lp"]) / abs(p["lp"])
            if not (gerr < tolerance and lerr < tolerance):
                raise SystemExit(f"{name} {dtype}: JAX disagrees with uqnn (gradient rel. error {gerr:.2e}, value {lerr:.2e})")

            @jax.jit
            def loop(theta):
                def body(_, state):
                    t, acc = state
                    v, g = jax.value_and_grad(logpost)(t)
                    return t + 1e-9 * g, acc + v  # each step depends on the last, as leapfrog steps do
                return jax.lax.fori_loop(0, STEPS, body, (theta, jnp.zeros((), dtype)))

            def fn():
                loop(theta0)[1].block_until_ready()

            res[dtype] = {"seconds": time_median(fn, min_seconds) / STEPS, "grad_rel_err": gerr}
        out["data"][name] = res
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--export", required=True, help="directory written by dei_gradient_bench --export")
    ap.add_argument("--framework", choices=["jax"], help="internal: time JAX, print JSON")
    ap.add_argument("--uqnn-json", help="JSON output of dei_gradient_bench")
    ap.add_argument("--out", help="markdown table written here")
    ap.add_argument("--min-seconds", type=float, default=1.0, help="timing budget per variant and data set")
    args = ap.parse_args()
    names = [n for n in DATA_SETS if os.path.exists(os.path.join(args.export, f"{n}_X.csv"))]

    if args.framework:
        json.dump(run_jax(args.export, names, args.min_seconds), sys.stdout)
        return

    proc = subprocess.run([sys.executable, __file__, "--export", args.export, "--framework", "jax",
                           "--min-seconds", str(args.min_seconds)],
                          env=single_thread_env(), stdout=subprocess.PIPE, check=True, text=True)
    jax_results = json.loads(proc.stdout)
    ours, context = uqnn_times(args.uqnn_json, prefix="BM_DeiGradient<")

    lines = [
        "| data set | N | d | uqnn float64 | uqnn float32 | JAX float64 | JAX float32 | float32 vs float64 (uqnn) | "
        "uqnn vs JAX, float64 | uqnn vs JAX, float32 |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name in names:
        u64, u32 = ours[name]["BM_DeiGradient<float64>"], ours[name]["BM_DeiGradient<float32>"]
        j64, j32 = (jax_results["data"][name][k]["seconds"] for k in ("float64", "float32"))
        lines.append(f"| {name} | {int(u64['N'])} | {int(u64['d'])} | {fmt_time(u64['seconds'])} | {fmt_time(u32['seconds'])} | "
                     f"{fmt_time(j64)} | {fmt_time(j32)} | {u64['seconds'] / u32['seconds']:.2f}x | "
                     f"{j64 / u64['seconds']:.1f}x | {j32 / u32['seconds']:.1f}x |")
    notes = [
        "",
        "One log density + gradient of the Table 3 posterior (training part of split 0), CPU time per evaluation, one "
        "thread pinned to one core. uqnn: Google Benchmark, median of 5 repetitions; JAX: median of 7 batches of a "
        f"compiled loop of {STEPS} gradient steps (as NumPyro's NUTS runs them), per step. JAX {jax_results['version']}. "
        f"CPU: {cpu_model()}, {context.get('num_cpus', '?')} CPUs at {context.get('mhz_per_cpu', '?')} MHz.",
    ]
    emit_table("\n".join(lines + notes) + "\n", args.out)


if __name__ == "__main__":
    main()

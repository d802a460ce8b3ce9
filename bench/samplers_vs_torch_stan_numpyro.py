#!/usr/bin/env python3
"""Samplers on B1 / B2 (data/bench/README.md), side by side on the same model, data and prior
(issue 3 item 8); driven by bench/samplers_vs_torch_stan_numpyro.sh, which sets up bench/.venv,
builds bench/samplers_bench, compiles bench/mlp_posterior.stan with rstan and pins the runs.

1. HMC at fixed L and eps (unit metric, start theta0, no warmup): uqnn (samplers_bench hmc) against
   a hamiltorch-style HMC written here in PyTorch (leapfrog with torch.autograd gradients), one
   thread on one core; CPU seconds per draw and mean acceptance probability.
2. NUTS (4 chains, warmup + draws, start theta0, diagonal metric, target acceptance 0.8, max tree
   depth 10): uqnn (samplers_bench nuts, one thread per chain), Stan (rstan, two R processes of two
   chains each so that two chains run at a time like uqnn's two threads) and NumPyro (one process,
   chains in parallel on one XLA CPU device each). Every tool writes the same long CSV (chain, draw,
   lp__, f_1..f_5, sampler statistics) and ONE function here (ArviZ's ess, method "bulk") computes
   the effective sample sizes of all three. CPU seconds are the user + system time of the tool's
   processes (getrusage of the children: start-up, JAX compilation and R start-up included; Stan's
   C++ compilation excluded), so they do not count time other processes take from the cores.

Log posterior (BENCHMARKS.md, constants dropped): -0.5 / sigma^2 sum_i (y_i - f(x_i))^2 - 0.5 |theta|^2
with f(x) = W3 tanh(W2 tanh(W1 x + b1) + b2) + b3, theta in PyTorch nn.Linear order. lp__ of every
tool is this function (uqnn removes its normalising constants, Stan uses target +=, NumPyro gets it as
its potential), so the lp__ columns are the same quantity.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import cpu_model  # noqa: E402

PROBLEMS = {  # id: (widths, sigma, HMC step size of BENCHMARKS.md)
    "B1": ([1, 10, 10, 1], 0.05, 1.5e-3),
    "B2": ([5, 16, 16, 1], 0.1, 7e-4),
}


def load(shared_bench, pid):
    import numpy as np

    def arr(name):
        return np.loadtxt(os.path.join(shared_bench, f"{pid}_{name}.csv"), delimiter=",", ndmin=1)

    widths, sigma, eps = PROBLEMS[pid]
    return dict(X=arr("X").reshape(-1, widths[0]), y=arr("y").reshape(-1), Xtest=arr("Xtest").reshape(-1, widths[0]),
                theta0=arr("theta0"), theta_ref=arr("theta_ref"), lpref=float(arr("lpref")[0]), widths=widths,
                sigma=sigma, eps=eps)


def unpack(theta, widths, xp):
    """Layer (W, b) views of the flat vector in nn.Linear order (W is fan_out x fan_in, row-major)."""
    layers, k = [], 0
    for fan_in, fan_out in zip(widths[:-1], widths[1:]):
        W = theta[k:k + fan_in * fan_out].reshape(fan_out, fan_in)
        k += fan_in * fan_out
        b = theta[k:k + fan_out]
        k += fan_out
        layers.append((W, b))
    return layers


def network(theta, X, widths, xp):
    h = X
    layers = unpack(theta, widths, xp)
    for i, (W, b) in enumerate(layers):
        h = h @ W.T + b
        if i + 1 < len(layers):
            h = xp.tanh(h)
    return h[:, 0]


def run_timed(cmd, env=None):
    """Runs cmd; returns (stdout, wall seconds, CPU seconds of the child processes)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return out, wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def run_parallel_timed(cmds):
    """Runs the commands at the same time; returns (wall, CPU seconds of all of them)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in cmds]
    for p, c in zip(procs, cmds):
        out, err = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(c)} failed:\n{err[-3000:]}")
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


# ------------------------------------------------------------------------------ hamiltorch-style HMC
def torch_hmc(shared_bench, pid, draws, steps, seed):
    """hamiltorch's HMC (Cobb & Jalaian 2021) reduced to its arithmetic: unit mass, leapfrog with
    autograd gradients, Metropolis correction. The gradient at the current point is cached (one
    gradient per leapfrog step, as uqnn), which is cheaper than hamiltorch itself."""
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    p = load(shared_bench, pid)
    X, y = torch.tensor(p["X"]), torch.tensor(p["y"])
    widths, sigma, eps = p["widths"], p["sigma"], p["eps"]

    def log_prob(theta):
        f = network(theta, X, widths, torch)
        return -0.5 / sigma ** 2 * torch.sum((y - f) ** 2) - 0.5 * torch.sum(theta ** 2)

    def value_and_grad(theta):
        theta = theta.detach().requires_grad_(True)
        lp = log_prob(theta)
        (g,) = torch.autograd.grad(lp, theta)
        return lp.detach(), g

    lp_ref, _ = value_and_grad(torch.tensor(p["theta_ref"]))
    if abs(float(lp_ref) - p["lpref"]) > 1e-9 * abs(p["lpref"]):
        raise SystemExit(f"{pid}: torch log posterior {float(lp_ref)} != lpref {p['lpref']}")
    theta = torch.tensor(p["theta0"])
    lp, g = value_and_grad(theta)
    accept_probs = []
    t0 = time.process_time()
    for _ in range(draws):
        mom = torch.randn_like(theta)
        h0 = -lp + 0.5 * torch.dot(mom, mom)
        q, pm, lq, gq = theta.clone(), mom + 0.5 * eps * g, lp, g
        for i in range(steps):
            q = q + eps * pm
            lq, gq = value_and_grad(q)
            pm = pm + (eps if i + 1 < steps else 0.5 * eps) * gq
        h1 = -lq + 0.5 * torch.dot(pm, pm)
        a = float(torch.clamp(torch.exp(h0 - h1), max=1.0)) if torch.isfinite(h1) else 0.0
        accept_probs.append(a)
        if float(torch.rand(())) < a:
            theta, lp, g = q, lq, gq
    cpu = time.process_time() - t0
    return dict(tool="PyTorch (hamiltorch-style)", cpu_per_draw=cpu / draws, accept=sum(accept_probs) / draws)


# ------------------------------------------------------------------------------------------ NumPyro
def numpyro_nuts(shared_bench, pid, chains, warmup, draws, seed, max_depth, out_csv):
    import numpy as np
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpyro
    from numpyro.infer import MCMC, NUTS

    p = load(shared_bench, pid)
    X, y = jnp.asarray(p["X"]), jnp.asarray(p["y"])
    widths, sigma = p["widths"], p["sigma"]

    def potential(theta):  # minus BENCHMARKS.md's log posterior
        f = network(theta, X, widths, jnp)
        return 0.5 / sigma ** 2 * jnp.sum((y - f) ** 2) + 0.5 * jnp.sum(theta ** 2)

    lp_ref = -float(potential(jnp.asarray(p["theta_ref"])))
    if abs(lp_ref - p["lpref"]) > 1e-9 * abs(p["lpref"]):
        raise SystemExit(f"{pid}: JAX log posterior {lp_ref} != lpref {p['lpref']}")
    kernel = NUTS(potential_fn=potential, max_tree_depth=max_depth, target_accept_prob=0.8, dense_mass=False)
    mcmc = MCMC(kernel, num_warmup=warmup, num_samples=draws, num_chains=chains, chain_method="parallel",
                progress_bar=False)
    t0 = time.perf_counter()
    mcmc.run(jax.random.PRNGKey(seed), init_params=jnp.tile(jnp.asarray(p["theta0"]), (chains, 1)),
             extra_fields=("potential_energy", "num_steps", "diverging", "accept_prob", "adapt_state.step_size"))
    samples = np.asarray(mcmc.get_samples(group_by_chain=True))  # [chain, draw, P]
    wall = time.perf_counter() - t0
    extra = {k: np.asarray(v) for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
    Xtest = p["Xtest"]
    with open(out_csv, "w") as out:
        out.write("chain,draw,lp__," + ",".join(f"f_{t + 1}" for t in range(len(Xtest))) +
                  ",accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__\n")
        for c in range(samples.shape[0]):
            f = np.stack([network(th, Xtest, widths, np) for th in samples[c]])
            for d in range(samples.shape[1]):
                n = int(extra["num_steps"][c, d])
                depth = int(np.ceil(np.log2(n + 1)))  # doublings of Stan's treedepth__
                out.write(f"{c},{d},{-float(extra['potential_energy'][c, d])!r}," + ",".join(repr(float(v)) for v in f[d]) +
                          f",{float(extra['accept_prob'][c, d])!r},{float(extra['adapt_state.step_size'][c, d])!r},"
                          f"{depth},{n},{int(extra['diverging'][c, d])}\n")
    print(json.dumps(dict(tool="numpyro", wall_seconds_in_process=wall)))


# ------------------------------------------------------------------------------------ the comparison
def read_long_csv(path):
    import numpy as np
    import pandas as pd
    table = pd.read_csv(path)
    chains = sorted(table["chain"].unique())
    by_chain = [table[table["chain"] == c].sort_values("draw") for c in chains]
    n = min(len(t) for t in by_chain)

    def column(name):  # [chain, draw]
        return np.stack([t[name].to_numpy()[:n] for t in by_chain])

    return table, column


def summarise(path):
    """The same diagnostics for every tool: ArviZ's bulk ESS and rank R-hat of lp__ and f_1..f_5."""
    import numpy as np
    import arviz as az
    table, column = read_long_csv(path)
    fcols = [c for c in table.columns if c.startswith("f_")]
    ess = {c: float(az.ess(column(c), method="bulk")) for c in ["lp__"] + fcols}
    rhat = {c: float(az.rhat(column(c))) for c in ["lp__"] + fcols}
    return dict(ess_lp=ess["lp__"], ess_f=[ess[c] for c in fcols], rhat_lp=rhat["lp__"],
                rhat_f_max=max(rhat[c] for c in fcols), step_size=float(np.median(column("stepsize__")[:, 0])),
                step_sizes=[float(s) for s in column("stepsize__")[:, 0]],
                mean_tree_depth=float(table["treedepth__"].mean()),
                max_depth_fraction=float((table["treedepth__"] >= table["treedepth__"].max()).mean()),
                mean_leapfrog=float(table["n_leapfrog__"].mean()), divergences=int(table["divergent__"].sum()),
                mean_accept=float(table["accept_stat__"].mean()), draws=int(len(table)))


def fmt(x, digits=3):
    return f"{x:.{digits}g}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", default="all", choices=["all", "torch-hmc", "numpyro"])
    ap.add_argument("--data", required=True)
    ap.add_argument("--build", default="build")
    ap.add_argument("--problem", default="B1")
    ap.add_argument("--problems", default="B1,B2")
    ap.add_argument("--hmc-draws", type=int, default=200)
    ap.add_argument("--steps", type=int, default=10)
    # B2 defaults are what a loaded 2-core machine finishes: Stan needs ~2 s of CPU per depth-10
    # NUTS iteration on B2, so 4 x (1000 + 1000) would be ~4.5 CPU-hours for Stan alone.
    ap.add_argument("--chains", default="B1:4,B2:2", help="per problem (one number: all problems)")
    ap.add_argument("--warmup", default="B1:1000,B2:30", help="per problem (one number: all problems)")
    ap.add_argument("--draws", default="B1:1000,B2:20", help="per problem (one number: all problems)")
    ap.add_argument("--max-depth", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--core", default="0", help="core for the one-thread HMC timings")
    ap.add_argument("--cores", default="0,1", help="cores for the NUTS runs (two chains at a time)")
    ap.add_argument("--stan-model", default="bench/results/mlp_posterior.rds")
    ap.add_argument("--tools", default="uqnn,stan,numpyro")
    ap.add_argument("--skip-hmc", action="store_true")
    ap.add_argument("--skip-nuts", action="store_true")
    ap.add_argument("--results", default="bench/results")
    ap.add_argument("--out", default="bench/results/samplers.md")
    ap.add_argument("--csv", default="")
    args = ap.parse_args()
    shared_bench = os.path.join(args.data, "bench")
    here = os.path.dirname(os.path.abspath(__file__))

    if args.part == "torch-hmc":
        print(json.dumps(torch_hmc(shared_bench, args.problem, args.hmc_draws, args.steps, args.seed)))
        return
    if args.part == "numpyro":
        numpyro_nuts(shared_bench, args.problem, int(args.chains), int(args.warmup), int(args.draws), args.seed,
                     args.max_depth, args.csv)
        return

    def per(spec):
        if ":" not in spec:
            return {pid: int(spec) for pid in PROBLEMS}
        return {k: int(v) for k, v in (kv.split(":") for kv in spec.split(","))}

    warmups, drawss, chainss = per(args.warmup), per(args.draws), per(args.chains)
    problems = args.problems.split(",")
    tools = [t for t in args.tools.split(",") if t]
    bench_bin = os.path.join(args.build, "bench", "samplers_bench")
    one_core, two_cores = ["taskset", "-c", args.core], ["taskset", "-c", args.cores]
    lines = [f"CPU: {cpu_model()}", ""]
    os.makedirs(args.results, exist_ok=True)

    if not args.skip_hmc:
        lines += ["HMC at fixed L and eps (unit metric, start theta0, no warmup), one thread on one core, "
                  f"{args.hmc_draws} draws; CPU seconds per draw:", "",
                  "| problem | L, eps | uqnn | PyTorch (hamiltorch-style) | ratio | acceptance uqnn / PyTorch |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for pid in problems:
            eps = PROBLEMS[pid][2]
            print(f"== HMC {pid}", file=sys.stderr)
            out, _, cpu_u = run_timed(one_core + [bench_bin, "hmc", "--problem", pid, "--draws", str(args.hmc_draws),
                                                  "--step-size", str(eps), "--steps", str(args.steps), "--seed",
                                                  str(args.seed)])
            u = json.loads(out)
            out, _, _ = run_timed(one_core + [sys.executable, __file__, "--part", "torch-hmc", "--data", args.data,
                                              "--problem", pid, "--hmc-draws", str(args.hmc_draws), "--steps",
                                              str(args.steps), "--seed", str(args.seed)])
            t = json.loads(out)
            u_per = u["cpu_seconds"] / args.hmc_draws
            lines.append(f"| {pid} | {args.steps}, {eps:g} | {u_per * 1e3:.3g} ms | {t['cpu_per_draw'] * 1e3:.3g} ms | "
                         f"{t['cpu_per_draw'] / u_per:.0f}x | {u['mean_accept_stat']:.2f} / {t['accept']:.2f} |")
        lines.append("")

    nuts_rows = []
    for pid in problems if not args.skip_nuts else []:
        widths, sigma, _ = PROBLEMS[pid]
        W, D, C = warmups[pid], drawss[pid], chainss[pid]
        results = {}
        if "uqnn" in tools:
            print(f"== NUTS {pid}: uqnn", file=sys.stderr)
            csv = os.path.join(args.results, f"nuts_{pid}_uqnn.csv")
            out, wall, cpu = run_timed(two_cores + [bench_bin, "nuts", "--problem", pid, "--chains", str(C),
                                                    "--threads", "2", "--warmup", str(W), "--draws", str(D),
                                                    "--seed", str(args.seed), "--max-tree-depth", str(args.max_depth),
                                                    "--csv", csv])
            lpref = load(shared_bench, pid)["lpref"]
            if abs(json.loads(out)["lp_at_theta_ref"] - lpref) > 1e-9 * abs(lpref):
                raise SystemExit(f"{pid}: uqnn's lp__ at theta_ref {json.loads(out)['lp_at_theta_ref']} != lpref {lpref}")
            results["uqnn"] = dict(csv=csv, wall=wall, cpu=cpu)
        if "stan" in tools:
            print(f"== NUTS {pid}: Stan", file=sys.stderr)
            csvs = [os.path.join(args.results, f"nuts_{pid}_stan_{k}.csv") for k in range(2)]
            half = C // 2
            cmds = [two_cores + ["Rscript", os.path.join(here, "stan_nuts.R"), "sample", args.stan_model, shared_bench,
                                 pid, str(sigma), str(widths[1]), str(widths[2]), str(n), "1", str(W), str(D),
                                 str(args.seed + k), str(args.max_depth), csvs[k], csvs[k] + ".json"]
                    for k, n in enumerate([half, C - half])]
            wall, cpu = run_parallel_timed(cmds)
            csv = os.path.join(args.results, f"nuts_{pid}_stan.csv")
            merge_chains(csvs, csv)
            lpref = load(shared_bench, pid)["lpref"]
            for path in csvs:
                with open(path + ".json") as f:
                    lp = json.load(f)["lp_at_theta_ref"]
                if abs(lp - lpref) > 1e-9 * abs(lpref):
                    raise SystemExit(f"{pid}: Stan's log density at theta_ref {lp} != lpref {lpref}")
            results["stan"] = dict(csv=csv, wall=wall, cpu=cpu)
        if "numpyro" in tools:
            print(f"== NUTS {pid}: NumPyro", file=sys.stderr)
            csv = os.path.join(args.results, f"nuts_{pid}_numpyro.csv")
            env = dict(os.environ, JAX_PLATFORMS="cpu",
                       XLA_FLAGS=f"--xla_force_host_platform_device_count={C} "
                                 "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
            out, wall, cpu = run_timed(two_cores + [sys.executable, __file__, "--part", "numpyro", "--data",
                                                    args.data, "--problem", pid, "--chains", str(C),
                                                    "--warmup", str(W), "--draws", str(D), "--seed", str(args.seed),
                                                    "--max-depth", str(args.max_depth), "--csv", csv], env=env)
            results["numpyro"] = dict(csv=csv, wall=wall, cpu=cpu)
        for tool, r in results.items():
            r.update(summarise(r["csv"]), warmup=W, draws_per_chain=D, chains=C, date=time.strftime(
                "%Y-%m-%d %H:%M UTC", time.gmtime()), load=os.getloadavg())
            with open(os.path.join(args.results, f"nuts_{pid}_{tool}.json"), "w") as f:
                json.dump(r, f, indent=1)
        # The table shows every tool's latest result for this problem (also those of earlier
        # invocations with other --tools, so the tools may run in separate, concurrent invocations).
        for tool in ["uqnn", "stan", "numpyro"]:
            path = os.path.join(args.results, f"nuts_{pid}_{tool}.json")
            if os.path.exists(path) and not args.skip_nuts:
                with open(path) as f:
                    r = json.load(f)
                nuts_rows.append((pid, f'{r["chains"]} x ({r["warmup"]} + {r["draws_per_chain"]})', None, tool, r))

    if nuts_rows:
        lines += [f"NUTS, chains from theta0, diagonal metric, target acceptance 0.8, max tree depth "
                  f"{args.max_depth}, two chains at a time on two cores; ESS = ArviZ bulk ESS of the same long CSV for "
                  "every tool; CPU = user + system seconds of the tool's processes:", "",
                  "| problem | chains x (warmup + draws) | tool | wall s | CPU s | ESS lp__ | ESS/CPU-s lp__ | ESS f(Xtest) min-max "
                  "| ESS/CPU-s f min | R-hat lp__ / max f | step size (chains) | mean tree depth (at max) | mean leapfrog "
                  "| divergences | accept |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for pid, W, D, tool, r in nuts_rows:
            lines.append(
                f"| {pid} | {W} | {tool} | {r['wall']:.0f} | {r['cpu']:.0f} | {r['ess_lp']:.0f} | "
                f"{r['ess_lp'] / r['cpu']:.3g} | {min(r['ess_f']):.0f}-{max(r['ess_f']):.0f} | "
                f"{min(r['ess_f']) / r['cpu']:.3g} | {r['rhat_lp']:.2f} / {r['rhat_f_max']:.2f} | "
                f"{', '.join(fmt(s, 2) for s in r['step_sizes'])} | {r['mean_tree_depth']:.2f} "
                f"({100 * r['max_depth_fraction']:.0f}%) | {r['mean_leapfrog']:.0f} | {r['divergences']} | "
                f"{r['mean_accept']:.2f} |")
        lines.append("")
        for pid in problems:
            rows = {tool: r for p, _, _, tool, r in nuts_rows if p == pid}
            if "uqnn" in rows and len(rows) > 1:
                others = [t for t in rows if t != "uqnn"]
                for key, name in [("ess_lp", "lp__"), ("ess_f_min", "f(Xtest) (min over the 5 points)")]:
                    val = lambda r: (r["ess_lp"] if key == "ess_lp" else min(r["ess_f"])) / r["cpu"]
                    best = max(others, key=lambda t: val(rows[t]))
                    lines.append(f"- {pid}: bulk ESS per CPU-second of {name}: uqnn / best other ({best}) = "
                                 f"{val(rows['uqnn']) / max(val(rows[best]), 1e-300):.3g}")
                # Every tool at (nearly) maximal trees: ESS per second converges to the inverse cost
                # ratio when the samplers mix alike, and unlike single-run ESS it is not noisy.
                same_work = [f"{t} / uqnn = {rows[t]['cpu'] / rows['uqnn']['cpu']:.3g}" for t in others]
                lines.append(f"- {pid}: CPU seconds of the run (mean leapfrog steps per draw: " +
                             ", ".join(f"{t} {rows[t]['mean_leapfrog']:.0f}" for t in rows) + "): " +
                             ", ".join(same_work))
        lines.append("")
    text = "\n".join(lines)
    print(text)
    with open(args.out, "w") as f:
        f.write(text + "\n")


def merge_chains(paths, out):
    """Concatenates the per-process CSVs of Stan, renumbering chains 0..C-1."""
    import pandas as pd
    tables, offset = [], 0
    for path in paths:
        t = pd.read_csv(path)
        t["chain"] = t["chain"] + offset
        offset = int(t["chain"].max()) + 1
        tables.append(t)
    pd.concat(tables).to_csv(out, index=False)


if __name__ == "__main__":
    main()

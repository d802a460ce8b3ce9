#!/usr/bin/env python3
"""NUTS' metrics side by side (issue 19 item 4): bulk ESS per gradient evaluation with Stan's diagonal
and dense metrics and the metrics from draw/gradient pairs (fisher-diag, nutpie's low-rank), on B1 and
B2 (data/bench/README.md, through bench/samplers_bench, chains from theta0) and on a Table 3
posterior (seed 003: yacht split 0, 2x16 ReLU, heteroscedastic Gaussian, unit prior, through
`uqnn fit --method nuts`, chains from their MAP fits). Driven by bench/metric_ess.sh.

ESS = ArviZ bulk ESS of lp__ and the minimum over the network's outputs at the test inputs (B1, B2:
the 5 test points); yacht: lp__ only, the sum of the chains' own bulk ESS (each chain stays in the
mode of its MAP start); per gradient = over the leapfrog steps of the
sampling phase (the metric's quality) and, for B1/B2, over all steps including warmup (the cost of
learning it). The median over the seeds is reported with the range.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from samplers_vs_torch_stan_numpyro import summarise, read_long_csv  # noqa: E402
from bench_util import cpu_model  # noqa: E402

METRICS = ["diag", "dense", "fisher-diag", "low-rank"]
YACHT_NETWORK = ["--arch", "16,16", "--activation", "relu", "--likelihood", "heteroscedastic", "--prior", "gaussian",
                 "--prior-sigma", "1"]


def run_bench_problem(build, problem, metric, chains, warmup, draws, seed, results):
    csv = os.path.join(results, f"metric_{problem}_{metric}_{seed}.csv")
    cmd = [os.path.join(build, "bench", "samplers_bench"), "nuts", "--problem", problem, "--metric", metric, "--chains",
           str(chains), "--threads", "2", "--warmup", str(warmup), "--draws", str(draws), "--seed", str(seed), "--csv", csv]
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    s = summarise(csv)
    sampling = s["mean_leapfrog"] * s["draws"]
    return dict(ess_lp=s["ess_lp"], ess_f=min(s["ess_f"]), sampling_gradients=sampling, gradients=out["gradients"],
                cpu=out["cpu_seconds"], divergences=s["divergences"], step_size=s["step_size"],
                mean_leapfrog=s["mean_leapfrog"], sampler=out["samplers"][0])


def run_yacht(uqnn, data, metric, chains, warmup, draws, seed, work, reuse):
    """`uqnn fit` on yacht; with `reuse`, an earlier run's directory (and its cpu.json) is read again."""
    import arviz as az
    out = os.path.join(work, f"yacht_{metric}_{seed}")
    uci = os.path.join(data, "uci")
    cmd = [uqnn, "fit", "--quiet", "--data", os.path.join(uci, "yacht.csv"), "--test-indices",
           os.path.join(uci, "splits", "yacht", "test_0.txt"), "--method", "nuts", "--metric", metric, "--chains",
           str(chains), "--warmup", str(warmup), "--draws", str(draws), "--seed", str(seed), "--threads", "2",
           "--figure", "none", "--idata-extras", "never", "--out", out] + YACHT_NETWORK
    cpu_file = os.path.join(out, "cpu.json")
    if not (reuse and os.path.exists(cpu_file)):
        t0 = os.times()
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        t1 = os.times()
        with open(cpu_file, "w") as f:
            json.dump({"cpu": (t1.children_user + t1.children_system) - (t0.children_user + t0.children_system)}, f)
    with open(cpu_file) as f:
        cpu = json.load(f)["cpu"]
    stats = az.from_netcdf(os.path.join(out, "posterior.nc")).sample_stats
    lp = stats["lp"].values
    leapfrog = stats["n_steps"].values
    # The chains start at their own MAP fits and stay in their modes (R-hat of lp__ far above 1), so
    # the ESS across chains says how many modes were visited; the sum of the chains' own ESS says how
    # well each mode was sampled, which is what the metric changes.
    return dict(ess_lp=sum(float(az.ess(lp[c][None, :], method="bulk")) for c in range(lp.shape[0])),
                ess_f=float("nan"), sampling_gradients=float(leapfrog.sum()), gradients=float("nan"), cpu=cpu,
                divergences=int(stats["diverging"].values.sum()), step_size=float(np.median(stats["step_size"].values)),
                mean_leapfrog=float(leapfrog.mean()), sampler="")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build", default="build")
    ap.add_argument("--data", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--metrics", default=",".join(METRICS))
    ap.add_argument("--problems", default="B1,B2,yacht")
    ap.add_argument("--reuse", action="store_true", help="yacht: read the runs already in --results again")
    ap.add_argument("--config", default="B1:4x1000x1000,B2:2x300x300,yacht:4x1000x1000",
                    help="chains x warmup x draws per problem")
    args = ap.parse_args()
    configs = {k: tuple(int(x) for x in v.split("x")) for k, v in (kv.split(":") for kv in args.config.split(","))}
    seeds = [int(s) for s in args.seeds.split(",")]
    os.makedirs(args.results, exist_ok=True)
    uqnn = os.path.join(args.build, "uqnn")
    rows = {}
    for problem in args.problems.split(","):
        chains, warmup, draws = configs[problem]
        for metric in args.metrics.split(","):
            runs = []
            for seed in seeds:
                print(f"== {problem} {metric} seed {seed}", file=sys.stderr, flush=True)
                r = (run_yacht(uqnn, args.data, metric, chains, warmup, draws, seed, args.results, args.reuse) if problem == "yacht"
                     else run_bench_problem(args.build, problem, metric, chains, warmup, draws, seed, args.results))
                print("   " + json.dumps(r), file=sys.stderr, flush=True)
                runs.append(r)
            rows[(problem, metric)] = runs
    with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
        json.dump({f"{p} {m}": r for (p, m), r in rows.items()}, f, indent=1)

    def median_range(values, digits=3):
        values = [v for v in values if v == v]
        if not values:
            return "-"
        fmt = lambda v: f"{v:.{digits}g}"
        return f"{fmt(statistics.median(values))} ({fmt(min(values))}-{fmt(max(values))})" if len(values) > 1 else fmt(values[0])

    lines = [f"NUTS metrics, {cpu_model()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
             f"median (range) over seeds {args.seeds}; ESS per 1000 gradients:", "",
             "| problem | chains x (warmup + draws) | metric | ESS lp__ / 1k sampling grads | ESS f min / 1k sampling grads "
             "| ESS lp__ / 1k grads incl. warmup | mean leapfrog | divergences | CPU s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for (problem, metric), runs in rows.items():
        chains, warmup, draws = configs[problem]
        lines.append(
            f"| {problem} | {chains} x ({warmup} + {draws}) | {metric} | "
            f"{median_range([1e3 * r['ess_lp'] / r['sampling_gradients'] for r in runs])} | "
            f"{median_range([1e3 * r['ess_f'] / r['sampling_gradients'] for r in runs])} | "
            f"{median_range([1e3 * r['ess_lp'] / r['gradients'] for r in runs])} | "
            f"{median_range([r['mean_leapfrog'] for r in runs], 4)} | {median_range([r['divergences'] for r in runs], 4)} | "
            f"{median_range([r['cpu'] for r in runs])} |")
    text = "\n".join(lines)
    print(text)
    with open(args.out, "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()

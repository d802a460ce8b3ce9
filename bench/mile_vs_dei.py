#!/usr/bin/env python3
"""MILE's UCI comparison (Sommer et al. 2025): uqnn's `mile` and `dei-nuts` and bde's BdeRegressor on
the same splits. Driven by bench/mile_vs_dei.sh (which builds uqnn and sets up the venv).

Splits: for seed s, a permutation of the rows (numpy default_rng(s)) gives 80% train, 10% validation
(MILE's members stop early on it; dei-nuts monitors its LPPD on it), 10% test, as MILE's
replicate_uci configuration. Network: 2x16 ReLU, outputs mean and scale (heteroscedastic Gaussian),
N(0, 1) prior, 12 members = chains. Each method runs at its own defaults:
  - uqnn mile: AdamW members (lr 1e-3, wd 1e-3, batch 32, <= 500 epochs, patience 10), MCLMC
    50,000 tuning + 10,000 steps thinned by 10;
  - uqnn dei-nuts: seed 003 App. D (Adam 1e-2, wd 1e-2, 5000 full-batch epochs), NUTS 100 warmup +
    1000 draws;
  - bde: the same settings as uqnn mile, through its constructor. bde conditions its posterior on
    all rows it is given and draws its early-stopping rows from them, so it gets the training rows
    (validation_split = 1/8); its members train with plain Adam (bde passes optax.adam(lr): the
    weight_decay argument does not reach them) and it uses softplus for the scale where uqnn uses exp.
All network passes in float32 (JAX's default; uqnn --precision float32). Metrics on the test rows in
the target's units: LPPD (mean over rows of log mean over draws of the predictive density) and RMSE
of the predictive mean. CPU seconds are user + system time of every thread (uqnn: the child process;
bde: this process, JIT compilation included).
"""
import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import cpu_model  # noqa: E402

DATA_SETS = ["airfoil", "concrete", "energy", "yacht"]
NETWORK = ["--arch", "16,16", "--activation", "relu", "--likelihood", "heteroscedastic", "--prior", "gaussian",
           "--prior-sigma", "1", "--precision", "float32"]


def make_split(data_dir, name, seed, work):
    """Writes train+test rows (test rows listed in test_idx.txt) and valid.csv; returns the arrays."""
    import numpy as np
    import pandas as pd

    frame = pd.read_csv(next(f for f in (os.path.join(data_dir, f"{name}{ext}") for ext in (".csv", ".csv.gz")) if os.path.exists(f)))
    n = len(frame)
    order = np.random.default_rng(seed).permutation(n)
    n_train, n_valid = int(round(0.8 * n)), int(round(0.1 * n))
    train, valid, test = order[:n_train], order[n_train:n_train + n_valid], order[n_train + n_valid:]
    d = os.path.join(work, f"{name}_{seed}")
    os.makedirs(d, exist_ok=True)
    pd.concat([frame.iloc[train], frame.iloc[test]]).to_csv(os.path.join(d, "data.csv"), index=False)
    with open(os.path.join(d, "test_idx.txt"), "w") as f:
        f.write("\n".join(str(i) for i in range(n_train, n_train + len(test))) + "\n")
    frame.iloc[valid].to_csv(os.path.join(d, "valid.csv"), index=False)
    values = frame.to_numpy(dtype=float)
    return d, values[train], values[valid], values[test]


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_uqnn(uqnn, method, d, seed, threads, quick):
    out = os.path.join(d, method)
    cmd = [uqnn, "fit", "--quiet", "--data", os.path.join(d, "data.csv"), "--test-indices", os.path.join(d, "test_idx.txt"),
           "--valid", os.path.join(d, "valid.csv"), "--method", method, "--members", "12", "--seed", str(seed),
           "--threads", str(threads), "--figure", "none", "--idata-extras", "never", "--out", out] + NETWORK
    if quick:
        cmd += ["--epochs", "20", "--warmup", "500" if method == "mile" else "20", "--draws", "200" if method == "mile" else "20"]
    cpu0, wall0 = children_cpu(), time.perf_counter()
    subprocess.run(cmd, check=True)
    cpu, wall = children_cpu() - cpu0, time.perf_counter() - wall0
    with open(os.path.join(out, "metrics.json")) as f:
        test = json.load(f)["splits"]["test"]
    return {"lppd": test["lppd"], "rmse": test["rmse"], "cpu": cpu, "wall": wall}


def run_bde(train, valid, test, seed, quick):
    import jax
    import jax.numpy as jnp
    import numpy as np
    from bde import BdeRegressor
    from bde.loss import GaussianNLL

    # bde conditions its posterior on every row it is given and takes its early-stopping rows out of
    # them: given the training rows alone, its posterior sees the same data as uqnn's (its members stop
    # on validation_split of the training rows instead of the validation rows).
    X, y = train[:, :-1], train[:, -1:]
    # Standardised on the training rows, as uqnn does.
    x_mean, x_sd = train[:, :-1].mean(0), train[:, :-1].std(0) + 1e-8
    y_mean, y_sd = train[:, -1].mean(), train[:, -1].std() + 1e-8
    regressor = BdeRegressor(hidden_layers=[16, 16], n_members=12, seed=seed, loss=GaussianNLL(), activation="relu",
                             epochs=20 if quick else 500, patience=10, validation_split=len(valid) / len(train), lr=1e-3,
                             weight_decay=1e-3, warmup_steps=500 if quick else 50000,
                             n_samples=200 if quick else 10000, n_thinning=10,
                             desired_energy_var_start=0.5, desired_energy_var_end=0.1)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    regressor.fit(x=(X - x_mean) / x_sd, y=(y - y_mean) / y_sd)
    raw = np.asarray(regressor.predict((test[:, :-1] - x_mean) / x_sd, raw=True))  # (E, T, N, 2)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    mu = raw[..., 0] * y_sd + y_mean
    sigma = (np.asarray(jax.nn.softplus(jnp.asarray(raw[..., 1]))) + 1e-6) * y_sd
    y_test = test[:, -1]
    log_density = -0.5 * ((y_test - mu) / sigma) ** 2 - np.log(sigma) - 0.5 * math.log(2 * math.pi)
    draws = log_density.reshape(-1, log_density.shape[-1])
    top = draws.max(0)
    lppd = np.mean(top + np.log(np.mean(np.exp(draws - top), 0)))
    rmse = float(np.sqrt(np.mean((mu.reshape(-1, mu.shape[-1]).mean(0) - y_test) ** 2)))
    return {"lppd": float(lppd), "rmse": rmse, "cpu": cpu, "wall": wall}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--uqnn", required=True)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--datasets", default=",".join(DATA_SETS))
    ap.add_argument("--splits", type=int, default=3)
    ap.add_argument("--methods", default="mile,dei-nuts,bde")
    ap.add_argument("--quick", action="store_true", help="tiny runs that check this script, not the methods")
    ap.add_argument("--merge", nargs="+", metavar="WORK_DIR",
                    help="run nothing: tabulate the rows.json of these work directories (runs of this script with "
                         "different --methods, e.g. one per core, that together make one comparison)")
    args = ap.parse_args()
    if "bde" in args.methods:
        os.environ.setdefault("XLA_FLAGS", f"--xla_force_host_platform_device_count={args.threads}")
        os.environ.setdefault("TQDM_DISABLE", "1")  # bde's progress bars
    methods = args.methods.split(",")
    rows = []
    if args.merge:
        for work in args.merge:
            with open(os.path.join(work, "rows.json")) as f:
                rows += json.load(f)
        present = {r["method"] for r in rows}
        methods = [m for m in methods if m in present]
        # Compare on the same splits only: a (data set, split) that some method has not finished is left out.
        done = {(r["dataset"], r["split"], r["method"]) for r in rows}
        rows = [r for r in rows if all((r["dataset"], r["split"], m) in done for m in methods)]
    for name in ([] if args.merge else args.datasets.split(",")):
        for seed in range(args.splits):
            d, train, valid, test = make_split(args.data_dir, name, seed, args.work)
            for method in methods:
                print(f"== {name} split {seed}: {method}", file=sys.stderr, flush=True)
                r = (run_bde(train, valid, test, seed, args.quick) if method == "bde"
                     else run_uqnn(args.uqnn, method, d, seed, args.threads, args.quick))
                r.update(dataset=name, split=seed, method=method)
                print(f"   LPPD {r['lppd']:.3f}  RMSE {r['rmse']:.4g}  CPU {r['cpu']:.1f} s  wall {r['wall']:.1f} s",
                      file=sys.stderr, flush=True)
                rows.append(r)
                with open(os.path.join(args.work, "rows.json"), "w") as f:
                    json.dump(rows, f, indent=1)
    lines = [f"CPU: {cpu_model()}, {args.threads} threads a method; 80/10/10 splits, seeds as listed.", "",
             "| data set | splits | method | test LPPD (mean ± sd) | test RMSE | CPU s / split | LPPD gain over dei-nuts | CPU ratio dei-nuts / method | CPU / uqnn mile's |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    import numpy as np

    for name in args.datasets.split(","):
        by = {m: [r for r in rows if r["dataset"] == name and r["method"] == m] for m in methods}
        ref = by.get("dei-nuts")
        mile = by.get("mile")
        for m in methods:
            rs = by[m]
            if not rs:
                continue
            splits = ",".join(str(r["split"]) for r in rs)
            lppd, rmse, cpu = (np.array([r[k] for r in rs]) for k in ("lppd", "rmse", "cpu"))
            gain = ratio = "-"
            if ref and m != "dei-nuts":
                gain = f"{lppd.mean() - np.mean([r['lppd'] for r in ref]):+.3f}"
                ratio = f"{np.mean([r['cpu'] for r in ref]) / cpu.mean():.1f}x"
            to_mile = f"{cpu.mean() / np.mean([r['cpu'] for r in mile]):.1f}x" if mile else "-"
            lines.append(f"| {name} | {splits} | {m} | {lppd.mean():.3f} ± {lppd.std():.3f} | {rmse.mean():.4g} ± {rmse.std():.2g} | "
                         f"{cpu.mean():.1f} | {gain} | {ratio} | {to_mile} |")
    text = "\n".join(lines) + "\n"
    print(text)
    with open(args.out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()

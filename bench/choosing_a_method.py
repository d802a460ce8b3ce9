#!/usr/bin/env python3
"""Every method at its defaults against NUTS, for docs/choosing-a-method.md.

For each data set and split, runs `uqnn compare --methods M1,M2,... --reference nuts` (NUTS with the
given chains, warmup and draws; the other methods at their defaults), then gathers per method: seconds,
the test RMSE / NLL / 95% coverage (regression) or accuracy / NLL / ECE (classification), both from
the evaluation compare.json holds (as `uqnn evaluate` scores a fit on the test rows), and the distance
to NUTS' predictive from reference.json. NUTS' own diagnostics (largest R-hat over the chains and
within each chain, smallest bulk ESS, tree depth, divergences) come from its diagnostics.json.

Writes OUT/choosing_a_method.md (one table per data set, means over splits, the methods that failed
with their message) and OUT/choosing_a_method.png (distance to NUTS against seconds, one panel per
data set). A split whose compare.json exists is read, not run again, so sets can be run in parallel
processes and gathered by a last call with every set.

Classification sets have no standard splits: the training and test rows are drawn at random (seed =
split number), --class-train and --class-test rows of each (a NUTS run on all 6,499 training rows of
mushroom's 117 one-hot inputs costs about 3.5 s per iteration on one core).

Usage (the run docs/choosing-a-method.md reports; each set in its own process, then the tables):
  python3 bench/choosing_a_method.py --sets yacht &
  python3 bench/choosing_a_method.py --sets energy & ...
  python3 bench/choosing_a_method.py --sets yacht,energy,concrete,mushroom
"""
import argparse
import json
import math
import os
import random
import resource
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "uci")
REGRESSION = {"yacht", "energy", "concrete", "protein", "airfoil", "bike_sharing"}


def cpu_of_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd, log, check=True):
    """Runs cmd, its output into log; returns the CPU seconds it used (user + system)."""
    print("+", " ".join(cmd), flush=True)
    before = cpu_of_children()
    with open(log, "w") as f:
        subprocess.run(cmd, check=check, stdout=f, stderr=subprocess.STDOUT)
    return cpu_of_children() - before


def rows_of(path):
    with open(path) as f:
        return sum(1 for _ in f) - 1


def class_split(name, k, n_train, n_test, out):
    """Random training and test rows of a classification set (seed k), as index files."""
    n = rows_of(os.path.join(DATA, name + ".csv"))
    order = list(range(n))
    random.Random(k).shuffle(order)
    if n_train + n_test > n:
        raise SystemExit(f"{name}: {n_train} + {n_test} rows asked, {n} there")
    files = []
    for part, rows in (("train", order[:n_train]), ("test", order[n_train:n_train + n_test])):
        path = os.path.join(out, f"{name}_{part}_{k}.txt")
        with open(path, "w") as f:
            f.write("\n".join(str(i) for i in sorted(rows)) + "\n")
        files.append(path)
    return files


def nuts_diagnostics(run_dir):
    """NUTS' own checks from diagnostics.json and metrics.json of its run."""
    d = json.load(open(os.path.join(run_dir, "nuts", "diagnostics.json")))
    m = json.load(open(os.path.join(run_dir, "nuts", "metrics.json")))
    return {"diagnostics": d, "info": m.get("info", {}), "warnings": [w.get("code") for w in m.get("warnings", [])]}


def fmt(x, spec):
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def mean(rs, key):
    v = [r[key] for r in rs if r.get(key) is not None]
    return sum(v) / len(v) if v else None


def gather(out):
    """Per method of one compare run: seconds, evaluation on the test rows, distance to NUTS."""
    table = json.load(open(os.path.join(out, "compare.json")))
    got, failed = {}, {}
    for method, row in table.items():
        if "error" in row:
            failed[method] = row["error"]
            continue
        e = row.get("evaluation", {})
        ref = row.get("reference", {})
        got[method] = {
            "seconds": row["seconds"],
            "rmse": e.get("rmse"),
            "nll": e.get("nll"),
            "coverage_95": e.get("intervals", {}).get("0.95", {}).get("coverage"),
            "accuracy": e.get("accuracy"),
            "ece": e.get("ece"),
            "w1": ref.get("wasserstein1"),
            "sd_ratio": ref.get("sd_ratio_median"),
            "top1": ref.get("top1_agreement"),
            "tv": ref.get("total_variation"),
        }
    return got, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uqnn", default=os.path.join(HERE, "..", "build", "uqnn"))
    ap.add_argument("--out", default="runs/choosing")
    ap.add_argument("--sets", default="yacht,energy,concrete,mushroom")
    ap.add_argument("--splits", type=int, default=1, help="standard UCI splits 0..N-1 (classification: random splits by seed)")
    ap.add_argument("--methods", default="map,ens,rms,laplace,vi,swag,dropout")
    ap.add_argument("--nuts", default="--chains 2 --warmup 500 --draws 500", help="NUTS settings of the reference")
    ap.add_argument("--arch", default="10", help="hidden widths of the MLP every method fits")
    ap.add_argument("--threads", default="1", help="threads of each fit (1: seconds are one core's)")
    ap.add_argument("--class-train", type=int, default=1000, help="classification: training rows drawn at random")
    ap.add_argument("--class-test", type=int, default=1000, help="classification: test rows drawn at random")
    ap.add_argument("--split-kind", default="uci", choices=["uci", "gap"])
    ap.add_argument("--gather-only", action="store_true", help="run nothing: tables and figure from the splits already finished")
    ap.add_argument("--floor", default="", help="directory of second NUTS runs scored against split 0's (FLOOR/SET/compare.json, "
                    "from `uqnn compare --methods nuts --reference OUT/SET_uci0/nuts --seed 1 ...`): their distance is drawn "
                    "as the reference's own noise")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    sets = args.sets.split(",")
    rows, failures, nuts = {}, {}, {}
    for name in sets:
        for k in range(args.splits):
            out = os.path.join(args.out, f"{name}_{args.split_kind}{k}")
            cpu_path = os.path.join(out, "cpu_seconds.json")
            if not os.path.exists(cpu_path) and not args.gather_only:
                common = ["--data", os.path.join(DATA, name + ".csv"), "--quiet", "--seed", str(k), "--arch", args.arch,
                          "--threads", args.threads]
                if name in REGRESSION and os.path.isdir(os.path.join(DATA, "splits", name)):
                    common += ["--split", args.split_kind, "--split-index", str(k)]
                elif name in REGRESSION:  # no standard splits (airfoil): 10% test rows drawn with seed k
                    common += ["--test-fraction", "0.1", "--split-seed", str(k)]
                else:
                    train, test = class_split(name, k, args.class_train, args.class_test, args.out)
                    common += ["--likelihood", "bernoulli", "--train-indices", train, "--test-indices", test]
                cpu = {}
                if not os.path.exists(os.path.join(out, "compare.json")):
                    # Exit code 3: some method failed, the others' results are written.
                    cpu["compare"] = run([args.uqnn, "compare", "--methods", args.methods, "--reference", "nuts", "--out", out]
                                         + common + args.nuts.split(), out + ".log", check=False)
                    if not os.path.exists(os.path.join(out, "compare.json")):
                        raise SystemExit(f"uqnn compare wrote nothing: see {out}.log")
                # compare.json's seconds are wall times, which on a shared machine measure the other
                # jobs as much as the fit: the CPU seconds of each method are measured on their own,
                # by the same fit run alone (same options and seed, so the same computation), and
                # NUTS' as the comparison's CPU seconds less theirs (or alone too, when the
                # comparison ran before).
                alone = out + "_alone"
                for method in args.methods.split(","):
                    cpu[method] = run([args.uqnn, "fit", "--method", method, "--out", alone, "--figure", "none"] + common,
                                      out + f"_{method}.log", check=False)  # a method that fails in compare fails here too
                    shutil.rmtree(alone, ignore_errors=True)
                if "compare" in cpu:
                    cpu["nuts"] = cpu["compare"] - sum(v for m, v in cpu.items() if m != "compare")
                else:
                    cpu["nuts"] = run([args.uqnn, "fit", "--method", "nuts", "--out", alone, "--figure", "none"] + common
                                      + args.nuts.split(), out + "_nuts.log", check=False)
                    shutil.rmtree(alone, ignore_errors=True)
                with open(cpu_path, "w") as f:
                    json.dump(cpu, f, indent=1)
            if not os.path.exists(os.path.join(out, "compare.json")):
                continue
            got, failed = gather(out)
            cpu = json.load(open(cpu_path)) if os.path.exists(cpu_path) else {}
            for method in got:
                got[method]["cpu"] = cpu.get(method)
            for method, r in got.items():
                rows.setdefault((name, method), []).append(r)
            for method, error in failed.items():
                failures.setdefault(name, []).append(f"{method} (split {k}): {error}")
            nuts.setdefault(name, []).append({"split": k, **nuts_diagnostics(out)})
    md = []
    for name in sets:
        regression = name in REGRESSION
        md.append(f"\n### {name}\n")
        splits_done = sorted({n["split"] for n in nuts.get(name, [])})
        md.append(f"Means over split(s) {', '.join(map(str, splits_done))}.\n")
        if regression:
            md.append("| method | CPU seconds | wall seconds | test RMSE | test NLL | 95% coverage | mean 1-Wasserstein to NUTS | median sd ratio to NUTS |")
        else:
            md.append("| method | CPU seconds | wall seconds | test accuracy | test NLL | ECE | top-1 agreement with NUTS | mean TV to NUTS |")
        md.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        methods = [m for (s, m) in rows if s == name]
        # NUTS first, then the closest to it.
        key = (lambda m: (m != "nuts", mean(rows[(name, m)], "w1") or 0)) if regression else \
              (lambda m: (m != "nuts", mean(rows[(name, m)], "tv") or 0))
        for method in sorted(methods, key=key):
            r = rows[(name, method)]
            label = "nuts (reference)" if method == "nuts" else method
            if regression:
                far = "0 | 1" if method == "nuts" else f"{fmt(mean(r, 'w1'), '.3g')} | {fmt(mean(r, 'sd_ratio'), '.2f')}"
                md.append(f"| {label} | {fmt(mean(r, 'cpu'), '.1f')} | {mean(r, 'seconds'):.1f} | {fmt(mean(r, 'rmse'), '.3g')} | {fmt(mean(r, 'nll'), '.3g')} | "
                          f"{fmt(mean(r, 'coverage_95'), '.2f')} | {far} |")
            else:
                far = "1 | 0" if method == "nuts" else f"{fmt(mean(r, 'top1'), '.3f')} | {fmt(mean(r, 'tv'), '.3g')}"
                md.append(f"| {label} | {fmt(mean(r, 'cpu'), '.1f')} | {mean(r, 'seconds'):.1f} | {fmt(mean(r, 'accuracy'), '.3f')} | {fmt(mean(r, 'nll'), '.3g')} | "
                          f"{fmt(mean(r, 'ece'), '.3f')} | {far} |")
        for line in failures.get(name, []):
            md.append(f"\nFailed: {line}")
        for n in nuts.get(name, []):
            info, d = n["info"], n["diagnostics"]
            by_name = {r["name"]: r for r in d.get("rows", [])}
            f_rows = [r for r in d.get("rows", []) if r["name"].startswith("f(")]
            md.append(f"\nNUTS, split {n['split']}: {info.get('chains')} chains x ({info.get('warmup')} warmup + {info.get('draws_per_chain')} draws), "
                      f"{info.get('divergences')} divergences after warmup, {d.get('draws_at_max_depth')} draws at the maximum tree depth; "
                      f"R-hat over the chains: lp__ {by_name.get('lp__', {}).get('r_hat', float('nan')):.2f}, "
                      f"largest of the predictions f(x) shown {max((r['r_hat'] for r in f_rows), default=float('nan')):.2f}; "
                      f"smallest bulk ESS of those f(x) {min((r['ess_bulk'] for r in f_rows), default=float('nan')):.0f}; "
                      f"warning codes in its metrics.json: {', '.join(n['warnings']) or 'none'}")
    with open(os.path.join(args.out, "choosing_a_method.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(args.out, "nuts_diagnostics.json"), "w") as f:
        json.dump(nuts, f, indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        print("matplotlib missing: no figure", file=sys.stderr)
        return
    methods = sorted({m for (_, m) in rows if m != "nuts"})
    colours = {m: plt.cm.tab10(i % 10) for i, m in enumerate(methods)}
    ncols = min(2, len(sets))
    nrows = (len(sets) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, 3.9 * nrows), squeeze=False)
    for ax in axes.flat[len(sets):]:
        ax.set_visible(False)
    for ax, name in zip(axes.flat, sets):
        regression = name in REGRESSION
        key = "w1" if regression else "tv"
        for method in methods:
            r = rows.get((name, method))
            if not r or mean(r, key) is None:
                continue
            s, w = mean(r, "cpu"), mean(r, key)
            if s is None:
                continue
            ax.scatter(s, w, color=colours[method], s=30)
            ax.annotate(method, (s, w), textcoords="offset points", xytext=(4, 3), fontsize=8)
        floor = os.path.join(args.floor, name, "compare.json") if args.floor else ""
        if floor and os.path.exists(floor):
            ref = json.load(open(floor)).get("nuts", {}).get("reference", {})
            level = ref.get("wasserstein1" if regression else "total_variation")
            if level:
                ax.axhline(level, color="black", ls=":", lw=1)
                ax.annotate("a second NUTS run (split 0)", (0.02, level), xycoords=("axes fraction", "data"),
                            textcoords="offset points", xytext=(0, 3), fontsize=8)
        if (name, "nuts") in rows and mean(rows[(name, "nuts")], "cpu") is not None:
            ax.axvline(mean(rows[(name, "nuts")], "cpu"), color="grey", ls="--", lw=1)
            ax.annotate("NUTS' cost", (mean(rows[(name, "nuts")], "cpu"), 0.02), xycoords=("data", "axes fraction"),
                        textcoords="offset points", xytext=(-4, 0), fontsize=8, color="grey", rotation=90, ha="right", va="bottom")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.yaxis.set_minor_formatter(matplotlib.ticker.FormatStrFormatter("%.2g"))
        ax.tick_params(axis="y", which="minor", labelsize=7)
        ax.set_xlabel("CPU seconds of the fit (one thread)")
        ax.set_ylabel("mean 1-Wasserstein to NUTS (target units)" if regression else "mean total variation to NUTS")
        ax.set_title(name)
        ax.grid(alpha=0.3)
    fig.suptitle("each method at its defaults: distance to NUTS' predictive (test rows) against cost" if len(sets) > 2
                 else "distance to NUTS against cost", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "choosing_a_method.png"), dpi=120)


if __name__ == "__main__":
    main()

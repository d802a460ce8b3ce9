#!/usr/bin/env python3
"""Every method at its defaults against NUTS, for docs/choosing-a-method.md.

For each data set and split, runs `uqnn compare --methods M1,M2,... --reference nuts` (NUTS with the
given chains, warmup and draws), then gathers per method: seconds, the test RMSE / NLL / 95%
coverage (regression) or accuracy / NLL / ECE (classification) from compare.json, and the
distance to NUTS' predictive from reference.json. Writes OUT/choosing_a_method.md (one table per
data set, means over splits) and OUT/choosing_a_method.png (distance to NUTS against seconds).

Usage (the reduced run the doc reports):
  python3 bench/choosing_a_method.py --uqnn build/uqnn --out runs/choosing --sets yacht --splits 1
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "uci")
REGRESSION = {"yacht", "energy", "concrete", "protein"}


def run(cmd):
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uqnn", default=os.path.join(HERE, "..", "build", "uqnn"))
    ap.add_argument("--out", default="runs/choosing")
    ap.add_argument("--sets", default="yacht,energy,concrete,mushroom")
    ap.add_argument("--splits", type=int, default=1, help="standard UCI splits 0..N-1 (mushroom: random splits by seed)")
    ap.add_argument("--methods", default="map,ens,rms,laplace,vi,swag,dropout")
    ap.add_argument("--nuts", default="--chains 2 --warmup 500 --draws 500", help="NUTS settings of the reference")
    ap.add_argument("--split-kind", default="uci", choices=["uci", "gap"])
    args = ap.parse_args()
    rows = {}
    for name in args.sets.split(","):
        for k in range(args.splits):
            out = os.path.join(args.out, f"{name}_{args.split_kind}{k}")
            cmd = [args.uqnn, "compare", "--data", os.path.join(DATA, name + ".csv"), "--methods", args.methods,
                   "--reference", "nuts", "--out", out, "--quiet", "--seed", str(k)] + args.nuts.split()
            if name in REGRESSION:
                cmd += ["--split", args.split_kind, "--split-index", str(k)]
            else:
                cmd += ["--likelihood", "bernoulli", "--test-fraction", "0.2", "--split-seed", str(k)]
            run(cmd)
            table = json.load(open(os.path.join(out, "compare.json")))
            for method, row in table.items():
                if "error" in row:
                    continue
                test = row.get("splits", {}).get("test", {})
                ref = row.get("reference", {})
                r = rows.setdefault((name, method), [])
                r.append({"seconds": row["seconds"], **test, **{"ref_" + a: b for a, b in ref.items()}})
    md = []
    for name in args.sets.split(","):
        regression = name in REGRESSION
        md.append(f"\n### {name}\n")
        if regression:
            md.append("| method | seconds | test RMSE | test NLL | 95% coverage | W1 to NUTS | sd ratio to NUTS (median) |")
            md.append("|---|---:|---:|---:|---:|---:|---:|")
        else:
            md.append("| method | seconds | test accuracy | test NLL | ECE | top-1 agreement with NUTS | TV to NUTS |")
            md.append("|---|---:|---:|---:|---:|---:|---:|")
        for (set_name, method), r in rows.items():
            if set_name != name:
                continue
            mean = lambda key: sum(x.get(key, float("nan")) for x in r) / len(r)
            if regression:
                md.append(f"| {method} | {mean('seconds'):.1f} | {mean('rmse'):.3g} | {mean('nll'):.3g} | {mean('coverage_95'):.2f} | "
                          f"{mean('ref_wasserstein1'):.3g} | {mean('ref_sd_ratio_median'):.2f} |")
            else:
                md.append(f"| {method} | {mean('seconds'):.1f} | {mean('accuracy'):.3f} | {mean('nll'):.3g} | {mean('ece'):.3f} | "
                          f"{mean('ref_top1_agreement'):.3f} | {mean('ref_total_variation'):.3g} |")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "choosing_a_method.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no figure", file=sys.stderr)
        return
    regression_sets = [s for s in args.sets.split(",") if s in REGRESSION]
    fig, axes = plt.subplots(1, max(1, len(regression_sets)), figsize=(4.2 * max(1, len(regression_sets)), 3.8), squeeze=False)
    for ax, name in zip(axes[0], regression_sets):
        for (set_name, method), r in rows.items():
            if set_name != name or method == "nuts":
                continue
            s = sum(x["seconds"] for x in r) / len(r)
            w = sum(x.get("ref_wasserstein1", float("nan")) for x in r) / len(r)
            ax.scatter(s, w)
            ax.annotate(method, (s, w), textcoords="offset points", xytext=(4, 3), fontsize=8)
        ax.set_xscale("log")
        ax.set_xlabel("seconds (fit, 1 core)")
        ax.set_ylabel("mean 1-Wasserstein to NUTS' predictive")
        ax.set_title(name)
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "choosing_a_method.png"), dpi=120)


if __name__ == "__main__":
    main()

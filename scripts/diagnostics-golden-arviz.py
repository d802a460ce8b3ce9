"""ArviZ's values of the diagnostics on the draws that diagnostics-golden.R wrote, for
tests/unit/diagnostics/posterior_golden_test.cpp. Run through scripts/regenerate-diagnostics-golden.

Usage: python diagnostics-golden-arviz.py DIR   (reads DIR/posterior.csv and DIR/<case>.csv,
writes DIR/arviz.csv)
"""
import csv
import math
import sys
import warnings
from pathlib import Path

import arviz as az
import numpy as np


def read_case(path):
    """The long CSV (chain, draw, p0, ...) as {param: array [chain, draw]}."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    chains = int(max(int(r[0]) for r in body)) + 1
    draws = int(max(int(r[1]) for r in body)) + 1
    out = {}
    for k, name in enumerate(header[2:], start=2):
        a = np.empty((chains, draws))
        for r in body:
            a[int(r[0]), int(r[1])] = float(r[k])
        out[name] = a
    return out


def fmt(value):
    value = float(value)
    return "nan" if math.isnan(value) else repr(value)


def main(directory):
    directory = Path(directory)
    with open(directory / "posterior.csv", newline="") as f:
        lines = [line for line in f if not line.startswith("#")]
    cases = [(r["case"], r["param"]) for r in csv.DictReader(lines)]
    columns = ["rhat", "ess_bulk", "ess_tail", "ess_mean", "mcse_mean", "mcse_sd"]
    loaded = {}
    rows = []
    for case, param in cases:
        if case not in loaded:
            loaded[case] = read_case(directory / f"{case}.csv")
        x = loaded[case][param]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            values = [
                az.rhat(x, method="rank"),
                az.ess(x, method="bulk"),
                az.ess(x, method="tail"),
                az.ess(x, method="mean"),
                az.mcse(x, method="mean"),
                az.mcse(x, method="sd"),
            ]
        rows.append([case, param] + [fmt(v) for v in values])
    with open(directory / "arviz.csv", "w", newline="") as f:
        f.write(f"# arviz {az.__version__}, numpy {np.__version__}; written by scripts/regenerate-diagnostics-golden\n")
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["case", "param"] + columns)
        writer.writerows(rows)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])

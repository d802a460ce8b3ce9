#!/usr/bin/env bash
# The Python module's overhead on B1 (data/bench/README.md): the same NUTS fit (1-10-10-1 tanh,
# noise 0.05, 4 chains x (1000 + 1000), chains from their own MAP fits, one thread, seed 0) through
# `uqnn fit` and through uqnn.BNN(...).fit, alternating, 5 runs each; reports median wall times, their
# ratio, and checks that both gave the same draws. Goal: the module adds under 5%.
# Usage: bench/python_overhead.sh [runs]
set -euo pipefail
source "$(dirname "$0")/bench_common.sh"
require_bench_data B1_X.csv
build_bench_target uqnn_cli uqnn_python
runs="${1:-5}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
paste -d, <(echo x; cat "$data/bench/B1_X.csv") <(echo y; cat "$data/bench/B1_y.csv") > "$work/b1.csv"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
PYTHONPATH="$build/python" /usr/bin/python3 - "$build/uqnn" "$work" "$runs" <<'PY'
import os, statistics, subprocess, sys, time
import numpy as np
import uqnn

cli, work, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = np.loadtxt(os.path.join(work, "b1.csv"), delimiter=",", skiprows=1)
X, y = data[:, :1], data[:, 1]
common = dict(method="nuts", arch=[10, 10], activation="tanh", noise=0.05, chains=4, warmup=1000, draws=1000, threads=1, seed=0)
flags = []
for k, v in common.items():
    flags += [f"--{k.replace('_', '-')}", ",".join(map(str, v)) if isinstance(v, list) else str(v)]
t_cli, t_py = [], []
for r in range(runs):
    t = time.perf_counter()
    subprocess.run([cli, "fit", "--data", os.path.join(work, "b1.csv"), "--out", os.path.join(work, "cli"), "--quiet", "--figure", "none", *flags],
                   check=True, stdout=subprocess.DEVNULL)
    t_cli.append(time.perf_counter() - t)
    t = time.perf_counter()
    opts = {k: v for k, v in common.items() if k != "arch"}
    bnn = uqnn.BNN(hidden=(10, 10), progress=False, out=os.path.join(work, "py"), **opts).fit(X, y)
    t_py.append(time.perf_counter() - t)
same = np.array_equal(uqnn.load(os.path.join(work, "cli")).draws, bnn.draws)
m_cli, m_py = statistics.median(t_cli), statistics.median(t_py)
print(f"B1 NUTS 4 x (1000 + 1000), one thread, {runs} runs each (median wall): CLI {m_cli:.2f} s, Python {m_py:.2f} s, "
      f"Python / CLI = {m_py / m_cli:.3f}; same draws: {same}")
PY

#!/usr/bin/env bash
# MILE's UCI comparison (Sommer et al. 2025, Table 2's setting): uqnn's mile against uqnn's dei-nuts
# and against bde (scikit-learn-contrib's MILE in JAX/BlackJAX, pip) on the same 80/10/10 splits of
# airfoil, concrete, energy and yacht, 2x16 ReLU heteroscedastic network, 12 members, each method at
# its own defaults. Reports test LPPD, RMSE (original units) and CPU seconds (user + system, all
# threads). Prints a markdown table and saves it to bench/results/mile_vs_dei.md.
#
# Usage: bench/mile_vs_dei.sh [--datasets yacht,concrete] [--splits 3] [--methods mile,dei-nuts,bde] [--quick]
#        (env: BUILD_DIR=build, UQNN_DATA_DIR=<repo>/data, THREADS=2, WORK=bench/results/mile_vs_dei)
# One method per core, then one table:
#   THREADS=1 WORK=bench/results/mile_nuts bench/mile_vs_dei.sh --methods dei-nuts &
#   THREADS=1 WORK=bench/results/mile_bde bench/mile_vs_dei.sh --methods bde; wait
#   THREADS=1 WORK=bench/results/mile_mile bench/mile_vs_dei.sh --methods mile
#   bench/mile_vs_dei.sh --merge bench/results/mile_{mile,nuts,bde}
# First run: creates bench/.venv (gitignored) with sklearn-contrib-bde; see bench/python_env.sh.
set -euo pipefail

# shellcheck source=bench_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/bench_common.sh"
if [[ ! -f "$data/uci/yacht.csv" ]]; then
  echo "mile_vs_dei: no UCI data in $data/uci; skipping" >&2
  exit 0
fi
export BENCH_PYTHON_MODULES="bde pandas"
export BENCH_PYTHON_EXTRA="sklearn-contrib-bde pandas"
# shellcheck source=python_env.sh
. "$here/python_env.sh"

build_bench_target uqnn_cli
work="${WORK:-$results/mile_vs_dei}"
"$venv/bin/python" "$here/mile_vs_dei.py" --uqnn "$build/uqnn" --data-dir "$data/uci" \
  --work "$work" --threads "${THREADS:-2}" --out "$work.md" "$@"
echo "(saved to $work.md)" >&2

#!/usr/bin/env bash
# Seconds per Bayes-by-backprop VI epoch and per deep-ensemble member fit on B2 of
# data/bench/README.md (issue 4 item 10): uqnn (bench/approx_bench) against the same training in
# PyTorch, double precision, one thread pinned to one core. Prints a markdown table and saves it to
# bench/results/approx.md.
#
# Usage: bench/approx_vs_torch.sh [--vi-epochs 50 --ens-epochs 100 --batch-size 100 --samples 5 ...]
#   env: BUILD_DIR=build, CORE=0, UQNN_DATA_DIR=<repo>/data
set -euo pipefail

# shellcheck source=bench_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/bench_common.sh"
require_bench_data B2_X.csv
# shellcheck source=python_env.sh
. "$here/python_env.sh"
build_bench_target approx_bench
"$venv/bin/python" "$here/approx_vs_torch.py" --data "$data" --build "$build" --core "${CORE:-0}" \
  --out "$results/approx.md" "$@"
echo "(saved to $results/approx.md)" >&2

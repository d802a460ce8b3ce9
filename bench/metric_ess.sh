#!/usr/bin/env bash
# NUTS' metrics side by side (issue 19 item 4): bulk ESS per gradient with --metric diag, dense,
# fisher-diag and low-rank on B1, B2 and a Table 3 posterior (yacht). See bench/metric_ess.py.
# Usage: bench/metric_ess.sh [--seeds 1,2,3] [--problems B1,B2,yacht] [--config B1:4x1000x1000,...]
#   env: BUILD_DIR=build, UQNN_DATA_DIR=<repo>/data
# Prints a markdown table and saves it to bench/results/metric_ess.md.
set -euo pipefail

# shellcheck source=bench_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/bench_common.sh"
require_bench_data B1_X.csv
BENCH_PYTHON_MODULES="arviz pandas" BENCH_PYTHON_EXTRA="arviz pandas"
# shellcheck source=python_env.sh
. "$here/python_env.sh"
build_bench_target samplers_bench uqnn_cli

cd "$root"
"$venv/bin/python" "$here/metric_ess.py" --data "$data" --build "$build" --results "$results" \
  --out "$results/metric_ess.md" "$@"
echo "(saved to $results/metric_ess.md)" >&2

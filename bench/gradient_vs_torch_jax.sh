#!/usr/bin/env bash
# One log-posterior + gradient evaluation on B1-B3 (data/bench/README.md): uqnn (double, float)
# against PyTorch variants and JAX in the same run, double precision, one thread, pinned to one core.
# Prints a markdown table and saves it to bench/results/gradient.md.
#
# Usage: bench/gradient_vs_torch_jax.sh        (env: BUILD_DIR=build, CORE=0, MIN_SECONDS=1,
#                                               UQNN_DATA_DIR=<repo>/data)
# First run: creates bench/.venv (gitignored) with torch (CPU wheel; PyPI's wheel if the PyTorch
# index is unreachable), jax[cpu] and numpy.
set -euo pipefail

# shellcheck source=bench_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/bench_common.sh"
require_bench_data B1_X.csv
core="${CORE:-0}"
min_seconds="${MIN_SECONDS:-1}"

# --- Python environment (bench/python_env.sh sets $venv) -------------------------------------------
# shellcheck source=python_env.sh
. "$here/python_env.sh"

# --- C++ benchmark ---------------------------------------------------------------------------------
build_bench_target gradient_bench

pin=(taskset -c "$core")
echo "== uqnn (gradient_bench), core $core" >&2
"${pin[@]}" "$build/bench/gradient_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_format=json --benchmark_out_format=json --benchmark_out="$results/uqnn_gradient.json" >/dev/null

echo "== PyTorch and JAX, core $core" >&2
"${pin[@]}" "$venv/bin/python" "$here/gradient_vs_torch_jax.py" --data "$data" \
  --uqnn-json "$results/uqnn_gradient.json" --min-seconds "$min_seconds" --out "$results/gradient.md"
echo "(saved to $results/gradient.md)" >&2

#!/usr/bin/env bash
# One log-posterior + gradient evaluation of seed 003's Table 3 model on each UCI data set: uqnn
# (float64, float32) against JAX (float64, float32; NumPyro's gradient) in the same run, one thread,
# pinned to one core. Prints a markdown table and saves it to bench/results/dei_gradient.md.
#
# Usage: bench/dei_gradient_vs_jax.sh        (env: BUILD_DIR=build, CORE=0, MIN_SECONDS=1,
#                                             UQNN_DATA_DIR=<repo>/data)
# First run: creates bench/.venv (gitignored); see bench/python_env.sh.
set -euo pipefail

# shellcheck source=bench_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/bench_common.sh"
if [[ ! -f "$data/uci/yacht.csv" ]]; then
  echo "dei_gradient_vs_jax: no UCI data in $data/uci; skipping" >&2
  exit 0
fi
core="${CORE:-0}"
min_seconds="${MIN_SECONDS:-1}"

# shellcheck source=python_env.sh
. "$here/python_env.sh"

build_bench_target dei_gradient_bench
export_dir="$(mktemp -d)"
trap 'rm -rf "$export_dir"' EXIT

pin=(taskset -c "$core")
echo "== uqnn (dei_gradient_bench), core $core" >&2
"${pin[@]}" "$build/bench/dei_gradient_bench" --export "$export_dir" --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true --benchmark_format=json --benchmark_out_format=json \
  --benchmark_out="$results/uqnn_dei_gradient.json" >/dev/null

echo "== JAX, core $core" >&2
"${pin[@]}" "$venv/bin/python" "$here/dei_gradient_vs_jax.py" --export "$export_dir" \
  --uqnn-json "$results/uqnn_dei_gradient.json" --min-seconds "$min_seconds" --out "$results/dei_gradient.md"
echo "(saved to $results/dei_gradient.md)" >&2

#!/usr/bin/env bash
# One log-posterior + gradient evaluation on B1-B3 (../shared/BENCHMARKS.md): uqnn (double, float)
# against PyTorch variants and JAX in the same run, double precision, one thread, pinned to one core.
# Prints a markdown table and saves it to bench/results/gradient.md.
#
# Usage: bench/gradient_vs_torch_jax.sh        (env: BUILD_DIR=build, CORE=0, MIN_SECONDS=1,
#                                               UQNN_SHARED_DIR=<repo>/../shared)
# First run: creates bench/.venv (gitignored) with torch (CPU wheel; PyPI's wheel if the PyTorch
# index is unreachable), jax[cpu] and numpy.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
shared="${UQNN_SHARED_DIR:-$root/../shared}"
build="${BUILD_DIR:-$root/build}"
core="${CORE:-0}"
min_seconds="${MIN_SECONDS:-1}"
results="$here/results"

if [[ ! -f "$shared/bench/B1_X.csv" ]]; then
  echo "gradient_vs_torch_jax: no benchmark data in $shared/bench; skipping" >&2
  exit 0
fi

# --- Python environment (bench/python_env.sh sets $venv) -------------------------------------------
# shellcheck source=python_env.sh
. "$here/python_env.sh"

# --- C++ benchmark ---------------------------------------------------------------------------------
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" --target gradient_bench -j2 >/dev/null
mkdir -p "$results"

pin=(taskset -c "$core")
echo "== uqnn (gradient_bench), core $core" >&2
"${pin[@]}" "$build/bench/gradient_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_format=json --benchmark_out_format=json --benchmark_out="$results/uqnn_gradient.json" >/dev/null

echo "== PyTorch and JAX, core $core" >&2
"${pin[@]}" "$venv/bin/python" "$here/gradient_vs_torch_jax.py" --shared "$shared" \
  --uqnn-json "$results/uqnn_gradient.json" --min-seconds "$min_seconds" --out "$results/gradient.md"
echo "(saved to $results/gradient.md)" >&2

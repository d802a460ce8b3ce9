#!/usr/bin/env bash
# Seconds per Bayes-by-backprop VI epoch and per deep-ensemble member fit on B2 of
# ../shared/BENCHMARKS.md (issue 4 item 10): uqnn (bench/approx_bench) against the same training in
# PyTorch, double precision, one thread pinned to one core. Prints a markdown table and saves it to
# bench/results/approx.md.
#
# Usage: bench/approx_vs_torch.sh [--vi-epochs 50 --ens-epochs 100 --batch-size 100 --samples 5 ...]
#   env: BUILD_DIR=build, CORE=0, UQNN_SHARED_DIR=<repo>/../shared
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
shared="${UQNN_SHARED_DIR:-$root/../shared}"
build="${BUILD_DIR:-$root/build}"

if [[ ! -f "$shared/bench/B2_X.csv" ]]; then
  echo "approx_vs_torch: no benchmark data in $shared/bench; skipping" >&2
  exit 0
fi
# shellcheck source=python_env.sh
. "$here/python_env.sh"
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" --target approx_bench -j2 >/dev/null
mkdir -p "$here/results"
"$venv/bin/python" "$here/approx_vs_torch.py" --shared "$shared" --build "$build" --core "${CORE:-0}" \
  --out "$here/results/approx.md" "$@"
echo "(saved to $here/results/approx.md)" >&2

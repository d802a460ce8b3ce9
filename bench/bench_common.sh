# Sourced first by the bench/*.sh scripts: paths, the data check and the C++ build every script needs.
# Sets $here (bench/), $root (the repository), $data (the repository's data/ or $UQNN_DATA_DIR), $build
# ($BUILD_DIR or build/) and $results (bench/results, created).
here="$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
data="${UQNN_DATA_DIR:-$root/data}"
build="${BUILD_DIR:-$root/build}"
results="$here/results"
mkdir -p "$results"

# require_bench_data FILE: exits 0 with a message (a skip, not a failure) when $data/bench/FILE is absent.
require_bench_data() {
  if [[ ! -f "$data/bench/$1" ]]; then
    echo "$(basename "${BASH_SOURCE[1]}" .sh): no benchmark data in $data/bench; skipping" >&2
    exit 0
  fi
}

# build_bench_target TARGET...: configures $build (Release, with the benchmarks) and builds the targets.
build_bench_target() {
  if [[ ! -f "$build/CMakeCache.txt" ]]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DUQNN_BUILD_BENCH=ON >/dev/null
  else
    cmake "$build" -DUQNN_BUILD_BENCH=ON >/dev/null
  fi
  cmake --build "$build" --target "$@" -j2 >/dev/null
}

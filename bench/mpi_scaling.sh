#!/usr/bin/env bash
# The MPI scale-out's measurements (issue 16), appended as JSON lines to bench/results/mpi_scaling.jsonl
# (docs/scaling.md reads them). Short runs: the machine may be shared, so every line records the load
# average, and CPU seconds beside wall seconds.
#   1. strong scaling of dei-nuts on airfoil, 12 chains, Table 3's model (2x16 ReLU, heteroscedastic,
#      float32), shortened: 200 epochs, 50 warmup + 50 draws; R = 1, 2 ranks and R = 4 (oversubscribed
#      on a 2-core machine), one thread per rank; R = 1 with 2 threads for comparison;
#   2. the sharded gradient on protein at R = 1, 2 (bench/mpi_scaling.cpp gradient);
#   3. all_reduce_sum latency / bandwidth at the gradient's size (467 doubles) and larger, R = 2.
# Usage: bench/mpi_scaling.sh [BUILD_DIR]   (needs -DUQNN_MPI=ON and the target mpi_scaling)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(realpath "${1:-$here/../build}")
data=${UQNN_DATA_DIR:-$here/../data}/uci
out=$here/results/mpi_scaling.jsonl
mkdir -p "$here/results"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cores=$(nproc)
# The host kind decides the figures: one line naming it before the measurements.
python3 -c "import json, sys, time; sys.path.insert(0, sys.argv[1]); from bench_util import cpu_model
print(json.dumps({'what': 'host', 'cpu': cpu_model(), 'cores': int(sys.argv[2]), 'date': time.strftime('%Y-%m-%d')}))" \
  "$here" "$cores" | tee -a "$out"

for spec in "1 1" "1 2" "2 1" "4 1"; do
  read -r ranks threads <<< "$spec"
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  /usr/bin/time -f "%e %U %S" -o "$work/time" mpirun --oversubscribe -np "$ranks" "$build/uqnn" fit \
    --data "$data/airfoil.csv" --method dei-nuts --arch 16,16 --activation relu --likelihood heteroscedastic \
    --prior gaussian --prior-sigma 1 --precision float32 --test-fraction 0.2 --split-seed 0 \
    --members 12 --epochs 200 --warmup 50 --draws 50 --threads "$threads" --figure none --quiet \
    --out "$work/dei$ranks.$threads" > /dev/null
  read -r wall user sys < "$work/time"
  python3 - "$work/dei$ranks.$threads/metrics.json" "$ranks" "$threads" "$wall" "$user" "$sys" "$load" "$cores" >> "$out" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
ranks, threads, wall, user, system = int(sys.argv[2]), int(sys.argv[3]), *map(float, sys.argv[4:7])
print(json.dumps({"what": "dei_nuts_airfoil_strong_scaling", "ranks": ranks, "threads_per_rank": threads,
                  "oversubscribed": ranks * threads > int(sys.argv[8]), "chains": 12, "epochs": 200, "warmup": 50,
                  "draws": 50, "wall_seconds": wall, "cpu_seconds": user + system,
                  "ensemble_seconds": m["info"]["ensemble_seconds"], "sampling_seconds": m["info"]["sampling_seconds"],
                  "test_rmse": m["splits"]["test"]["rmse"], "loadavg_before": sys.argv[7]}))
PY
  tail -1 "$out"
done
# The draws do not depend on R: check it on the measured runs.
for r in 1.2 2.1 4.1; do cmp "$work/dei1.1/draws.csv" "$work/dei$r/draws.csv"; done

for ranks in 1 2; do
  mpirun --oversubscribe -np "$ranks" "$build/bench/mpi_scaling" gradient --data "$data/protein.csv.gz" --evals 300 | tee -a "$out"
done
mpirun --oversubscribe -np 2 "$build/bench/mpi_scaling" allreduce --sizes 467,4096,65536 --reps 3000 | tee -a "$out"

#!/usr/bin/env bash
# The CLI under mpirun (issue 16), on a tiny data set with short runs:
#   1. mpirun -np 2 and -np 3 (with --threads 2) write draws.csv and predictions.csv identical (cmp)
#      to one process, for nuts, sgld, ens and dei-nuts;
#   2. a chain failing on one rank (dei-nuts started at a network with a non-finite log density for
#      chain 1) ends the run with exit 2 and that chain's message; a rank failing alone outside any
#      collective (uqnn_mpi_checks alone) ends the run, non-zero, with its message (no hang: ctest's
#      timeout and `timeout` here fail it);
#   3. --part 1/3, 2/3 (under mpirun -np 2), 3/3 + uqnn merge == one run (draws, predictions, diagnostics);
#   4. --shards 2 on 2 ranks and on 4 ranks (2 chain groups) give identical draws, for nuts (full
#      data) and for sgld, fsgld and map (adam) on minibatches of 5 rows; sgld's sharded draws equal
#      the unsharded ones to rounding (1e-12 relative); the sharded log densities vs one process are
#      checked by uqnn_mpi_checks gradient and minibatch;
#   5. bad input: --part 0/2, --shards 2 without mpirun, a merge with a part missing: exit 2 and a message.
# Usage: mpi_cli_test.sh UQNN_CLI [UQNN_MPI_CHECKS]; exits 77 (skipped) without mpirun or MPI build.
set -uo pipefail
uqnn=$(realpath "$1")
checks=${2:+$(realpath "$2")}
if ! command -v mpirun > /dev/null; then
  echo "SKIPPED: mpirun not found (scripts/install-deps installs openmpi-bin)"
  exit 77
fi
if [ -z "$checks" ]; then
  echo "SKIPPED: uqnn was built without MPI (CMake option UQNN_MPI=OFF or libopenmpi-dev missing)"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi() { timeout 300 mpirun --oversubscribe "$@"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
same() {  # same DIR_A DIR_B FILE...
  local a=$1 b=$2
  shift 2
  for f in "$@"; do cmp -s "$a/$f" "$b/$f" || fail "$b/$f differs from $a/$f"; done
}

# 40 rows of y = x^2 / 2 + noise (deterministic).
awk 'BEGIN { print "x,y"; s = 12345; for (i = 0; i < 40; i++) { s = (s * 1103515245 + 12345) % 2147483648;
  x = 4 * s / 2147483648 - 2; s = (s * 1103515245 + 12345) % 2147483648; printf "%.6f,%.6f\n", x, x * x / 2 + 0.1 * (s / 2147483648 - 0.5) } }' > d.csv
common="--data d.csv --arch 4 --figure none --quiet --seed 5"

# 1. Identical draws for any number of ranks and threads.
declare -A methods=(
  [nuts]="--method nuts --chains 3 --warmup 30 --draws 20 --chain-init random"
  [sgld]="--method sgld --chains 3 --warmup 10 --draws 20 --step-size 1e-4 --chain-init random"
  [ens]="--method ens --ens-members 3 --epochs 40"
  [dei]="--method dei-nuts --members 3 --epochs 40 --warmup 20 --draws 15"
)
for m in "${!methods[@]}"; do
  args="${methods[$m]} $common"
  "$uqnn" fit $args --out "$m.1" > /dev/null || fail "$m: one process failed"
  mpi -np 2 "$uqnn" fit $args --out "$m.2" > /dev/null || fail "$m: mpirun -np 2 failed"
  mpi -np 3 "$uqnn" fit $args --threads 2 --out "$m.3" > /dev/null || fail "$m: mpirun -np 3 failed"
  same "$m.1" "$m.2" draws.csv predictions.csv
  same "$m.1" "$m.3" draws.csv predictions.csv
done
same dei.1 dei.2 dei_chains.json

# 2. A failing rank ends the run with its message.
"$uqnn" fit --method map --epochs 20 $common --out map > /dev/null || fail "map failed"
awk -F, 'NR == 1 { print; next } NR == 2 { print; $1 = 1; $NF = "-1e300"; OFS = ","; $1 = $1; print }' map/draws.csv > bad.csv
mpi -np 2 "$uqnn" fit --method dei-nuts --dei-start given --dei-init bad.csv --warmup 10 --draws 10 $common --out bad > out.txt 2> err.txt
rc=$?
[ $rc -eq 2 ] || fail "a chain failing on rank 1: exit code $rc (expected 2)"
grep -q "chain 1" err.txt || fail "a chain failing on rank 1: no 'chain 1' in the message: $(cat err.txt)"
[ "$(grep -c '^error' err.txt)" -eq 1 ] || fail "a failure seen by every rank is printed once: $(cat err.txt)"
mpi -np 3 "$checks" alone > out.txt 2> err.txt
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "a rank failing alone: exit code $rc (expected non-zero, not the timeout's 124)"
grep -q "planted failure on the last rank" err.txt || fail "a rank failing alone: its message is missing: $(cat err.txt)"

# 3. --part + merge == one run.
args="${methods[nuts]} $common"
"$uqnn" fit $args --part 1/3 --out p1 > /dev/null || fail "part 1/3 failed"
mpi -np 2 "$uqnn" fit $args --part 2/3 --out p2 > /dev/null || fail "part 2/3 under mpirun failed"
"$uqnn" fit $args --part 3/3 --out p3 > /dev/null || fail "part 3/3 failed"
"$uqnn" merge merged p3 p1 p2 --quiet > /dev/null || fail "merge failed"
same nuts.1 merged draws.csv predictions.csv diagnostics.json
args="${methods[ens]} $common"
"$uqnn" fit $args --part 1/2 --out e1 > /dev/null && "$uqnn" fit $args --part 2/2 --out e2 > /dev/null &&
  "$uqnn" merge emerged e1 e2 --quiet > /dev/null || fail "ens parts / merge failed"
same ens.1 emerged draws.csv predictions.csv

# 4. --shards: the same draws for 1 and 2 chain groups.
args="${methods[nuts]} $common"
mpi -np 2 "$uqnn" fit $args --shards 2 --out s2 > /dev/null || fail "--shards 2 on 2 ranks failed"
mpi -np 4 "$uqnn" fit $args --shards 2 --out s4 > /dev/null || fail "--shards 2 on 4 ranks failed"
same s2 s4 draws.csv predictions.csv
# SG-MCMC minibatches of 5 rows split over the shards: bitwise the same for 1 and 2 chain groups, and
# the unsharded run's draws to rounding (the blocks' sums are added in another order); fSGLD's
# functional prior (shard 0 alone) and MAP's minibatch Adam run sharded too.
args="${methods[sgld]} --sg-batch-size 5 $common"
"$uqnn" fit $args --out g1 > /dev/null || fail "sgld with minibatches in one process failed"
mpi -np 2 "$uqnn" fit $args --shards 2 --out g2 > /dev/null || fail "sgld --shards 2 on 2 ranks failed"
mpi -np 4 "$uqnn" fit $args --shards 2 --out g4 > /dev/null || fail "sgld --shards 2 on 4 ranks failed"
same g2 g4 draws.csv predictions.csv
# Largest difference between the sharded and the unsharded draws, relative to max(1, |value|).
drift=$(paste -d, g1/draws.csv g2/draws.csv | awk -F, 'NR > 1 { h = NF / 2; for (i = 1; i <= h; i++) {
  d = $i - $(i + h); if (d < 0) d = -d; a = $i < 0 ? -$i : $i; if (a < 1) a = 1; if (d / a > m) m = d / a } } END { printf "%.3g", m + 0 }')
echo "sgld --shards 2 vs one process: largest relative difference of the draws $drift"
awk -v d="$drift" 'BEGIN { exit !(d < 1e-12) }' || fail "sgld --shards 2 drifts from the unsharded draws by $drift (more than rounding)"
[ "$(head -1 g1/draws.csv)" = "$(head -1 g2/draws.csv)" ] && [ "$(wc -l < g1/draws.csv)" = "$(wc -l < g2/draws.csv)" ] ||
  fail "sgld --shards 2 writes other columns or rows than one process"
for m in fsgld map; do
  if [ $m = fsgld ]; then args="--method fsgld --chains 2 --warmup 10 --draws 10 --step-size 1e-4 --sg-batch-size 5 --chain-init random $common"
  else args="--method map --epochs 40 --optimizer adam --batch-size 5 $common"; fi
  mpi -np 2 "$uqnn" fit $args --shards 2 --out $m.s2 > /dev/null || fail "$m --shards 2 on 2 ranks failed"
  mpi -np 4 "$uqnn" fit $args --shards 2 --out $m.s4 > /dev/null || fail "$m --shards 2 on 4 ranks failed"
  same $m.s2 $m.s4 draws.csv predictions.csv
done

# 5. Bad input: exit 2 with a message naming the flag.
expect_error() {  # expect_error TEXT COMMAND...
  local text=$1
  shift
  "$@" > /dev/null 2> err.txt
  local rc=$?
  [ $rc -eq 2 ] && grep -q -- "$text" err.txt || fail "$* : exit $rc, message $(cat err.txt) (expected 2 and '$text')"
}
expect_error "--part '0/2' is invalid" "$uqnn" fit $args --part 0/2 --out x
expect_error "--part: --method vi cannot run in parts" "$uqnn" fit --method vi $common --part 1/2 --out x
expect_error "--shards 2 is invalid" "$uqnn" fit $args --shards 2 --out x
expect_error "part(s) 2/3 missing" "$uqnn" merge x p1 p3

if [ $failures -eq 0 ]; then echo "mpi_cli: all checks passed"; else echo "mpi_cli: $failures check(s) failed"; fi
[ $failures -eq 0 ]

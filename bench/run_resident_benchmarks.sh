#!/bin/sh
# The user's whole round on resident data (docs/performance.md, "Resident
# data"): `pypto-coord bench --resident` of bench/ptl/<op>16m.ptl (the library
# allreduce_sum, allgather or reduce_scatter of 16 MiB fp32 per rank — the
# allreduce's buffer, the allgather's output, the reduce-scatter's input —
# compiled by pypto-compile) against MPI_Allreduce (in place) /
# MPI_Allgather / MPI_Reduce_scatter_block of the same bytes
# (bench/mpi_collectives_bench.cc), at world 2, 4 and 8, interleaved rep by
# rep, the load average printed beside every figure. Optionally also the same
# bench without --resident (tensors shipped every round), so the difference
# resident tensors make is in the same run.
#
# Usage: bench/run_resident_benchmarks.sh [BUILD_DIR]   (default: build)
#   ninja -C BUILD_DIR pypto-compile pypto-coord pypto-rank mpi_collectives_bench
# Knobs: OPS ("allreduce allgather reduce_scatter"), WORLDS ("2 4 8"), REPS (3),
# ROUNDS (20), WARMUP (20: untimed rounds, and MPI calls, first; the agents' first ~20 rounds of a
# program run slower, as collectives_bench's --warmup 20 allows for), MPI_ITERS (20),
# SHIPPED (1: also time the shipped variant; 0: skip it).
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
COMPILE=$BUILD/compiler/pypto-compile
COORD=$BUILD/coordinator/pypto-coord
MPI_BENCH=$BUILD/bench/mpi_collectives_bench
for exe in "$COMPILE" "$COORD" "$BUILD/rank_agent/pypto-rank" "$MPI_BENCH"; do
  [ -x "$exe" ] || { echo "missing $exe; build it first (see the header of $0)" >&2; exit 2; }
done
export PYPTO_RANK=$BUILD/rank_agent/pypto-rank
export PYPTO_RUNTIME_LOG=${PYPTO_RUNTIME_LOG:-warn}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pypto_resident_bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM

load() { cut -d' ' -f1 /proc/loadavg; }
json_field() { sed -n "s/.*\"$1\": \([0-9.e+-]*\).*/\1/p" | head -1; }
BYTES=$((16 << 20))
OPS=${OPS:-allreduce allgather reduce_scatter}
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load: $(cut -d' ' -f1-3 /proc/loadavg)"
for w in ${WORLDS:-2 4 8}; do
  for op in $OPS; do
    "$COMPILE" "$ROOT/bench/ptl/${op}16m.ptl" --world "$w" -o "$WORK/${op}_w$w" >/dev/null
  done
  for rep in $(seq 1 "${REPS:-3}"); do
    for op in $OPS; do
      l0=$(load)
      mpi=$(mpirun --oversubscribe --bind-to none -n "$w" "$MPI_BENCH" --op "$op" \
        --warmup "${WARMUP:-20}" --iters "${MPI_ITERS:-20}" | sed -n 's/.* median_ms=\([0-9.]*\).*/\1/p')
      [ -n "$mpi" ] || { echo "mpi_collectives_bench --op $op at world $w printed no median" >&2; exit 1; }
      l1=$(load)
      res=$("$COORD" bench "$WORK/${op}_w$w" --resident --rounds "${ROUNDS:-20}" --warmup "${WARMUP:-20}" --json |
        json_field median_ms)
      l2=$(load)
      shipped=-
      if [ "${SHIPPED:-1}" = 1 ]; then
        shipped=$("$COORD" bench "$WORK/${op}_w$w" --rounds "${ROUNDS:-20}" --warmup "${WARMUP:-20}" --json |
          json_field median_ms)
      fi
      l3=$(load)
      # Bus bytes per rank (nccl-tests): allreduce 2 (W-1)/W of the buffer, the others (W-1)/W.
      awk -v op="$op" -v w="$w" -v rep="$rep" -v mpi="$mpi" -v res="$res" -v sh="$shipped" \
        -v b="$BYTES" -v l="$l0/$l1/$l2/$l3" 'BEGIN {
          bus = (op == "allreduce" ? 2 : 1) * (w - 1) / w * b / 1e9
          printf "resident_%s world=%d rep=%d mpi_median_ms=%.2f resident_median_ms=%.2f shipped_median_ms=%s mpi_busbw_gbs=%.2f resident_busbw_gbs=%.2f ratio=%.2f load=%s\n",
            op, w, rep, mpi, res, sh, bus / (mpi / 1e3), bus / (res / 1e3), mpi / res, l }'
    done
  done
done

#!/bin/sh
# Runs the three L3 runtime benchmarks and prints their table
# (docs/performance.md, "L3 runtime"):
#   1. l3_dispatch_bench   empty dispatch round trip, world 2 and 8, vs raw ZeroMQ
#   2. l3_allreduce_bench  16 MiB fp32 allreduce, world 2, 4, 8, vs MPI_Allreduce
#   3. l3_launch_bench     pypto-coord run of tests/fixtures/l3/allreduce_w8 (warm
#                          stores) vs a bare mpirun -n 8 of mpi_trivial
#
# Usage: bench/run_l3_benchmarks.sh [BUILD_DIR]     (default: build)
# BUILD_DIR must hold the built targets:
#   ninja -C BUILD_DIR l3_dispatch_bench l3_allreduce_bench l3_launch_bench \
#                      mpi_allreduce_bench mpi_trivial pypto-rank pypto-coord
# Knobs (environment): DISPATCH_ROUNDS (2000), DISPATCH_REPS (5),
# ALLREDUCE_ROUNDS (10), ALLREDUCE_REPS (3), LAUNCH_REPS (7), ONLY (a
# space-separated subset of: dispatch allreduce launch).
# The bench builds (~0.45 GB with golden data) go to a temporary directory,
# removed at the end; the full output of each benchmark is kept in its log,
# whose path is printed.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
BENCH=$BUILD/bench
for exe in l3_dispatch_bench l3_allreduce_bench l3_launch_bench mpi_allreduce_bench mpi_trivial; do
  [ -x "$BENCH/$exe" ] || { echo "missing $BENCH/$exe; build it first (see the header of $0)" >&2; exit 2; }
done
ONLY=${ONLY:-dispatch allreduce launch}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pypto_l3_bench.XXXXXX")
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/pypto_l3_bench_logs.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM
# Quiet logs on every side, as the benchmarks assume.
export PYPTO_RUNTIME_LOG=${PYPTO_RUNTIME_LOG:-warn}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# generating the bench builds into $WORK"
python3 "$ROOT/tests/fixtures/make_l3.py" --bench-out "$WORK" >/dev/null

want() { case " $ONLY " in *" $1 "*) return 0 ;; esac; return 1; }

if want dispatch; then
  echo "# 1/3 dispatch round trip (log $LOGS/dispatch.log)"
  "$BENCH/l3_dispatch_bench" --rounds "${DISPATCH_ROUNDS:-2000}" --reps "${DISPATCH_REPS:-5}" \
    "$WORK/empty_w2" "$WORK/empty_w8" >"$LOGS/dispatch.log" 2>&1 ||
    { cat "$LOGS/dispatch.log"; exit 1; }
fi
if want allreduce; then
  echo "# 2/3 allreduce 16 MiB (log $LOGS/allreduce.log)"
  "$BENCH/l3_allreduce_bench" --rounds "${ALLREDUCE_ROUNDS:-10}" --reps "${ALLREDUCE_REPS:-3}" \
    "$WORK/allreduce16m_w2" "$WORK/allreduce16m_w4" "$WORK/allreduce16m_w8" \
    >"$LOGS/allreduce.log" 2>&1 || { cat "$LOGS/allreduce.log"; exit 1; }
fi
if want launch; then
  echo "# 3/3 pypto-coord run, warm (log $LOGS/launch.log)"
  # pypto-coord's own info lines are not what is measured; keep its default level.
  env -u PYPTO_RUNTIME_LOG "$BENCH/l3_launch_bench" --reps "${LAUNCH_REPS:-7}" \
    "$ROOT/tests/fixtures/l3/allreduce_w8" >"$LOGS/launch.log" 2>&1 ||
    { cat "$LOGS/launch.log"; exit 1; }
fi

# key=value of one summary line: field LINE KEY
field() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

echo
printf '| %-38s | %-8s | %-14s | %-14s | %-7s | %-12s |\n' benchmark world baseline runtime ratio target
printf '|%s|%s|%s|%s|%s|%s|\n' ---------------------------------------- ---------- ---------------- ---------------- --------- --------------
if want dispatch; then
  grep '^l3_dispatch summary' "$LOGS/dispatch.log" | while read -r line; do
    w=$(field "$line" world); r=$(field "$line" raw_us); t=$(field "$line" runtime_us)
    q=$(field "$line" ratio)
    ok=$(awk -v q="$q" 'BEGIN { print (q <= 2.0) ? "met" : "MISSED" }')
    printf '| %-38s | %-8s | %-14s | %-14s | %-7s | %-12s |\n' "empty dispatch, us/round (raw ZeroMQ)" \
      "$w" "$r" "$t" "${q}x" "<=2x $ok"
  done
fi
if want allreduce; then
  grep '^l3_allreduce summary' "$LOGS/allreduce.log" | while read -r line; do
    w=$(field "$line" world); m=$(field "$line" mpi_busbw_gbs); t=$(field "$line" runtime_busbw_gbs)
    q=$(field "$line" ratio)
    ok=$(awk -v q="$q" 'BEGIN { print (q >= 2.0) ? "met" : "MISSED" }')
    printf '| %-38s | %-8s | %-14s | %-14s | %-7s | %-12s |\n' "allreduce 16 MiB, busbw GB/s (MPI)" \
      "$w" "$m" "$t" "${q}x" ">=2x $ok"
  done
fi
if want launch; then
  line=$(grep '^l3_launch summary' "$LOGS/launch.log")
  w=$(field "$line" world); m=$(field "$line" mpirun_ms); c=$(field "$line" coord_ms)
  q=$(field "$line" ratio)
  ok=$(awk -v q="$q" 'BEGIN { print (q <= 1.5) ? "met" : "MISSED" }')
  printf '| %-38s | %-8s | %-14s | %-14s | %-7s | %-12s |\n' "pypto-coord run warm, ms (bare mpirun)" \
    "$w" "$m" "$c" "${q}x" "<=1.5x $ok"
fi
echo
echo "# logs: $LOGS"

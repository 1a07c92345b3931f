#!/bin/sh
# The L3 benchmarks across two simulated hosts (docs/performance.md,
# "Across two hosts"; docs/multihost-testing.md): network namespaces joined by
# a bridge, Open MPI's rsh launcher through the simhosts ssh stand-in, each
# host with its own stores.
#   1. l3_allreduce_bench  16 MiB fp32 allreduce at world 4 (2 + 2) and 8 (4 + 4)
#                          vs MPI_Allreduce across the same hosts, interleaved
#   2. l3_launch_bench     pypto-coord run of tests/fixtures/l3/allreduce_w8 (4 + 4),
#                          cold (fresh hosts each time) and warm, vs a bare
#                          mpirun --hostfile of mpi_trivial
#
# Usage (as root): bench/run_multihost_benchmarks.sh [BUILD_DIR]   (default: build)
#   ninja -C BUILD_DIR l3_allreduce_bench l3_launch_bench mpi_allreduce_bench \
#                      mpi_trivial pypto-rank pypto-coord
# Knobs: ALLREDUCE_ROUNDS (10), ALLREDUCE_REPS (3), LAUNCH_REPS (5), COLD_REPS (3),
# ONLY (a subset of: allreduce launch).
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
BENCH=$BUILD/bench
SIM=$ROOT/tests/multihost/simhosts
for exe in l3_allreduce_bench l3_launch_bench mpi_allreduce_bench mpi_trivial; do
  [ -x "$BENCH/$exe" ] || { echo "missing $BENCH/$exe; build it first (see the header of $0)" >&2; exit 2; }
done
"$SIM" check >/dev/null || { "$SIM" check; exit 2; }
ONLY=${ONLY:-allreduce launch}
want() { case " $ONLY " in *" $1 "*) return 0 ;; esac; return 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pypto_mh_bench.XXXXXX")
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/pypto_mh_bench_logs.XXXXXX")
HOSTS=$WORK/hosts
cleanup() { "$SIM" down "$HOSTS" >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT INT TERM
export PYPTO_RUNTIME_LOG=${PYPTO_RUNTIME_LOG:-warn}
export PYPTO_RANK=$BUILD/rank_agent/pypto-rank OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The simulated hosts share this machine's CPUs: no placement by local rank.
export PYPTO_CPU_PLACEMENT=none

up() {  # fresh hosts h0, h1 (fresh stores), and their hostfiles
  "$SIM" down "$HOSTS" >/dev/null 2>&1 || true
  "$SIM" up "$HOSTS" 2 >/dev/null
  . "$HOSTS/env"
  printf '%s slots=2\n%s slots=2\n' "$SIM_NET.10" "$SIM_NET.11" >"$WORK/hosts22"
  printf '%s slots=4\n%s slots=4\n' "$SIM_NET.10" "$SIM_NET.11" >"$WORK/hosts44"
  RSH="--mca plm_rsh_agent $HOSTS/ssh"
}
on_h0() { "$SIM" exec "$HOSTS" h0 -- "$@"; }

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# two simulated hosts (network namespaces, veth + bridge, TCP)"
python3 "$ROOT/tests/fixtures/make_l3.py" --bench-out "$WORK/builds" >/dev/null
up

if want allreduce; then
  for w in 4 8; do
    hf=$WORK/hosts22; [ "$w" = 8 ] && hf=$WORK/hosts44
    echo "# allreduce world $w across 2 hosts (log $LOGS/allreduce_w$w.log), load: $(cut -d' ' -f1-3 /proc/loadavg)"
    on_h0 "$BENCH/l3_allreduce_bench" --rounds "${ALLREDUCE_ROUNDS:-10}" --reps "${ALLREDUCE_REPS:-3}" \
      --hostfile "$hf" --mpirun-args "$RSH" "$WORK/builds/allreduce16m_w$w" \
      >"$LOGS/allreduce_w$w.log" 2>&1 || { cat "$LOGS/allreduce_w$w.log"; exit 1; }
    grep '^l3_allreduce' "$LOGS/allreduce_w$w.log"
  done
fi

if want launch; then
  i=0
  while [ "$i" -lt "${COLD_REPS:-3}" ]; do
    up  # cold: both hosts' stores empty
    echo "# launch, fresh hosts $i (log $LOGS/launch_$i.log), load: $(cut -d' ' -f1-3 /proc/loadavg)"
    on_h0 env -u PYPTO_RUNTIME_LOG "$BENCH/l3_launch_bench" --reps "${LAUNCH_REPS:-5}" \
      --hostfile "$WORK/hosts44" --mpirun-args "$RSH" "$ROOT/tests/fixtures/l3/allreduce_w8" \
      >"$LOGS/launch_$i.log" 2>&1 || { cat "$LOGS/launch_$i.log"; exit 1; }
    grep '^# warm-up\|^l3_launch' "$LOGS/launch_$i.log"
    i=$((i + 1))
  done
fi
echo "# load at the end: $(cut -d' ' -f1-3 /proc/loadavg); logs: $LOGS"

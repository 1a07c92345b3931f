#!/bin/sh
# Compares the empty-dispatch round of two or more builds, interleaved run by run
# (docs/performance.md, "L3 runtime"): each run is one l3_dispatch_bench of
# world 2 and world 8 with that build's own pypto-rank, started once the
# 1-minute load is below LOAD_BELOW (at most 150 s of waiting), so a ratio can
# be read against a quiet start.
#
# Usage: bench/compare_dispatch_builds.sh ROUNDS BUILD_DIR...
#   BUILD_DIR holds bench/l3_dispatch_bench and rank_agent/pypto-rank (a build
#   tree, e.g. one of a `git worktree` of the older commit).
# Knobs (environment): DISPATCH_ROUNDS (2000), LOAD_BELOW (1.0).
# The bench builds go to a temporary directory, removed at the end.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 2 ] || { echo "usage: $0 ROUNDS BUILD_DIR..." >&2; exit 2; }
REPEATS=$1
shift
for build in "$@"; do
  for exe in bench/l3_dispatch_bench rank_agent/pypto-rank; do
    [ -x "$build/$exe" ] || { echo "missing $build/$exe; build it first" >&2; exit 2; }
  done
done
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pypto_dispatch_ab.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM
python3 "$ROOT/tests/fixtures/make_l3.py" --bench-out "$WORK" >/dev/null

LOAD_BELOW=${LOAD_BELOW:-1.0}
i=1
while [ "$i" -le "$REPEATS" ]; do
  for build in "$@"; do
    waited=0
    while [ "$waited" -lt 30 ] && ! awk -v max="$LOAD_BELOW" '{ exit !($1 < max) }' /proc/loadavg; do
      sleep 5
      waited=$((waited + 1))
    done
    echo "== $build run $i load $(cut -d' ' -f1-3 /proc/loadavg) $(date -u +%H:%M:%S)"
    PYPTO_RUNTIME_LOG=warn PYPTO_RANK="$build/rank_agent/pypto-rank" \
      "$build/bench/l3_dispatch_bench" "$WORK/empty_w2" "$WORK/empty_w8" \
      --rounds "${DISPATCH_ROUNDS:-2000}" --warmup 200 --reps 1 | grep -v '^#'
  done
  i=$((i + 1))
done

#!/usr/bin/env bash
# Builds (installing missing packages first) and runs the whole test suite:
# setup.sh builds what is installed, then the tests and benchmarks are built.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --no-install
build=${PYPTO_BUILD_DIR:-build}
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 600

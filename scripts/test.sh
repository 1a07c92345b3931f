#!/usr/bin/env bash
# Builds (installing missing packages first) and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --no-install
ctest --test-dir "${PYPTO_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" --timeout 600

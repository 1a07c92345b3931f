#!/usr/bin/env bash
# Installs what is missing (Debian 12, as root), configures, builds and
# installs the project. Idempotent: with everything in place it only runs an
# incremental build. Usage: scripts/setup.sh [--no-install]
#   PYPTO_BUILD_DIR  build tree (default: build)
#   PYPTO_PREFIX     install prefix (default: /usr/local)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config python3
  libopenmpi-dev openmpi-bin
  libzmq3-dev cppzmq-dev libcereal-dev
  libspdlog-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libssl-dev libopenblas-dev
  python3-dev pybind11-dev python3-numpy python3-pytest
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

build=${PYPTO_BUILD_DIR:-build}
# A build tree configured before packages were added must see them (python/).
if [[ ! -f "$build/build.ninja" ]] || ((${#missing[@]})); then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$build" -j "$(nproc)"
if [[ "${1:-}" != "--no-install" ]]; then
  cmake --install "$build" --prefix "${PYPTO_PREFIX:-/usr/local}" >/dev/null
  # The Python package is built for Debian's interpreter (docs/python.md).
  if [[ -z "${PYPTO_PREFIX:-}" ]] && ! (cd / && /usr/bin/python3 -c "import pypto"); then
    echo "setup: /usr/bin/python3 cannot import pypto; see docs/python.md" >&2
    exit 1
  fi
fi

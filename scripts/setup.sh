#!/usr/bin/env bash
# Installs what is missing (Debian 12, as root), configures, builds what is
# installed (the commands, the kernel headers, the Python package) and installs
# it. Idempotent: with everything in place it only runs an incremental build.
# Usage: scripts/setup.sh [--no-install]
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
  chromium  # renders report/run.html in the tests (tests/e2e/timeline_test.cc)
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
prefix=${PYPTO_PREFIX:-/usr/local}
# A build tree configured before packages were added must see them (python/).
if [[ ! -f "$build/build.ninja" ]] || ((${#missing[@]})); then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
# Only what is installed (the commands, the Python package): the main job runs
# before any test or benchmark is compiled; scripts/test.sh builds those.
cmake --build "$build" -j "$(nproc)" --target pypto_installed
[[ "${1:-}" == "--no-install" ]] && exit 0

cmake --install "$build" --prefix "$prefix" >/dev/null
site=$(sed -n 's#/pypto/__init__\.py$##p' "$build/install_manifest.txt" | head -n 1)
echo "setup: installed pypto-compile, pypto-coord, pypto-rank, pypto-ptoas into $prefix/bin"
echo "setup: kernel headers and the .ptl library into $prefix/share/pypto"
echo "setup: the C++ SDK (libpypto.so, include/pypto/, find_package(pypto), pypto.pc) into $prefix"
[[ -n "$site" ]] && echo "setup: the pypto Python package into $site"
# The next command must run this install, not an older one elsewhere.
first=$(command -v pypto-coord || true)
if [[ ":$PATH:" != *":$prefix/bin:"* ]]; then
  echo "setup: $prefix/bin is not on your PATH${first:+ (the pypto-coord on it is $first)}; add it with:"
  echo "  export PATH=\"$prefix/bin:\$PATH\""
elif [[ "$(realpath "$first")" != "$(realpath "$prefix/bin/pypto-coord")" ]]; then
  echo "setup: another pypto-coord comes first on your PATH: $first; put $prefix/bin before it:"
  echo "  export PATH=\"$prefix/bin:\$PATH\""
fi
# The Python package is built for Debian's interpreter (docs/python.md), which
# searches the default prefix's dist-packages by itself.
if [[ -z "$site" ]] || ! (cd / && PYTHONPATH="$site" /usr/bin/python3 -c "import pypto"); then
  echo "setup: /usr/bin/python3 cannot import pypto${site:+ from $site}; see docs/python.md" >&2
  exit 1
fi
found=$(cd / && env -u PYTHONPATH /usr/bin/python3 -c \
  "import os, pypto; print(os.path.dirname(pypto.__path__[0]))" 2>/dev/null || true)
if [[ "$found" != "$site" ]]; then
  if [[ -n "$found" ]]; then
    echo "setup: /usr/bin/python3 imports another pypto, from $found; for this one add:"
  else
    echo "setup: /usr/bin/python3 does not search $site; for import pypto add:"
  fi
  echo "  export PYTHONPATH=\"$site\${PYTHONPATH:+:\$PYTHONPATH}\""
fi

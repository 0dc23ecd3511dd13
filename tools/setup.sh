#!/usr/bin/env bash
# Sets up a fresh machine for kfuse and builds it: installs the Debian packages that are
# missing (apt-get update once, then apt-get install), checks the CUDA toolkit, configures
# build/ with CMake + Ninja once, and builds. Running it again is quick (nothing to do).
set -euo pipefail
cd "$(dirname "$0")/.."

# graphviz: `dot -Tsvg` behind `kfuse dot --svg`, and the tests that render with it.
pkgs=(cmake ninja-build g++ llvm-14-dev llvm-14-tools catch2 libfmt-dev zlib1g-dev
      python3 python3-numpy graphviz)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
fi

# The CUDA toolkit (headers and NVRTC) is not in Debian's registry at version 13; it comes
# with the machine image under /usr/local/cuda.
if [ -z "${CUDAToolkit_ROOT:-}" ] && [ -d /usr/local/cuda ]; then
  export CUDAToolkit_ROOT=/usr/local/cuda
fi
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x "${CUDAToolkit_ROOT:-/nonexistent}/bin/nvcc" ]; then
  echo "setup: error: no CUDA toolkit found (looked on PATH and in /usr/local/cuda)" >&2
  exit 1
fi

build=${KFUSE_BUILD_DIR:-build}
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        ${CUDAToolkit_ROOT:+-DCUDAToolkit_ROOT=$CUDAToolkit_ROOT}
fi
ninja -C "$build"

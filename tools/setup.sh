#!/usr/bin/env bash
# Sets up a fresh machine for kfuse and builds it: installs the Debian packages that are
# missing (apt-get update once, then apt-get install), checks the CUDA toolkit, configures
# build/ with CMake + Ninja once, and builds. Running it again is quick (nothing to do).
#   --sanitize  also installs clang-14 and its sanitizer/libFuzzer runtimes, and builds the
#               ASan+UBSan+libFuzzer configuration in build-san/ (KFUSE_SAN_BUILD_DIR)
#               instead of build/ (tools/sanitize.sh runs its tests and fuzzers)
#   --all       installs both package sets (one apt-get update) and builds both (CI)
set -euo pipefail
cd "$(dirname "$0")/.."
normal=1 san=0
case "${1:-}" in
  "") ;;
  --sanitize) normal=0 san=1 ;;
  --all) san=1 ;;
  *) echo "usage: tools/setup.sh [--sanitize|--all]" >&2; exit 2 ;;
esac

# graphviz: `dot -Tsvg` behind `kfuse dot --svg`, and the tests that render with it.
pkgs=(cmake ninja-build g++ llvm-14-dev llvm-14-tools catch2 libfmt-dev zlib1g-dev
      python3 python3-numpy graphviz)
if [ $san -eq 1 ]; then pkgs+=(clang-14 libclang-rt-14-dev); fi
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

if [ $normal -eq 1 ]; then
  build=${KFUSE_BUILD_DIR:-build}
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
          ${CUDAToolkit_ROOT:+-DCUDAToolkit_ROOT=$CUDAToolkit_ROOT}
  fi
  ninja -C "$build"
fi
if [ $san -eq 1 ]; then
  # libFuzzer and the sanitizers come with clang; KFUSE_FUZZ implies KFUSE_SANITIZE.
  san_build=${KFUSE_SAN_BUILD_DIR:-build-san}
  if [ ! -f "$san_build/build.ninja" ]; then
    CC=clang-14 CXX=clang++-14 cmake -S . -B "$san_build" -G Ninja \
          -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKFUSE_SANITIZE=ON -DKFUSE_FUZZ=ON \
          ${CUDAToolkit_ROOT:+-DCUDAToolkit_ROOT=$CUDAToolkit_ROOT}
  fi
  ninja -C "$san_build"
fi

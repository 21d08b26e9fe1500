#!/usr/bin/env bash
# Installs what is missing (Debian/Ubuntu packages), then configures and builds efacoll and its
# tests into ${BUILD_DIR:-build}. Safe to run again: it only does what is not done yet.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake g++ make pkg-config libfabric-dev libfabric-bin openmpi-bin libopenmpi-dev
          libhwloc-dev googletest libgtest-dev gnuplot-nox  # gnuplot: efacoll-bench --plot
          gfortran  # the test of Fortran callers
          mpich libmpich-dev)  # mpi.mpich: efacoll built against MPICH too (Open MPI stays mpicc)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "efacoll setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

build=${BUILD_DIR:-build}
cuda_args=()
[ -x /usr/local/cuda/bin/nvcc ] && cuda_args=(-DCUDAToolkit_ROOT=/usr/local/cuda)
cmake -S . -B "$build" -DEFACOLL_BUILD_TESTS=ON "${cuda_args[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)"

#!/usr/bin/env bash
# Installs what is missing (Debian/Ubuntu packages), then configures and builds efacoll and its
# tests into the build directory (scripts/build_dir.sh). Safe to run again: it only does what is
# not done yet.
#
# The libfabric it builds against: the system's (Debian's 1.17, or AWS's under /opt/amazon/efa
# where pkg-config finds it), or with EFACOLL_LIBFABRIC=2.6 upstream 2.6.0 with CUDA support,
# built once from ../shared/deps by scripts/libfabric.sh, into build-libfabric-2.6.
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

source scripts/build_dir.sh
cmake_args=(-DEFACOLL_BUILD_TESTS=ON)
[ -x /usr/local/cuda/bin/nvcc ] && cmake_args+=(-DCUDAToolkit_ROOT=/usr/local/cuda)
if [[ -n "${EFACOLL_LIBFABRIC:-}" && "${EFACOLL_LIBFABRIC}" != system ]]; then
  libfabric_prefix="$(scripts/libfabric.sh "$EFACOLL_LIBFABRIC")"
  # pkg-config looks under CMAKE_PREFIX_PATH first; the library is found there at run time too
  # (the build's RUNPATH), ahead of the system's libfabric.so.1.
  cmake_args+=(-DCMAKE_PREFIX_PATH="$libfabric_prefix")
fi
build=$build_dir
cmake -S . -B "$build" "${cmake_args[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)"

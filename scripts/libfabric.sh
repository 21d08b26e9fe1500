#!/usr/bin/env bash
# Builds upstream libfabric from the project's third-party sources (../shared/deps beside the
# checkout) once, with CUDA support where the CUDA toolkit is installed, into a prefix outside
# the source tree, and prints that prefix (the only line on standard output):
#
#   scripts/libfabric.sh [VERSION]     VERSION: 2.6 (default; the line AWS's EFA installer ships)
#
# Environment: EFACOLL_DEPS (the sources, default ../shared/deps beside the checkout),
# EFACOLL_DEPS_PREFIX (where builds go, default ~/.cache/efacoll), CUDA_HOME (default
# /usr/local/cuda). A prefix holding a finished build is reused as it is.
#
# With --enable-cuda-dlopen libfabric loads libcudart/libcuda at run time: the same build runs on
# machines without a GPU, and on a GPU machine its tcp and shm providers report FI_HMEM and take
# device pointers, through the same entry points EFA's GPUDirect path uses.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
version="${1:-2.6}"
case "$version" in
  2.6 | 2.6.0) version=2.6.0 ;;
  *) echo "scripts/libfabric.sh: no source for libfabric $version (have: 2.6)" >&2; exit 2 ;;
esac
deps="${EFACOLL_DEPS:-$repo/../shared/deps}"
prefix="${EFACOLL_DEPS_PREFIX:-$HOME/.cache/efacoll}/libfabric-$version"
cuda="${CUDA_HOME:-/usr/local/cuda}"
log() { echo "efacoll libfabric: $*" >&2; }

if [[ -f "$prefix/.complete" ]]; then
  echo "$prefix"
  exit 0
fi
tarball="$deps/libfabric-$version.tar.gz"
[[ -f "$tarball" ]] || { log "missing $tarball"; exit 1; }
(cd "$deps" && grep " libfabric-$version.tar.gz\$" SHA256SUMS | sha256sum -c --quiet -) >&2

packages=(autoconf automake libtool make gcc)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  log "installing ${missing[*]}"
  sudo=""
  [[ "$(id -u)" -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tar -xzf "$tarball" -C "$work"
src="$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n1)"
cuda_args=(--without-cuda)
cppflags=""
if [[ -x "$cuda/bin/nvcc" ]]; then
  # The toolkit has no nvml.h; libfabric calls three NVML functions, loaded at run time, and
  # the declarations beside the sources are enough to compile them.
  cuda_args=(--with-cuda="$cuda" --enable-cuda-dlopen)
  cppflags="-I$deps -I$cuda/include"
fi
log "building $version into $prefix (${cuda_args[*]}); a few minutes"
rm -rf "$prefix"
(
  cd "$src"
  ./autogen.sh
  ./configure --prefix="$prefix" "${cuda_args[@]}" \
    --enable-efa --enable-tcp --enable-shm --enable-udp --enable-rxd --enable-rxm \
    --disable-verbs --disable-psm2 --disable-psm3 --disable-opx --disable-usnic
  make -j"$(nproc)" CPPFLAGS="$cppflags"
  make install
) >"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log" >&2; log "build failed"; exit 1; }
touch "$prefix/.complete"
echo "$prefix"
